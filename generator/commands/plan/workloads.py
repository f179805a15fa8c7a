"""The workloads a merge concerns (GeneratorConfig ``spec.workloads``): each manifest judged by
tasgen fit at the base revision and at the head, and those whose verdict the change turns, or
whose manifest is new or changed, listed (docs/explanation/plan.md "Workloads")."""

from __future__ import annotations

from dataclasses import dataclass

from ...fit.check import Checked, positions
from ...fit.judge import Judged
from .shape import PodSetFit, WorkloadChange, WorkloadChangeKind, WorkloadFit

Key = tuple[str, str, str]  # kind, namespace, name


@dataclass(frozen=True)
class WorkloadSides:
    """Both revisions' workloads, each judged against its own revision's inventory (a base
    with none, or one that does not compile, as a cluster with no queues: as the plan shows
    its queues)."""

    before: Checked
    after: Checked


def compare_workloads(sides: WorkloadSides | None) -> tuple[WorkloadChange, ...]:
    """New and changed manifests, and turned verdicts; those that never fit after come first."""
    if sides is None:
        return ()
    before = _by_key(sides.before.judgement.judged)
    rows = []
    for judged, (line, column) in zip(sides.after.judgement.judged, positions(sides.after), strict=True):
        w = judged.workload
        old = before.get((w.kind, w.namespace, w.name))
        after = _fit(judged)
        change = _change(old, judged, after)
        if change is None:
            continue
        rows.append(
            WorkloadChange(
                kind=w.kind,
                namespace=w.namespace,
                name=w.name,
                file=w.where.file,
                line=line,
                column=column,
                cluster_queue=judged.cluster_queue,
                change=change,
                before=_fit(old) if old is not None else None,
                after=after,
            )
        )
    return tuple(sorted(rows, key=lambda r: (r.after.fits, r.file, r.line, r.column)))


def never_fit(rows: tuple[WorkloadChange, ...]) -> tuple[str, ...]:
    return tuple(f"{r.kind} {r.namespace}/{r.name}" for r in rows if not r.after.fits)


def _by_key(judged: list[Judged]) -> dict[Key, Judged]:
    found: dict[Key, Judged] = {}
    for j in judged:  # a name given twice: the first, as Kueue would refuse the second
        found.setdefault((j.workload.kind, j.workload.namespace, j.workload.name), j)
    return found


def _change(old: Judged | None, new: Judged, after: WorkloadFit) -> WorkloadChangeKind | None:
    if old is None:
        return "added"
    if (old.workload.local_queue, old.workload.podsets) != (new.workload.local_queue, new.workload.podsets):
        return "changed"
    return "verdict" if _turned(_fit(old), after) else None


def _turned(before: WorkloadFit, after: WorkloadFit) -> bool:
    """Whether a PodSet's answer changes: fits or not, and why not. A PodSet that only moves
    to another flavor or level is not listed: the queue tables show the flavors' changes."""
    return [(p.fits, p.reason) for p in before.pod_sets] != [(p.fits, p.reason) for p in after.pod_sets]


def _fit(judged: Judged) -> WorkloadFit:
    podsets = tuple(
        PodSetFit(name=ps.name, count=ps.count, fits=v.fits, flavor=v.flavor, level=v.level, reason=v.reason)
        for ps, v in zip(judged.workload.podsets, judged.verdicts, strict=True)
    )
    return WorkloadFit(fits=all(p.fits for p in podsets), pod_sets=podsets)
