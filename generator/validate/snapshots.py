"""Load each writing source's snapshot, the way its source type obtains it: from a ConfigMap
document's data, or from the committed file that `tasgen fetch` refreshes."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from ..load.files import LoadedFile
from ..load.positions import embedded_position
from ..model import Document, Finding, Snapshot, Source, Where
from ..parse import ParseError, parse_text
from ..rules.schema import SNAPSHOT_EXPIRY, SNAPSHOT_MISSING, SNAPSHOT_PATH, SNAPSHOT_SHAPE
from ..sourcetypes import Obtained
from . import schema


@dataclass
class SnapshotFiles:
    """The inventory's files by their path relative to the inventory folder."""

    files: Mapping[str, LoadedFile]
    configmaps: Mapping[str, Document]  # "namespace/name" -> ConfigMap
    rejected: set[tuple[str, str]] = field(default_factory=set)  # documents already reported


def load_snapshot(source: Source, store: SnapshotFiles) -> tuple[Snapshot | None, list[Finding]]:
    loader = _LOADERS.get(source.type.obtained)
    return loader(source, store) if loader else (None, [])


def _from_configmap(source: Source, store: SnapshotFiles) -> tuple[Snapshot | None, list[Finding]]:
    ref = source.spec[source.type.key]
    cm, findings = _referenced_configmap(source, store)
    if cm is None:
        return None, findings
    root = Where(cm.file, cm.index, ("data", ref["key"]), ())
    try:
        raw = _single(parse_text(cm.body["data"][ref["key"]], json_syntax=ref["key"].endswith(".json")))
    except ParseError as e:
        # The parser's position is in the snapshot's text; shift it into the ConfigMap's file.
        inner = e.position
        position = embedded_position(cm.text, cm.index, root.pointer, inner) if inner and cm.text else None
        where = Where(cm.file, cm.index, root.pointer, line_col=position)
        return None, [e.rule(where, f"snapshot of source {source.name!r}: {e.message}")]
    return _build(raw, root)


def _referenced_configmap(source: Source, store: SnapshotFiles) -> tuple[Document | None, list[Finding]]:
    """The ConfigMap a source names, when it exists and has the key."""
    ref = source.spec[source.type.key]
    where, identity = source.where.at("spec", source.type.key), f"{ref['namespace']}/{ref['name']}"
    cm = store.configmaps.get(identity)
    if cm is None and ("ConfigMap", identity) in store.rejected:
        return None, []  # the ConfigMap's own problems are reported
    if cm is None:
        message = f"no ConfigMap {identity} in the inventory; add it or fix spec.configMap"
        return None, [SNAPSHOT_MISSING(where.at("name"), message)]
    data = cm.body.get("data", {})
    if ref["key"] not in data:
        keys = ", ".join(sorted(data)) or "none"
        message = f"ConfigMap {identity} has no data key {ref['key']!r} (keys: {keys})"
        return None, [SNAPSHOT_MISSING(where.at("key"), message)]
    return cm, []


def _from_committed_file(source: Source, store: SnapshotFiles) -> tuple[Snapshot | None, list[Finding]]:
    path = source.spec[source.type.key]["snapshotPath"]
    where = source.where.at("spec", source.type.key, "snapshotPath")
    relative = PurePosixPath(path)
    if relative.is_absolute() or ".." in relative.parts:
        message = "snapshotPath must be a path inside the inventory folder (no '..', not absolute)"
        return None, [SNAPSHOT_PATH(where, message)]
    loaded = store.files.get(relative.as_posix())
    if loaded is None:
        message = f"no snapshot file {path!r} in the inventory folder; commit the endpoint's answer there"
        return None, [SNAPSHOT_MISSING(where, message)]
    if loaded.findings:
        return None, loaded.findings
    raw = loaded.documents[0].body if len(loaded.documents) == 1 else None
    if raw is None:
        return None, [SNAPSHOT_SHAPE(Where(loaded.path), "a snapshot file holds one mapping")]
    return _build(raw, Where(loaded.path))


Loader = Callable[[Source, SnapshotFiles], tuple[Snapshot | None, list[Finding]]]
#: how each way of obtaining a snapshot (generator/sourcetypes.py) loads it
_LOADERS: dict[Obtained, Loader] = {
    Obtained.CONFIGMAP: _from_configmap,
    Obtained.FETCHED: _from_committed_file,
}


def _single(documents: list[Any]) -> Any:
    if len(documents) != 1:
        raise ParseError(SNAPSHOT_SHAPE, "a snapshot is one YAML or JSON document", None)
    return documents[0]


def _build(raw: Any, where: Where) -> tuple[Snapshot | None, list[Finding]]:
    problems = schema.check(schema.SNAPSHOT, raw, where)
    if problems:
        return None, problems
    expires, finding = _expiry(raw.get("expiresAt"), where.at("expiresAt"))
    if finding is not None:
        return None, [finding]
    return Snapshot(raw["revision"], expires, raw["nodes"], where), []


#: RFC 3339's date-time (section 5.6): Python's fromisoformat also takes week dates, basic
#: formats, hours without minutes and offsets without minutes, which Kubernetes does not
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")


def rfc3339(raw: str) -> datetime | None:
    """The moment an RFC 3339 date-time with an offset names; None for anything else."""
    if not _RFC3339.fullmatch(raw):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:  # the right shape, an impossible date (2026-02-30)
        return None


def _expiry(raw: str | None, where: Where) -> tuple[datetime | None, Finding | None]:
    if raw is None:
        return None, None
    moment = rfc3339(raw)
    if moment is None:
        message = f"expiresAt {raw!r} is not an RFC 3339 time with an offset, e.g. 2026-12-31T00:00:00Z"
        return None, SNAPSHOT_EXPIRY(where, message)
    return moment, None
