"""What Kueue knows when it admits a workload: nodes (labels, allocatable, taints), flavors,
Topologies, ClusterQueues with their quotas and cohorts, and LocalQueues. Built from Kubernetes
objects, so the same value comes from a compiled inventory and from a live cluster."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kube.quantities import kueue_units
from ..model import Taint

#: a toleration as the API spells it (key, operator, value, effect)
Toleration = Mapping[str, Any]


@dataclass(frozen=True)
class NodeFacts:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]  # Kueue's units
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: Mapping[str, str]
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    topology: str | None = None


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing: int | None = None
    lending: int | None = None


@dataclass(frozen=True)
class Group:
    covered: tuple[str, ...]
    flavors: tuple[tuple[str, Mapping[str, Quota]], ...]  # in the queue's order


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    groups: tuple[Group, ...]
    cohort: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    try_next_when_borrowing: bool = False  # flavorFungibility.whenCanBorrow: TryNextFlavor
    stop_policy: str = "None"

    def group_of(self, resource: str) -> Group | None:
        return next((g for g in self.groups if resource in g.covered), None)

    @property
    def covers_pods(self) -> bool:
        return self.group_of("pods") is not None


@dataclass
class Cluster:
    nodes: list[NodeFacts]
    flavors: dict[str, Flavor] = field(default_factory=dict)
    topologies: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> level keys
    queues: dict[str, ClusterQueue] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)  # (ns, name) -> queue
    #: namespace -> its labels, where known (a live cluster); otherwise only the name label
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    #: (queue, flavor, resource) -> what admitted Workloads reserve (live; empty offline)
    usage: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def label_keys(self, group: Group) -> frozenset[str]:
        """Kueue's ``ResourceGroup.LabelKeys``: the keys any of the group's flavors' nodeLabels set."""
        return frozenset(k for name, _ in group.flavors for k in self._flavor(name).node_labels)

    def _flavor(self, name: str) -> Flavor:
        return self.flavors.get(name) or Flavor(name, {})

    def potential(self, queue: ClusterQueue, flavor: str, resource: str) -> int:
        """Kueue's ``PotentialAvailable``: the most the queue can use of the flavor's resource,
        its nominal quota plus what its cohort can lend, within its borrowingLimit."""
        quota = _quota(queue, flavor, resource)
        if queue.cohort is None:
            return quota.nominal
        pool = sum(
            _lendable(_quota(other, flavor, resource))
            for other in self.queues.values()
            if other.cohort == queue.cohort
        )
        available = _local(quota) + pool
        if quota.borrowing is not None:
            available = min(quota.nominal + quota.borrowing, available)
        return available

    def available(self, queue: ClusterQueue, flavor: str, resource: str) -> int:
        """Kueue's ``Available``: what the queue can use now, with :attr:`usage` reserved."""
        quota, used = _quota(queue, flavor, resource), self.usage.get((queue.name, flavor, resource), 0)
        if queue.cohort is None:
            return quota.nominal - used
        local = _local(quota)
        members = [q for q in self.queues.values() if q.cohort == queue.cohort]
        pool = sum(_lendable(_quota(q, flavor, resource)) for q in members)
        pool_used = sum(
            max(0, self.usage.get((q.name, flavor, resource), 0) - _local(_quota(q, flavor, resource)))
            for q in members
        )
        parent = pool - pool_used
        if quota.borrowing is not None:
            parent = min(quota.nominal - local - max(0, used - local) + quota.borrowing, parent)
        return max(0, local - used) + parent


def _quota(queue: ClusterQueue, flavor: str, resource: str) -> Quota:
    for group in queue.groups:
        for name, quotas in group.flavors:
            if name == flavor and resource in quotas:
                return quotas[resource]
    return Quota(0)


def _local(quota: Quota) -> int:
    """What the queue keeps for itself (nominal minus lendingLimit)."""
    return max(0, quota.nominal - quota.lending) if quota.lending is not None else 0


def _lendable(quota: Quota) -> int:
    return quota.nominal - _local(quota)


def from_objects(objects: Iterable[Mapping[str, Any]], nodes: list[NodeFacts]) -> Cluster:
    """The cluster of ResourceFlavor, Topology, ClusterQueue, LocalQueue and Namespace objects
    (others are ignored) over ``nodes``."""
    cluster = Cluster(nodes)
    for body in objects:
        kind, meta, spec = body.get("kind"), body.get("metadata") or {}, body.get("spec") or {}
        name = str(meta.get("name", ""))
        if kind == "ResourceFlavor":
            cluster.flavors[name] = _flavor(name, spec)
        elif kind == "Topology":
            cluster.topologies[name] = tuple(str(lv.get("nodeLabel")) for lv in spec.get("levels") or ())
        elif kind == "ClusterQueue":
            cluster.queues[name] = _queue(name, spec)
        elif kind == "LocalQueue":
            cluster.local_queues[(str(meta.get("namespace", "default")), name)] = str(
                spec.get("clusterQueue")
            )
        elif kind == "Namespace":
            cluster.namespaces[name] = dict(meta.get("labels") or {})
    return cluster


def node_facts(
    name: str, labels: Mapping[str, str], allocatable: Mapping[str, Any], taints: Iterable[Taint]
) -> NodeFacts:
    amounts = {r: u for r, v in allocatable.items() if (u := kueue_units(r, v)) is not None}
    return NodeFacts(name, labels, amounts, tuple(taints))


def _flavor(name: str, spec: Mapping[str, Any]) -> Flavor:
    taints = tuple(
        (str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in spec.get("nodeTaints") or ()
    )
    topology = spec.get("topologyName")
    return Flavor(
        name,
        dict(spec.get("nodeLabels") or {}),
        taints,
        tuple(spec.get("tolerations") or ()),
        str(topology) if topology else None,
    )


def _queue(name: str, spec: Mapping[str, Any]) -> ClusterQueue:
    groups = []
    for group in spec.get("resourceGroups") or ():
        flavors = []
        for entry in group.get("flavors") or ():
            quotas = {
                str(r["name"]): Quota(
                    kueue_units(str(r["name"]), r.get("nominalQuota", 0)) or 0,
                    _maybe(str(r["name"]), r.get("borrowingLimit")),
                    _maybe(str(r["name"]), r.get("lendingLimit")),
                )
                for r in entry.get("resources") or ()
            }
            flavors.append((str(entry["name"]), quotas))
        groups.append(Group(tuple(group.get("coveredResources") or ()), tuple(flavors)))
    cohort = spec.get("cohortName") or spec.get("cohort")
    fungibility = spec.get("flavorFungibility") or {}
    return ClusterQueue(
        name,
        tuple(groups),
        str(cohort) if cohort else None,
        spec.get("namespaceSelector"),
        fungibility.get("whenCanBorrow") == "TryNextFlavor",
        str(spec.get("stopPolicy") or "None"),
    )


def _maybe(resource: str, value: Any) -> int | None:
    return None if value is None else kueue_units(resource, value)
