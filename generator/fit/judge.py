"""Workloads -> their verdicts and findings: each workload's queue through its LocalQueue,
then the engine's verdict per PodSet. Pure (docs/explanation/fit.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..kube.selectors import selects_raw
from ..model import Finding, Where
from ..rules.fit import FIT_NEVER, FIT_SLICE_REMAINDER
from ..util.names import nearest
from . import reasons
from .cluster import Cluster, ClusterQueue
from .engine import Engine, Verdict
from .kinds import Workload, unmanaged
from .podsets import PREFERRED, REQUIRED, SLICE_LEVEL, SLICE_SIZE, PodSet
from .reasons import Cause

NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass
class Judged:
    workload: Workload
    cluster_queue: str | None
    verdicts: list[Verdict]
    local_queue: str = ""


@dataclass
class Judgement:
    judged: list[Judged] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def judge(cluster: Cluster, workloads: list[Workload], engine: Engine | None = None) -> Judgement:
    engine = engine or Engine(cluster)
    out = Judgement()
    for workload in workloads:
        local = workload.local_queue
        if local is None and (workload.namespace, "default") in cluster.local_queues:
            local = "default"  # Kueue's LocalQueue defaulting
        if local is None:
            out.findings.append(unmanaged(workload))
            continue
        name = cluster.local_queues.get((workload.namespace, local))
        queue = cluster.queues.get(name) if name is not None else None
        verdicts = _verdicts(engine, cluster, workload, local, name, queue)
        out.judged.append(Judged(workload, name, verdicts, local))
        out.findings += _findings(workload, verdicts, cluster, queue)
    return out


def _verdicts(
    engine: Engine,
    cluster: Cluster,
    workload: Workload,
    local: str,
    name: str | None,
    queue: ClusterQueue | None,
) -> list[Verdict]:
    reason = None
    if name is None:
        reason = reasons.local_queue_missing(local)
    elif queue is None:
        reason = reasons.cluster_queue_missing(name)
    elif not _selects(
        queue.namespace_selector, cluster.namespaces.get(workload.namespace), workload.namespace
    ):
        reason = reasons.namespace_not_selected()
    if reason is not None or queue is None:
        return [Verdict(False, reason=reason) for _ in workload.podsets]
    return engine.judge(queue, workload.podsets)


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None, namespace: str) -> bool:
    """Whether the namespaceSelector selects the namespace; a term on a label the inventory
    does not know holds (it cannot be told). Kueue selects none when the selector is unset."""
    if selector is None:
        return False
    if labels is None:  # a namespace the inventory does not describe: only its name is known
        return selects_raw(selector, {NAME_LABEL: namespace}, only=(NAME_LABEL,))
    return selects_raw(selector, {NAME_LABEL: namespace, **labels})  # the API server sets it


def _findings(
    workload: Workload, verdicts: list[Verdict], cluster: Cluster, queue: ClusterQueue | None
) -> list[Finding]:
    found = []
    for ps, places, verdict in zip(workload.podsets, workload.annotations, verdicts, strict=True):
        if not verdict.fits and verdict.cause != Cause.SKIPPED:
            unknown = (workload.namespace, workload.local_queue) not in cluster.local_queues
            where = _cause_where(workload, ps, places, verdict, unknown)
            message = (
                f"{workload.kind} {workload.namespace}/{workload.name}: PodSet {ps.name} "
                f"({ps.count} pod(s)) never fits: {verdict.reason or 'Kueue admits it with no flavor'}"
                f"{_hint(workload, ps, verdict, cluster, queue)}"
            )
            found.append(FIT_NEVER(where, message))
        remainder = _remainder(ps)
        if remainder:
            message = (
                f"PodSet {ps.name} has {ps.count} pod(s), not a multiple of the slice size "
                f"{ps.topology.slice_size if ps.topology else 1}: Kueue places {ps.count - remainder} "
                f"and the other {remainder} get no topology assignment"
            )
            found.append(FIT_SLICE_REMAINDER(places.get(SLICE_SIZE, workload.where), message))
    return found


def _remainder(ps: PodSet) -> int:
    size = ps.topology.slice_size if ps.topology and ps.topology.slice_level else None
    return ps.count % size if size else 0


def _hint(
    workload: Workload, ps: PodSet, verdict: Verdict, cluster: Cluster, queue: ClusterQueue | None
) -> str:
    """What Kueue's reason leaves out: the LocalQueue meant (a near name in the namespace, or
    the namespaces that have it), or the level asked for and the levels the flavors have. The
    reason itself stays Kueue's words."""
    local = workload.local_queue
    unknown = local is not None and (workload.namespace, local) not in cluster.local_queues
    if verdict.cause == Cause.QUEUE and local is not None and unknown:
        return _queue_hint(workload.namespace, local, cluster)
    missing_level = verdict.cause == Cause.LEVEL
    if missing_level and queue is not None and ps.topology is not None:
        asked = ps.topology.required or ps.topology.preferred or ps.topology.slice_level
        if asked:
            return _level_hint(asked, queue, cluster)
    return ""


def _queue_hint(namespace: str, local: str, cluster: Cluster) -> str:
    here = sorted(name for ns, name in cluster.local_queues if ns == namespace)
    near = nearest(local, here)
    if near:
        return f" (did you mean {' or '.join(near)}?)"
    elsewhere = sorted(ns for ns, name in cluster.local_queues if name == local)
    if elsewhere:
        return f" (LocalQueue {local} exists in namespace {', '.join(elsewhere)})"
    return f" (LocalQueues of namespace {namespace}: {', '.join(here) or 'none'})"


def _level_hint(asked: str, queue: ClusterQueue, cluster: Cluster) -> str:
    names = [name for group in queue.groups for name, _ in group.flavors]
    levels = {name: _levels(cluster, name) for name in names}
    shown = [f"{name}: {' > '.join(keys)}" for name, keys in levels.items() if keys]
    if not shown:
        return ""
    near = nearest(asked, {key for keys in levels.values() for key in keys})
    mean = f"; did you mean {' or '.join(near)}?" if near else ""
    return f" (the level asked for is {asked}; levels of this queue's flavors: {'; '.join(shown)}{mean})"


def _levels(cluster: Cluster, flavor_name: str) -> tuple[str, ...]:
    flavor = cluster.flavors.get(flavor_name)
    return cluster.topologies.get(flavor.topology, ()) if flavor and flavor.topology else ()


def _cause_where(
    workload: Workload, ps: PodSet, places: dict[str, Where], verdict: Verdict, unknown_queue: bool
) -> Where:
    cause = verdict.cause
    if unknown_queue and cause == Cause.QUEUE and workload.queue_where is not None:
        return workload.queue_where  # the LocalQueue named there does not exist
    if cause in (Cause.LEVEL, Cause.SLICE_LEVEL) or (cause == Cause.TOPOLOGY and REQUIRED in places):
        about_slices = cause == Cause.SLICE_LEVEL
        for key in (SLICE_LEVEL, REQUIRED, PREFERRED) if about_slices else (REQUIRED, PREFERRED, SLICE_LEVEL):
            if key in places:
                return places[key]
    return workload.where
