"""Refuse a render that would change an immutable field of an object already in rendered/.

Kueue forbids changing a Topology's levels (unless the hostname stays last) and a
topology-aware ResourceFlavor's nodeLabels, tolerations and topologyName (every release up to
v0.19.2). tasgen's flavor names embed the profile and a hash of the tolerations, so its own
renders never do that; a difference means rendered/ was edited by hand
or written by an incompatible version, and patching would only fail in the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model import Finding, Manifest, Where
from ..parse import ParseError, parse_text
from ..rules.emit import IMMUTABLE_FIELD

#: kind -> the spec fields that cannot change under one name
IMMUTABLE = {"Topology": ("levels",), "ResourceFlavor": ("nodeLabels", "tolerations", "topologyName")}


def drift(new: Iterable[Manifest], old_files: Mapping[str, str], out_label: str) -> list[Finding]:
    old = _old_objects(old_files)
    findings: list[Finding] = []
    for manifest in new:
        if manifest.kind not in IMMUTABLE or (manifest.kind, manifest.name) not in old:
            continue
        path, index, body = old[(manifest.kind, manifest.name)]
        for field in IMMUTABLE[manifest.kind]:
            before, after = body.get("spec", {}).get(field), manifest.body["spec"].get(field)
            if before != after:
                findings.append(
                    _finding(
                        manifest, field, before, after, Where(f"{out_label}/{path}", index, ("spec", field))
                    )
                )
    return findings


def _old_objects(files: Mapping[str, str]) -> dict[tuple[str, str], tuple[str, int, dict[str, Any]]]:
    found: dict[tuple[str, str], tuple[str, int, dict[str, Any]]] = {}
    for path, text in files.items():
        if not path.startswith("kueue/"):
            continue
        try:
            documents = parse_text(text)
        except ParseError:
            continue  # an unreadable old file is simply replaced
        for index, body in enumerate(documents):
            if isinstance(body, dict) and body.get("kind") in IMMUTABLE:
                name = str(body.get("metadata", {}).get("name", ""))
                found[(str(body["kind"]), name)] = (path, index, body)
    return found


def _finding(manifest: Manifest, field: str, before: Any, after: Any, where: Where) -> Finding:
    message = (
        f"{manifest.kind} {manifest.name!r} would change its immutable spec.{field} from "
        f"{before!r} to {after!r}; Kueue rejects that. Restore rendered/ from git (or delete "
        "the object there to replace it deliberately) — tasgen reports drift, never patches it"
    )
    return IMMUTABLE_FIELD(where, message)
