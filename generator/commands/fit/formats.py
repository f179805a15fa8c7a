"""How the fit report is printed: text (a line per PodSet, then the problems), JSON (the shape
of generator/schemas/fit-report.schema.json) and GitHub (annotations on the manifests)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ...fit.report import FitReport, PodSetVerdict, WorkloadVerdict
from ...model import Level, Problem
from ...printable import one_line
from ...reporters import FIT, annotation, problem_annotation, problem_line

Format = Callable[[FitReport, list[Problem]], str]


def text(report: FitReport, problems: list[Problem]) -> str:
    lines = [line for w in report["workloads"] for line in _workload_lines(w)]
    lines += [problem_line(p) for p in problems]
    lines.append(_summary(report, problems))
    return "\n".join(lines) + "\n"


def _workload_lines(w: WorkloadVerdict) -> list[str]:
    queue = f"{w['namespace']}/{w['localQueue']}" + (f" -> {w['clusterQueue']}" if w["clusterQueue"] else "")
    head = (
        f"{one_line(w['file'])}:{w['line']}:{w['column']}: {w['kind']} {w['namespace']}/{w['name']} ({queue})"
    )
    return [f"{head}: {_podset_text(ps)}" for ps in w["podSets"]]


def _podset_text(ps: PodSetVerdict) -> str:
    said = f"PodSet {ps['name']} ({ps['count']} pod(s)) "
    if ps["fits"]:
        spread = (
            f"{ps['domains']} domain(s) hold it whole" if ps["domains"] else "spread over several domains"
        )
        said += f"fits: flavor {ps['flavor']}, level {ps['level']}, {spread}"
    else:
        said += "never fits"
    if ps["fitsNow"] is not None:
        said += "; fits now" if ps["fitsNow"] else "; does not fit now"
    return one_line(said)


def _summary(report: FitReport, problems: list[Problem]) -> str:
    podsets = [ps for w in report["workloads"] for ps in w["podSets"]]
    fitting = sum(ps["fits"] for ps in podsets)
    errors = sum(p.level is Level.ERROR for p in problems)
    warnings = sum(p.level is Level.WARNING for p in problems)
    return (
        f"{len(report['workloads'])} workload(s), {len(podsets)} PodSet(s): {fitting} fit, "
        f"{len(podsets) - fitting} never fit; {errors} error(s), {warnings} warning(s)"
    )


def json_format(report: FitReport, problems: list[Problem]) -> str:
    return json.dumps(report, indent=2) + "\n"


def github(report: FitReport, problems: list[Problem]) -> str:
    """Annotations on the manifests: each problem, and a notice per fitting PodSet."""
    lines = [problem_annotation(p) for p in problems]
    for w in report["workloads"]:
        for ps in w["podSets"]:
            if ps["fits"]:
                lines.append(
                    annotation("notice", w["file"], w["line"], w["column"], "tasgen fit", _podset_text(ps))
                )
    lines.append(_summary(report, problems))
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Format] = FIT.bind({"text": text, "json": json_format, "github": github})
