"""Rules of tasgen plan's comparison of two revisions (checks: generator/commands/plan/risks.py)."""

from generator.model import Level
from generator.rules.base import Rule, Stage

_S = Stage.PLAN

LEVEL_REMOVED = Rule(
    "level-removed",
    _S,
    "A level of the base revision's hierarchy stays for the nodes that had it.",
    Level.WARNING,
)
LEVEL_ADDED_UNCARRIED = Rule(
    "level-added-uncarried",
    _S,
    "A level added since the base is on every node its source selects.",
    Level.WARNING,
)

RULES = (LEVEL_REMOVED, LEVEL_ADDED_UNCARRIED)
