"""``tasgen fit --kubeconfig``: whether each PodSet fits now, read-only. Admitted Workloads'
quota is reserved from their queues (and so from the cohort), running Pods' requests from their
nodes' allocatable (generator/fit/usage.py); the same engine then judges each workload again
(docs/explanation/fit.md)."""

from __future__ import annotations

from pathlib import Path

from generator.fit.cluster import Cluster
from generator.fit.engine import Engine
from generator.fit.judge import Judgement
from generator.fit.usage import LiveError, now_cluster, read_live

__all__ = ["LiveError", "fits_now", "now_cluster"]


def fits_now(kubeconfig: Path, cluster: Cluster, judgement: Judgement) -> list[list[bool | None]]:
    """Per judged workload, per PodSet: whether it fits now (None when it never fits)."""
    live = now_cluster(cluster, *read_live(kubeconfig))
    engine = Engine(live, now=True)
    out: list[list[bool | None]] = []
    for judged in judgement.judged:
        queue = live.queues.get(judged.cluster_queue or "")
        if queue is None:
            out.append([None for _ in judged.verdicts])
            continue
        verdicts = engine.judge(queue, judged.workload.podsets)
        out.append(
            [now.fits if ever.fits else None for ever, now in zip(judged.verdicts, verdicts, strict=True)]
        )
    return out
