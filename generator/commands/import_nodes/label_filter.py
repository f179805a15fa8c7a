"""Which Node labels `tasgen import-nodes` keeps: not the ones tasgen itself puts on Nodes
(the profile and flavor labels, and a writing source's levels on the nodes it selects,
projected by NFD), and not volatile ones (a timestamp that changes on every refresh), so that
importing right after a sync changes nothing and a refresh's diff shows only real changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...load.files import load_files, read_inventory
from ...model import FLAVOR_KEY_PREFIX, PROFILE_KEY, TRANSIT_KEY, Selector, Settings
from ...validate import documents
from ...validate.labels import READ_ONLY_PARENTS

_KINDS = ("TopologySource", "GeneratorConfig")


@dataclass(frozen=True)
class LabelFilter:
    owned: frozenset[str] = frozenset({PROFILE_KEY})  # keys tasgen writes on every node
    volatile: tuple[str, ...] = Settings().volatile_label_keys  # keys, or prefixes ending in '*'
    #: each writing source's selector and the keys it writes: dropped only on the nodes it
    #: selects (a read-only source may read the same key on other nodes, set by hand there)
    written: tuple[tuple[Selector, frozenset[str]], ...] = ()

    def keeps(self, key: str, labels: Mapping[str, str]) -> bool:
        """Whether a node with these (imported) labels keeps ``key``."""
        if key in self.owned or any(key in keys and s.selects(labels) for s, keys in self.written):
            return False
        if key.startswith(FLAVOR_KEY_PREFIX) or key == TRANSIT_KEY:
            return False  # the flavor labels of the profile NodeFeature, tasgen's own too
        return not any(key.startswith(v[:-1]) if v.endswith("*") else key == v for v in self.volatile)


def of_inventory(root: Path) -> LabelFilter:
    """The filter an inventory implies; the defaults when there is no inventory there. Only
    TopologySources and the GeneratorConfig that pass their schema count (validate reports
    the others)."""
    if not root.is_dir():
        return LabelFilter()
    docs = [d for f in load_files(read_inventory(root)) for d in f.documents if d.kind in _KINDS]
    found = documents.catalog(docs)
    settings, _ = documents.settings(found.of("GeneratorConfig"))
    sources = [documents.source(d) for d in found.of("TopologySource")]
    written = tuple(
        (src.selector, frozenset(key for key in src.levels if key not in READ_ONLY_PARENTS))
        for src in sources
        if src.writes
    )
    return LabelFilter(frozenset({PROFILE_KEY}), settings.volatile_label_keys, written)
