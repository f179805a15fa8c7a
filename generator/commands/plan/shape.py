"""The plan report as typed values: one frozen dataclass per object of
generator/schemas/plan-report.schema.json, written as JSON by :func:`generator.util.typed_json.to_json`
(``flavors_added`` is the key ``flavorsAdded``; a field typed ``Absent`` is left out when None).
tests/test_plan_schema.py holds the two in agreement, both ways, at every depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

from ...util.typed_json import Absent, Count

Identity = Mapping[str, str]  # hardware identity labels
Names = tuple[str, ...]
T = TypeVar("T")

#: what the drain gate does with the queue when the plan lands (docs/explanation/plan.md "Queues")
Action = Literal[
    "created", "deleted", "none", "in-place", "hold-and-drain", "held-empty", "stopped", "held", "retain"
]
CREATED: Final = "created"
DELETED: Final = "deleted"
NONE: Final = "none"
IN_PLACE: Final = "in-place"
HOLD_AND_DRAIN: Final = "hold-and-drain"
HELD_EMPTY: Final = "held-empty"
STOPPED: Final = "stopped"
HELD: Final = "held"
RETAIN: Final = "retain"  # dropPolicy WaitForIdle: dropped flavors stay at zero quota until idle

QuotaField = Literal["nominalQuota", "borrowingLimit", "lendingLimit"]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """A warning of the working tree, or an error of a base that does not compile."""

    rule: str
    level: Literal["warning", "error"]
    path: str
    line: Count
    col: Count
    message: str


@dataclass(frozen=True, kw_only=True)
class Base:
    ref: str
    state: Literal["compiled", "absent", "invalid"]
    problems: Absent[tuple[Problem, ...]] = None  # why the base does not compile


@dataclass(frozen=True, kw_only=True)
class BeforeAfter(Generic[T]):
    """One value as the base has it and as the working tree has it."""

    before: T
    after: T


@dataclass(frozen=True, kw_only=True)
class Flavor:
    name: str
    identity: Identity
    profile: str


@dataclass(frozen=True, kw_only=True)
class Replaced:
    """Same hardware identity, new profile: a new flavor to Kueue, the same GPUs."""

    identity: Identity
    from_: str
    to: str
    from_profile: str
    to_profile: str


@dataclass(frozen=True, kw_only=True)
class QuotaChange:
    identity: Identity
    flavor: Absent[str] = None  # the flavor whose field changes (every row names one)
    resource: str
    field: QuotaField
    before: str | None
    after: str | None


@dataclass(frozen=True, kw_only=True)
class FlavorChanged:
    name: str
    fields: Names  # of the ResourceFlavor's spec


@dataclass(frozen=True, kw_only=True)
class LiveFlavor:
    name: str
    workloads: Count
    reservation: Mapping[str, str]  # Kueue's flavorsReservation: resource -> total


@dataclass(frozen=True, kw_only=True)
class Held:
    """Workloads and what their admissions hold (podSetAssignments[].resourceUsage)."""

    workloads: Count
    resources: Mapping[str, str]  # covered resource -> the total quantity


@dataclass(frozen=True, kw_only=True)
class LiveDrain:
    reserving_workloads: Count
    flavors: tuple[LiveFlavor, ...]  # the dropped ones
    retained: tuple[LiveFlavor, ...]  # WaitForIdle's, at zero quota: their Workloads keep running
    evicted: Held  # what the change evicts: under HoldAndDrain every Workload admitted to the queue


@dataclass(frozen=True, kw_only=True)
class Drain:
    action: Action
    reason: str
    live: Absent[LiveDrain] = None  # with --kubeconfig


@dataclass(frozen=True, kw_only=True)
class Queue:
    name: str
    change: Literal["added", "removed", "changed", "unchanged"]
    stop_policy: BeforeAfter[str | None]  # None: no queue on that side
    drop_policy: Literal["HoldAndDrain", "WaitForIdle"] | None  # None: the queue is gone
    flavors_added: tuple[Flavor, ...]
    flavors_removed: tuple[Flavor, ...]
    flavors_replaced: tuple[Replaced, ...]
    flavors_retained: Names  # kept at zero quota until idle (WaitForIdle), in the queue's order
    quota: tuple[QuotaChange, ...]
    flavor_order: BeforeAfter[Names] | None  # None: the same order
    flavors_changed: tuple[FlavorChanged, ...]
    settings_changed: Names
    local_queues_added: Names  # namespace/name
    local_queues_removed: Names
    drain: Drain


@dataclass(frozen=True, kw_only=True)
class ProfileNodes:
    id: str
    levels: Names
    nodes: Count


@dataclass(frozen=True, kw_only=True)
class ProfileChanged:
    id: str
    levels: Names
    nodes_before: Count
    nodes_after: Count


@dataclass(frozen=True, kw_only=True)
class Move:
    from_: str | None  # None: a new node
    to: str | None  # None: a node gone
    nodes: Count


@dataclass(frozen=True, kw_only=True)
class SourceLevels:
    source: str
    before: Names | None
    after: Names | None


@dataclass(frozen=True, kw_only=True)
class Profiles:
    added: tuple[ProfileNodes, ...]
    removed: tuple[ProfileNodes, ...]
    changed: tuple[ProfileChanged, ...]
    moves: tuple[Move, ...]
    sources: tuple[SourceLevels, ...]
    diagram: BeforeAfter[str]  # Mermaid


@dataclass(frozen=True, kw_only=True)
class SourceNodes:
    source: str
    nodes: Count
    keys: Mapping[str, Count]  # label key -> nodes


@dataclass(frozen=True, kw_only=True)
class DomainNodes:
    level: str
    domain: str
    nodes: Count


@dataclass(frozen=True, kw_only=True)
class LabelChange:
    key: str
    before: str | None
    after: str | None


@dataclass(frozen=True, kw_only=True)
class NodeChange:
    node: str
    labels: tuple[LabelChange, ...]


@dataclass(frozen=True, kw_only=True)
class Pin:
    """Nodes the render keeps on their previous profile and flavors (or in transit, selected by
    no flavor) while the plan gives them another profile: until a live render finds them idle."""

    profile: str | None  # the profile label kept; None: in transit
    flavors: Names  # the flavors kept (none in transit)
    planned_profile: str  # where the plan puts them once released
    nodes: Count
    names: Names | None  # None: too many to name


@dataclass(frozen=True, kw_only=True)
class Nodes:
    total: Count
    changed: Count
    by_source: tuple[SourceNodes, ...]
    by_domain: tuple[DomainNodes, ...]
    changes: tuple[NodeChange, ...] | None  # None: too many to name
    pins: tuple[Pin, ...]  # the nodes the working tree's render keeps off their planned row


@dataclass(frozen=True, kw_only=True)
class Fit:
    """The largest slot of a flavor at a level (docs/explanation/plan.md "Fit preview")."""

    pods: Count  # whole-node pods the best domain holds, within the queue's quota
    gpus: Count
    gpus_per_pod: Count
    by_quota: bool  # the quota holds fewer pods than the best domain


@dataclass(frozen=True, kw_only=True)
class FitRow:
    queue: str
    flavor: str
    identity: Identity
    level: str
    before: Fit | None  # None: the queue has not the flavor, or its Topology not the level
    after: Fit | None
    changed: bool


@dataclass(frozen=True, kw_only=True)
class PodSetFit:
    name: str
    count: Count
    fits: bool  # on an empty cluster
    flavor: str | None  # the flavor Kueue admits it with
    level: str | None  # the level Kueue places it at
    reason: str | None  # Kueue's message when it never fits


@dataclass(frozen=True, kw_only=True)
class WorkloadFit:
    """A workload's verdict at one revision (tasgen fit's, per PodSet)."""

    fits: bool  # every PodSet fits
    pod_sets: tuple[PodSetFit, ...]


#: why a workload is listed: a new manifest, a changed one, or the same one whose verdict the
#: inventory change turns (docs/explanation/plan.md "Workloads")
WorkloadChangeKind = Literal["added", "changed", "verdict"]


@dataclass(frozen=True, kw_only=True)
class WorkloadChange:
    kind: str
    namespace: str
    name: str
    file: str  # the working tree's, with the line and column of the manifest
    line: Count
    column: Count
    cluster_queue: str | None  # None: its LocalQueue does not exist
    change: WorkloadChangeKind
    before: WorkloadFit | None  # None: a new manifest
    after: WorkloadFit


@dataclass(frozen=True, kw_only=True)
class Summary:
    queues_changed: Count  # queues in both revisions that differ
    queues_added: Count
    queues_removed: Count
    flavors_added: Count
    flavors_removed: Count
    drains: Names
    nodes_changed: Count
    fit_changed: Count
    workloads_changed: Count  # workloads listed: new or changed manifests, turned verdicts
    never_fit: Names  # kind namespace/name of each listed workload that never fits after the merge
    warnings: Count
    stopped: Names


@dataclass(frozen=True, kw_only=True)
class Report:
    version: Literal[1]
    base: Base
    queues: tuple[Queue, ...]
    profiles: Profiles
    nodes: Nodes
    fit: tuple[FitRow, ...]
    workloads: tuple[WorkloadChange, ...]  # with GeneratorConfig spec.workloads
    warnings: tuple[Problem, ...]
    summary: Summary
