"""Fit preview: per queue and hardware identity, the largest PodSet that fits inside one domain
of each level, before and after.

Only nodes Kueue's TAS places pods on count: not cordoned, and every NoSchedule or NoExecute
taint tolerated by the flavor (kubernetes-sigs/kueue#4180, #3678).

A PodSet here is pods of the flavor's node shape (the allocatable most of its nodes have, so
one pod per node) that a workload asks Kueue to place in one domain of a level
(``kueue.x-k8s.io/podset-required-topology``). Its size at a level is the number of nodes of
that shape in the fullest domain of the level; its GPUs, that times the shape's GPUs. Kueue
places a PodSet with one of the queue's flavors, so an identity's figure at a level is the best
over its flavors whose Topology has the level; a level none of them has does not fit at all.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from generator.commands.plan.side import FlavorFacts, QueueFacts, Side
from generator.model import Node
from generator.validate.checks.taints import BLOCKING, tolerates
from generator.validate.quantities import parse

Fit = dict[str, int]  # pods, gpus


def is_gpu(resource: str) -> bool:
    return resource.rsplit("/", 1)[-1] == "gpu"  # nvidia.com/gpu, amd.com/gpu, ...


def compare_fit(base: Side, head: Side) -> list[dict[str, Any]]:
    before, after = _fits(base), _fits(head)
    depth = {
        level: i for side in (base, head) for keys in side.profiles.values() for i, level in enumerate(keys)
    }
    rows = []
    for key in sorted(before.keys() | after.keys(), key=lambda k: (k[0], k[1], depth[k[2]], k[2])):
        queue, identity, level = key
        old, new = before.get(key), after.get(key)
        rows.append(
            {
                "queue": queue,
                "identity": dict(identity),
                "level": level,
                "before": old,
                "after": new,
                "changed": old != new,
            }
        )
    return rows


def _fits(side: Side) -> dict[tuple[str, Any, str], Fit]:
    found: dict[tuple[str, Any, str], Fit] = {}
    members = _members(side)
    by_flavor: dict[tuple[str, tuple[str, ...]], dict[str, Fit]] = {}  # queues share flavors
    for queue in side.queues.values():
        for flavor in queue.flavors.values():
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
    flavors = {(f.identity, f.profile) for q in side.queues.values() for f in q.flavors.values()}
    nodes = side.nodes
    return {
        (identity, profile): [
            n for n in side.members.get(profile, []) if all(nodes[n].labels.get(k) == v for k, v in identity)
        ]
        for identity, profile in flavors
    }


def _better(a: Fit, b: Fit) -> bool:
    return (a["gpus"], a["pods"]) > (b["gpus"], b["pods"])


def _flavor_fit(side: Side, queue: QueueFacts, flavor: FlavorFacts, nodes: list[str]) -> dict[str, Fit]:
    tolerations = flavor.spec.get("tolerations") or []
    nodes = [n for n in nodes if _usable(side.nodes[n], tolerations)]
    if not nodes:  # every node cordoned or tainted against the flavor: nothing fits anywhere
        return {level: {"pods": 0, "gpus": 0} for level in side.profiles[flavor.profile]}
    resources = queue.covered or tuple(sorted({r for n in nodes for r in side.nodes[n].allocatable}))
    # Fleets repeat a few allocatable values: judge each distinct one once.
    signature = {n: tuple(map(side.nodes[n].allocatable.get, resources)) for n in nodes}
    counts = Counter(signature.values())
    shape = _shape(counts)
    holds = {s for s in counts if all(a >= b for a, b in zip(_amounts(s), shape, strict=True))}
    fitting = [n for n in nodes if signature[n] in holds]
    gpus = sum(int(amount) for r, amount in zip(resources, shape, strict=True) if is_gpu(r))
    fits = {}
    for level, pods in zip(side.profiles[flavor.profile], largest_domains(side, fitting), strict=True):
        fits[level] = {"pods": pods, "gpus": pods * gpus}
    return fits


def _usable(node: Node, tolerations: list[dict[str, Any]]) -> bool:
    """Whether Kueue's TAS may place a pod of the flavor there: not cordoned, and every taint
    that keeps pods off (NoSchedule, NoExecute) tolerated by the flavor's tolerations."""
    if node.unschedulable:
        return False
    return all(
        taint[2] not in BLOCKING or any(tolerates(t, taint) for t in tolerations) for taint in node.taints
    )


def largest_domains(side: Side, nodes: list[str]) -> list[int]:
    """Per level of the nodes' profile, coarsest first: the node count of its fullest domain.
    One pass over the nodes (counted by their domain just above hostname), then over domains."""
    parents = Counter(side.domain_of[n][:-1] for n in nodes)
    depth = max((len(p) for p in parents), default=0)
    largest = []
    for cut in range(1, depth + 1):
        per_domain: Counter[tuple[str, ...]] = Counter()
        for path, count in parents.items():
            per_domain[path[:cut]] += count
        largest.append(max(per_domain.values()))
    return [*largest, 1 if nodes else 0]  # a hostname domain is one node


def _shape(counts: Counter[tuple[str | None, ...]]) -> tuple[Decimal, ...]:
    """The allocatable most of the nodes have (ties: the smallest), as amounts."""
    if not counts:
        return ()
    best = max(counts.values())
    return min(_amounts(s) for s, c in counts.items() if c == best)


def _amounts(signature: tuple[str | None, ...]) -> tuple[Decimal, ...]:
    return tuple(parse(v) if v is not None else Decimal(0) for v in signature)
