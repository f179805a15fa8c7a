"""``tasgen plan --kubeconfig``: the live figures behind each drain, read-only.

For every queue of the plan, the live ClusterQueue is read and the drain gate's own decision
(generator/gate/decision.py) is taken against the new rendered queue, so the report says what
the gate would do now; for the flavors the new plan drops, Kueue's ``flavorsReservation`` and the
Workloads whose admission uses them say what a drain would evict. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from ...gate.admissions import admission, admitted_to, held_resources, holders
from ...gate.decision import HOLD_AND_DRAIN, Kind, decide
from ...gate.kube import Catalog, Queues
from ...kube.quantities import format_units, parse, scale_for, to_units
from ...load.cluster import reading
from . import shape as q
from .queues import eviction
from .shape import Action, Drain, Held, LiveDrain, LiveFlavor, Report

#: the gate's next step -> the report's drain action
_ACTIONS: dict[Kind, Action] = {
    Kind.ABSENT: q.CREATED,
    Kind.DONE: q.NONE,
    Kind.RESTORE: q.NONE,
    Kind.HELD_EMPTY: q.HELD_EMPTY,
    Kind.APPLY: q.IN_PLACE,
    Kind.AWAIT_STATUS: q.HOLD_AND_DRAIN,
    Kind.HOLD: q.HOLD_AND_DRAIN,
    Kind.DRAIN: q.HOLD_AND_DRAIN,
    Kind.SWITCH: q.HOLD_AND_DRAIN,
}


def add_live_figures(report: Report, desired: dict[str, dict[str, Any]], kubeconfig: Path) -> Report:
    """The report with ``drain.live`` in each queue the new plan keeps (``desired``: name -> the
    rendered ClusterQueue); raises :class:`generator.load.cluster.LiveError`."""
    with reading(kubeconfig) as api:
        queues, workloads = Queues(api), [w for w in Catalog(api).workloads() if admission(w)]

        def live(e: q.Queue) -> Drain:
            return _live(e.name, e.drain, queues.get(e.name), desired[e.name], workloads, e.flavors_retained)

        return replace(
            report,
            queues=tuple(replace(e, drain=live(e)) if e.name in desired else e for e in report.queues),
        )


def _live(
    name: str,
    drain: Drain,
    live: dict[str, Any] | None,
    desired: dict[str, Any],
    workloads: list[Any],
    retained: Iterable[str] = (),
) -> Drain:
    """The queue's drain as the gate would decide it against the live queue, with its figures
    (``retained``: the flavors WaitForIdle keeps in the desired queue)."""
    action, offline = decide(live, desired, held_resources(workloads, name)), drain.action
    # The engine applies the rendered stopPolicy after the gate: a new HoldAndDrain evicts
    # everything whatever the gate does, a new Hold stops admission when the gate drains none.
    live_action = _ACTIONS[action.kind]
    if action.kind is Kind.HOLD and action.stop_policy != HOLD_AND_DRAIN:
        live_action = q.HELD  # a plain hold (an empty queue): nothing drains
    # WaitForIdle keeps the dropped flavors in the rendered queue: the gate applies it in place.
    kept = offline == q.STOPPED or (offline in (q.HELD, q.RETAIN) and live_action in (q.NONE, q.IN_PLACE))
    if not kept:
        reason = drain.reason
        if action.condition is not None:
            evicts = eviction(name, live_action)
            reason = f"live: {action.condition.message}" + (f"; {evicts}" if evicts else "")
        drain = replace(drain, action=live_action, reason=reason)
    if live is None:
        return drain
    dropped = [f for f in _flavor_names(live) if f not in _flavor_names(desired)]
    reservation = _reservation(live)
    status = live.get("status") or {}
    reserving = int(status.get("reservingWorkloads") or 0)
    # Kueue's HoldAndDrain (the gate's to drain, or the new stopPolicy) evicts every Workload
    # the queue admitted, whichever flavor it runs on.
    evicted = admitted_to(workloads, name) if eviction(name, drain.action) else []
    held = Held(workloads=len(evicted), resources=_usage(evicted, _covered(desired) or _covered(live)))
    # WaitForIdle's retained flavors stay in the desired queue, so they are no drop: what runs
    # on them is what the retention spares.
    return replace(
        drain,
        live=LiveDrain(
            reserving_workloads=reserving,
            flavors=_figures(dropped, name, workloads, reservation),
            retained=_figures(retained, name, workloads, reservation),
            evicted=held,
        ),
    )


def _figures(
    flavors: Iterable[str], queue: str, workloads: list[Any], reservation: dict[str, dict[str, str]]
) -> tuple[LiveFlavor, ...]:
    """Per flavor: the Workloads admitted to ``queue`` on it, and Kueue's reservation there."""
    return tuple(
        LiveFlavor(name=f, workloads=len(holders(workloads, queue, f)), reservation=reservation.get(f, {}))
        for f in flavors
    )


def _covered(queue: dict[str, Any]) -> list[str]:
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    return [str(r) for g in groups for r in g.get("coveredResources") or []]


def _usage(workloads: list[Any], covered: list[str]) -> dict[str, str]:
    """Per covered resource: the total the Workloads' admissions hold (each PodSet's
    ``resourceUsage`` is already the sum over its pods)."""
    amounts: dict[str, list[Decimal]] = {}
    for w in workloads:
        for assignment in (admission(w) or {}).get("podSetAssignments") or []:
            for resource, quantity in (assignment.get("resourceUsage") or {}).items():
                if resource in covered:
                    amounts.setdefault(str(resource), []).append(parse(str(quantity)))
    result = {}
    for resource in (r for r in covered if r in amounts):
        scale = scale_for(resource, amounts[resource])
        result[resource] = format_units(sum(to_units(a, scale) for a in amounts[resource]), scale, resource)
    return result


def _flavor_names(queue: dict[str, Any]) -> list[str]:
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    return [str(f["name"]) for g in groups for f in g.get("flavors") or []]


def _reservation(live: dict[str, Any]) -> dict[str, dict[str, str]]:
    entries = (live.get("status") or {}).get("flavorsReservation") or []
    return {
        str(e["name"]): {str(r["name"]): str(r.get("total", 0)) for r in e.get("resources") or []}
        for e in entries
    }
