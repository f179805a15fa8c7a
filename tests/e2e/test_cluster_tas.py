"""Kueue admits a rack-bound workload, submitted to a rendered LocalQueue, onto one rack of a
generated flavor whose nodes are tainted nvidia.com/gpu:NoSchedule and whose tolerations cover
that; and leaves one too large for any rack pending with its own explanation."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
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
ADMISSION_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RackFlavor:
    """A generated flavor whose Topology has the rack level, as one ClusterQueue offers it."""

    cluster_queue: Obj
    flavor: str
    topology: str
    gpu_quota: int
    racks: dict[str, dict[str, int]]  # rack -> node -> allocatable GPUs
    taints: frozenset[str]  # the NoSchedule taints of its nodes, as key=value:effect
    namespace: str = ""  # of the rendered LocalQueue that reaches the queue
    local_queue: str = ""

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
    node_labels = flavor["spec"]["nodeLabels"]
    selector = ",".join(f"{k}={v}" for k, v in sorted(node_labels.items()))
    projected = fleet.node_feature_labels()
    expected = {
        n.name
        for n in fleet.nodes
        if node_labels.items() <= {**n.labels, **projected.get(n.name, {})}.items()
    }
    # nfd-master projects the profile and rack labels a moment after the sync, node by node:
    # wait for every Node the flavor will select, not only the first ones labelled
    racks, taints = wait_for(
        f"the {len(expected)} Nodes with the labels of flavor {cq_flavor['name']}",
        lambda: _racks(core, selector, expected),
    )
    topology = flavor["spec"]["topologyName"]
    return RackFlavor(cq, cq_flavor["name"], topology, _gpu_quota(cq_flavor), racks, frozenset(taints))


def _racks(
    core: client.CoreV1Api, selector: str, expected: set[str]
) -> tuple[dict[str, dict[str, int]], set[str]] | None:
    """rack -> node -> GPUs and the NoSchedule taints of the selected Nodes; None until the
    selector selects the ``expected`` Nodes and every one carries its rack label."""
    racks: dict[str, dict[str, int]] = defaultdict(dict)
    taints: set[str] = set()
    selected = core.list_node(label_selector=selector).to_dict()["items"]
    if {node["metadata"]["name"] for node in selected} != expected:
        return None
    for node in selected:
        meta, allocatable = node["metadata"], node["status"]["allocatable"]
        if RACK not in meta["labels"]:
            return None
        racks[meta["labels"][RACK]][meta["name"]] = int(allocatable.get(GPU, "0"))
        taints |= {_taint(t) for t in node["spec"].get("taints") or [] if t["effect"] == "NoSchedule"}
    return (dict(racks), taints) if racks else None


def _taint(taint: Obj) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint['key']}{value}:{taint['effect']}"


@pytest.fixture(scope="module")
def target(fleet: Fleet, api_client: client.ApiClient) -> RackFlavor:
    """The rack flavor under test and the rendered LocalQueue that reaches its queue (its
    namespace was created before the sync, as docs/reference/inventory.md asks)."""
    found = _rack_flavor(fleet, client.CoreV1Api(api_client))
    queue = found.cluster_queue["metadata"]["name"]
    local = [lq["metadata"] for lq in fleet.of_kind("LocalQueue") if lq["spec"]["clusterQueue"] == queue]
    assert local, f"the example renders no LocalQueue for {queue}"
    return replace(found, namespace=local[0]["namespace"], local_queue=local[0]["name"])


def _submit_job(api_client: client.ApiClient, target: RackFlavor, name: str, pods: int) -> str:
    """A Job of `pods` one-GPU pods that must all run in one rack; returns its UID."""
    container = client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={GPU: "1"}, limits={GPU: "1"}),
    )
    job = client.V1Job(
        metadata=client.V1ObjectMeta(
            name=name, namespace=target.namespace, labels={QUEUE_NAME: target.local_queue}
        ),
        spec=client.V1JobSpec(
            parallelism=pods,
            completions=pods,
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(annotations={REQUIRED_TOPOLOGY: RACK}),
                spec=client.V1PodSpec(restart_policy="Never", containers=[container]),
            ),
        ),
    )
    created = client.BatchV1Api(api_client).create_namespaced_job(target.namespace, job).to_dict()
    # Kueue's Job webhook suspends every queued Job until it is admitted.
    assert created["spec"]["suspend"] is True
    return str(created["metadata"]["uid"])


def _workload_of(dyn: DynamicClient, namespace: str, job_uid: str) -> Obj | None:
    workloads = dyn.resources.get(api_version=KUEUE_API, kind="Workload").get(namespace=namespace).to_dict()
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
    # The nodes are tainted as GPU nodes are, and only the flavor's toleration lets TAS in
    # (the Job's pods tolerate nothing; test_cluster_taints.py shows the flavor without it).
    assert "nvidia.com/gpu=present:NoSchedule" in target.taints
    tolerations = _flavor_tolerations(dyn, target.flavor)
    assert {"key": GPU, "operator": "Exists", "effect": "NoSchedule"} in tolerations

    uid = _submit_job(api_client, target, "fits-one-rack", pods)

    def admitted() -> Obj | None:
        workload = _workload_of(dyn, target.namespace, uid)
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
    job = client.BatchV1Api(api_client).read_namespaced_job("fits-one-rack", target.namespace).to_dict()
    assert job["spec"]["suspend"] is False


def _flavor_tolerations(dyn: DynamicClient, name: str) -> list[Obj]:
    flavor = dyn.resources.get(api_version=KUEUE_API, kind="ResourceFlavor").get(name=name).to_dict()
    found: list[Obj] = flavor["spec"].get("tolerations") or []
    return found


def test_job_larger_than_any_rack_stays_pending_with_kueues_reason(
    api_client: client.ApiClient, dyn: DynamicClient, target: RackFlavor
) -> None:
    pods = target.too_many_pods
    # Quota is no obstacle (even next to the other test's Job): only the topology is.
    assert pods + target.spanning_pods <= target.gpu_quota

    uid = _submit_job(api_client, target, "larger-than-any-rack", pods)
    core = client.CoreV1Api(api_client)
    # Kueue tries the queue's flavors in turn and its Workload condition keeps the reason
    # of the last one tried; the reason of each attempt is a Pending event of the Workload.
    explanation = re.compile(
        rf'topology "{re.escape(target.topology)}" '
        rf"(doesn't allow to fit any of|allows to fit only \d+ out of) {pods} pod\(s\)"
    )

    def topology_refusal() -> str | None:
        workload = _workload_of(dyn, target.namespace, uid)
        if workload is None:
            return None
        selector = f"involvedObject.name={workload['metadata']['name']},reason=Pending"
        events = core.list_namespaced_event(target.namespace, field_selector=selector).items
        return next((e.message for e in events if explanation.search(e.message or "")), None)

    wait_for("Kueue's topology reason for the too-large Workload", topology_refusal, ADMISSION_TIMEOUT_S)
    workload = _workload_of(dyn, target.namespace, uid)
    assert workload is not None
    reserved = condition(workload, "QuotaReserved")
    assert reserved is not None and reserved["status"] == "False", reserved
    assert reserved["message"].startswith("couldn't assign flavors to pod set main"), reserved
    assert "admission" not in workload.get("status", {})
    job = (
        client.BatchV1Api(api_client).read_namespaced_job("larger-than-any-rack", target.namespace).to_dict()
    )
    assert job["spec"]["suspend"] is True


UNTOLERATED = "untolerated-e2e"


def test_without_the_flavors_toleration_tas_finds_no_node(
    api_client: client.ApiClient, dyn: DynamicClient, target: RackFlavor
) -> None:
    """The same flavor without tolerations, offered by a queue of its own: Kueue excludes every
    tainted node and says so."""
    rendered = (
        dyn.resources.get(api_version=KUEUE_API, kind="ResourceFlavor").get(name=target.flavor).to_dict()
    )
    spec = {k: v for k, v in rendered["spec"].items() if k != "tolerations"}
    flavor = _create(dyn, "ResourceFlavor", {"name": UNTOLERATED}, spec)
    queue = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": [GPU],
                "flavors": [
                    {"name": UNTOLERATED, "resources": [{"name": GPU, "nominalQuota": target.gpu_quota}]}
                ],
            }
        ],
    }
    _create(dyn, "ClusterQueue", {"name": UNTOLERATED}, queue)
    ensure_namespace(client.CoreV1Api(api_client), UNTOLERATED)
    _create(dyn, "LocalQueue", {"name": UNTOLERATED, "namespace": UNTOLERATED}, {"clusterQueue": UNTOLERATED})
    assert "tolerations" not in flavor["spec"]
    untolerated = replace(target, namespace=UNTOLERATED, local_queue=UNTOLERATED)
    pods = target.spanning_pods  # what the tolerating flavor admits onto one rack
    uid = _submit_job(api_client, untolerated, "untolerated", pods)
    explanation = re.compile(
        rf'topology "{re.escape(target.topology)}" doesn\'t allow to fit any of {pods} pod\(s\)\. '
        r'Total nodes: (\d+); excluded: taint "nvidia\.com/gpu=present:NoSchedule": (\d+)'
    )
    core = client.CoreV1Api(api_client)

    def taint_refusal() -> re.Match[str] | None:
        workload = _workload_of(dyn, UNTOLERATED, uid)
        if workload is None:
            return None
        selector = f"involvedObject.name={workload['metadata']['name']},reason=Pending"
        events = core.list_namespaced_event(UNTOLERATED, field_selector=selector).items
        return next((m for e in events if (m := explanation.search(e.message or ""))), None)

    found = wait_for("Kueue's taint reason for the untolerated Workload", taint_refusal, ADMISSION_TIMEOUT_S)
    nodes = sum(len(n) for n in target.racks.values())
    assert (int(found[1]), int(found[2])) == (nodes, nodes)  # every node of the flavor, for its taint
    workload = _workload_of(dyn, UNTOLERATED, uid)
    assert workload is not None and "admission" not in workload.get("status", {})
    client.BatchV1Api(api_client).delete_namespaced_job(
        "untolerated", UNTOLERATED, propagation_policy="Background"
    )


def _create(dyn: DynamicClient, kind: str, meta: Obj, spec: Obj) -> Obj:
    body = {"apiVersion": KUEUE_API, "kind": kind, "metadata": meta, "spec": spec}
    return create(dyn, body)
