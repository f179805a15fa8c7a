"""Which Node labels `tasgen import-nodes` keeps: not the ones tasgen itself puts on Nodes
(the profile key and every writing source's levels, projected by NFD), and not volatile
ones (a timestamp that changes on every refresh), so that importing right after a sync
changes nothing and a refresh's diff shows only real changes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.load.files import load_files, read_inventory
from generator.model import PROFILE_KEY, Settings
from generator.validate import documents
from generator.validate.labels import READ_ONLY_PARENTS

_KINDS = ("TopologySource", "GeneratorConfig")


@dataclass(frozen=True)
class LabelFilter:
    owned: frozenset[str] = frozenset({PROFILE_KEY})  # keys tasgen writes
    volatile: tuple[str, ...] = Settings().volatile_label_keys  # keys, or prefixes ending in '*'

    def keeps(self, key: str) -> bool:
        if key in self.owned:
            return False
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
    written = {key for src in sources if src.writes for key in src.levels if key not in READ_ONLY_PARENTS}
    return LabelFilter(frozenset({PROFILE_KEY, *written}), settings.volatile_label_keys)
