"""Rules of the compile stage: profiles, flavors, quotas and the sharded layout."""

from ..model import Level
from .base import Rule, Stage

_S = Stage.COMPILE

NODE_AMBIGUOUS = Rule(
    "node-ambiguous",
    _S,
    "A node selected by several Ready sources falls back to hostname-only.",
    Level.WARNING,
    why=(
        "A node's hierarchy comes from the one Ready source that selects it. With several, tasgen "
        "does not invent a tree out of two: the node falls back to the hostname-only profile, "
        "with hostname-only flavors, and topology-aware workloads cannot be packed onto it by "
        "rack or zone."
    ),
    fix=(
        "Narrow the nodeSelectors so that exactly one source selects each node (the message names "
        "the nodes and the sources)."
    ),
)
PROFILE_COLLISION = Rule(
    "profile-collision",
    _S,
    "Two different hierarchies never hash to one profile ID.",
    why=(
        "A profile's ID (12 hex digits of the SHA-256 of its level keys) names its Topology and "
        "is part of its flavors' names and of the profile label. Two hierarchies with one ID "
        "would share a Topology, and one of them would be scheduled by the other's levels."
    ),
    fix=("Rename a level key of one of the two hierarchies; please report the collision too."),
)
FLAVOR_COLLISION = Rule(
    "flavor-collision",
    _S,
    "Two different hardware identities never get one flavor name.",
    why=(
        "A flavor's name carries its identity's values and 6 hex digits of a hash of the identity "
        "(and its tolerations). Two identities with one name would silently share one "
        "ResourceFlavor, whose nodeLabels select only the first one's nodes."
    ),
    fix=(
        "Tell the identities apart by another label value; please report the collision too (the "
        "hash is too short)."
    ),
)
IDENTITY_UNMATCHED = Rule(
    "identity-unmatched",
    _S,
    "A hardware identity without a declared quota that matches no node gives no flavor.",
    Level.WARNING,
    why=(
        "An identity no node matches gives no flavor: the queue cannot use that hardware, and its "
        "borrowingLimit or lendingLimit applies to nothing. Usually a typo in the product name, "
        "or hardware not in the NodeInventory yet. With a declared quota it is an error "
        "(quota-unplaceable)."
    ),
    fix=(
        "Spell the identity's values as the nodes' labels have them (`kubectl get nodes -L "
        "nvidia.com/gpu.product`), refresh the NodeInventory, or remove the entry."
    ),
)
QUOTA_SPLIT_UNSTATED = Rule(
    "quota-split-unstated",
    _S,
    "A writing source states every node it selects, so that no identity's quota splits over the rest.",
    Level.WARNING,
    why=(
        "A node a writing source selects but does not state gets no hierarchy from it: it falls "
        "back to another profile (often hostname-only), so its hardware identity's quota splits "
        "across one flavor per profile, in proportion to their nodes. A workload that needs the "
        "topology then sees only the stated nodes' part of the quota: the queue admits less than "
        "its author meant, without an error."
    ),
    fix=(
        "State every node the source selects in its snapshot (the message counts them), or narrow "
        "its nodeSelector to the nodes it states."
    ),
)
QUOTA_UNPLACEABLE = Rule(
    "quota-unplaceable",
    _S,
    "A declared quota has matching nodes with allocatable of that resource (quota is conserved).",
    why=(
        "Quota is conserved: every unit of a declared nominalQuota (or limit) is split over "
        "flavors in proportion to their nodes' allocatable. With no matching node, or none with "
        "allocatable of that resource, there is nothing to split it over, and the quota would "
        "vanish from the rendered ClusterQueue without a word."
    ),
    fix=(
        "Fix the identity so that it matches nodes, add the resource to those nodes' allocatable, "
        "or remove the quota (or limit) for it."
    ),
)
QUOTA_RANGE = Rule(
    "quota-range",
    _S,
    "A quota summed from the nodes' allocatable stays within Kueue's 64-bit range.",
    why=(
        "Kueue stores a quota as a 64-bit integer of units (millicores for CPU, bytes for "
        "memory). Without a declared nominalQuota an identity's quota is the sum of its nodes' "
        "allocatable, which can pass that range even when each node's value is fine; the API "
        "server would refuse the rendered ClusterQueue."
    ),
    fix=("Declare a nominalQuota for that resource on the hardware entry."),
)
FLAVOR_LIMIT = Rule(
    "flavor-limit",
    _S,
    "A ClusterQueue has at most 64 flavors (hardware identities x profiles) and 512 flavor x resource "
    "quotas.",
    why=(
        "Kueue allows at most 64 flavors in a ClusterQueue's resource group and 512 flavor x "
        "resource quotas; the API server refuses a larger ClusterQueue, and the queues step would "
        "never sync. tasgen renders one flavor per hardware identity x profile, so a queue "
        "spanning many profiles reaches the bound sooner than its hardware list suggests."
    ),
    fix=(
        "Split the queue's hardware entries over several ClusterQueuePlans (in one cohort to "
        "share quota), cover fewer resources, or reduce the number of profiles its nodes fall "
        "into."
    ),
)
QUEUE_EMPTY = Rule(
    "queue-empty",
    _S,
    "A ClusterQueue with no flavor stays held.",
    Level.WARNING,
    why=(
        "A queue whose identities match no node has no flavor. Kueue would admit, to a "
        "ClusterQueue without resource groups, every workload that requests no resource, so "
        "tasgen renders it with `stopPolicy: Hold` until it has a flavor."
    ),
    fix=("Fix the hardware entries so that they match nodes (see identity-unmatched), or remove the queue."),
)

