"""Fit preview: per ClusterQueue, flavor and level, the largest slot before and after the change,
counted by ``tasgen capacity``'s engine (:mod:`generator.fit.capacity`) on each revision's
cluster: whole-node pods (the GPUs most of the flavor's nodes have) that the best domain of the
level holds, within what the queue's quota admits on the flavor. Explained in
docs/explanation/plan.md ("Fit preview")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...fit.capacity import Size, flavor_slots, gpu_resource, whole_node
from ...fit.cluster import Cluster
from ...fit.engine import Engine
from ...fit.inventory import cluster_of
from ...pipeline import Compilation
from .shape import Fit, FitRow
from .side import Side

#: (queue, flavor)
Key = tuple[str, str]


@dataclass(frozen=True)
class _Revision:
    engine: Engine
    side: Side

    def flavors(self) -> Iterator[Key]:
        """Every queue's flavors, in the queue's order."""
        for name in sorted(self.engine.cluster.queues):
            queue = self.engine.cluster.queues[name]
            for flavor in dict.fromkeys(f for g in queue.groups for f, _ in g.flavors):
                yield name, flavor

    def levels(self, flavor: str) -> tuple[str, ...] | None:
        """The flavor's Topology levels, coarsest first; None: not topology-aware."""
        idx = self.engine.index(flavor)
        return idx.levels if idx is not None else None

    def node_gpus(self, flavor: str) -> int:
        idx = self.engine.index(flavor)
        resource = gpu_resource(idx) if idx is not None else None
        return whole_node(idx, resource) if idx is not None and resource is not None else 0

    def figures(self, key: Key, gpus: int) -> dict[str, Fit]:
        """Per level, the largest slot of ``gpus``-GPU pods (none on a flavor whose nodes are
        all cordoned or tainted against it: its levels stay, with no pod)."""
        queue, flavor = self.engine.cluster.queues[key[0]], key[1]
        found = flavor_slots(self.engine, queue, flavor, (Size(gpus),))
        counted = {level.level: level.slots[0] for level in found.levels if level.slots}
        nothing = Fit(pods=0, gpus=0, gpus_per_pod=gpus, by_quota=False)
        return {
            level: Fit(
                pods=counted[level].largest,
                gpus=counted[level].largest * gpus,
                gpus_per_pod=gpus,
                by_quota=counted[level].by_quota,
            )
            if level in counted
            else nothing
            for level in self.levels(flavor) or ()
        }

    def identity(self, key: Key) -> dict[str, str] | None:
        facts = self.side.queues.get(key[0])
        flavor = facts.flavors.get(key[1]) if facts is not None else None
        return dict(flavor.identity) if flavor is not None else None


def compare_slots(
    base: Compilation | None, head: Compilation, before: Side, after: Side
) -> tuple[FitRow, ...]:
    """The rows of every (queue, flavor, level) either revision has, for flavors with a
    Topology whose nodes have GPUs on either side. A pod's GPUs are the head's node shape
    (else the base's), so that both figures count the same pods."""
    old = _Revision(Engine(_cluster(base)), before)
    new = _Revision(Engine(_cluster(head)), after)
    had, has = list(old.flavors()), list(new.flavors())
    rows = []
    for key in dict.fromkeys([*has, *had]):
        gpus = (new.node_gpus(key[1]) if key in has else 0) or (old.node_gpus(key[1]) if key in had else 0)
        if gpus == 0:
            continue  # no GPU resource, or no Topology: no slot to count
        was = old.figures(key, gpus) if key in had else {}
        now = new.figures(key, gpus) if key in has else {}
        identity = new.identity(key) or old.identity(key) or {}
        levels = [*(new.levels(key[1]) or ()), *(old.levels(key[1]) or ())]
        for level in dict.fromkeys(levels):
            a, b = was.get(level), now.get(level)
            rows.append(
                FitRow(
                    queue=key[0],
                    flavor=key[1],
                    identity=identity,
                    level=level,
                    before=a,
                    after=b,
                    changed=a != b,
                )
            )
    return tuple(rows)


def _cluster(compiled: Compilation | None) -> Cluster:
    """A revision's cluster; none (no queue) when it has no inventory or does not compile."""
    return cluster_of(compiled) if compiled is not None and not compiled.failed else Cluster([])
