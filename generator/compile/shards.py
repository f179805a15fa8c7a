"""Which labels folder holds a node's NodeFeatures (GeneratorConfig ``output``).

Argo CD and Flux run ``kustomize build`` on every path they sync, and its time grows faster
than linearly with the objects in a path; one Argo CD Application also keeps a status entry per
object. So NodeFeatures are spread over a fixed number of shards, each its own kustomization.

A node's shard is a stable hash of its rack path (its values of its profile's levels above the
hostname; the node's name when it has none) into ``nodeFeatureShards`` buckets. Hence all
NodeFeatures of one rack share one shard, and a node changes shard only when its own rack path
or the bucket count changes, never because other nodes came or went. The bucket count is fixed
in the config rather than derived from the fleet size for that reason; a shard that outgrows
``maxObjectsPerShard`` is an error that says which count would fit.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import not_

from ..model import HOSTNAME_KEY, Inventory, Manifest, Source, Where
from ..rules import Hit

DEFAULT_SHARDS = 1
DEFAULT_MAX_OBJECTS = 2000
LABELS = "labels"


@dataclass
class Sharding:
    count: int = DEFAULT_SHARDS
    max_objects: int = DEFAULT_MAX_OBJECTS
    _folders: dict[str, str] = field(default_factory=dict, repr=False)  # domain -> folder

    @staticmethod
    def of(output: Mapping[str, int]) -> Sharding:
        return Sharding(
            output.get("nodeFeatureShards", DEFAULT_SHARDS),
            output.get("maxObjectsPerShard", DEFAULT_MAX_OBJECTS),
        )

    def folder(self, domain: str) -> str:
        """labels/ itself with one shard (a small fleet's layout), else labels/shard-NNN."""
        found = self._folders.get(domain)
        if found is None:
            found = self._folders[domain] = self._folder(domain)
        return found

    def _folder(self, domain: str) -> str:
        if self.count == 1:
            return LABELS
        bucket = int.from_bytes(hashlib.sha256(domain.encode()).digest()[:8], "big") % self.count
        return f"{LABELS}/shard-{bucket:0{len(str(self.count - 1))}d}"

    def folders_of(self, nodes: Iterable[str], domain_of: Mapping[str, str]) -> dict[str, str]:
        """Node name -> its labels folder: its rack path's, or its own name's for a node
        without one (each distinct rack path hashed once, the nodes mapped at C speed)."""
        names = list(nodes)
        domains = list(map(domain_of.get, names, repeat("")))
        folders = {domain: self.folder(domain) if domain else "" for domain in set(domains)}
        found = dict(zip(names, map(folders.__getitem__, domains), strict=True))
        for node in compress(names, map(not_, domains)):
            found[node] = self.folder(node)  # a hostname-only node
        return found


def objects_per_folder(folder_of: Mapping[str, str], ready: Iterable[Source]) -> Counter[str]:
    """NodeFeatures per labels folder: one profile object per node, one per writing source
    that states the node."""
    counts = Counter(folder_of.values())
    for source in ready:
        assert source.snapshot is not None
        counts.update(map(folder_of.__getitem__, source.snapshot.nodes))
    return counts


def objects_per_group(
    nodes: Iterable[str], domain_of: Mapping[str, str], ready: Iterable[Source]
) -> Counter[str]:
    """NodeFeatures per rack path (a hostname-only node is a group of its own): the groups
    that always share a shard, whatever the number of shards."""
    return objects_per_folder(
        {node: domain_of.get(node) or f"{HOSTNAME_KEY}={node}\n" for node in nodes}, ready
    )


def oversized(
    sharding: Sharding,
    counts: Counter[str],
    inventory: Inventory,
    groups: Callable[[], Counter[str]] | None = None,
) -> list[Hit]:
    """A hit of SHARD_SIZE for the fullest folder over the bound, naming a count that fits, or,
    when one rack path alone is over it (``groups``, asked only then), that rack path: more
    shards cannot split it."""
    if not counts:
        return []
    most = max(counts.values())
    if most <= sharding.max_objects:
        return []
    # the first of the fullest by name: most_common would name the first the nodes came to
    folder = min(f for f, count in counts.items() if count == most)
    by_group = groups() if groups is not None else Counter[str]()
    largest = max(by_group.values(), default=0)
    if largest > sharding.max_objects:
        group = min(g for g, count in by_group.items() if count == largest)
        shown = ", ".join(group.splitlines())
        message = (
            f"{folder}/ would hold {most} NodeFeatures, over maxObjectsPerShard {sharding.max_objects}, "
            f"and the nodes of one rack path, {shown}, alone have {largest}: a rack path's "
            "NodeFeatures always share a shard, so more shards cannot split it; state a finer "
            f"level below it in its source, or raise spec.output.maxObjectsPerShard to {largest} "
            "or more"
        )
        return [Hit(_where(inventory), message)]
    # Hashing spreads racks unevenly: aim at half the bound on average.
    suggested = min(1000, 2 ** math.ceil(math.log2(max(1, 2 * sum(counts.values()) / sharding.max_objects))))
    message = (
        f"{folder}/ would hold {most} NodeFeatures, over maxObjectsPerShard {sharding.max_objects} "
        f"(kustomize build and Argo CD slow down steeply past it); set GeneratorConfig "
        f"spec.output.nodeFeatureShards to {min(1000, max(suggested, 2 * sharding.count))} or more "
        f"(now {sharding.count}; {sum(counts.values())} NodeFeatures in all)"
    )
    return [Hit(_where(inventory), message)]


def crowded(sharding: Sharding, objects: Iterable[Manifest], inventory: Inventory) -> list[Hit]:
    """A hit of PATH_SIZE per synced folder besides the labels shards (Topologies and flavors,
    queues and LocalQueues) over the bound: it cannot be sharded, so a warning that says what
    it costs and what shrinks it."""
    counts = Counter(manifest.file.partition("/")[0] for manifest in objects)
    return [
        Hit(
            _where(inventory),
            f"{folder}/ would hold {count} objects, over maxObjectsPerShard {sharding.max_objects}: "
            "kustomize build, which Argo CD and Flux run on every synced folder, slows down steeply "
            "past it (fewer LocalQueues or hardware entries per ClusterQueuePlan keep it small)",
        )
        for folder, count in sorted(counts.items())
        if count > sharding.max_objects
    ]


def _where(inventory: Inventory) -> Where:
    settings = inventory.settings
    if settings.where is not None:
        return settings.where.at("output") if settings.output else settings.where
    # no GeneratorConfig: the first node, else (queues/ crowded by LocalQueues alone) the first plan
    first = next(iter(inventory.nodes.values()), None) or next(iter(inventory.plans.values()))
    return first.where
