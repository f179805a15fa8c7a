"""The labels each node's profile NodeFeature had in the previous render (its profile and
flavor labels): what decides which nodes keep their flavors until idle (generator/compile/pins.py).
Read from rendered/'s texts at the first lookup. A file that does not parse, or an object of another
shape, is skipped, as in generator/load/previous.py: rendered/ is tasgen's own output."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..model import PROFILES_FEATURE_NAME
from ..parse import ParseError, parse_text

#: the name of a labels folder's file of profile NodeFeatures (compile/manifests.py)
PROFILES_FILE = f"nodefeatures-{PROFILES_FEATURE_NAME}.yaml"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"


def rows_of(texts: Mapping[str, str]) -> dict[str, Mapping[str, str]]:
    """Node -> its labels, from every labels folder's profile NodeFeatures in ``texts``
    (rendered/-relative path -> text)."""
    found: dict[str, Mapping[str, str]] = {}
    shared: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}
    for path in sorted(p for p in texts if p.startswith("labels/") and p.endswith("/" + PROFILES_FILE)):
        try:
            documents = parse_text(texts[path])
        except ParseError:
            continue
        for doc in documents:
            node, labels = _row(doc)
            if node is not None and labels is not None:
                items = tuple(sorted(labels.items()))
                found[node] = shared.get(items) or shared.setdefault(items, dict(items))
    return found


def _row(doc: object) -> tuple[str | None, dict[str, str] | None]:
    if not isinstance(doc, dict) or doc.get("kind") != "NodeFeature":
        return None, None
    meta, spec = doc.get("metadata"), doc.get("spec")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    node = labels.get(NODE_NAME_LABEL) if isinstance(labels, dict) else None
    values = spec.get("labels") if isinstance(spec, dict) else None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        return None, None
    return (node if isinstance(node, str) else None), {str(k): v for k, v in values.items()}


class PreviousRows(Mapping[str, Mapping[str, str]]):
    """:func:`rows_of` ``texts``, parsed at the first read."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._found: dict[str, Mapping[str, str]] | None = None

    def _profiles(self) -> dict[str, Mapping[str, str]]:
        if self._found is None:
            self._found = rows_of(self._texts)
        return self._found

    def __getitem__(self, node: str) -> Mapping[str, str]:
        return self._profiles()[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._profiles())

    def __len__(self) -> int:
        return len(self._profiles())
