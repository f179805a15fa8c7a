"""The committed answer of a webhook source: its canonical form, and the ETag beside it.

A valid answer is committed in one canonical form - keys sorted, fixed formatting (JSON
with two-space indentation for ``.json``, tasgen's YAML writer otherwise) - so that an
unchanged topology gives no diff however the endpoint formats it.

The ETag is kept in ``<snapshotPath>.etag`` (a suffix the inventory loader does not read),
with the SHA-256 of the snapshot file it belongs to: ``If-None-Match`` is only sent while
the committed file is still the one that ETag described, so a hand edit of the snapshot is
never kept alive by a 304.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...emit import yaml

ETAG_SUFFIX = ".etag"


def canonical(data: dict[str, Any], suffix: str) -> str:
    if suffix == ".json":
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return yaml.dump(_sorted(data))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


@dataclass(frozen=True)
class Committed:
    """What is on disk for one source: the snapshot's text (None: not there yet) and the
    ETag it was fetched with from the source's URL (an ETag is one URL's: none when the URL
    has changed since)."""

    path: Path
    text: str | None
    etag: str | None
    url: str

    @classmethod
    def read(cls, path: Path, url: str) -> Committed:
        text = _read_text(path)
        return cls(path, text, _etag_for(path, text, url), url)

    def write(self, text: str, etag: str | None) -> None:
        """The new snapshot, then its ETag, each file replaced atomically (should the second
        write fail, the ETag's digest no longer matches and it is not used)."""
        _replace(self.path, text)
        sidecar = self.path.with_name(self.path.name + ETAG_SUFFIX)
        if etag:
            record = {"etag": etag, "sha256": _digest(text), "url": self.url}
            _replace(sidecar, json.dumps(record, sort_keys=True) + "\n")
        else:
            sidecar.unlink(missing_ok=True)

    def keep_etag(self, etag: str | None) -> None:
        if etag and self.text is not None and etag != self.etag:
            self.write(self.text, etag)


def _replace(path: Path, text: str) -> None:
    """Write beside the target, then rename over it: readers see the old file or the new one."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; an inventory is shared
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _etag_for(path: Path, text: str | None, url: str) -> str | None:
    stored = _read_text(path.with_name(path.name + ETAG_SUFFIX))
    if text is None or stored is None:
        return None
    try:
        record = json.loads(stored)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("sha256") != _digest(text) or record.get("url") != url:
        return None
    etag = record.get("etag")
    return etag if isinstance(etag, str) else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
