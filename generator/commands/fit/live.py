"""``tasgen fit --kubeconfig``: whether each PodSet fits now, read-only. Admitted Workloads'
quota is reserved from their queues (and so from the cohort), running Pods' requests from their
nodes' allocatable (generator/fit/usage.py); the same engine then judges each workload again
(docs/explanation/fit.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from ...fit.cluster import Cluster
from ...fit.engine import Engine
from ...fit.judge import Judgement
from ...fit.kinds import ClusterFacts
from ...fit.usage import cluster_in_use, list_items, read_live
from ...load.cluster import reading

__all__ = ["cluster_facts", "cluster_in_use", "fits_now"]


def cluster_facts(kubeconfig: Path) -> ClusterFacts:
    """The cluster's training runtimes, LimitRanges and RuntimeClasses; raises
    :class:`generator.load.cluster.LiveError`."""
    with reading(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        ranges = list_items(core.list_limit_range_for_all_namespaces(_preload_content=False))
        classes = list_items(k8s.NodeV1Api(api).list_runtime_class(_preload_content=False))
        runtimes = [r for plural in _RUNTIMES for r in _custom(api, plural)]
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for limit_range in sorted(ranges, key=lambda r: str(r["metadata"]["name"])):
        by_namespace.setdefault(str(limit_range["metadata"].get("namespace")), []).append(limit_range)
    return ClusterFacts(
        tuple(runtimes),
        {ns: tuple(found) for ns, found in by_namespace.items()},
        {str(c["metadata"]["name"]): c for c in classes},
    )


#: Kubeflow Trainer's runtimes (group, version, plural, kind)
_RUNTIMES = (
    ("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime"),
    ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime"),
)


def _custom(api: Any, plural: tuple[str, str, str, str]) -> list[dict[str, Any]]:
    """Every object of a custom resource, each with its kind; none when the CRD is absent."""
    group, version, name, kind = plural
    try:
        response = k8s.CustomObjectsApi(api).list_cluster_custom_object(
            group, version, name, _preload_content=False
        )
    except ApiException as e:
        if e.status == 404:
            return []
        raise
    return [{**item, "kind": kind} for item in list_items(response)]


def fits_now(kubeconfig: Path, cluster: Cluster, judgement: Judgement) -> list[list[bool | None]]:
    """Per judged workload, per PodSet: whether it fits now (None when it never fits)."""
    in_use = cluster_in_use(cluster, *read_live(kubeconfig))
    engine = Engine(in_use, with_usage=True)
    out: list[list[bool | None]] = []
    for judged in judgement.judged:
        queue = in_use.queues.get(judged.cluster_queue or "")
        if queue is None:
            out.append([None for _ in judged.verdicts])
            continue
        verdicts = engine.judge(queue, judged.workload.podsets)
        out.append(
            [
                current.fits if ever.fits else None
                for ever, current in zip(judged.verdicts, verdicts, strict=True)
            ]
        )
    return out
