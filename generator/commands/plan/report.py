"""The plan report: both revisions compiled, compared, as one plain document (its shape is
generator/schemas/plan-report.schema.json; the formats print it)."""

from __future__ import annotations

from typing import Any

from generator.commands.plan.fit import compare_fit
from generator.commands.plan.hierarchy import compare_profiles
from generator.commands.plan.nodes import compare_nodes
from generator.commands.plan.queues import HELD_EMPTY, HOLD_AND_DRAIN, STOPPED, compare_queues
from generator.commands.plan.risks import plan_risks
from generator.commands.plan.side import Side, side_of
from generator.load.locate import locate
from generator.model import Level, Problem
from generator.pipeline import Compilation

#: the report's shape; bumped only for a change that breaks its readers
REPORT_VERSION = 1


def build(base: Compilation | None, head: Compilation, base_ref: str) -> dict[str, Any]:
    """The report of merging ``head`` onto ``base`` (None: the base has no inventory)."""
    before, after = side_of(base), side_of(head)
    queues = compare_queues(before, after)
    report = {
        "version": REPORT_VERSION,
        "base": {"ref": base_ref, "state": _base_state(base)} | _base_problems(base),
        "queues": queues,
        "profiles": compare_profiles(before, after),
        "nodes": compare_nodes(before, after),
        "fit": compare_fit(before, after),
        "warnings": [_warning(p) for p in _warnings(base, head, before, after)],
    }
    report["summary"] = _summary(report)
    return report


def _base_state(base: Compilation | None) -> str:
    if base is None:
        return "absent"  # no inventory at the base revision: everything is new
    return "invalid" if base.failed else "compiled"


def _base_problems(base: Compilation | None) -> dict[str, Any]:
    """Why the base does not compile: its errors, so that a reader knows why everything is
    compared with nothing."""
    if base is None or not base.failed:
        return {}
    return {"problems": [_warning(p) for p in base.problems() if p.level is Level.ERROR]}


def _warnings(base: Compilation | None, head: Compilation, before: Side, after: Side) -> list[Problem]:
    texts = {**(base.texts if base else {}), **head.texts}
    own = [f for f in head.findings if f.level is Level.WARNING]
    return locate([*own, *plan_risks(before, after)], texts)


def _warning(p: Problem) -> dict[str, Any]:
    return {
        "rule": p.rule,
        "level": str(p.level),
        "path": p.path,
        "line": p.line,
        "col": p.col,
        "message": p.message,
    }


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    queues = report["queues"]
    return {
        "queuesChanged": sum(q["change"] != "unchanged" for q in queues),
        "flavorsAdded": sum(len(q["flavorsAdded"]) for q in queues),
        "flavorsRemoved": sum(len(q["flavorsRemoved"]) for q in queues),
        "drains": sorted(q["name"] for q in queues if q["drain"]["action"] in (HOLD_AND_DRAIN, HELD_EMPTY)),
        "stopped": sorted(q["name"] for q in queues if q["drain"]["action"] == STOPPED),
        "nodesChanged": report["nodes"]["changed"],
        "fitChanged": sum(row["changed"] for row in report["fit"]),
        "warnings": len(report["warnings"]),
    }
