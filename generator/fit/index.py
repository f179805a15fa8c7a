"""The domains of one flavor, indexed once: every level's domains reduced to their
*composition* (which kinds of nodes they hold, and how many of each), so that judging a PodSet
costs the distinct node kinds and compositions, not the nodes.

A node kind is its allocatable and taints (what decides how many pods of a PodSet it takes).
Fleets repeat a few kinds, and racks, blocks and zones repeat a few compositions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..model import HOSTNAME_KEY, Taint
from .cluster import Cluster, Flavor, NodeFacts

#: a node kind: sorted allocatable items and taints
Kind = tuple[tuple[tuple[str, int], ...], tuple[Taint, ...]]


@dataclass
class Levels:
    """Per level (coarsest first): composition id -> how many domains have it, and each
    composition's children: (child composition id at the level below, how many)."""

    kinds: list[Kind]
    counts: list[Counter[int]]  # per level: composition -> domains
    children: list[dict[int, tuple[tuple[int, int], ...]]]  # per level above the leaves
    leaves: int  # leaf domains (nodes, when the lowest level is the hostname)


@dataclass
class FlavorIndex:
    flavor: Flavor
    topology: str
    levels: tuple[str, ...]
    nodes: list[NodeFacts]
    whole: Levels
    #: the same, for the nodes a node filter keeps (a PodSet's nodeSelector or affinity)
    filtered: dict[object, tuple[Levels, Counter[str]]] = field(default_factory=dict)

    @property
    def node_level(self) -> bool:
        """Whether the lowest level is the hostname: only then does Kueue judge each node's
        taints and labels against the PodSet."""
        return bool(self.levels) and self.levels[-1] == HOSTNAME_KEY

    def restricted(self, key: object, keep: Callable[[NodeFacts], str | None]) -> tuple[Levels, Counter[str]]:
        """The levels of the nodes ``keep`` passes (it returns why a node is left out, or
        None), and how many it left out per reason; computed once per ``key``."""
        if key not in self.filtered:
            kept, dropped = [], Counter[str]()
            for node in self.nodes:
                why = keep(node)
                if why is None:
                    kept.append(node)
                else:
                    dropped[why] += 1
            self.filtered[key] = (_levels(kept, self.levels, self.node_level), dropped)
        return self.filtered[key]


def build(cluster: Cluster, flavor: Flavor) -> FlavorIndex | None:
    """The flavor's index; None when it is not topology-aware or its Topology is missing."""
    if flavor.topology is None or flavor.topology not in cluster.topologies:
        return None
    levels = cluster.topologies[flavor.topology]
    # Kueue's TAS cache: nodes with the flavor's labels and every level's label (cordoned and
    # NotReady nodes are not in it: the inventory's Nodes are taken as Ready)
    nodes = [
        n
        for n in cluster.nodes
        if all(n.labels.get(k) == v for k, v in flavor.node_labels.items())
        and all(level in n.labels for level in levels)
    ]
    lowest = bool(levels) and levels[-1] == HOSTNAME_KEY
    return FlavorIndex(flavor, flavor.topology, levels, nodes, _levels(nodes, levels, lowest))


def _levels(nodes: list[NodeFacts], levels: tuple[str, ...], node_level: bool) -> Levels:
    kinds: dict[Kind, int] = {}
    leaf_values: dict[tuple[str, ...], int] = {}  # leaf domain -> its kind
    leaf_capacity: dict[tuple[str, ...], Counter[str]] = {}
    for node in nodes:
        values = tuple(node.labels[k] for k in levels)
        if node_level:
            kind: Kind = (tuple(sorted(node.allocatable.items())), node.taints)
            leaf_values.setdefault(values, kinds.setdefault(kind, len(kinds)))
        else:  # a leaf domain above nodes adds its nodes' capacity, and no taint is judged
            leaf_capacity.setdefault(values, Counter()).update(node.allocatable)
    for values, capacity in leaf_capacity.items():
        kind = (tuple(sorted(capacity.items())), ())
        leaf_values[values] = kinds.setdefault(kind, len(kinds))
    depth = len(levels)
    counts: list[Counter[int]] = [Counter() for _ in range(depth)]
    children: list[dict[int, tuple[tuple[int, int], ...]]] = [{} for _ in range(depth)]
    if depth == 0:
        return Levels(list(kinds), counts, children, 0)
    current: Mapping[tuple[str, ...], int] = leaf_values
    counts[depth - 1].update(current.values())
    for level in range(depth - 2, -1, -1):
        grouped: dict[tuple[str, ...], Counter[int]] = {}
        for values, comp in current.items():
            grouped.setdefault(values[: level + 1], Counter())[comp] += 1
        interned: dict[tuple[tuple[int, int], ...], int] = {}
        parents: dict[tuple[str, ...], int] = {}
        for values, members in grouped.items():
            shape = tuple(sorted(members.items()))
            parents[values] = interned.setdefault(shape, len(interned))
        children[level] = {comp: shape for shape, comp in interned.items()}
        counts[level].update(parents.values())
        current = parents
    return Levels(list(kinds), counts, children, len(leaf_values))
