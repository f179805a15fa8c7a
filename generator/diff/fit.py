"""Fit preview: per queue and hardware identity, the largest PodSet that fits inside one domain
of each level, before and after.

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

from generator.diff.side import FlavorFacts, QueueFacts, Side
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
    for queue in side.queues.values():
        for flavor in queue.flavors.values():
            nodes = members.get((flavor.identity, flavor.profile), [])
            for level, fit in _flavor_fit(side, queue, flavor, nodes).items():
                key = (queue.name, flavor.identity, level)
                if key not in found or _better(fit, found[key]):
                    found[key] = fit
    return found


def _members(side: Side) -> dict[tuple[Any, str], list[str]]:
    """(identity, profile) -> its nodes, for the identities the queues use."""
    identities = {f.identity for q in side.queues.values() for f in q.flavors.values()}
    result: dict[tuple[Any, str], list[str]] = {}
    for identity in identities:
        for name in sorted(side.nodes):
            labels = side.nodes[name].labels
            if all(labels.get(k) == v for k, v in identity):
                result.setdefault((identity, side.profile_of[name]), []).append(name)
    return result


def _better(a: Fit, b: Fit) -> bool:
    return (a["gpus"], a["pods"]) > (b["gpus"], b["pods"])


def _flavor_fit(side: Side, queue: QueueFacts, flavor: FlavorFacts, nodes: list[str]) -> dict[str, Fit]:
    resources = queue.covered or tuple(sorted({r for n in nodes for r in side.nodes[n].allocatable}))
    shape = _shape(side, nodes, resources)
    fitting = [n for n in nodes if _holds(side.nodes[n].allocatable, shape)]
    gpus = sum(int(amount) for r, amount in shape.items() if is_gpu(r))
    fits = {}
    for depth, level in enumerate(side.profiles[flavor.profile], start=1):
        per_domain = Counter(side.domain_of[n][:depth] for n in fitting)
        pods = max(per_domain.values(), default=0)
        fits[level] = {"pods": pods, "gpus": pods * gpus}
    return fits


def _shape(side: Side, nodes: list[str], resources: tuple[str, ...]) -> dict[str, Decimal]:
    """The allocatable most of the nodes have (ties: the smallest), as amounts."""
    counts = Counter(tuple(_amount(side.nodes[n].allocatable, r) for r in resources) for n in nodes)
    if not counts:
        return {}
    best = max(counts.values())
    return dict(zip(resources, min(s for s, c in counts.items() if c == best), strict=True))


def _amount(allocatable: dict[str, str], resource: str) -> Decimal:
    value = allocatable.get(resource)
    return parse(value) if value is not None else Decimal(0)


def _holds(allocatable: dict[str, str], shape: dict[str, Decimal]) -> bool:
    return all(_amount(allocatable, r) >= amount for r, amount in shape.items())
