"""What a live cluster uses: admitted Workloads' quota reserved from their queues (and so from
the cohort), their topology assignments' and running Pods' requests from their nodes'
allocatable. Pure: shared by ``tasgen fit --kubeconfig`` and ``tasgen capacity --kubeconfig``,
which read the objects (docs/explanation/fit.md)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from ..gate.admissions import admission
from ..gate.kube import Catalog
from ..kube.assignments import lowest_domains
from ..kube.quantities import kueue_units
from ..load.cluster import reading
from ..model import HOSTNAME_KEY
from .cluster import Cluster, NodeFacts
from .podsets import TOPOLOGY_ANNOTATIONS, pod_requests

Live = tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, str]]]


def read_live(kubeconfig: Path) -> Live:
    """The cluster's Workloads, Pods and Namespaces' labels, read-only; raises
    :class:`generator.load.cluster.LiveError`."""
    with reading(kubeconfig) as api:
        workloads = list(Catalog(api).workloads())
        core = k8s.CoreV1Api(api)
        pods = list_items(core.list_pod_for_all_namespaces(_preload_content=False))
        listed = list_items(core.list_namespace(_preload_content=False))
        namespaces = {str(n["metadata"]["name"]): dict(n["metadata"].get("labels") or {}) for n in listed}
    return workloads, pods, namespaces


def list_items(response: Any) -> list[dict[str, Any]]:
    """A list's items as the API spells them (camelCase), not as the client's objects do."""
    items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
    return items


def cluster_in_use(
    cluster: Cluster,
    workloads: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    namespaces: Mapping[str, Mapping[str, str]],
) -> Cluster:
    """The cluster with live usage: pure, for tests without an API server."""
    workloads = list(workloads)
    used = _node_usage(cluster, workloads, pods)
    nodes = [_less(n, used.get(n.name)) for n in cluster.nodes]
    return dataclasses.replace(
        cluster, nodes=nodes, usage=_quota_usage(workloads), namespaces=dict(namespaces)
    )


def _quota_usage(workloads: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], int]:
    """(queue, flavor, resource) -> what admitted Workloads reserve."""
    usage: Counter[tuple[str, str, str]] = Counter()
    for w in workloads:
        found = admission(w)
        if found is None:
            continue
        queue = str(found.get("clusterQueue"))
        for assignment in found.get("podSetAssignments") or ():
            flavors = assignment.get("flavors") or {}
            for resource, amount in (assignment.get("resourceUsage") or {}).items():
                if resource in flavors and (value := kueue_units(resource, amount)) is not None:
                    usage[(queue, str(flavors[resource]), resource)] += value
    return dict(usage)


def _node_usage(
    cluster: Cluster, workloads: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]
) -> dict[str, Counter[str]]:
    """Node -> what admitted Workloads' topology assignments and running non-TAS Pods use."""
    used: dict[str, Counter[str]] = {}
    placed: dict[str, Counter[str]] = {}  # by hostname, as topology assignments name nodes
    for w in workloads:
        _topology_usage(w, placed)
    for n in cluster.nodes:
        host = n.labels.get(HOSTNAME_KEY, n.name)
        if host in placed:
            used.setdefault(n.name, Counter()).update(placed[host])
    for pod in pods:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        node = spec.get("nodeName")
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if not node or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if any(k in annotations for k in TOPOLOGY_ANNOTATIONS[:3]):
            continue  # a TAS pod: its Workload's topology assignment counts it (as Kueue does)
        requests = pod_requests(spec)
        requests["pods"] = requests.get("pods", 0) + 1
        used.setdefault(str(node), Counter()).update(requests)
    return used


def _topology_usage(workload: Mapping[str, Any], used: dict[str, Counter[str]]) -> None:
    """What an admitted Workload's topology assignments place on each node (v1beta2's
    compressed slices: per level a universal value or prefix + root + suffix, per domain a
    count)."""
    found = admission(workload)
    for assignment in (found or {}).get("podSetAssignments") or ():
        topology = assignment.get("topologyAssignment") or {}
        levels = topology.get("levels") or []
        count = int(assignment.get("count") or 0)
        if not levels or levels[-1] != HOSTNAME_KEY or count <= 0:
            continue
        per_pod = {
            r: v // count
            for r, amount in (assignment.get("resourceUsage") or {}).items()
            if (v := kueue_units(r, amount)) is not None
        }
        for node, pods in lowest_domains(topology):
            used.setdefault(node, Counter()).update(
                {r: v * pods for r, v in per_pod.items()} | {"pods": pods}
            )


def _less(node: NodeFacts, used: Counter[str] | None) -> NodeFacts:
    if not used:
        return node
    left = {r: max(0, v - used.get(r, 0)) for r, v in node.allocatable.items()}
    return dataclasses.replace(node, allocatable=left)
