"""The report of ``tasgen capacity``: typed values mirroring
generator/schemas/capacity-report.schema.json (generator/util/typed_json.py writes them), which
the formatters read field by field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ...util.typed_json import Count


@dataclass(frozen=True, kw_only=True)
class Slots:
    largest: Count  # pods of the size the best domain of the level holds, within quota
    largest_gpus: Count  # the same in GPUs
    domains: Count  # domains of the level that hold the size's pods (all of them)


@dataclass(frozen=True, kw_only=True)
class SizeSlots:
    gpus_per_pod: Count
    pods: Count  # pods the size wants in one domain
    empty: Slots  # on an empty cluster
    now: Slots | None  # with the live usage (--kubeconfig); None without


@dataclass(frozen=True, kw_only=True)
class LevelCapacity:
    level: str
    domains: Count
    sizes: tuple[SizeSlots, ...]


@dataclass(frozen=True, kw_only=True)
class Quota:
    empty: Count  # GPUs the queue can admit on the flavor: nominal quota and cohort borrowing
    now: Count | None  # less what admitted Workloads reserve (--kubeconfig); None without


@dataclass(frozen=True, kw_only=True)
class FlavorCapacity:
    name: str
    topology: str | None  # None: not topology-aware
    resource: str | None  # the GPU resource of its nodes; None: they have none
    nodes: Count
    quota: Quota | None  # None: no GPU resource
    levels: tuple[LevelCapacity, ...]


@dataclass(frozen=True, kw_only=True)
class QueueCapacity:
    name: str
    cohort: str | None
    flavors: tuple[FlavorCapacity, ...]


@dataclass(frozen=True, kw_only=True)
class ProblemData:
    path: str
    line: Count
    col: Count
    rule: str
    message: str
    level: str


@dataclass(frozen=True, kw_only=True)
class CapacityReport:
    version: Literal[1] = 1
    live: bool  # the "now" figures were read from a cluster
    queues: tuple[QueueCapacity, ...]
    problems: tuple[ProblemData, ...]
