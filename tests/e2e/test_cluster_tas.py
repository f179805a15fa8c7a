"""Kueue admits a rack-bound workload onto one rack of a generated flavor, and leaves one
too large for any rack pending with its own explanation."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.e2e.fleet import Fleet, Obj
from tests.e2e.kube import KUEUE_API, condition, create, ensure_namespace, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]

RACK = "topology.gpustack.ai/rack"
HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"
NAMESPACE = "tas-e2e"
LOCAL_QUEUE = "rack-bound"
ADMISSION_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RackFlavor:
    """A generated flavor whose Topology has the rack level, as one ClusterQueue offers it."""

    cluster_queue: Obj
    flavor: str
    topology: str
    gpu_quota: int
    racks: dict[str, dict[str, int]]  # rack -> node -> allocatable GPUs

    @property
    def node_rack(self) -> dict[str, str]:
        return {node: rack for rack, nodes in self.racks.items() for node in nodes}

    @property
    def spanning_pods(self) -> int:
        """One-GPU pods one more than the biggest node holds: a placement spans nodes."""
        return max(gpus for nodes in self.racks.values() for gpus in nodes.values()) + 1

    @property
    def too_many_pods(self) -> int:
        """One-GPU pods one more than the biggest rack holds."""
        return max(sum(nodes.values()) for nodes in self.racks.values()) + 1


def _gpu_quota(cq_flavor: Obj) -> int:
    quotas = [r["nominalQuota"] for r in cq_flavor["resources"] if r["name"] == GPU]
    return int(quotas[0]) if quotas else 0


def _rack_flavor(fleet: Fleet, core: client.CoreV1Api) -> RackFlavor:
    rack_topologies = {
        t["metadata"]["name"] for t in fleet.of_kind("Topology") if {"nodeLabel": RACK} in t["spec"]["levels"]
    }
    flavors = {
        f["metadata"]["name"]: f
        for f in fleet.of_kind("ResourceFlavor")
        if f["spec"]["topologyName"] in rack_topologies
    }
    offers = [
        (cq, cq_flavor)
        for cq in fleet.of_kind("ClusterQueue")
        for group in cq["spec"]["resourceGroups"]
        for cq_flavor in group["flavors"]
        if cq_flavor["name"] in flavors and _gpu_quota(cq_flavor) > 0
    ]
    assert offers, f"no ClusterQueue offers GPUs of a flavor whose Topology has the {RACK} level"
    cq, cq_flavor = max(offers, key=lambda offer: _gpu_quota(offer[1]))
    flavor = flavors[cq_flavor["name"]]
    selector = ",".join(f"{k}={v}" for k, v in sorted(flavor["spec"]["nodeLabels"].items()))
    racks: dict[str, dict[str, int]] = defaultdict(dict)
    for node in core.list_node(label_selector=selector).to_dict()["items"]:
        meta, allocatable = node["metadata"], node["status"]["allocatable"]
        racks[meta["labels"][RACK]][meta["name"]] = int(allocatable.get(GPU, "0"))
    assert racks, f"no Node carries the labels of flavor {cq_flavor['name']}: {selector}"
    topology = flavor["spec"]["topologyName"]
    return RackFlavor(cq, cq_flavor["name"], topology, _gpu_quota(cq_flavor), dict(racks))


@pytest.fixture(scope="module")
def target(api_client: client.ApiClient, dyn: DynamicClient, fleet: Fleet) -> RackFlavor:
    """The rack flavor under test, with a namespace and LocalQueue that reach its queue."""
    core = client.CoreV1Api(api_client)
    found = _rack_flavor(fleet, core)
    selector = found.cluster_queue["spec"].get("namespaceSelector") or {}
    assert not selector.get("matchExpressions"), "the test labels its namespace from matchLabels only"
    ensure_namespace(core, NAMESPACE, labels=selector.get("matchLabels"))
    create(
        dyn,
        {
            "apiVersion": KUEUE_API,
            "kind": "LocalQueue",
            "metadata": {"name": LOCAL_QUEUE, "namespace": NAMESPACE},
            "spec": {"clusterQueue": found.cluster_queue["metadata"]["name"]},
        },
    )
    return found


def _submit_job(api_client: client.ApiClient, name: str, pods: int) -> str:
    """A Job of `pods` one-GPU pods that must all run in one rack; returns its UID."""
    container = client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={GPU: "1"}, limits={GPU: "1"}),
    )
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name=name, namespace=NAMESPACE, labels={QUEUE_NAME: LOCAL_QUEUE}),
        spec=client.V1JobSpec(
            parallelism=pods,
            completions=pods,
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(annotations={REQUIRED_TOPOLOGY: RACK}),
                spec=client.V1PodSpec(restart_policy="Never", containers=[container]),
            ),
        ),
    )
    created = client.BatchV1Api(api_client).create_namespaced_job(NAMESPACE, job).to_dict()
    # Kueue's Job webhook suspends every queued Job until it is admitted.
    assert created["spec"]["suspend"] is True
    return str(created["metadata"]["uid"])


def _workload_of(dyn: DynamicClient, job_uid: str) -> Obj | None:
    workloads = dyn.resources.get(api_version=KUEUE_API, kind="Workload").get(namespace=NAMESPACE).to_dict()
    for workload in workloads["items"]:
        if any(ref["uid"] == job_uid for ref in workload["metadata"].get("ownerReferences", [])):
            found: Obj = workload
            return found
    return None


def _assigned_domains(assignment: dict[str, Any]) -> list[tuple[dict[str, str], int]]:
    """Kueue's compressed topology assignment as (level values, pod count) per domain."""
    levels = assignment["levels"]
    domains = []
    for piece in assignment["slices"]:
        count = piece["domainCount"]
        values = [_level_values(v, count) for v in piece["valuesPerLevel"]]
        pods = piece["podCounts"]
        per_domain = pods["individual"] if pods.get("individual") else [pods["universal"]] * count
        for i in range(count):
            domains.append(({level: values[j][i] for j, level in enumerate(levels)}, per_domain[i]))
    return domains


