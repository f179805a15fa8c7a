"""Rules of the validate stage over the typed inventory (checks: generator/validate/checks)."""

from generator.model import PROFILES_FEATURE_NAME, Level
from generator.rules.base import Rule, Stage
from generator.sourcetypes import SOURCE_TYPES

_S = Stage.VALIDATE

_KINDS = ", ".join(t.key for t in SOURCE_TYPES)
SOURCE_TYPE = Rule("source-type", _S, f"A TopologySource has exactly one of {_KINDS}.")
SOURCE_LEVELS = Rule(
    "source-levels",
    _S,
    "Levels are unique label keys, never the hostname or profile key; a writing source's levels are "
    "writable keys or the cloud's region/zone.",
)
SOURCE_SELECTOR = Rule("source-selector", _S, "nodeSelector uses valid label keys and values.")
SNAPSHOT_PATH_SHARED = Rule(
    "snapshot-path-shared",
    _S,
    "No two fetched sources write one snapshotPath (one would overwrite the other).",
)
SOURCE_NAME = Rule(
    "source-name",
    _S,
    f"No TopologySource is named {PROFILES_FEATURE_NAME!r}: its NodeFeature file is the profiles'.",
)
WEBHOOK_CREDENTIALS = Rule("webhook-credentials", _S, "A webhook source names exactly one credential secret.")
NODE_NAME = Rule("node-name", _S, "Node names are DNS-1123 subdomains of at most 63 characters.")
NODE_HOSTNAME = Rule("node-hostname", _S, "Every node has a kubernetes.io/hostname label.")
LABEL_SYNTAX = Rule("label-syntax", _S, "Label keys and values follow Kubernetes syntax.")
NODE_TAINT = Rule("node-taint", _S, "A node's taint keys and values follow Kubernetes syntax.")
QUANTITY = Rule(
    "quantity",
    _S,
    "Allocatable, quota and fair-sharing weight values are non-negative Kubernetes quantities (exact "
    "grammar) within 64 bits.",
)
SNAPSHOT_UNKNOWN_NODE = Rule("snapshot-unknown-node", _S, "A snapshot names only nodes of the NodeInventory.")
SNAPSHOT_UNSELECTED_NODE = Rule(
    "snapshot-unselected-node", _S, "A snapshot names only nodes its source's nodeSelector selects."
)
SNAPSHOT_UNDECLARED_LEVEL = Rule(
    "snapshot-undeclared-level", _S, "A snapshot states only keys listed in its source's levels."
)
LABEL_NOT_WRITABLE = Rule(
    "label-not-writable",
    _S,
    "A writing source publishes only topology.gpustack.ai/* (not the profile key) and the admin prefix.",
)
SNAPSHOT_LABEL_SYNTAX = Rule(
    "snapshot-label-syntax", _S, "Snapshot label keys and values follow Kubernetes syntax."
)
SNAPSHOT_READ_ONLY_MISMATCH = Rule(
    "snapshot-read-only-mismatch",
    _S,
    "A repeated topology.kubernetes.io/region or zone equals the node's own label.",
)
SOURCE_EXPIRED = Rule("source-expired", _S, "A source past its expiresAt is not Ready.", Level.WARNING)
HIERARCHY_PARENT_CHAIN = Rule(
    "hierarchy-parent-chain", _S, "A node has a value for a level only with values for every coarser level."
)
HIERARCHY_AMBIGUOUS_PARENT = Rule(
    "hierarchy-ambiguous-parent", _S, "One child value sits under one parent tuple across a source's nodes."
)
OWNERSHIP_CONFLICT = Rule(
    "ownership-conflict", _S, "Two writing sources never state the same key for the same node."
)
PLAN_IDENTITY = Rule(
    "plan-identity", _S, "Identity keys are GeneratorConfig hardwareIdentityKeys; values are label values."
)
FLAVOR_OVERLAP = Rule("flavor-overlap", _S, "No two identities of a queue can select the same node.")
PLAN_QUOTA = Rule(
    "plan-quota", _S, "nominalQuota, borrowingLimit and lendingLimit name only covered resources."
)
PLAN_CLUSTER_QUEUE = Rule(
    "plan-cluster-queue",
    _S,
    "clusterQueue gives a field in one spelling (v1beta2 or v1beta1); its namespaceSelector uses valid "
    "label keys and values.",
)
GENERATOR_CONFIG = Rule(
    "generator-config",
    _S,
    "hardwareIdentityKeys are label keys, not the profile label tasgen writes; adminLabelPrefix is "
    "outside reserved namespaces.",
)
GATE_NAMESPACE = Rule(
    "gate-namespace",
    _S,
    "gate.namespace is the gate's own: not default, kube-*, the NodeFeatures' namespace or the GitOps "
    "engines' (tasgen renders the gate's Namespace object, which the engine then manages).",
)

