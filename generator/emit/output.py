"""What a render changes in rendered/: files and the nodes whose NodeFeatures change."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat

from ..compile.manifests import NODE_NAME_LABEL
from ..parse import ParseError, parse_text
from .tree import Tree

FEATURE_FILES = "nodefeatures-"


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
    """How many nodes have a NodeFeature that is new, changed or gone (the status summary's
    mutatedNodes, docs/reference/cli.md). Only NodeFeature files that changed are looked at, and a document is
    compared as a whole: the tree knows each new document's node; an old one that is no longer
    written is parsed to learn its node (a node that left, or a label change)."""
    paths = set(tree.features) | {p for p in old if _is_feature_file(p)}
    changed = [p for p in paths if tree.files.get(p) != old.get(p)]
    if not any(p in old for p in changed):  # (a first render) every document is new
        return len(set(chain.from_iterable(map(tree.features.get, changed, repeat(())))))
    after = {
        text: node
        for p in changed
        for text, node in zip(_documents(tree.files.get(p, "")), tree.features.get(p, []), strict=True)
    }
    before = {d for p in changed for d in _documents(old.get(p, ""))}
    nodes = {node for text, node in after.items() if text not in before}
    nodes.update(_node_of(d) for d in before if d not in after)
    nodes.discard("")
    return len(nodes)


def _is_feature_file(path: str) -> bool:
    return path.startswith("labels/") and path.rpartition("/")[2].startswith(FEATURE_FILES)


def _documents(text: str) -> list[str]:
    """The documents of a file tasgen wrote, as the tree made them (header dropped)."""
    return text.rstrip("\n").split("\n---\n")[1:] if text else []


def _node_of(document: str) -> str:
    try:
        bodies = parse_text(document)
    except ParseError:
        return ""  # an unreadable old document (a hand edit) is simply replaced
    body = bodies[0] if bodies else None
    labels = body.get("metadata", {}).get("labels", {}) if isinstance(body, dict) else {}
    return str(labels.get(NODE_NAME_LABEL, "")) if isinstance(labels, dict) else ""
