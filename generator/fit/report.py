"""The report of ``tasgen fit``: typed values mirroring generator/schemas/fit-report.schema.json,
which the formatters read field by field."""

from __future__ import annotations

from typing import TypedDict


class PodSetVerdict(TypedDict):
    name: str
    count: int
    fits: bool  # on an empty cluster
    flavor: str | None  # the flavor Kueue admits it with
    level: str | None  # the level Kueue places it at
    domains: int  # domains of that level each able to hold the whole PodSet (0: spread)
    reason: str | None  # Kueue's message when it never fits
    fitsNow: bool | None  # with live usage (--kubeconfig); None without


class WorkloadVerdict(TypedDict):
    file: str
    line: int
    column: int
    kind: str
    namespace: str
    name: str
    localQueue: str
    clusterQueue: str | None  # None: the LocalQueue does not exist
    podSets: list[PodSetVerdict]


class ProblemData(TypedDict):
    path: str
    line: int
    col: int
    rule: str
    message: str
    level: str


class FitReport(TypedDict):
    workloads: list[WorkloadVerdict]
    problems: list[ProblemData]