PLAN_LIMIT_COHORT = Rule(
    "plan-limit-cohort", _S, "borrowingLimit and lendingLimit need a cohort (clusterQueue.cohortName)."
)
LENDING_LIMIT = Rule(
    "lending-limit",
    _S,
    "lendingLimit is at most nominalQuota (declared, else the matching nodes' allocatable).",
)
PLAN_TOLERATIONS = Rule(
    "plan-tolerations", _S, "tolerations and nodeTaints are valid Kubernetes tolerations and taints."
)
FLAVOR_SETTINGS_CONFLICT = Rule(
    "flavor-settings-conflict",
    _S,
    "Entries for one hardware identity in several queues state the same tolerations and nodeTaints.",
)
TAINT_UNTOLERATED = Rule(
    "taint-untolerated",
    _S,
    "A flavor's tolerations cover the NoSchedule/NoExecute taints of its nodes.",
    Level.WARNING,
)
LOCAL_QUEUE = Rule(
    "local-queue", _S, "LocalQueue names are DNS-1123 labels; no two plans list the same namespace/name."
)
NAMESPACE_SELECTOR_MISSING = Rule(
    "namespace-selector-missing",
    _S,
    "A ClusterQueue sets namespaceSelector; without one Kueue admits from no namespace.",
    Level.WARNING,
)
LOCAL_QUEUE_UNSELECTED = Rule(
    "local-queue-unselected",
    _S,
    "A LocalQueue's namespace is one its ClusterQueue's namespaceSelector selects.",
    Level.WARNING,
)

SELECTOR_UNMATCHED = Rule(
    "selector-unmatched", _S, "A TopologySource's nodeSelector matches at least one node.", Level.WARNING
)
LEVEL_UNCARRIED = Rule(
    "level-uncarried",
    _S,
    "Every level of a source is stated for (or carried by) at least one node it selects.",
    Level.WARNING,
)
SOURCE_EXPIRING = Rule(
    "source-expiring",
    _S,
    "A source does not expire within GeneratorConfig expiryWarningDays (default 14).",
    Level.WARNING,
)
QUOTA_ABOVE_ALLOCATABLE = Rule(
    "quota-above-allocatable",
    _S,
    "A declared nominalQuota is at most the allocatable of the nodes it splits over.",
    Level.WARNING,
)

RULES = (
    SOURCE_TYPE,
    SOURCE_NAME,
    SNAPSHOT_PATH_SHARED,
    SOURCE_LEVELS,
    SOURCE_SELECTOR,
    WEBHOOK_CREDENTIALS,
    NODE_NAME,
    NODE_HOSTNAME,
    LABEL_SYNTAX,
    NODE_TAINT,
    QUANTITY,
    SNAPSHOT_UNKNOWN_NODE,
    SNAPSHOT_UNSELECTED_NODE,
    SNAPSHOT_UNDECLARED_LEVEL,
    LABEL_NOT_WRITABLE,
    SNAPSHOT_LABEL_SYNTAX,
    SNAPSHOT_READ_ONLY_MISMATCH,
    SOURCE_EXPIRED,
    HIERARCHY_PARENT_CHAIN,
    HIERARCHY_AMBIGUOUS_PARENT,
    OWNERSHIP_CONFLICT,
    PLAN_IDENTITY,
    FLAVOR_OVERLAP,
    PLAN_QUOTA,
    PLAN_CLUSTER_QUEUE,
    GENERATOR_CONFIG,
    GATE_NAMESPACE,
    PLAN_LIMIT_COHORT,
    LENDING_LIMIT,
    PLAN_TOLERATIONS,
    FLAVOR_SETTINGS_CONFLICT,
    TAINT_UNTOLERATED,
    LOCAL_QUEUE,
    NAMESPACE_SELECTOR_MISSING,
    LOCAL_QUEUE_UNSELECTED,
    SELECTOR_UNMATCHED,
    LEVEL_UNCARRIED,
    SOURCE_EXPIRING,
    QUOTA_ABOVE_ALLOCATABLE,
)
