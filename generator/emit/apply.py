"""What an engine needs to apply the rendered objects as written: Argo CD's client-side apply
keeps each whole object, as JSON, in its last-applied annotation, which the API server
refuses beyond 262,144 bytes. Measured here, on the text the object will carry: a value of
YAML documents (the gate's plan) is written by this stage's one YAML writer, and its
JSON-escaped text weighs about half as much again as the documents' own JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from generator.emit import yaml
from generator.model import Documents, Manifest
from generator.plan.engines import SYNC_OPTIONS
from generator.plan.sync_wiring import LAST_APPLIED_LIMIT

SERVER_SIDE = "ServerSideApply=true"
#: characters Go's JSON encoder (kubectl's) writes as \\u003c and the like: 6 bytes, not 1
_GO_ESCAPED = ("<", ">", "&")


def server_side_where_needed(objects: Iterable[Manifest]) -> None:
    """Mark the objects too large for client-side apply (a gate plan of many queues and
    flavors) with Argo CD's ServerSideApply=true. Flux applies server-side always; NodeFeatures
    are small by construction."""
    for manifest in objects:
        if applied_size(manifest.body) <= LAST_APPLIED_LIMIT:
            continue
        annotations = manifest.body["metadata"].setdefault("annotations", {})
        options = [o for o in annotations.get(SYNC_OPTIONS, "").split(",") if o]
        if SERVER_SIDE not in options:
            annotations[SYNC_OPTIONS] = ",".join([*options, SERVER_SIDE])


def applied_size(body: dict[str, Any]) -> int:
    """Bytes of the object as the last-applied annotation holds it: compact JSON in UTF-8,
    documents as the YAML text they are written as, Go's escapes counted."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_text)
    return len(text.encode()) + 5 * sum(map(text.count, _GO_ESCAPED))


def _text(value: Documents) -> str:
    return yaml.documents(value)
