"""Fit preview: per queue and hardware identity, the largest PodSet that fits inside one domain
of each level, before and after.

Only nodes Kueue's TAS places pods on count: not cordoned, and every NoSchedule or NoExecute
taint tolerated by the flavor (kubernetes-sigs/kueue#4180, #3678).

A PodSet here is pods of the flavor's node shape (the allocatable most of its nodes have) that
a workload asks Kueue to place in one domain of a level
(``kueue.x-k8s.io/podset-required-topology``). Its size at a level is the most such pods one
domain of the level holds (a node of the shape holds one), counted by tasgen fit's domain index
(generator/fit/index.py, the one engine); its GPUs, that times the shape's GPUs. Kueue
places a PodSet with one of the queue's flavors, so an identity's figure at a level is the best
over its flavors whose Topology has the level; a level none of them has does not fit at all.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from ...fit.cluster import Cluster, Flavor, node_facts
from ...fit.engine import largest
from ...fit.index import build
from ...kube.quantities import kueue_units, parse
from ...kube.taints import untolerated
from .shape import Fit, FitRow
from .side import FlavorFacts, QueueFacts, Side


def is_gpu(resource: str) -> bool:
    return resource.rsplit("/", 1)[-1] == "gpu"  # nvidia.com/gpu, amd.com/gpu, ...


def compare_fit(base: Side, head: Side) -> tuple[FitRow, ...]:
    before, after = _fits(base), _fits(head)
    depth = {
        level: i for side in (base, head) for keys in side.profiles.values() for i, level in enumerate(keys)
    }
    rows = []
    for key in sorted(before.keys() | after.keys(), key=lambda k: (k[0], k[1], depth[k[2]], k[2])):
        queue, identity, level = key
        old, new = before.get(key), after.get(key)
        rows.append(
            FitRow(
                queue=queue, identity=dict(identity), level=level, before=old, after=new, changed=old != new
            )
        )
    return tuple(rows)


def _fits(side: Side) -> dict[tuple[str, Any, str], Fit]:
    found: dict[tuple[str, Any, str], Fit] = {}
    members = _members(side)
    by_flavor: dict[tuple[str, tuple[str, ...]], dict[str, Fit]] = {}  # queues share flavors
    for queue in side.queues.values():
        # a retained flavor has no quota: nothing new fits there
        for flavor in (f for f in queue.flavors.values() if f.retiring_since is None):
            key = (flavor.name, queue.covered)
            if key not in by_flavor:
                nodes = members.get((flavor.identity, flavor.profile), [])
                by_flavor[key] = _flavor_fit(side, queue, flavor, nodes)
            for level, fit in by_flavor[key].items():
                row = (queue.name, flavor.identity, level)
                if row not in found or _better(fit, found[row]):
                    found[row] = fit
    return found


def _members(side: Side) -> dict[tuple[Any, str], list[str]]:
    """(identity, profile) -> its nodes: the profile's nodes that carry the identity."""
    flavors = {
        (f.identity, f.profile)
        for q in side.queues.values()
        for f in q.flavors.values()
        if f.retiring_since is None
    }
    nodes = side.nodes
    return {
        (identity, profile): [
            n for n in side.members.get(profile, []) if all(nodes[n].labels.get(k) == v for k, v in identity)
        ]
        for identity, profile in flavors
    }


def _better(a: Fit, b: Fit) -> bool:
    return (a.gpus, a.pods) > (b.gpus, b.pods)


def _flavor_fit(side: Side, queue: QueueFacts, flavor: FlavorFacts, nodes: list[str]) -> dict[str, Fit]:
    """The flavor's figure per level, from tasgen fit's domain index (generator/fit/): the most
    pods of the node shape one domain holds."""
    tolerations = flavor.spec.get("tolerations") or []
    keys = side.profiles[flavor.profile]
    members = [side.nodes[n] for n in nodes if not side.nodes[n].unschedulable]
    usable = [n for n in members if untolerated(n.taints, tolerations) is None]
    resources = queue.covered or tuple(sorted({r for n in usable for r in n.allocatable}))
    # Fleets repeat a few allocatable values: the shape is judged from each distinct one once.
    counts = Counter(tuple(map(n.allocatable.get, resources)) for n in usable)
    shape = _shape(counts)
    if not usable:  # every node cordoned or tainted against the flavor: nothing fits anywhere
        return {level: Fit(pods=0, gpus=0) for level in keys}
    facts = [
        node_facts(n.name, dict(zip(keys, side.domain_of[n.name], strict=True)), n.allocatable, n.taints)
        for n in members
    ]
    cluster = Cluster(facts, topologies={"t": keys})
    found = build(cluster, Flavor(flavor.name, {}, tolerations=tuple(tolerations), topology="t"))
    assert found is not None
    requests = {r: to_units(r, amount) for r, amount in zip(resources, shape, strict=True)}
    gpus = sum(int(amount) for r, amount in zip(resources, shape, strict=True) if is_gpu(r))
    return {
        level: Fit(pods=pods, gpus=pods * gpus)
        for level, pods in zip(keys, largest(found, requests, ()), strict=True)
    }


def to_units(resource: str, amount: Decimal) -> int:
    return kueue_units(resource, str(amount)) or 0


def _shape(counts: Counter[tuple[str | None, ...]]) -> tuple[Decimal, ...]:
    """The allocatable most of the nodes have (ties: the smallest), as amounts."""
    if not counts:
        return ()
    best = max(counts.values())
    return min(_amounts(s) for s, c in counts.items() if c == best)


def _amounts(signature: tuple[str | None, ...]) -> tuple[Decimal, ...]:
    return tuple(parse(v) if v is not None else Decimal(0) for v in signature)