SHARD_SIZE = Rule(
    "shard-size",
    _S,
    "A labels shard holds at most maxObjectsPerShard NodeFeatures (raise nodeFeatureShards).",
    why=(
        "Argo CD and Flux run `kustomize build` on every synced folder, and its time grows much "
        "faster than the objects in it (1.7k objects: 4 s; 17k: 22 min); an Argo CD Application "
        "also keeps a status entry per object. NodeFeatures are spread over nodeFeatureShards "
        "folders by a stable hash of each node's rack, so each must stay under "
        "maxObjectsPerShard."
    ),
    fix=(
        "Set GeneratorConfig spec.output.nodeFeatureShards to the count the message names "
        "(changing it moves most nodes' NodeFeatures once, in one reviewed commit: do it when no "
        "job is waiting to be placed). When the message names one rack path that alone is over "
        "the bound, more shards cannot split it (a rack's NodeFeatures share a shard): state a "
        "finer level below it in its source, or raise maxObjectsPerShard."
    ),
)

PATH_SIZE = Rule(
    "path-size",
    _S,
    "Every other synced folder (kueue/, queues/) holds at most maxObjectsPerShard objects.",
    Level.WARNING,
    why=(
        "The kueue/ and queues/ folders are synced whole, each as one path, and cannot be "
        "sharded: past maxObjectsPerShard their `kustomize build` slows down steeply in Argo CD "
        "and Flux, as a labels shard does."
    ),
    fix=(
        "Keep fewer objects there: fewer LocalQueues or hardware entries per ClusterQueuePlan, "
        "fewer profiles per identity."
    ),
)
PREVIOUS_RENDER_UNREAD = Rule(
    "previous-render-unread",
    _S,
    "Under dropPolicy WaitForIdle, the previous render's queues, flavors and Topologies are read.",
    Level.WARNING,
    why=(
        "What a WaitForIdle queue keeps, and which nodes keep their flavor labels until idle, is "
        "read from the rendered/ the render replaces. Without it (a fresh output folder, a file "
        "that does not parse) nothing is retained or pinned: if the cluster runs an earlier render, "
        "the gate drains each flavor this render drops (as HoldAndDrain), and nodes that change "
        "flavor are offered to their new flavor while work admitted through the old one may run "
        "there."
    ),
    fix=(
        "Render into the rendered/ the cluster runs (the committed one, or restore the file the "
        "message names); on a first render, nothing runs yet and the warning can be ignored."
    ),
)

RULES = (
    QUOTA_SPLIT_UNSTATED,
    NODE_AMBIGUOUS,
    PROFILE_COLLISION,
    FLAVOR_COLLISION,
    IDENTITY_UNMATCHED,
    QUOTA_UNPLACEABLE,
    QUOTA_RANGE,
    FLAVOR_LIMIT,
    QUEUE_EMPTY,
    SHARD_SIZE,
    PATH_SIZE,
    PREVIOUS_RENDER_UNREAD,
)
