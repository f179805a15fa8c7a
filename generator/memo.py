"""The render memo: a re-render whose inputs did not change does no work.

A render is a pure function of the inventory's bytes, tasgen's own code, the paths it is
shown with, and the time, which matters only through expiry. After a successful render the
memo records a digest of all that, the window of time in which no source's expiry state
flips, the digest of every file written, and the report. The next render with the same
digest, inside the window, and with rendered/ exactly as recorded, returns the recorded
report and writes nothing. Anything else - an edited inventory, an edited or missing
rendered/ file, another tasgen, an expiry reached - runs the full pipeline. `check` and
`validate` never use the memo: CI always recomputes.

The memo lives in the user's cache folder ($TASGEN_CACHE_DIR, else $XDG_CACHE_HOME/tasgen,
else ~/.cache/tasgen), one file per output folder, never in the repository.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import jsonschema_rs

from .compile import Summary
from .emit.outtree import OutputTree
from .load.files import InputFile
from .model import Level, Problem

_VERSION = 2


@dataclass(frozen=True)
class Window:
    """The expiry times around ``now``: the result holds for from <= t < until."""

    start: str | None
    until: str | None

    @staticmethod
    def around(now: datetime, expiries: list[datetime]) -> Window:
        past = [e for e in expiries if e <= now]
        future = [e for e in expiries if e > now]
        return Window(max(past).isoformat() if past else None, min(future).isoformat() if future else None)

    def holds(self, now: datetime) -> bool:
        after_start = self.start is None or datetime.fromisoformat(self.start) <= now
        return after_start and (self.until is None or now < datetime.fromisoformat(self.until))


def cache_file(out_dir: Path) -> Path:
    base = os.environ.get("TASGEN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tasgen"
    )
    name = hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:24]
    return Path(base) / f"render-{name}.json"


def input_digest(files: list[InputFile], shown: tuple[str, ...]) -> str:
    """Digest of everything a render reads, but the time: the very bytes it parses, and what
    else its findings depend on (``shown``: the folders as shown, where rendered/ sits)."""
    digest = hashlib.sha256(f"tasgen-memo/{_VERSION}\0{chr(0).join(shown)}\0".encode())
    digest.update(_code_digest().encode())
    for file in files:
        digest.update(file.relative.encode() + b"\0")
        digest.update(hashlib.sha256(file.data).digest() if file.data is not None else b"unreadable")
    return digest.hexdigest()


#: the libraries whose behaviour is in a render's result: the parser, the schema checks and
#: their messages, the quantity parser, the positions of problems
_LIBRARIES = ("yaml-rs", "jsonschema-rs", "jsonschema", "kubernetes", "pyyaml")


def _code_digest() -> str:
    """tasgen's own code and templates, the libraries it renders with and Python itself:
    another version of any may render differently."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\0{_library_versions()}\0".encode())
    for entry in sorted(_files(resources.files("tasgen")), key=str):
        digest.update(str(entry).encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()


def _library_versions() -> str:
    found = []
    for name in _LIBRARIES:
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} absent")
    return ",".join(found)


def _files(folder: Any) -> list[Any]:
    found: list[Any] = []
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name != "__pycache__":
            found += _files(entry)
        elif entry.is_file() and entry.name.endswith((".py", ".json", ".j2")):
            found.append(entry)
    return found


def files_digest(files: dict[str, str]) -> dict[str, str]:
    return {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(files.items())}


def recall(out: OutputTree, digest: str, now: datetime) -> tuple[list[Problem], Summary] | None:
    """The recorded report when nothing changed since the last render, else None. A memo
    file of any other shape (hand-edited, truncated, another tasgen's) is ignored."""
    record = _read(cache_file(out.path))
    if record is None or record["digest"] != digest or out.litter:
        return None
    if record["files"] != files_digest(out.owned):
        return None  # rendered/ was edited, or files went missing: render it again
    try:
        if not Window(**record["window"]).holds(now):
            return None
    except (ValueError, TypeError):  # not an ISO time, or one without an offset
        return None
    summary = Summary.from_data(record["summary"])
    summary.mutated_nodes = 0
    return [Problem(**(p | {"level": Level(p["level"])})) for p in record["problems"]], summary


def _read(path: Path) -> dict[str, Any] | None:
    """The memo record, if it has the shape :func:`remember` writes (schemas/memo.json)."""
    try:
        record = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    return record if _schema().is_valid(record) else None


@cache
def _schema() -> Any:
    text = resources.files("tasgen").joinpath("schemas", "memo.json").read_text("utf-8")
    return jsonschema_rs.validator_for(json.loads(text))


def remember(
    out_dir: Path,
    digest: str,
    window: Window,
    files: dict[str, str],  # path -> SHA-256 of the file as written (files_digest)
    problems: list[Problem],
    summary: dict[str, Any],
) -> None:
    record = {
        "version": _VERSION,
        "digest": digest,
        "window": vars(window),
        "files": files,
        "problems": [vars(p) | {"level": str(p.level)} for p in problems],
        "summary": summary,
    }
    target = cache_file(out_dir)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record), "utf-8")
        os.replace(temporary, target)
    except OSError:
        pass  # the memo only saves time; a read-only cache folder costs a full render
