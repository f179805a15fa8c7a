"""What a render changes in rendered/: files and the nodes whose NodeFeatures change."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from generator.emit.tree import Tree

FEATURE_FILES = "labels/nodefeatures-"

_NAME = re.compile(r"^  name: (.+)$", re.MULTILINE)
_NODE = re.compile(r"^    nfd\.node\.kubernetes\.io/node-name: (.+)$", re.MULTILINE)


@dataclass
class Changes:
    changed: dict[str, str] = field(default_factory=dict)  # path -> new text
    removed: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.changed and not self.removed


def changes(new: Mapping[str, str], old: Mapping[str, str]) -> Changes:
    result = Changes()
    result.changed = {p: t for p, t in new.items() if old.get(p) != t}
    result.removed = sorted(p for p in old if p not in new)
    return result


def first_difference(old: str, new: str) -> int:
    """The 1-based line where two texts first differ (for stale-render problems)."""
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=False), start=1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


def mutated_nodes(tree: Tree, old: Mapping[str, str]) -> int:
    """How many nodes have a NodeFeature that is new, changed or gone (seed's
    status.mutatedNodes). Only files that changed are read document by document."""
    nodes: set[str] = set()
    paths = set(tree.features) | {p for p in old if p.startswith(FEATURE_FILES)}
    for path in paths:
        if tree.files.get(path) == old.get(path):
            continue
        after = {name: (node, text) for name, node, text in tree.features.get(path, [])}
        before = _features(old.get(path, ""))
        nodes.update(
            node
            for name, (node, text) in (before | after).items()
            if before.get(name, ("", ""))[1] != after.get(name, ("", ""))[1]
        )
    return len(nodes)


def _features(text: str) -> dict[str, tuple[str, str]]:
    """NodeFeature name -> (node, document text), read from the text tasgen itself wrote."""
    result: dict[str, tuple[str, str]] = {}
    for document in text.rstrip("\n").split("\n---\n")[1:]:
        name, node = _NAME.search(document), _NODE.search(document)
        if name and node:
            result[name[1]] = (node[1].strip('"'), document)
    return result
