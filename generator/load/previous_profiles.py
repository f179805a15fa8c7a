"""The profile label each node had in the previous render: what decides which nodes keep a
retained flavor's profile (generator/compile/pins.py). Read from rendered/'s texts, only when a
render asks (when a queue retains a flavor): parsing every node's NodeFeature costs time a
render without retention does not spend. A file that does not parse, or an object of another
shape, is skipped, as in generator/load/previous.py: rendered/ is tasgen's own output."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from generator.model import PROFILE_KEY, PROFILES_FEATURE_NAME
from generator.parse import ParseError, parse_text

#: the name of a labels folder's file of profile NodeFeatures (compile/manifests.py)
PROFILES_FILE = f"nodefeatures-{PROFILES_FEATURE_NAME}.yaml"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"


def profiles_of(texts: Mapping[str, str]) -> dict[str, str]:
    """Node -> profile, from every labels folder's profile NodeFeatures in ``texts``
    (rendered/-relative path -> text)."""
    found: dict[str, str] = {}
    for path in sorted(p for p in texts if p.startswith("labels/") and p.endswith("/" + PROFILES_FILE)):
        try:
            documents = parse_text(texts[path])
        except ParseError:
            continue
        for doc in documents:
            node, profile = _row(doc)
            if node is not None and profile is not None:
                found[node] = profile
    return found


def _row(doc: object) -> tuple[str | None, str | None]:
    if not isinstance(doc, dict) or doc.get("kind") != "NodeFeature":
        return None, None
    meta, spec = doc.get("metadata"), doc.get("spec")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    node = labels.get(NODE_NAME_LABEL) if isinstance(labels, dict) else None
    values = spec.get("labels") if isinstance(spec, dict) else None
    profile = values.get(PROFILE_KEY) if isinstance(values, dict) else None
    return (node if isinstance(node, str) else None), (profile if isinstance(profile, str) else None)


class PreviousProfiles(Mapping[str, str]):
    """:func:`profiles_of` ``texts``, parsed at the first read."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = texts
        self._found: dict[str, str] | None = None

    def _profiles(self) -> dict[str, str]:
        if self._found is None:
            self._found = profiles_of(self._texts)
        return self._found

    def __getitem__(self, node: str) -> str:
        return self._profiles()[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self._profiles())

    def __len__(self) -> int:
        return len(self._profiles())
