"""What the previous render wrote that the next one carries on (WaitForIdle's retained
flavors): read from rendered/'s texts, or a git revision's, at the edge of the pure compile
(docs/explanation/gate.md, WaitForIdle). A file that does not parse, or an object of another
shape, is simply not carried on: rendered/ is tasgen's own output, and a hand edit there is
what `tasgen check` reports."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..model import RETIRING_PREFIX, Carried
from ..parse import ParseError, parse_text
from .previous_profiles import PROFILES_FILE, PreviousRows

QUEUES = "queues/clusterqueues.yaml"
FLAVORS = "kueue/resourceflavors.yaml"
TOPOLOGIES = "kueue/topologies.yaml"
#: the files of rendered/ a render reads back (relative to rendered/)
FILES = (QUEUES, FLAVORS, TOPOLOGIES)


def read_rendered(folder: Path) -> dict[str, str] | None:
    """The texts a render reads back from the rendered/ at ``folder`` (FILES and every labels
    folder's profile NodeFeatures), by relative path; None when there is no such folder. A file
    that cannot be read is left out, as one that does not parse is not carried on."""
    if not folder.is_dir():
        return None
    texts = {}
    for path in sorted(folder.rglob("*.yaml")):
        relative = path.relative_to(folder).as_posix()
        if relative in FILES or (relative.startswith("labels/") and relative.endswith("/" + PROFILES_FILE)):
            try:
                texts[relative] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return texts


def carried_of(texts: Mapping[str, str]) -> Carried:
    """``texts``: rendered/-relative path -> text (only FILES are read)."""
    unread = tuple(f for f in FILES if f not in texts or not _parses(texts[f]))
    carried = Carried(rows=PreviousRows(texts), unread=unread)
    for body in _objects(texts, QUEUES, "ClusterQueue"):
        name, flavors = _queue(body)
        if name is None:
            continue
        carried.queues[name] = flavors
        carried.quotas[name] = _quotas(body)
        since = _since(body, flavors)
        if since:
            carried.since[name] = since
    for kind, file, found in (
        ("ResourceFlavor", FLAVORS, carried.flavors),
        ("Topology", TOPOLOGIES, carried.topologies),
    ):
        for body in _objects(texts, file, kind):
            name, spec = _name(body), body.get("spec")
            if name is not None and isinstance(spec, dict):
                found[name] = spec
    return carried


def _parses(text: str) -> bool:
    try:
        parse_text(text)
    except ParseError:
        return False
    return True


def _objects(texts: Mapping[str, str], file: str, kind: str) -> list[dict[str, Any]]:
    text = texts.get(file)
    if text is None:
        return []
    try:
        documents = parse_text(text)
    except ParseError:
        return []
    return [d for d in documents if isinstance(d, dict) and d.get("kind") == kind]


def _name(body: dict[str, Any]) -> str | None:
    meta = body.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def _queue(body: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    spec = body.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    flavors: list[str] = []
    for group in groups if isinstance(groups, list) else ():
        entries = group.get("flavors") if isinstance(group, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in flavors:
                flavors.append(name)
    return _name(body), tuple(flavors)


def _quotas(body: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Flavor -> resource -> nominalQuota, as the queue's spec states them."""
    spec = body.get("spec")
    groups = spec.get("resourceGroups") if isinstance(spec, dict) else None
    found: dict[str, dict[str, str]] = {}
    for group in groups if isinstance(groups, list) else ():
        entries = group.get("flavors") if isinstance(group, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            name = entry.get("name") if isinstance(entry, dict) else None
            resources = entry.get("resources") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not isinstance(resources, list):
                continue
            found[name] = {
                str(r["name"]): str(r["nominalQuota"])
                for r in resources
                if isinstance(r, dict) and "name" in r and "nominalQuota" in r
            }
    return found


def _since(body: dict[str, Any], flavors: tuple[str, ...]) -> dict[str, datetime]:
    """Retained flavor -> since when, from the queue's annotations (of flavors it lists)."""
    annotations = body["metadata"].get("annotations")
    found: dict[str, datetime] = {}
    for key, value in (annotations if isinstance(annotations, dict) else {}).items():
        if not (isinstance(key, str) and key.startswith(RETIRING_PREFIX)):
            continue
        flavor, moment = key[len(RETIRING_PREFIX) :], _time(value)
        if flavor in flavors and moment is not None:
            found[flavor] = moment
    return found


def _time(value: object) -> datetime | None:
    """An RFC 3339 time with an offset (as the render writes it), in UTC."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo is not None else None
