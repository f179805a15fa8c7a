"""What slots a flavor offers: per level of its Topology, how many pods of a size (GPUs per pod)
the best domain holds and how many domains hold a given number of them, as Kueue's
topology-aware scheduling counts pods (:func:`generator.fit.engine.per_domain`), bounded by what
the queue's quota lets it admit on the flavor. The pods ask for the GPUs alone and tolerate the
flavor's nodeTaints (the flavor's own tolerations apply, as for any pod). ``tasgen capacity``
reports it; explained in docs/explanation/fit.md ("Capacity").

A size's cost is the flavor's distinct node kinds and domain compositions, not its nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .cluster import Cluster, ClusterQueue
from .engine import Engine, per_domain
from .index import FlavorIndex


def is_gpu(resource: str) -> bool:
    return resource.rsplit("/", 1)[-1] == "gpu"  # nvidia.com/gpu, amd.com/gpu, ...


@dataclass(frozen=True, order=True)
class Size:
    """Pods of ``gpus`` GPUs each, ``pods`` of them wanted in one domain."""

    gpus: int
    pods: int = 1


@dataclass(frozen=True)
class Slots:
    largest: int  # pods of the size the best domain holds (within quota)
    holding: int  # domains that hold ``Size.pods`` of them (0 when quota holds fewer)
    by_quota: bool = False  # the quota holds fewer pods than the best domain


@dataclass(frozen=True)
class LevelSlots:
    level: str
    domains: int
    slots: tuple[Slots, ...]  # one per size, in the sizes' order


@dataclass(frozen=True)
class FlavorSlots:
    flavor: str
    topology: str | None  # None: not topology-aware (no level to count)
    resource: str | None  # the GPU resource of its nodes; None: they have none
    nodes: int
    quota: int | None  # GPUs the queue can admit on the flavor (None: no GPU resource)
    levels: tuple[LevelSlots, ...]


def gpu_resource(idx: FlavorIndex) -> str | None:
    """The GPU resource the flavor's nodes list (the first by name when they list several),
    read from its node kinds; listed at 0 still counts, as on nodes whose GPUs are all used."""
    found = {r for allocatable, _ in idx.whole.kinds for r, _ in allocatable if is_gpu(r)}
    return min(found) if found else None


def whole_node(idx: FlavorIndex, resource: str) -> int:
    """The GPUs most of the flavor's nodes have (ties: the most GPUs); 0 when none has any."""
    if idx.node_level:  # a kind per node shape, counted by the leaves (nodes) that have it
        leaves = idx.whole.counts[-1]
        counts = Counter[int]()
        for kind, (allocatable, _) in enumerate(idx.whole.kinds):
            counts[dict(allocatable).get(resource, 0)] += leaves[kind]
    else:
        counts = Counter(n.allocatable.get(resource, 0) for n in idx.nodes)
    counts.pop(0, None)
    if not counts:
        return 0
    best = max(counts.values())
    return max(g for g, c in counts.items() if c == best)


def quota_pods(
    cluster: Cluster, queue: ClusterQueue, flavor: str, resource: str, size: Size, *, with_usage: bool
) -> int:
    """How many pods of the size the queue's quota admits on the flavor: its nominal quota and
    what its cohort lends within its borrowingLimit (Kueue's ``PotentialAvailable``), less
    what admitted Workloads reserve when ``with_usage`` (Kueue's ``Available``); the flavor's ``pods``
    quota too when the GPUs' resource group covers ``pods``."""
    bound = quota_gpus(cluster, queue, flavor, resource, with_usage=with_usage) // size.gpus
    group = queue.group_of(resource)
    if group is not None and "pods" in group.covered:
        bound = min(bound, _most(cluster, queue, flavor, "pods", with_usage=with_usage))
    return max(0, bound)


def quota_gpus(cluster: Cluster, queue: ClusterQueue, flavor: str, resource: str, *, with_usage: bool) -> int:
    """The GPUs the queue's quota admits on the flavor (0 when no resource group of the queue
    offers the flavor for them)."""
    group = queue.group_of(resource)
    if group is None or all(name != flavor for name, _ in group.flavors):
        return 0
    return max(0, _most(cluster, queue, flavor, resource, with_usage=with_usage))


def _most(cluster: Cluster, queue: ClusterQueue, flavor: str, resource: str, *, with_usage: bool) -> int:
    most = cluster.potential(queue, flavor, resource)
    return min(most, cluster.available(queue, flavor, resource)) if with_usage else most


def slots(domains: Sequence[tuple[int, int]], size: Size, bound: int) -> Slots:
    """``domains``: (pods of the size a domain holds, how many domains hold that many)."""
    best = max((p for p, _ in domains), default=0)
    holding = sum(n for p, n in domains if p >= size.pods) if bound >= size.pods else 0
    return Slots(min(best, bound), holding, by_quota=bound < best)


def flavor_slots(engine: Engine, queue: ClusterQueue, flavor: str, sizes: Sequence[Size]) -> FlavorSlots:
    """The flavor's slots for the queue on the engine's cluster: empty, or with live usage
    when ``engine.with_usage``."""
    idx = engine.index(flavor)
    if idx is None:
        found = engine.cluster.flavors.get(flavor)
        return FlavorSlots(flavor, found.topology if found else None, None, 0, None, ())
    resource = gpu_resource(idx)
    if resource is None:
        levels = tuple(LevelSlots(level, domains, ()) for level, domains in _domains(idx))
        return FlavorSlots(flavor, idx.topology, None, len(idx.nodes), None, levels)
    cluster, with_usage = engine.cluster, engine.with_usage
    # pods meant for the flavor tolerate its nodeTaints (else Kueue never assigns it)
    tolerations = [
        {"key": k, "operator": "Equal", "value": v, "effect": e} for k, v, e in idx.flavor.node_taints
    ]
    counted = {g: per_domain(idx, {resource: g}, tolerations) for g in sorted({s.gpus for s in sizes})}
    bounds = [quota_pods(cluster, queue, flavor, resource, s, with_usage=with_usage) for s in sizes]
    levels = tuple(
        LevelSlots(
            level,
            domains,
            tuple(slots(counted[s.gpus][depth], s, bound) for s, bound in zip(sizes, bounds, strict=True)),
        )
        for depth, (level, domains) in enumerate(_domains(idx))
    )
    quota = quota_gpus(cluster, queue, flavor, resource, with_usage=with_usage)
    return FlavorSlots(flavor, idx.topology, resource, len(idx.nodes), quota, levels)


def _domains(idx: FlavorIndex) -> list[tuple[str, int]]:
    """Each level and how many domains it has."""
    return [(level, sum(idx.whole.counts[d].values())) for d, level in enumerate(idx.levels)]
