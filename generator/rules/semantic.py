"""Rules of the validate stage over the typed inventory (checks: generator/validate/checks)."""

from ..model import PROFILES_FEATURE_NAME, Level
from ..sourcetypes import SOURCE_TYPES
from .base import Rule, Stage

_S = Stage.VALIDATE

_KINDS = ", ".join(t.key for t in SOURCE_TYPES)
SOURCE_TYPE = Rule(
    "source-type",
    _S,
    f"A TopologySource has exactly one of {_KINDS}.",
    why=(
        "A source's type says where its level values come from: labels already on the nodes "
        "(nodeLabels), a ConfigMap in the inventory (configMap) or an endpoint that `tasgen "
        "fetch` polls (webhook). With none or two there is no single answer, and no way to tell "
        "whether tasgen writes the labels or only reads them."
    ),
    fix=(
        "Keep exactly one of `nodeLabels: {}`, `configMap: {namespace, name, key}` and `webhook: "
        "{url, ..., snapshotPath}` under spec."
    ),
)
SOURCE_LEVELS = Rule(
    "source-levels",
    _S,
    "Levels are unique label keys, never the hostname or profile key; a writing source's levels are "
    "writable keys or the cloud's region/zone.",
    why=(
        "Levels become a Kueue Topology (one nodeLabel per level, `kubernetes.io/hostname` "
        "appended last) and, for a writing source, labels that nfd-master publishes. Kueue "
        "refuses a level listed twice and a nodeLabel over 316 characters; "
        "`topology.gpustack.ai/profile` is derived from the levels. A writing source may publish "
        "only keys in tasgen's namespace and the admin prefix: nfd-master refuses "
        "`kubernetes.io/` and `k8s.io/` keys, and Topograph's labels belong to Topograph. The "
        "cloud's region and zone may be levels of a writing source, as read-only parents."
    ),
    fix=(
        "List each level once, coarsest first, without `kubernetes.io/hostname` or the profile "
        "key. In a writing source, use `topology.gpustack.ai/<level>` or keys under "
        "GeneratorConfig adminLabelPrefix; read labels other tools own (Topograph, your cloud's) "
        "with a nodeLabels source."
    ),
)
SOURCE_SELECTOR = Rule(
    "source-selector",
    _S,
    "nodeSelector uses valid label keys and values.",
    why=(
        "The nodeSelector decides which nodes take the source's hierarchy. A key or value that is "
        "no Kubernetes label key or value can match no node's label, and Kubernetes refuses such "
        "a selector; the source would quietly give no node a tree."
    ),
    fix=(
        "Fix the key or value the message names (a label key is `[prefix/]name`, a value at most "
        "63 characters of letters, digits, `-`, `_` and `.`)."
    ),
)
SNAPSHOT_PATH_SHARED = Rule(
    "snapshot-path-shared",
    _S,
    "No two fetched sources write one snapshotPath (one would overwrite the other).",
    why=(
        "`tasgen fetch` writes each webhook source's answer at its snapshotPath. Two sources with "
        "one path would overwrite each other's answer on every fetch, each reported as updated, "
        "and both would then read the same topology."
    ),
    fix=("Give each source its own snapshotPath, e.g. `snapshots/<source>.json`."),
)
SOURCE_NAME = Rule(
    "source-name",
    _S,
    f"No TopologySource is named {PROFILES_FEATURE_NAME!r}: its NodeFeature file is the profiles'.",
    why=(
        "A source's NodeFeatures are written to nodefeatures-<source>.yaml in each labels folder, "
        "beside the profiles' nodefeatures-profiles.yaml. A source named `profiles` would share "
        "that file, and one of the two would be lost without a word: its labels never reach the "
        "nodes."
    ),
    fix=("Rename the source (metadata.name)."),
)
WEBHOOK_CREDENTIALS = Rule(
    "webhook-credentials",
    _S,
    "A webhook source names exactly one credential secret.",
    why=(
        "`tasgen fetch` authenticates to the endpoint with the source's credential, which the "
        "endpoint is trusted to receive. With none it could not authenticate; with two it would "
        "not know which one the endpoint expects, or send a secret to an endpoint not meant to "
        "have it."
    ),
    fix=("Name exactly one of `bearerTokenSecretRef` and `clientCertificateSecretRef` under spec.webhook."),
)
NODE_NAME = Rule(
    "node-name",
    _S,
    "Node names are DNS-1123 subdomains of at most 63 characters.",
    why=(
        "Node names are DNS-1123 subdomains in Kubernetes, and NFD attaches a NodeFeature to its "
        "node through a label whose value is the node's name "
        "(`nfd.node.kubernetes.io/node-name`): a label value has at most 63 characters, so a "
        "longer name can take no labels from tasgen."
    ),
    fix=(
        "Use the node's name as Kubernetes has it (`kubectl get nodes`, or `tasgen "
        "import-nodes`); a node whose name has more than 63 characters cannot be labelled through "
        "NFD."
    ),
)
NODE_HOSTNAME = Rule(
    "node-hostname",
    _S,
    "Every node has a kubernetes.io/hostname label.",
    why=(
        "Every hierarchy ends with `kubernetes.io/hostname`, the finest level of every Topology "
        "tasgen renders; Kueue's topology-aware scheduling places pods on nodes by that label. A "
        "node without it belongs to no domain of any Topology, and the kubelet always sets it."
    ),
    fix=(
        "Add the node's `kubernetes.io/hostname` label, as `kubectl get nodes --show-labels` "
        "shows it; `tasgen import-nodes` copies it from the cluster."
    ),
)
LABEL_SYNTAX = Rule(
    "label-syntax",
    _S,
    "Label keys and values follow Kubernetes syntax.",
    why=(
        "Node labels are the facts identities, selectors and hierarchies match. A key or value "
        "Kubernetes refuses cannot be on a real node, so the NodeInventory does not describe the "
        "cluster (a hand edit or a copy gone wrong)."
    ),
    fix=(
        "Fix the label to Kubernetes' syntax (key `[prefix/]name`, value at most 63 characters of "
        "letters, digits, `-`, `_` and `.`), or re-import the nodes with `tasgen import-nodes`."
    ),
)
NODE_TAINT = Rule(
    "node-taint",
    _S,
    "A node's taint keys and values follow Kubernetes syntax.",
    why=(
        "A node's taints decide which flavors' pods may run there (taint-untolerated) and are "
        "copied into warnings and reports. A taint whose key or value Kubernetes refuses cannot "
        "be on a real node."
    ),
    fix=(
        "Fix the taint's key or value to Kubernetes' label syntax, or re-import the nodes with "
        "`tasgen import-nodes`."
    ),
)
QUANTITY = Rule(
    "quantity",
    _S,
    "Allocatable, quota and fair-sharing weight values are non-negative Kubernetes quantities (exact "
    "grammar) within 64 bits.",
    why=(
        "Quotas (declared, or summed from the nodes' allocatable) and the fair-sharing weight are "
        "written into ClusterQueues as Kubernetes quantities, which Kueue stores as 64-bit integers "
        "(millicores for CPU). A negative amount, a "
        "value outside Kubernetes' grammar (`1_000`, `NaN`, digits of other scripts) or one beyond "
        "2^63-1 units cannot be written into a ClusterQueue: the API server or Kueue would refuse it "
        "when the change is synced."
    ),
    fix=(
        "Write a non-negative quantity such as `8`, `1500m`, `512Gi` or `2Ti`, quoted in YAML "
        'when it is a plain number (`"8"`).'
    ),
)
SNAPSHOT_UNKNOWN_NODE = Rule(
    "snapshot-unknown-node",
    _S,
    "A snapshot names only nodes of the NodeInventory.",
    why=(
        "tasgen renders NodeFeatures only for nodes of the NodeInventory: NFD's garbage collector "
        "deletes NodeFeatures whose node does not exist. A snapshot naming another node is either "
        "a typo or a NodeInventory that is out of date, and its labels would never reach a node."
    ),
    fix=(
        "Fix the node's name in the snapshot, or refresh the NodeInventory with `kubectl get "
        "nodes -o json | tasgen import-nodes - -o inventories/nodes.yaml`."
    ),
)
SNAPSHOT_UNSELECTED_NODE = Rule(
    "snapshot-unselected-node",
    _S,
    "A snapshot names only nodes its source's nodeSelector selects.",
    why=(
        "A source describes the nodes its nodeSelector selects, and only those take its "
        "hierarchy. A snapshot that states another node means the selector and the source of "
        "truth disagree: its levels would be published on a node whose profile comes from another "
        "source, or from none."
    ),
    fix=(
        "Widen the source's nodeSelector to the node, or drop the node from the snapshot (at the "
        "source of truth that produces it)."
    ),
)
SNAPSHOT_UNDECLARED_LEVEL = Rule(
    "snapshot-undeclared-level",
    _S,
    "A snapshot states only keys listed in its source's levels.",
    why=(
        "A snapshot states values for its source's levels; that is all tasgen publishes. A key "
        "that is no level (a typo, or a level not listed yet) would be a label that no Topology "
        "uses, or be dropped without a word."
    ),
    fix=("Add the key to the source's levels, or fix its spelling in the snapshot."),
)
SOURCE_LEVEL_TYPO = Rule(
    "source-level-typo",
    _S,
    "Each level of a writing source is one its snapshot states (not a misspelling of one it does).",
    why=(
        "A level that no node of the snapshot states, beside a key the snapshot states on its "
        "nodes that is not a level and differs by a letter or two, is a typo in `levels:`. Every "
        "node's label under the right key is then undeclared and every finer level lacks its "
        "parent: dozens of errors at snapshot lines, none where the typo is. This one error, at "
        "the level, stands for them all (they are not reported)."
    ),
    fix="Correct the level's spelling to the key the snapshot states (the message names it).",
)
LABEL_NOT_WRITABLE = Rule(
    "label-not-writable",
    _S,
    "A writing source publishes only topology.gpustack.ai/* (not the profile key) and the admin prefix.",
    why=(
        "nfd-master publishes only the label namespaces it is allowed (run it with "
        "`-extra-label-ns=topology.gpustack.ai,<admin prefix's domain>`) and never "
        "`kubernetes.io/` or `k8s.io/` keys; `topology.gpustack.ai/profile` is tasgen's own. A "
        "snapshot publishing another key would be refused by NFD or overwrite labels other owners "
        "set."
    ),
    fix=(
        "Publish the value under `topology.gpustack.ai/<level>` or under GeneratorConfig "
        "adminLabelPrefix, and list that key in the source's levels."
    ),
)
SNAPSHOT_LABEL_SYNTAX = Rule(
    "snapshot-label-syntax",
    _S,
    "Snapshot label keys and values follow Kubernetes syntax.",
    why=(
        "Every label a snapshot states becomes a node label through NFD. A key or value "
        "Kubernetes refuses would make the NodeFeature fail to apply, leaving the node without "
        "its hierarchy."
    ),
    fix=(
        "Fix the key or value in the snapshot's source of truth (a value: at most 63 characters "
        "of letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit)."
    ),
)
SNAPSHOT_READ_ONLY_MISMATCH = Rule(
    "snapshot-read-only-mismatch",
    _S,
    "A repeated topology.kubernetes.io/region or zone equals the node's own label.",
    why=(
        "`topology.kubernetes.io/region` and `zone` belong to the cloud provider: tasgen never "
        "writes them. A snapshot may repeat them as the parents of its own levels, but a "
        "different value means its tree puts the node in another zone than the one it is in, and "
        "the hierarchy would be built on a wrong parent."
    ),
    fix=("Correct the zone or region in the source of truth, or stop repeating it in the snapshot."),
)
SOURCE_EXPIRED = Rule(
    "source-expired",
    _S,
    "A source past its expiresAt is not Ready.",
    Level.WARNING,
    why=(
        "A snapshot past its expiresAt is no longer trusted: the source is not Ready, its "
        "NodeFeatures are removed and its nodes fall back to the hostname-only profile, so their "
        "flavors are renamed and their queues drained through the gate. Because rendered/ then "
        "depends on the time, `tasgen check` fails with stale-render until someone renders again."
    ),
    fix=(
        "Refresh the snapshot with a later expiresAt (`tasgen fetch` for a webhook source, a new "
        "ConfigMap revision for a configMap source), then render and commit."
    ),
)
HIERARCHY_PARENT_CHAIN = Rule(
    "hierarchy-parent-chain",
    _S,
    "A node has a value for a level only with values for every coarser level.",
    why=(
        "A node's hierarchy is the longest prefix of its source's levels it has values for, then "
        "the hostname. A value below a missing level would be cut off: the node would land in "
        "another profile, with other flavors, than its rack-mates, and Kueue would place nothing "
        "by the level it lost. One mislabelled node blocks the change for review instead."
    ),
    fix=(
        "Give the node a value for every coarser level (the message names the missing one), or "
        "remove its value for the finer one."
    ),
)
HIERARCHY_AMBIGUOUS_PARENT = Rule(
    "hierarchy-ambiguous-parent",
    _S,
    "One child value sits under one parent tuple across a source's nodes.",
    why=(
        "A level's value names one domain under one parent. A rack `r2` in zone z1 on one node "
        "and in z2 on another is either a typo in the source of truth or two racks sharing a "
        "name: Kueue would keep two domains apart, while `kubectl get nodes -l "
        "topology.gpustack.ai/rack=r2`, reports and anyone reading the labels would take them as "
        "one."
    ),
    fix=(
        "Give the two domains distinct values (e.g. `z1-r2` and `z2-r2`), or correct the parent "
        "of the node that is wrong."
    ),
)
OWNERSHIP_CONFLICT = Rule(
    "ownership-conflict",
    _S,
    "Two writing sources never state the same key for the same node.",
    why=(
        "Each writing source publishes its labels in its own NodeFeature, and nfd-master merges "
        "the NodeFeatures of a node. Two sources stating one key for one node would leave the "
        "value to the order of that merge. Both sources report OwnershipConflict in the status "
        "summary."
    ),
    fix=(
        "Narrow the nodeSelectors so that one source selects the node, or drop the key from one "
        "of the two snapshots."
    ),
)
PLAN_IDENTITY = Rule(
    "plan-identity",
    _S,
    "Identity keys are GeneratorConfig hardwareIdentityKeys; values are label values.",
    why=(
        "A hardware identity becomes the nodeLabels of its ResourceFlavors, which Kueue uses to "
        "pick nodes. GeneratorConfig hardwareIdentityKeys (default `nvidia.com/gpu.product`) "
        "declares which labels name hardware: any other key would tie flavors to a pool or a "
        "place instead, and a value Kubernetes refuses as a label value selects no node."
    ),
    fix=(
        "Use the keys of hardwareIdentityKeys, or add the key there if it names hardware; write "
        "the value as the nodes' label has it."
    ),
)
FLAVOR_OVERLAP = Rule(
    "flavor-overlap",
    _S,
    "No two identities of a queue can select the same node.",
    why=(
        "Each identity of a queue becomes flavors whose nodeLabels select its nodes. Two "
        "identities that can match one node (one is a subset of the other, e.g. `{product: H100}` "
        "and `{product: H100, memory: 80G}`) would count that node's capacity in both flavors and "
        "let Kueue place pods of either flavor on it."
    ),
    fix=("Add a key on which the two identities differ, or merge them into one entry."),
)
PLAN_QUOTA = Rule(
    "plan-quota",
    _S,
    "nominalQuota, borrowingLimit and lendingLimit name only covered resources.",
    why=(
        "A ClusterQueue's flavors list exactly its coveredResources; Kueue refuses a flavor quota "
        "for a resource the group does not cover. A quota or limit for another resource would be "
        "dropped, or fail when the queue is synced."
    ),
    fix=(
        "Add the resource to spec.coveredResources, or remove it from nominalQuota, "
        "borrowingLimit and lendingLimit."
    ),
)
PLAN_CLUSTER_QUEUE = Rule(
    "plan-cluster-queue",
    _S,
    "clusterQueue gives a field in one spelling (v1beta2 or v1beta1); its namespaceSelector uses valid "
    "label keys and values.",
    why=(
        "The clusterQueue fields are passed to Kueue as written. A field given in both spellings "
        "(`cohortName` and its v1beta1 form `cohort`) has no single value; `onFlavors` names "
        "ResourceFlavors, which tasgen names and renames when a profile changes, so Kueue would "
        "refuse the stale name; a v1beta2-only field cannot be written for Kueue v0.14 to v0.16; "
        "a namespaceSelector with invalid labels is refused by the API server."
    ),
    fix=(
        "Keep one spelling of each field, give an admission check to the whole queue instead of "
        "onFlavors, drop v1beta2-only fields on the v1beta1 target (or raise kueueAPIVersion), "
        "and fix the selector's labels."
    ),
)
GENERATOR_CONFIG = Rule(
    "generator-config",
    _S,
    "hardwareIdentityKeys are label keys, not the profile label tasgen writes; adminLabelPrefix is "
    "outside reserved namespaces.",
    why=(
        "hardwareIdentityKeys name node labels that tell hardware apart; the profile label tasgen "
        "writes names no hardware, and a flavor selecting it would select its own profile. "
        "adminLabelPrefix starts the keys writing sources may publish, so it must start valid "
        "label keys outside the namespaces Kubernetes reserves (`kubernetes.io/`, `k8s.io/`), "
        "which NFD refuses to publish."
    ),
    fix=(
        "Use valid label keys for hardwareIdentityKeys (e.g. `nvidia.com/gpu.product`), and an "
        "adminLabelPrefix of your own domain ending in `/` (e.g. `infra.example.com/`)."
    ),
)
GATE_NAMESPACE = Rule(
    "gate-namespace",
    _S,
    "gate.namespace is the gate's own: not default, kube-*, the NodeFeatures' namespace or the GitOps "
    "engines' (tasgen renders the gate's Namespace object, which the engine then manages).",
    why=(
        "tasgen renders the gate's Namespace object, so the GitOps engine manages it: its labels, "
        "and its deletion when tasgen's objects are pruned. A namespace that Kubernetes, NFD or "
        "the GitOps engine itself owns would then have two managers, and removing tasgen could "
        "delete it with everything in it."
    ),
    fix=(
        "Give the gate a namespace of its own: set GeneratorConfig gate.namespace to an unused "
        "name, or leave it out for the default `tasgen-system`."
    ),
)

