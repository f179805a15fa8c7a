"""The doctor report: frozen dataclasses mirroring generator/schemas/doctor-report.schema.json
(written by generator/util/typed_json.py; tests/test_doctor_schema.py compares the two)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...util.typed_json import Count

Level = Literal["error", "warning"]
Engine = Literal["argocd", "flux"]
ERROR: Level = "error"
WARNING: Level = "warning"


@dataclass(frozen=True)
class DoctorFinding:
    """One thing the cluster lacks: which check found it, where, what is wrong and the fix."""

    check: str
    level: Level
    subject: str
    problem: str
    fix: str


@dataclass(frozen=True)
class Component:
    """A controller the render relies on, as its Deployment shows it (None: no Deployment found)."""

    name: str
    version: str | None
    deployment: str | None


@dataclass(frozen=True)
class Summary:
    errors: Count
    warnings: Count


@dataclass(frozen=True)
class DoctorReport:
    version: Literal[1]
    server: str
    engine: Engine | None
    revision: str | None
    components: tuple[Component, ...]
    checks: tuple[str, ...]
    findings: tuple[DoctorFinding, ...]
    summary: Summary


def summary_of(findings: tuple[DoctorFinding, ...]) -> Summary:
    return Summary(
        errors=sum(f.level == ERROR for f in findings), warnings=sum(f.level == WARNING for f in findings)
    )
