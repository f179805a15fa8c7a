"""How the doctor report is printed: text (a line per finding and its fix, then the summary)
and JSON (the shape of generator/schemas/doctor-report.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ...printable import one_line
from ...reporters import DOCTOR
from ...util.typed_json import to_json
from .report import DoctorReport

Format = Callable[[DoctorReport], str]


def text(report: DoctorReport) -> str:
    lines = [f"cluster: {report.server}"]
    for component in report.components:
        version = component.version or "version unknown (no Deployment found)"
        where = f" ({component.deployment})" if component.deployment else ""
        lines.append(f"{component.name}: {version}{where}")
    lines.append(f"engine: {report.engine or 'none found'}; repository HEAD: {report.revision or 'unknown'}")
    for f in report.findings:
        lines.append(one_line(f"{f.level}: {f.subject}: {f.problem} [{f.check}]"))
        lines.append(one_line(f"  fix: {f.fix}"))
    s = report.summary
    verdict = "is not ready" if s.errors else "is ready"
    lines.append(
        f"{len(report.checks)} check(s): {s.errors} error(s), {s.warnings} warning(s); "
        f"the cluster {verdict} for this render"
    )
    return "\n".join(lines) + "\n"


def json_format(report: DoctorReport) -> str:
    return json.dumps(to_json(report), indent=2) + "\n"


FORMATS: dict[str, Format] = DOCTOR.bind({"text": text, "json": json_format})
