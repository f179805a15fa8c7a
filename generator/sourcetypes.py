"""The kinds of TopologySource, each described in one place: its part of the TopologySource
schema, whether it writes labels, and how its snapshot is obtained. Stages read these
descriptions instead of spelling the kinds: the schema is composed from them, documents take
a source's kind from them, and loading a snapshot (``validate.snapshots``) and polling an
endpoint (``fetch``) dispatch on how a kind's snapshot is obtained.

A new source kind is one more :class:`SourceType` here, plus a loader in
``validate.snapshots`` if it obtains its snapshot in a new way.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
SECRET_KEY = "^[-._a-zA-Z0-9]+$"  # a Secret's data key (never a path: no '/')


class Obtained(StrEnum):
    """How a source's snapshot is obtained."""

    NOT_AT_ALL = "none"  # the levels are labels already on the nodes
    CONFIGMAP = "configMap"  # data.<key> of a ConfigMap document of the inventory
    FETCHED = "fetched"  # a committed file (snapshotPath) that `tasgen fetch` refreshes from a URL


@dataclass(frozen=True)
class SourceType:
    key: str  # its field of TopologySource.spec
    writes: bool  # publishes its snapshot's labels through NodeFeatures
    obtained: Obtained
    schema: dict[str, Any]  # the JSON Schema of spec.<key>

    def snapshot_file(self, spec: dict[str, Any]) -> str | None:
        """The inventory file that holds a fetched snapshot (it is data, not a document)."""
        ref = spec.get(self.key)
        if self.obtained is not Obtained.FETCHED or not isinstance(ref, dict):
            return None
        path = ref.get("snapshotPath")
        return path if isinstance(path, str) else None


def _secret_ref(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["namespace", "name"],
        "properties": {
            "namespace": {"type": "string", "pattern": DNS_LABEL},
            "name": {"type": "string", "pattern": DNS_SUBDOMAIN},
            "key": {"type": "string", "pattern": SECRET_KEY, "maxLength": 253},
        },
        "description": description,
    }


NODE_LABELS = SourceType(
    "nodeLabels",
    writes=False,
    obtained=Obtained.NOT_AT_ALL,
    schema={
        "type": "object",
        "maxProperties": 0,
        "description": "read-only: levels are labels already on the Nodes",
    },
)

CONFIG_MAP = SourceType(
    "configMap",
    writes=True,
    obtained=Obtained.CONFIGMAP,
    schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["namespace", "name", "key"],
        "properties": {
            "namespace": {"type": "string", "pattern": DNS_LABEL, "maxLength": 63},
            "name": {"type": "string", "pattern": DNS_SUBDOMAIN, "maxLength": 253},
            "key": {"type": "string", "minLength": 1, "maxLength": 253, "pattern": SECRET_KEY},
        },
        "description": "the snapshot is data.<key> of this ConfigMap document of the inventory",
    },
)

#: the credential a webhook names, exactly one of (the endpoint is trusted to receive it)
WEBHOOK_CREDENTIALS = ("bearerTokenSecretRef", "clientCertificateSecretRef")

WEBHOOK = SourceType(
    "webhook",
    writes=True,
    obtained=Obtained.FETCHED,
    schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["url", "snapshotPath"],
        "properties": {
            "url": {
                "type": "string",
                "pattern": "^https://[^\\s]+$",
                "description": "https only; redirects are refused",
            },
            "bearerTokenSecretRef": _secret_ref(
                "a Secret whose key (default token) is sent as a bearer token"
            ),
            "clientCertificateSecretRef": _secret_ref("a kubernetes.io/tls Secret: tls.crt and tls.key"),
            "caBundle": {
                "type": "string",
                "description": "PEM, or base64 of PEM; default: the system trust store",
            },
            "snapshotPath": {
                "type": "string",
                "minLength": 1,
                "description": "the committed answer, relative to the inventory folder",
            },
        },
        "description": "tasgen fetch polls url and commits the answer at snapshotPath",
    },
)

SOURCE_TYPES: tuple[SourceType, ...] = (NODE_LABELS, CONFIG_MAP, WEBHOOK)


def present(spec: dict[str, Any]) -> list[SourceType]:
    """The source types a TopologySource's spec names (the source-type rule wants one)."""
    return [t for t in SOURCE_TYPES if t.key in spec]


def of_spec(spec: dict[str, Any]) -> SourceType:
    """The first source type named; read-only nodeLabels when none is (that is reported)."""
    found = present(spec)
    return found[0] if found else NODE_LABELS
