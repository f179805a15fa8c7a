"""The TopologySources whose snapshot is fetched (webhook sources), as fetch needs them: each
checked on its own (schema, one credential, a snapshotPath fetch may write), so that one
broken source never keeps the others from being polled."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ...load.files import SUFFIXES, InputFile, load_files
from ...model import Document, Finding
from ...rules.schema import SNAPSHOT_PATH
from ...rules.semantic import WEBHOOK_CREDENTIALS
from ...sourcetypes import WEBHOOK_CREDENTIALS as CREDENTIAL_REFS
from ...sourcetypes import Obtained, SourceType, present
from ...validate import schema


@dataclass
class Hook:
    name: str
    webhook: dict[str, Any]
    file: str  # where the TopologySource is written (shown path)
    findings: list[Finding] = field(default_factory=list)  # why it cannot be polled

    @property
    def url(self) -> str:
        return str(self.webhook.get("url", ""))

    @property
    def relative(self) -> str:
        return PurePosixPath(str(self.webhook.get("snapshotPath", ""))).as_posix()


def webhook_sources(files: list[InputFile]) -> dict[str, Hook]:
    found: dict[str, Hook] = {}
    # Only files that spell the kind are parsed here: a 100k-node NodeInventory is not, and a
    # 304 then costs no parse of it. A kind written with escapes ("Topology\u0053ource") does
    # not spell it, so a file with any backslash is parsed too: it would not be polled else.
    candidates = [f for f in files if f.data is not None and (b"TopologySource" in f.data or b"\\" in f.data)]
    for loaded in load_files(candidates):
        for doc in loaded.documents:
            spec = doc.body.get("spec")
            kind = _fetched_type(spec) if doc.kind == "TopologySource" else None
            if kind is None or not isinstance(spec, dict):
                continue
            hook = Hook(doc.name, spec[kind.key], doc.file)
            hook.findings = schema.check("TopologySource", doc.body, doc.where()) or _own_findings(doc, kind)
            found.setdefault(doc.name, hook)
    return found


def _fetched_type(spec: Any) -> SourceType | None:
    kinds = present(spec) if isinstance(spec, dict) else []
    return next((k for k in kinds if k.obtained is Obtained.FETCHED), None)


def _own_findings(doc: Document, kind: SourceType) -> list[Finding]:
    spec = doc.body["spec"]
    where = doc.where("spec", kind.key)
    if sum(ref in spec[kind.key] for ref in CREDENTIAL_REFS) != 1:
        message = (
            "a webhook source names exactly one credential: "
            "bearerTokenSecretRef or clientCertificateSecretRef"
        )
        return [WEBHOOK_CREDENTIALS(where, message)]
    path = PurePosixPath(kind.snapshot_file(spec) or "")
    if path.is_absolute() or ".." in path.parts or path.suffix not in SUFFIXES:
        message = "snapshotPath must be a .json, .yaml or .yml path inside the inventory folder"
        return [SNAPSHOT_PATH(where.at("snapshotPath"), message)]
    return []


def target(inventory: Path, hook: Hook) -> Path:
    """Where the answer is written; refused when a symbolic link would lead it elsewhere."""
    path = inventory / hook.relative
    root = inventory.resolve()
    if path.is_symlink() or not path.parent.resolve().is_relative_to(root):
        raise ValueError(f"{hook.relative} leads outside the inventory folder (a symbolic link?)")
    return path


def ca_pem(webhook: dict[str, Any]) -> str | None:
    """caBundle as PEM: given as PEM, or as base64 of PEM the way Kubernetes spells it."""
    raw = webhook.get("caBundle")
    if not raw:
        return None
    text = str(raw)
    if "-----BEGIN" in text:
        return text
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode("ascii")
    except (binascii.Error, ValueError):
        raise ValueError("caBundle is neither PEM nor base64 of PEM") from None
    if "-----BEGIN" not in decoded:
        raise ValueError("caBundle decodes from base64 but is not PEM")
    return decoded
