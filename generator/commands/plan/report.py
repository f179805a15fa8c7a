"""The plan report: both revisions compiled and compared, as one typed value (:mod:`.shape`,
published as generator/schemas/plan-report.schema.json; the formats print it)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ...load.locate import locate
from ...model import Level, Problem
from ...pipeline import Compilation
from ...rules.fit import FIT_NEVER
from .hierarchy import compare_profiles
from .nodes import compare_nodes
from .queues import compare_queues
from .risks import plan_risks
from .shape import HELD_EMPTY, HOLD_AND_DRAIN, STOPPED, Base, Queue, Report, Summary
from .shape import Problem as Located
from .side import Side, side_of
from .slots import compare_slots
from .workloads import WorkloadSides, compare_workloads, never_fit

#: the report's shape; bumped only for a change that breaks its readers
REPORT_VERSION: Literal[1] = 1


def build(
    base: Compilation | None,
    head: Compilation,
    base_ref: str,
    workloads: WorkloadSides | None = None,
    now: datetime | None = None,
) -> Report:
    """The report of merging ``head`` onto ``base`` (None: the base has no inventory);
    ``workloads``: GeneratorConfig spec.workloads judged on both sides (None: none listed);
    ``now``: the plan's time (a retention whose gate.retainFor has passed is named)."""
    before, after = side_of(base), side_of(head)
    queues = compare_queues(before, after, now)
    nodes = compare_nodes(before, after)
    fit = compare_slots(base, head, before, after)
    changes = compare_workloads(workloads)
    problems = [*_warnings(base, head, before, after), *_workload_problems(workloads)]
    warnings = tuple(_located(p) for p in problems)
    return Report(
        version=REPORT_VERSION,
        base=Base(ref=base_ref, state=_base_state(base), problems=_base_problems(base)),
        queues=queues,
        profiles=compare_profiles(before, after),
        nodes=nodes,
        fit=fit,
        workloads=changes,
        warnings=warnings,
        summary=Summary(
            queues_changed=sum(q.change == "changed" for q in queues),
            queues_added=sum(q.change == "added" for q in queues),
            queues_removed=sum(q.change == "removed" for q in queues),
            flavors_added=sum(len(q.flavors_added) for q in queues),
            flavors_removed=sum(len(q.flavors_removed) for q in queues),
            drains=_named(queues, HOLD_AND_DRAIN, HELD_EMPTY),
            nodes_changed=nodes.changed,
            fit_changed=sum(row.changed for row in fit),
            workloads_changed=len(changes),
            never_fit=never_fit(changes),
            warnings=len(warnings),
            stopped=_named(queues, STOPPED),
        ),
    )


def _named(queues: tuple[Queue, ...], *actions: str) -> tuple[str, ...]:
    return tuple(sorted(q.name for q in queues if q.drain.action in actions))


def _base_state(base: Compilation | None) -> Literal["compiled", "absent", "invalid"]:
    if base is None:
        return "absent"  # no inventory at the base revision: everything is new
    return "invalid" if base.failed else "compiled"


def _base_problems(base: Compilation | None) -> tuple[Located, ...] | None:
    """Why the base does not compile: its errors, so that a reader knows why everything is
    compared with nothing."""
    if base is None or not base.failed:
        return None
    return tuple(_located(p) for p in base.problems() if p.level is Level.ERROR)


def _warnings(base: Compilation | None, head: Compilation, before: Side, after: Side) -> list[Problem]:
    texts = {**(base.texts if base else {}), **head.texts}
    own = [f for f in head.findings if f.level is Level.WARNING]
    return locate([*own, *plan_risks(before, after)], texts)


def _workload_problems(workloads: WorkloadSides | None) -> list[Problem]:
    """What the head's workload manifests cannot be read or judged for (a verdict of never is
    a row of its own, not a warning too)."""
    if workloads is None:
        return []
    found = [f for f in workloads.after.findings if f.rule != FIT_NEVER.id]
    return locate(found, workloads.after.texts)


def _located(p: Problem) -> Located:
    level: Literal["warning", "error"] = "error" if p.level is Level.ERROR else "warning"
    return Located(rule=p.rule, level=level, path=p.path, line=p.line, col=p.col, message=p.message)
