"""``tasgen plan --kubeconfig``: the live figures behind each drain, read-only.

For every queue of the plan, the live ClusterQueue is read and the drain gate's own decision
(generator/gate/decision.py) is taken against the new rendered queue, so the report says what
the gate would do now; for the flavors the new plan drops, Kueue's ``flavorsReservation`` and the
Workloads whose admission uses them say what a drain would evict. Nothing is written.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from generator.commands.plan import shape as q
from generator.commands.plan.shape import Action, Drain, LiveDrain, LiveFlavor, Report
from generator.gate.admissions import admission, held_resources, holders
from generator.gate.decision import HOLD_AND_DRAIN, Kind, decide
from generator.gate.kube import Catalog, Queues, load_client

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


class LiveError(Exception):
    """The cluster cannot be read."""


def add_live_figures(report: Report, desired: dict[str, dict[str, Any]], kubeconfig: Path) -> Report:
    """The report with ``drain.live`` in each queue the new plan keeps (``desired``: name -> the
    rendered ClusterQueue)."""
    try:
        api = load_client(str(kubeconfig))
        queues, workloads = Queues(api), [w for w in Catalog(api).workloads() if admission(w)]
        return replace(
            report,
            queues=tuple(
                replace(e, drain=_live(e.name, e.drain, queues.get(e.name), desired[e.name], workloads))
                if e.name in desired
                else e
                for e in report.queues
            ),
        )
    except (ApiException, HTTPError, OSError) as e:
        raise LiveError(f"cannot read the cluster of {kubeconfig}: {_reason(e)}") from e
    except ConfigException as e:  # a kubeconfig the client cannot use
        raise LiveError(f"{kubeconfig}: {e}") from e


def _reason(e: Exception) -> str:
    return f"{e.status} {e.reason}" if isinstance(e, ApiException) else str(e)


def _live(
    name: str, drain: Drain, live: dict[str, Any] | None, desired: dict[str, Any], workloads: list[Any]
) -> Drain:
    """The queue's drain as the gate would decide it against the live queue, with its figures."""
    action, offline = decide(live, desired, held_resources(workloads, name)), drain.action
    # The engine applies the rendered stopPolicy after the gate: a new HoldAndDrain evicts
    # everything whatever the gate does, a new Hold stops admission when the gate drains none.
    live_action = _ACTIONS[action.kind]
    if action.kind is Kind.HOLD and action.stop_policy != HOLD_AND_DRAIN:
        live_action = q.HELD  # a plain hold (an empty queue): nothing drains
    kept = offline == q.STOPPED or (offline == q.HELD and live_action in (q.NONE, q.IN_PLACE))
    if not kept:
        reason = drain.reason if action.condition is None else f"live: {action.condition.message}"
        drain = replace(drain, action=live_action, reason=reason)
    if live is None:
        return drain
    dropped = [f for f in _flavor_names(live) if f not in _flavor_names(desired)]
    reservation = _reservation(live)
    flavors = tuple(
        LiveFlavor(name=f, workloads=len(holders(workloads, name, f)), reservation=reservation.get(f, {}))
        for f in dropped
    )
    status = live.get("status") or {}
    reserving = int(status.get("reservingWorkloads") or 0)
    return replace(drain, live=LiveDrain(reserving_workloads=reserving, flavors=flavors))


def _flavor_names(queue: dict[str, Any]) -> list[str]:
    groups = (queue.get("spec") or {}).get("resourceGroups") or []
    return [str(f["name"]) for g in groups for f in g.get("flavors") or []]


def _reservation(live: dict[str, Any]) -> dict[str, dict[str, str]]:
    entries = (live.get("status") or {}).get("flavorsReservation") or []
    return {
        str(e["name"]): {str(r["name"]): str(r.get("total", 0)) for r in e.get("resources") or []}
        for e in entries
    }