def _level_values(values: dict[str, Any], count: int) -> list[str]:
    if values.get("universal") is not None:
        return [values["universal"]] * count
    individual = values["individual"]
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return [prefix + root + suffix for root in individual["roots"]]


def test_rack_bound_job_is_admitted_onto_nodes_of_one_rack(
    api_client: client.ApiClient, dyn: DynamicClient, target: RackFlavor
) -> None:
    pods = target.spanning_pods
    assert any(sum(nodes.values()) >= pods for nodes in target.racks.values()), target.racks
    assert pods <= target.gpu_quota

    uid = _submit_job(api_client, "fits-one-rack", pods)

    def admitted() -> Obj | None:
        workload = _workload_of(dyn, uid)
        cond = condition(workload, "Admitted") if workload else None
        return workload if cond and cond["status"] == "True" else None

    workload = wait_for("the rack-bound Job's Workload to be admitted", admitted, ADMISSION_TIMEOUT_S)
    (podset,) = workload["status"]["admission"]["podSetAssignments"]
    assert podset["flavors"][GPU] == target.flavor
    domains = _assigned_domains(podset["topologyAssignment"])
    hosts = {domain.get(HOSTNAME) for domain, _ in domains}
    racks = {domain.get(RACK) or target.node_rack[domain[HOSTNAME]] for domain, _ in domains}
    assert sum(count for _, count in domains) == pods
    assert len(racks) == 1, domains
    assert len(hosts) >= 2 and hosts <= set(target.node_rack), domains
    # Kueue lifts the suspension of an admitted Job.
    job = client.BatchV1Api(api_client).read_namespaced_job("fits-one-rack", NAMESPACE).to_dict()
    assert job["spec"]["suspend"] is False


def test_job_larger_than_any_rack_stays_pending_with_kueues_reason(
    api_client: client.ApiClient, dyn: DynamicClient, target: RackFlavor
) -> None:
    pods = target.too_many_pods
    # Quota is no obstacle (even next to the other test's Job): only the topology is.
    assert pods + target.spanning_pods <= target.gpu_quota

    uid = _submit_job(api_client, "larger-than-any-rack", pods)
    core = client.CoreV1Api(api_client)
    # Kueue tries the queue's flavors in turn and its Workload condition keeps the reason
    # of the last one tried; the reason of each attempt is a Pending event of the Workload.
    explanation = re.compile(
        rf'topology "{re.escape(target.topology)}" '
        rf"(doesn't allow to fit any of|allows to fit only \d+ out of) {pods} pod\(s\)"
    )

    def topology_refusal() -> str | None:
        workload = _workload_of(dyn, uid)
        if workload is None:
            return None
        selector = f"involvedObject.name={workload['metadata']['name']},reason=Pending"
        events = core.list_namespaced_event(NAMESPACE, field_selector=selector).items
        return next((e.message for e in events if explanation.search(e.message or "")), None)

    wait_for("Kueue's topology reason for the too-large Workload", topology_refusal, ADMISSION_TIMEOUT_S)
    workload = _workload_of(dyn, uid)
    assert workload is not None
    reserved = condition(workload, "QuotaReserved")
    assert reserved is not None and reserved["status"] == "False", reserved
    assert reserved["message"].startswith("couldn't assign flavors to pod set main"), reserved
    assert "admission" not in workload.get("status", {})
    job = client.BatchV1Api(api_client).read_namespaced_job("larger-than-any-rack", NAMESPACE).to_dict()
    assert job["spec"]["suspend"] is True
