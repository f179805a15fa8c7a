"""The semantic checks, in the order they run, each registered with its rule.

A check is a small function over the typed inventory (:class:`Context`) that yields
:class:`~generator.rules.Hit`s; the rule it is registered with (declared in
:mod:`generator.rules.semantic`) gives them their ID and level.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...model import Finding
from ...rules import Rule
from . import (
    hierarchy,
    limits,
    localqueues,
    nodes,
    plans,
    risks,
    snapshots,
    sources,
    taints,
    typos,
)
from .base import Check, Context

CHECKS: tuple[tuple[Rule, Check], ...] = (
    *sources.CHECKS,
    *nodes.CHECKS,
    *snapshots.CHECKS,
    *hierarchy.CHECKS,
    *plans.CHECKS,
    *limits.CHECKS,
    *taints.CHECKS,
    *localqueues.CHECKS,
    *risks.CHECKS,
)

#: the warnings about valid inventories that are probably not meant (judged after every other
#: rule, and only when there is no error: on an invalid inventory they would echo its errors)
RISKS = frozenset(rule for rule, _ in risks.CHECKS)


def run_checks(context: Context, *, risks: bool = False) -> Iterable[Finding]:
    """The hits of every check (with ``risks``: of every risk), stamped with the ID and level
    of the rule it is registered with; one root cause's follow-on errors folded into it
    (:mod:`.typos`)."""
    found = [rule.of(hit) for rule, check in CHECKS if (rule in RISKS) == risks for hit in check(context)]
    return found if risks else typos.fold(context, found)


__all__ = ["CHECKS", "RISKS", "Check", "Context", "run_checks"]
