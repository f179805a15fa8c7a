"""Rules of the schema stage: document headers, JSON Schemas, identities and snapshots."""

from .base import Rule, Stage

_S = Stage.SCHEMA

DOCUMENT_HEADER = Rule(
    "document-header",
    _S,
    "Every document has a string apiVersion and kind.",
    why=(
        "tasgen reads each document by its kind, as the API server does. A document without a "
        "string apiVersion and kind cannot be told apart from a note or a half-written object, "
        "and skipping it would drop what it declares."
    ),
    fix=(
        "Give the document its header, e.g. `apiVersion: topology.gpustack.ai/v1alpha1` and "
        "`kind: ClusterQueuePlan` (`apiVersion: v1` for a ConfigMap), or remove it from the "
        "inventory folder."
    ),
)
UNKNOWN_KIND = Rule(
    "unknown-kind",
    _S,
    "A document's kind is one of the inventory kinds.",
    why=(
        "Every file below the inventory folder is read as inventory. A kind tasgen does not know "
        "is either a manifest in the wrong folder or a misspelt kind; ignoring a misspelt "
        "ClusterQueuePlan would drop its ClusterQueue from rendered/, and the GitOps engine would "
        "then delete it from the cluster."
    ),
    fix=(
        "Spell the kind as listed in the message (ClusterQueuePlan, ConfigMap, GeneratorConfig, "
        "NodeInventory, TopologySource), or move other manifests out of the inventory folder."
    ),
)
API_VERSION = Rule(
    "api-version",
    _S,
    "A document's apiVersion is the one of its kind.",
    why=(
        "Each kind is read with the schema of one API version. A document written for another "
        "version may mean something else with the same fields, so it is refused rather than "
        "guessed at."
    ),
    fix=(
        "Write the apiVersion the message names: `topology.gpustack.ai/v1alpha1` for tasgen's "
        "kinds, `v1` for a ConfigMap."
    ),
)
SCHEMA = Rule(
    "schema",
    _S,
    "A document (or snapshot) conforms to its kind's JSON Schema (tasgen schema KIND), pass-through "
    "clusterQueue fields to Kueue's ClusterQueue v1beta2.",
    why=(
        "The schema catches at review time what would otherwise fail later or silently: a "
        "misspelt optional field (ignored by a lenient reader), a value of the wrong type, an "
        "enum value Kueue does not know. The `clusterQueue` fields tasgen passes through are "
        "checked as Kueue's ClusterQueue v1beta2 CRD checks them, because the API server would "
        "refuse the rendered ClusterQueue when the queues step syncs, after the change is merged."
    ),
    fix=(
        "Correct the field the message names; `tasgen schema KIND` prints the JSON Schema (point "
        "yaml-language-server at it for completion in the editor)."
    ),
)
DUPLICATE_OBJECT = Rule(
    "duplicate-object",
    _S,
    "No two objects share kind and name (namespace/name for ConfigMaps).",
    why=(
        "Each object becomes one object in the cluster, by kind and name. Two ClusterQueuePlans "
        "named alike would render one ClusterQueue from one of them, chosen by file order. A file "
        "linked under a second name below the inventory folder is read twice and is reported here "
        "too."
    ),
    fix=("Rename one of the two objects, or delete the copy (or the second link to the same file)."),
)
SINGLE_GENERATOR_CONFIG = Rule(
    "single-generator-config",
    _S,
    "An inventory has at most one GeneratorConfig.",
    why=(
        "The GeneratorConfig holds settings of the whole render (identity keys, the admin label "
        "prefix, the gate, the layout and sync of rendered/). With two, no setting would have one "
        "value."
    ),
    fix=("Merge the two GeneratorConfigs into one document."),
)
DUPLICATE_NODE = Rule(
    "duplicate-node",
    _S,
    "A node is listed once across NodeInventories.",
    why=(
        "A node is one machine: listed in two NodeInventories (one per cluster, say) it would "
        "have two sets of labels and allocatable, and its capacity could be counted twice in the "
        "quotas summed from allocatable."
    ),
    fix=(
        "Keep the node in one NodeInventory; when two files come from two `tasgen import-nodes` "
        "runs, import each cluster's nodes into its own file once."
    ),
)
SNAPSHOT_MISSING = Rule(
    "snapshot-missing",
    _S,
    "A configMap source's ConfigMap and key, or a webhook's snapshot file, exist.",
    why=(
        "Without its snapshot a writing source has no topology to publish. Rendering on would "
        "quietly treat it as not Ready: its NodeFeatures removed, its nodes back to the "
        "hostname-only profile, their flavors renamed and their queues drained."
    ),
    fix=(
        "For a configMap source, add the ConfigMap document with that namespace, name and data "
        "key to the inventory, or fix spec.configMap. For a webhook source, run `tasgen fetch` "
        "and commit the answer at its snapshotPath."
    ),
)
SNAPSHOT_PATH = Rule(
    "snapshot-path",
    _S,
    "A webhook snapshotPath stays inside the inventory folder.",
    why=(
        "`tasgen fetch` writes the endpoint's answer at snapshotPath and the render reads it from "
        "there. A path with `..` or an absolute one would let fetch write outside the inventory "
        "folder, and let the render read a file no review of that folder shows."
    ),
    fix=("Give a relative path inside the inventory folder, e.g. `snapshots/<source>.json`."),
)
SNAPSHOT_SHAPE = Rule(
    "snapshot-shape",
    _S,
    "A snapshot is one YAML or JSON mapping.",
    why=(
        "A snapshot is one document: a mapping with revision, nodes and, optionally, expiresAt. "
        "Several YAML documents in one snapshot leave open which of them is the topology."
    ),
    fix=(
        "Keep one document in the ConfigMap key or snapshot file: `revision:`, `expiresAt:` and "
        "`nodes:` at its top level."
    ),
)
SNAPSHOT_EXPIRY = Rule(
    "snapshot-expiry",
    _S,
    "A snapshot's expiresAt is an RFC 3339 time.",
    why=(
        "From expiresAt on, the source is not Ready and its nodes fall back to hostname-only. A "
        "time that does not parse, or has no offset (whose instant depends on the machine's time "
        "zone), cannot be enforced the same way everywhere."
    ),
    fix=(
        'Write an RFC 3339 time with an offset, e.g. `expiresAt: "2026-12-31T00:00:00Z"`, or drop expiresAt.'
    ),
)

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
