"""Rules of the compile stage: profiles, flavors, quotas and the sharded layout."""

from generator.model import Level
from generator.rules.base import Rule, Stage

_S = Stage.COMPILE

NODE_AMBIGUOUS = Rule(
    "node-ambiguous",
    _S,
    "A node selected by several Ready sources falls back to hostname-only.",
    Level.WARNING,
)
PROFILE_COLLISION = Rule("profile-collision", _S, "Two different hierarchies never hash to one profile ID.")
FLAVOR_COLLISION = Rule(
    "flavor-collision", _S, "Two different hardware identities never get one flavor name."
)
IDENTITY_UNMATCHED = Rule(
    "identity-unmatched",
    _S,
    "A hardware identity without a declared quota that matches no node gives no flavor.",
    Level.WARNING,
)
QUOTA_UNPLACEABLE = Rule(
    "quota-unplaceable",
    _S,
    "A declared quota has matching nodes with allocatable of that resource (quota is conserved).",
)
QUOTA_RANGE = Rule(
    "quota-range", _S, "A quota summed from the nodes' allocatable stays within Kueue's 64-bit range."
)
FLAVOR_LIMIT = Rule(
    "flavor-limit",
    _S,
    "A ClusterQueue has at most 64 flavors (hardware identities x profiles) and 512 flavor x resource "
    "quotas.",
)
QUEUE_EMPTY = Rule("queue-empty", _S, "A ClusterQueue with no flavor stays held.", Level.WARNING)

SHARD_SIZE = Rule(
    "shard-size",
    _S,
    "A labels shard holds at most maxObjectsPerShard NodeFeatures (raise nodeFeatureShards).",
)

PATH_SIZE = Rule(
    "path-size",
    _S,
    "Every other synced folder (kueue/, queues/) holds at most maxObjectsPerShard objects.",
    Level.WARNING,
)

RULES = (
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
)
