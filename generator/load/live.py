"""What the live cluster says of the flavors WaitForIdle queues keep (render --kubeconfig):
read-only, Workloads and ClusterQueues listed once. A flavor is idle for a queue when no
unfinished Workload's admission names it for that queue (generator/gate/admissions.py, the
authority) and the live queue gives it no quota (so nothing new can be admitted on it between
this read and the sync that drops it). docs/explanation/gate.md, WaitForIdle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from ..kube.quantities import is_quantity, is_zero, parse
from ..model import Carried, LiveNodes
from .cluster import LiveError, reading, shown

__all__ = ["LiveError", "with_idle"]

#: how long transient API errors (5xx, 429, a dropped connection) are retried
RETRY_SECONDS = 15


def with_idle(carried: Carried, kubeconfig: Path) -> Carried:
    """``carried`` with ``idle`` filled from the cluster; raises :class:`LiveError`."""
    workloads, queues = _read(kubeconfig)
    from ..gate import admissions  # noqa: PLC0415 - with the client: only for --kubeconfig

    held = admissions.held_flavors(workloads)
    idle = {
        name: frozenset(
            f for f in flavors if f not in held.get(name, frozenset()) and _no_quota(queues.get(name), f)
        )
        for name, flavors in carried.queues.items()
    }
    usage = reserved(workloads)
    return replace(carried, idle=idle, live=live_nodes(workloads, queues), usage=usage)


def reserved(workloads: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, str]]]:
    """ClusterQueue -> flavor -> resource -> what Kueue reserves there: the sum of the
    unfinished Workloads' admissions (``resourceUsage`` per PodSet, of the flavor each resource
    is assigned). Not the queue status's ``flavorsReservation``: Kueue writes it some time after
    an admission and after a Workload finishes, so it lags both ways."""
    from ..gate import admissions  # noqa: PLC0415 - with the client: only for --kubeconfig

    totals: dict[str, dict[str, dict[str, Decimal]]] = {}
    for workload in workloads:
        found = admissions.admission(workload)
        if found is None:
            continue
        queue = totals.setdefault(str(found.get("clusterQueue")), {})
        for assignment in found.get("podSetAssignments") or []:
            flavors = assignment.get("flavors") or {}
            for resource, amount in (assignment.get("resourceUsage") or {}).items():
                if flavors.get(resource):
                    per = queue.setdefault(str(flavors[resource]), {})
                    per[resource] = per.get(resource, Decimal(0)) + _quantity(amount)
    return {
        q: {f: {r: _text(v) for r, v in per.items()} for f, per in flavors.items()}
        for q, flavors in totals.items()
    }


def _quantity(value: object) -> Decimal:
    """What a Workload's admission says it uses; Kueue writes only quantities there."""
    return parse(str(value)) if is_quantity(value) else Decimal(0)


def _text(amount: Decimal) -> str:
    """A quantity Kubernetes reads back as ``amount``: whole numbers plain, fractions in
    milli-units rounded up (Kueue's CPU quota is millicores)."""
    if amount == amount.to_integral_value():
        return str(int(amount))
    return f"{int((amount * 1000).to_integral_value(rounding='ROUND_CEILING'))}m"


def live_nodes(workloads: list[dict[str, Any]], queues: Mapping[str, Mapping[str, Any]]) -> LiveNodes:
    """Which nodes unfinished Workloads hold, and which flavors may still admit."""
    from ..gate import admissions  # noqa: PLC0415 - with the client: only for --kubeconfig

    busy: set[str] = set()
    unplaced: set[str] = set()
    for workload in workloads:
        nodes, flavors = admissions.placed_nodes(workload)
        busy |= nodes
        unplaced |= flavors
    admitting = {
        str(entry.get("name"))
        for queue in queues.values()
        for group in (queue.get("spec") or {}).get("resourceGroups") or ()
        for entry in group.get("flavors") or ()
        if not _no_quota(queue, str(entry.get("name")))
    }
    return LiveNodes(frozenset(busy), frozenset(unplaced), frozenset(admitting))


def _read(kubeconfig: Path) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415 - only for --kubeconfig

    from ..gate import kube  # noqa: PLC0415

    deadline = kube.Deadline(RETRY_SECONDS)
    with reading(kubeconfig) as api:
        for version in kube.VERSIONS:
            catalog = kube.Catalog(api, version)
            try:
                workloads = kube.with_backoff(catalog.workloads, deadline, lambda _: None)
            except ApiException as err:
                if err.status == 404:
                    continue  # this Kueue API version is not served: try the older one
                raise
            queues = kube.with_backoff(partial(catalog.list, "clusterqueues"), deadline, lambda _: None)
            return workloads, {str(q["metadata"]["name"]): q for q in queues}
    where = f"the cluster of {shown(kubeconfig)}"
    raise LiveError(f"{where} serves no Kueue API ({', '.join(kube.VERSIONS)} of kueue.x-k8s.io)")


def _no_quota(live: Mapping[str, Any] | None, flavor: str) -> bool:
    """The live queue admits nothing new on ``flavor``: it does not list it, or gives it zero
    nominal quota (and, in a cohort, zero borrowing) for every resource."""
    if live is None:
        return True
    spec = live.get("spec") or {}
    cohort = bool(spec.get("cohortName") or spec.get("cohort"))
    for group in spec.get("resourceGroups") or ():
        for entry in group.get("flavors") or ():
            if entry.get("name") != flavor:
                continue
            for resource in entry.get("resources") or ():
                if not is_zero(resource.get("nominalQuota")):
                    return False
                if cohort and not is_zero(resource.get("borrowingLimit")):
                    return False  # unset: it may borrow without bound
    return True