ARGOCD_PROJECT = Rule(
    "argocd-project",
    _S,
    "sync.argocd.project names tasgen's own AppProject, not Argo CD's default (tasgen renders it).",
    why=(
        "tasgen renders the AppProject its Applications use, restricted to the repository, the "
        "namespaces and the kinds its render holds, so that a commit to the synced paths cannot "
        "make Argo CD apply anything else. Argo CD's default project is every other "
        "Application's too: rendered by tasgen it would lose its permissions, and unrestricted it "
        "restricts nothing."
    ),
    fix=(
        "Leave sync.argocd.project out (tasgen's AppProject is then named like the "
        "ApplicationSet, default tasgen) or name a project nothing else uses."
    ),
)

RETAIN_FOR = Rule(
    "retain-for",
    _S,
    "gate.retainFor is a positive Go duration (e.g. 168h, 36h30m): how long WaitForIdle keeps a "
    "dropped flavor at most.",
    why=(
        "Under dropPolicy WaitForIdle a dropped flavor stays in its queue at zero quota until no "
        "Workload is admitted on it; retainFor bounds that wait, after which the flavor is dropped "
        "the normal way (the gate drains it if it is still busy). A value that is no duration, or "
        "zero, would bound nothing or drop at once."
    ),
    fix=(
        "Write a Go duration with units `h`, `m`, `s` (`ms`, `us`, `ns`), such as `168h` for a "
        "week, or leave retainFor out to wait for as long as the work runs."
    ),
)
RETENTION_UNBOUNDED = Rule(
    "retention-unbounded",
    _S,
    "A dropPolicy WaitForIdle queue's retention can end: GeneratorConfig gate.liveRefresh or "
    "gate.retainFor is set.",
    Level.WARNING,
    why=(
        "WaitForIdle keeps a flavor the plan drops, and its nodes' flavor labels, until a live "
        "render (`tasgen render --kubeconfig`, the scheduled refresh `tasgen init` writes) finds "
        "it idle, or until gate.retainFor has passed. An offline render cannot see the cluster, so "
        "it carries the flavor on: with neither a live refresh nor retainFor the kept flavor stays "
        "in the queue for ever, its capacity unused, its nodes pinned, counting toward Kueue's "
        "64 flavors per queue. tasgen cannot see a CI workflow, so the repository says it runs one."
    ),
    fix=(
        "Set GeneratorConfig `gate.liveRefresh: true` when a scheduled job runs `tasgen render "
        "--kubeconfig` and commits the result (`tasgen init` scaffolds it and sets the field), or "
        "`gate.retainFor` (e.g. `168h`) to bound the wait, after which the refresh drains what is "
        "still busy; or use dropPolicy HoldAndDrain."
    ),
)
WORKLOAD_GLOB = Rule(
    "workload-glob",
    _S,
    "Each of workloads is a glob relative to the repository's top folder: no leading '/', no "
    "'..', '/' between folders, '**' only as a whole segment, every '[' closed.",
    why=(
        "`tasgen plan` reads the workloads at the base revision from git and at the head from the "
        "working tree, and `tasgen fit` without a PATH reads them too: a glob that points outside "
        "the repository, or that git and tasgen would read differently, would compare files the "
        "pull request does not hold, or silently match none."
    ),
    fix=(
        "Write the path from the repository's top folder, as in `workloads/**/*.yaml` (`*` and `?` "
        "stay in one folder, `**` spans folders)."
    ),
)
PLAN_LIMIT_COHORT = Rule(
    "plan-limit-cohort",
    _S,
    "borrowingLimit and lendingLimit need a cohort (clusterQueue.cohortName).",
    why=(
        "A borrowingLimit bounds what a queue borrows from its cohort and a lendingLimit what it "
        "lends to it; Kueue refuses either on a ClusterQueue without a cohort, so the queues step "
        "would fail to sync."
    ),
    fix=("Set `clusterQueue.cohortName`, or remove the limit."),
)
LENDING_LIMIT = Rule(
    "lending-limit",
    _S,
    "lendingLimit is at most nominalQuota (declared, else the matching nodes' allocatable).",
    why=(
        "Kueue refuses a lendingLimit above the nominalQuota: a queue cannot lend more than it "
        "has. tasgen splits both across the identity's flavors with the same weights and caps "
        "each flavor's part, so the totals are what must hold."
    ),
    fix=(
        "Lower the lendingLimit to at most the nominalQuota (the declared one, else the matching "
        "nodes' allocatable, which the message gives), or raise the nominalQuota."
    ),
)
PLAN_TOLERATIONS = Rule(
    "plan-tolerations",
    _S,
    "tolerations and nodeTaints are valid Kubernetes tolerations and taints.",
    why=(
        "Tolerations and nodeTaints are written on the identity's ResourceFlavors, and "
        "Kubernetes' rules apply: a toleration without a key needs `operator: Exists`, Exists "
        "takes no value, tolerationSeconds only goes with NoExecute, keys and values follow label "
        "syntax, and Kueue refuses a flavor whose taints repeat a key and effect."
    ),
    fix=("Correct the toleration or taint the message points at."),
)
FLAVOR_SETTINGS_CONFLICT = Rule(
    "flavor-settings-conflict",
    _S,
    "Entries for one hardware identity in several queues state the same tolerations and nodeTaints.",
    why=(
        "The flavors of an identity are shared by every queue that names it, and a flavor has one "
        "set of tolerations and nodeTaints. Two entries for one identity with different settings "
        "cannot both be written; repeating them in every entry lets a reviewer of a queue see "
        "everything its flavors do."
    ),
    fix=(
        "State the same tolerations and nodeTaints (in any order) in every hardware entry of that "
        "identity; the message names both places."
    ),
)
TAINT_UNTOLERATED = Rule(
    "taint-untolerated",
    _S,
    "A flavor's tolerations cover the NoSchedule/NoExecute taints of its nodes.",
    Level.WARNING,
    why=(
        "Kueue's topology-aware scheduling places pods only on nodes whose taints the flavor's "
        "tolerations (or the workload's own) cover. GPU nodes are usually tainted "
        "`nvidia.com/gpu:NoSchedule`: without the toleration the flavor's capacity is counted in "
        "its quota, but no pod is placed there. Taints of the node lifecycle "
        "(`node.kubernetes.io/*`) are not judged."
    ),
    fix=(
        "Add the toleration the message gives to the hardware entry's tolerations (and to every "
        "other entry of that identity), or make sure every workload tolerates the taint itself."
    ),
)
LOCAL_QUEUE = Rule(
    "local-queue",
    _S,
    "LocalQueue names are DNS-1123 labels; no two plans list the same namespace/name.",
    why=(
        "Jobs name their LocalQueue in the `kueue.x-k8s.io/queue-name` label, so its name must be "
        "a DNS-1123 label (at most 63 characters, no dot); by default it is the plan's name. Two "
        "plans listing one namespace/name would render two LocalQueues of one name, pointing at "
        "different ClusterQueues."
    ),
    fix=(
        "Give the LocalQueue a `name:` that is a DNS-1123 label, and list each namespace/name in "
        "one plan only."
    ),
)
NAMESPACE_SELECTOR_MISSING = Rule(
    "namespace-selector-missing",
    _S,
    "A ClusterQueue sets namespaceSelector; without one Kueue admits from no namespace.",
    Level.WARNING,
    why=(
        "A ClusterQueue without namespaceSelector admits workloads from no namespace: Kueue's "
        "default is the selector that matches nothing. Its LocalQueues would accept jobs that are "
        "never admitted."
    ),
    fix=(
        "Set `clusterQueue.namespaceSelector`: `{}` for every namespace, or the selector the "
        "message proposes from the plan's LocalQueues."
    ),
)
LOCAL_QUEUE_UNSELECTED = Rule(
    "local-queue-unselected",
    _S,
    "A LocalQueue's namespace is one its ClusterQueue's namespaceSelector selects.",
    Level.WARNING,
    why=(
        "Kueue admits a LocalQueue's workloads only when its namespace matches the ClusterQueue's "
        "namespaceSelector. When the selector reads only `kubernetes.io/metadata.name` (set on "
        "every Namespace by the API server), tasgen can tell that it refuses the LocalQueue's "
        "namespace: its jobs would wait forever."
    ),
    fix=("Add the namespace to the selector, or move the LocalQueue to a namespace it selects."),
)

