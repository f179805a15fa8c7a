"""Rules of the schema stage: document headers, JSON Schemas, identities and snapshots."""

from generator.rules.base import Rule, Stage

_S = Stage.SCHEMA

DOCUMENT_HEADER = Rule("document-header", _S, "Every document has a string apiVersion and kind.")
UNKNOWN_KIND = Rule("unknown-kind", _S, "A document's kind is one of the inventory kinds.")
API_VERSION = Rule("api-version", _S, "A document's apiVersion is the one of its kind.")
SCHEMA = Rule(
    "schema",
    _S,
    "A document (or snapshot) conforms to its kind's JSON Schema (tasgen schema KIND), pass-through "
    "clusterQueue fields to Kueue's ClusterQueue v1beta2.",
)
DUPLICATE_OBJECT = Rule(
    "duplicate-object", _S, "No two objects share kind and name (namespace/name for ConfigMaps)."
)
SINGLE_GENERATOR_CONFIG = Rule("single-generator-config", _S, "An inventory has at most one GeneratorConfig.")
DUPLICATE_NODE = Rule("duplicate-node", _S, "A node is listed once across NodeInventories.")
SNAPSHOT_MISSING = Rule(
    "snapshot-missing", _S, "A configMap source's ConfigMap and key, or a webhook's snapshot file, exist."
)
SNAPSHOT_PATH = Rule("snapshot-path", _S, "A webhook snapshotPath stays inside the inventory folder.")
SNAPSHOT_SHAPE = Rule("snapshot-shape", _S, "A snapshot is one YAML or JSON mapping.")
SNAPSHOT_EXPIRY = Rule("snapshot-expiry", _S, "A snapshot's expiresAt is an RFC 3339 time.")

RULES = (
    DOCUMENT_HEADER,
    UNKNOWN_KIND,
    API_VERSION,
    SCHEMA,
    DUPLICATE_OBJECT,
    SINGLE_GENERATOR_CONFIG,
    DUPLICATE_NODE,
    SNAPSHOT_MISSING,
    SNAPSHOT_PATH,
    SNAPSHOT_SHAPE,
    SNAPSHOT_EXPIRY,
)
