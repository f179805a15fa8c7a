"""Risks only a comparison shows (the others are rules of every run, generator/validate/checks/
risks.py): a level that nodes lose, and a level added before the nodes carry it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ...model import HOSTNAME_KEY, Finding, Where
from ...rules.plan import LEVEL_ADDED_UNCARRIED, LEVEL_REMOVED
from .side import Side


def plan_risks(base: Side, head: Side) -> list[Finding]:
    return [*_levels_removed(base, head), *_levels_added_uncarried(base, head)]


def _levels_removed(base: Side, head: Side) -> Iterable[Finding]:
    """Kueue no longer places a workload that requests a level its nodes' Topology lost."""
    moves = Counter(
        (old, head.profile_of[node], head.source_of.get(node) or base.source_of.get(node, ""))
        for node, old in base.profile_of.items()
        if node in head.profile_of and head.profile_of[node] != old
    )  # a node that left the inventory lost no level
    lost: Counter[tuple[str, str]] = Counter()  # (level, source) -> nodes
    for (old, new, source), nodes in moves.items():
        for key in set(base.profiles[old]) - set(head.profiles[new]) - {HOSTNAME_KEY}:
            lost[(key, source)] += nodes
    for (key, source), nodes in sorted(lost.items()):
        message = (
            f"level {key!r} is removed from the hierarchy of {nodes} node(s) (source {source!r}): "
            "workloads that request it (kueue.x-k8s.io/podset-required-topology or preferred) are no "
            "longer placed on them; running ones keep running"
        )
        yield LEVEL_REMOVED(_where(base, head, source), message)


def _levels_added_uncarried(base: Side, head: Side) -> Iterable[Finding]:
    """Kueue only schedules on nodes that carry every level of the Topology: a level added that
    some nodes lack keeps them on the shorter hierarchy (or out of the new one)."""
    for source, levels in sorted(head.source_levels.items()):
        before = set(base.source_levels.get(source, levels))
        selected, carried = head.selected.get(source, 0), head.carried.get(source, Counter())
        for key in levels:
            if key in before or carried[key] in (0, selected):
                continue  # not new; or carried by none (level-uncarried says so) or by all
            message = (
                f"level {key!r} is new in source {source!r} but {selected - carried[key]} of the "
                f"{selected} nodes it selects do not carry it yet: they keep a hierarchy without it "
                "(label them first, then add the level)"
            )
            index = head.source_declared[source].index(key)
            where = head.source_where[source].at("spec", "levels", index)
            yield LEVEL_ADDED_UNCARRIED(where, message)


def _where(base: Side, head: Side, source: str) -> Where:
    if source in head.source_where:
        return head.source_where[source].at("spec", "levels")
    return base.source_where[source].at("spec", "levels")