SELECTOR_UNMATCHED = Rule(
    "selector-unmatched",
    _S,
    "A TopologySource's nodeSelector matches at least one node.",
    Level.WARNING,
    why=(
        "A source whose nodeSelector matches no node of the NodeInventory gives no node a "
        "hierarchy, quietly: usually a typo in a label key or value, or a pool not imported yet."
    ),
    fix=(
        "Fix the selector's labels to match the nodes (`tasgen validate` then reports their count "
        "in the status summary), or import the nodes."
    ),
)
LEVEL_UNCARRIED = Rule(
    "level-uncarried",
    _S,
    "Every level of a source is stated for (or carried by) at least one node it selects.",
    Level.WARNING,
    why=(
        "A node's hierarchy stops above the first level it has no value for. A level no selected "
        "node carries cuts every node's hierarchy above it, so the Topology and flavors lose that "
        "level and everything below it (a typo in the coarsest level makes every node "
        "hostname-only)."
    ),
    fix=("Fix the level's spelling, or label the nodes (state the level in the snapshot) before adding it."),
)
SOURCE_EXPIRING = Rule(
    "source-expiring",
    _S,
    "A source does not expire within GeneratorConfig expiryWarningDays (default 14).",
    Level.WARNING,
    why=(
        "When the snapshot expires its source stops being Ready: its nodes fall back to "
        "hostname-only, their flavors are renamed and their queues drain, and `tasgen check` "
        "fails on every pull request until someone renders. The warning announces that while "
        "there is time to refresh; with `--strict` (the pull-request workflow) it fails the check "
        "from then on."
    ),
    fix=(
        "Refresh the snapshot with a later expiresAt (`tasgen fetch`, or a new ConfigMap "
        "revision). GeneratorConfig expiryWarningDays sets how many days ahead it warns (0 turns "
        "it off)."
    ),
)
QUOTA_ABOVE_ALLOCATABLE = Rule(
    "quota-above-allocatable",
    _S,
    "A declared nominalQuota is at most the allocatable of the nodes it splits over.",
    Level.WARNING,
    why=(
        "A nominalQuota larger than the matching nodes' allocatable promises capacity that does not "
        "exist: the excess can be admitted but never placed, so workloads that count on it wait."
    ),
    fix=(
        "Lower the nominalQuota to at most the nodes' allocatable (the message gives it), or add "
        "nodes of that identity first."
    ),
)
REPO_URL_PLACEHOLDER = Rule(
    "repo-url-placeholder",
    _S,
    "GeneratorConfig sync.argocd.repoURL is not the placeholder `tasgen init` writes without --repo-url.",
    Level.WARNING,
    why=(
        "`tasgen init` without --repo-url writes https://github.com/OWNER/REPO.git into the "
        "GeneratorConfig and into deploy/argocd/application.yaml. Rendered as it is, the "
        "ApplicationSet and its AppProject point Argo CD at a repository that does not exist: "
        "every Application fails to fetch, and nothing syncs."
    ),
    fix=(
        "Set spec.sync.argocd.repoURL to the URL Argo CD fetches this repository from, and the "
        "same URL in deploy/argocd/application.yaml (or run `tasgen init --repo-url URL` in a fresh "
        "folder to see both)."
    ),
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
    SOURCE_LEVEL_TYPO,
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
    ARGOCD_PROJECT,
    RETAIN_FOR,
    RETENTION_UNBOUNDED,
    WORKLOAD_GLOB,
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
    REPO_URL_PLACEHOLDER,
)
