"""Rules of tasgen plan's comparison of two revisions (checks: generator/commands/plan/risks.py)."""

from ..model import Level
from .base import Rule, Stage

_S = Stage.PLAN_COMMAND

LEVEL_REMOVED = Rule(
    "level-removed",
    _S,
    "A level of the base revision's hierarchy stays for the nodes that had it.",
    Level.WARNING,
    why=(
        "Workloads that request a level (`kueue.x-k8s.io/podset-required-topology` or "
        "`podset-preferred-topology`) are placed only on nodes whose Topology has it. Once nodes "
        "lose it, Kueue no longer places such workloads there; running ones keep running. Their "
        "flavors are renamed too, so the gate drains the queues that use them."
    ),
    fix=("Make sure no workload requests the level any more, then merge; or keep the level."),
)
LEVEL_ADDED_UNCARRIED = Rule(
    "level-added-uncarried",
    _S,
    "A level added since the base is on every node its source selects.",
    Level.WARNING,
    why=(
        "Kueue places workloads on a Topology's nodes by every one of its levels. Nodes of the "
        "source that do not carry the new level yet keep a hierarchy without it, in another "
        "profile with other flavors than the nodes that do, and workloads requesting the level "
        "cannot use them."
    ),
    fix=(
        "Label the nodes first (state the level for every node in the snapshot, or have the "
        "labels put on the nodes), then add the level."
    ),
)

RULES = (LEVEL_REMOVED, LEVEL_ADDED_UNCARRIED)
