"""Which flavors Kueue's Workloads hold: the authority on whether a flavor is idle.

A ClusterQueue's status lists only the flavors in its spec and is written some time after
Kueue reserves quota; a Workload's ``status.admission`` names its queue and every flavor it was
assigned from the moment quota is reserved until the Workload finishes or is evicted. So a
flavor is idle for a queue only when no unfinished Workload's admission names both
(docs/explanation/gate.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..kube.assignments import lowest_domains

Workload = Mapping[str, Any]


def _finished(workload: Workload) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)


def admission(workload: Workload) -> Mapping[str, Any] | None:
    """The Workload's admission while it holds quota (reserved or admitted, not finished)."""
    found = (workload.get("status") or {}).get("admission")
    if not isinstance(found, Mapping) or _finished(workload):
        return None
    return found


def flavors_of(workload: Workload) -> frozenset[str]:
    """Every flavor the Workload's admission assigns to any of its PodSets."""
    found = admission(workload)
    if found is None:
        return frozenset()
    assignments = found.get("podSetAssignments") or []
    return frozenset(str(name) for a in assignments for name in ((a.get("flavors") or {}).values()) if name)


def assignments_of(workload: Workload) -> frozenset[tuple[str, str]]:
    """Every (flavor, resource) the Workload's admission assigns to any of its PodSets."""
    found = admission(workload)
    if found is None:
        return frozenset()
    return frozenset(
        (str(flavor), str(resource))
        for a in found.get("podSetAssignments") or []
        for resource, flavor in ((a.get("flavors") or {}).items())
        if flavor
    )


def held_resources(workloads: Iterable[Workload], queue: str) -> frozenset[tuple[str, str]]:
    """The (flavor, resource) pairs that Workloads admitted to ``queue`` hold: what the gate
    judges a dropped flavor, or a resource dropped from a flavor, by."""
    held: set[tuple[str, str]] = set()
    for w in workloads:
        found = admission(w)
        if found is not None and found.get("clusterQueue") == queue:
            held |= assignments_of(w)
    return frozenset(held)


def held_flavors(workloads: Iterable[Workload]) -> dict[str, frozenset[str]]:
    """ClusterQueue name -> the flavors that Workloads admitted to it hold."""
    held: dict[str, set[str]] = {}
    for w in workloads:
        found = admission(w)
        if found is not None:
            held.setdefault(str(found.get("clusterQueue")), set()).update(flavors_of(w))
    return {queue: frozenset(names) for queue, names in held.items()}


def admitted_to(workloads: Iterable[Workload], queue: str) -> list[Workload]:
    """The Workloads whose admission (reserved or admitted, not finished) is to ``queue``."""
    return [
        w for w in workloads if (found := admission(w)) is not None and found.get("clusterQueue") == queue
    ]


def holders(workloads: Iterable[Workload], queue: str, flavor: str) -> list[Workload]:
    """The Workloads admitted to ``queue`` whose admission names ``flavor``."""
    return [
        w
        for w in workloads
        if (found := admission(w)) is not None
        and found.get("clusterQueue") == queue
        and flavor in flavors_of(w)
    ]


def any_holder(workloads: Iterable[Workload]) -> frozenset[str]:
    """Every flavor some Workload's admission names, whichever queue admitted it."""
    return frozenset(name for w in workloads for name in flavors_of(w))


#: the level every tasgen Topology ends with: a topology assignment's lowest values are nodes
_HOSTNAME = "kubernetes.io/hostname"


def placed_nodes(workload: Workload) -> tuple[frozenset[str], frozenset[str]]:
    """The nodes the Workload's admission places pods on, and the flavors of its PodSets whose
    admission names no node (no topology assignment yet, or one not down to hostnames):
    every node of those flavors may hold its pods (the assignment decoded by
    :func:`generator.kube.assignments.lowest_domains`)."""
    found = admission(workload)
    if found is None:
        return frozenset(), frozenset()
    nodes: set[str] = set()
    unplaced: set[str] = set()
    for assignment in found.get("podSetAssignments") or []:
        if not isinstance(assignment, Mapping):
            continue
        named = _lowest_values(assignment.get("topologyAssignment"))
        if named is None:
            unplaced.update(str(f) for f in (assignment.get("flavors") or {}).values() if f)
        else:
            nodes.update(named)
    return frozenset(nodes), frozenset(unplaced)


def _lowest_values(assignment: object) -> list[str] | None:
    """The hostnames a topology assignment names; None when it names none."""
    if not isinstance(assignment, Mapping):
        return None
    levels = assignment.get("levels")
    if not isinstance(levels, list) or not levels or levels[-1] != _HOSTNAME:
        return None
    return [node for node, _ in lowest_domains(assignment)]
