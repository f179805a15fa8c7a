"""What an engine needs to apply the rendered objects as written: Argo CD's client-side apply
keeps each whole object, as JSON, in its last-applied annotation, which the API server
refuses beyond 262,144 bytes. Measured here, on the text the object will carry: a value of
YAML documents (the gate's plan) is written by this stage's one YAML writer, and its
JSON-escaped text weighs about half as much again as the documents' own JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..compile.engines import SYNC_OPTIONS
from ..compile.sync_wiring import LAST_APPLIED_LIMIT
from ..model import Documents, Finding, Manifest, Where
from ..rules.emit import OBJECT_SIZE
from . import yaml

SERVER_SIDE = "ServerSideApply=true"
#: the API server's bound on a ConfigMap's data (keys and values), and etcd's default bound
#: on one request (--max-request-bytes), which an object of more cannot be stored under
CONFIGMAP_DATA_LIMIT = 1_048_576
OBJECT_LIMIT = 1_572_864
#: characters Go's JSON encoder (kubectl's) writes as \\u003c and the like: 6 bytes, not 1
_GO_ESCAPED = ("<", ">", "&")


Measured = list[tuple[Manifest, int]]  # each object and its applied_size


def server_side_where_needed(objects: Iterable[Manifest]) -> Measured:
    """Mark the objects too large for client-side apply (a gate plan of many queues and
    flavors) with Argo CD's ServerSideApply=true. Flux applies server-side always; NodeFeatures
    are small by construction. Returns each object's size as measured (before the mark, which
    adds under 100 bytes), for ``oversized``."""
    measured = [(manifest, applied_size(manifest.body)) for manifest in objects]
    for manifest, size in measured:
        if size <= LAST_APPLIED_LIMIT:
            continue
        annotations = manifest.body["metadata"].setdefault("annotations", {})
        options = [o for o in annotations.get(SYNC_OPTIONS, "").split(",") if o]
        if SERVER_SIDE not in options:
            annotations[SYNC_OPTIONS] = ",".join([*options, SERVER_SIDE])
    return measured


def applied_size(body: dict[str, Any]) -> int:
    """Bytes of the object as the last-applied annotation holds it: compact JSON in UTF-8,
    documents as the YAML text they are written as, Go's escapes counted."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_text)
    return len(text.encode()) + 5 * sum(map(text.count, _GO_ESCAPED))


def _text(value: Documents) -> str:
    return yaml.documents(value)


def oversized(measured: Measured, out_label: str) -> list[Finding]:
    """An object-size error per object the API server would refuse (the gate's plan of
    too many queues and flavors: the gate step, and every step after it, would never sync)."""
    found = []
    for manifest, size in measured:
        body = manifest.body
        data = _data_size(body) if body.get("kind") == "ConfigMap" else 0
        if data > CONFIGMAP_DATA_LIMIT:
            why = f"its data is {data:,} bytes, over the API server's {CONFIGMAP_DATA_LIMIT:,}"
        elif size > OBJECT_LIMIT:
            why = f"it is {size:,} bytes, over etcd's {OBJECT_LIMIT:,} per request"
        else:
            continue
        message = (
            f"{body['kind']} {body['metadata']['name']!r}: {why}; the API server refuses it "
            "(render fewer ClusterQueuePlans, or fewer hardware entries per plan)"
        )
        found.append(OBJECT_SIZE(Where(f"{out_label}/{manifest.file}", line_col=(1, 1)), message))
    return found


def _data_size(body: dict[str, Any]) -> int:
    """Bytes of a ConfigMap's data as the API server counts them: keys and values."""
    values = (
        yaml.documents(v) if isinstance(v, Documents) else str(v) for v in (body.get("data") or {}).values()
    )
    return sum(len(k.encode()) for k in body.get("data") or {}) + sum(len(v.encode()) for v in values)
