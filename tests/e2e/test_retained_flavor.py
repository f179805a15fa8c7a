"""What Kueue v0.17 does with a flavor kept in a ClusterQueue at zero quota while a Job still
runs on it, the WaitForIdle drop policy's move (docs/explanation/gate.md, "What Kueue does with
a retained flavor"), on the real control plane.

A control plane of this module's own with the Job controllers: Kueue admits each Job, the Job
controller creates its Pods, Kueue's TAS ungates them onto the nodes it chose,
tests/e2e/binder.py binds them there (kube-scheduler's bind step) and tests/e2e/kubelet.py runs
the bound ones until the test lets them end. A pool of four 4-GPU nodes in one block: ``a1``,
``a2`` in profile ``a`` (no rack label), ``b1``, ``b2`` in profile ``b`` (rack ``r1``); flavor A
selects profile a (Topology block > hostname), flavor B profile b (block > rack > hostname).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.binder import Binder
from tests.e2e.kubelet import Kubelet
from tests.gate.support import condition, unique, wait_for

pytestmark = pytest.mark.cluster

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
POOL = "retain-e2e.tasgen.test/pool"
PROFILE = "retain-e2e.tasgen.test/profile"
BLOCK = "retain-e2e.tasgen.test/block"
RACK = "retain-e2e.tasgen.test/rack"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"
GPUS_PER_NODE = 4
NODES = {
    "a1": {PROFILE: "a"},
    "a2": {PROFILE: "a"},
    "b1": {PROFILE: "b", RACK: "r1"},
    "b2": {PROFILE: "b", RACK: "r1"},
}
TIMEOUT_S = 120
#: Every Pod waits until a file named after its Job exists: the test decides when a Job ends.
WAIT_FOR_FILE = "import os, sys, time\nwhile not os.path.exists({path!r}):\n    time.sleep(0.2)\n"


@dataclass
class Pool:
    """The nodes, flavors, queue and namespace of one test, under fresh names."""

    api: client.ApiClient
    name: str
    work: Path
    namespace: str = ""
    queue: str = ""
    flavor_a: str = ""
    flavor_b: str = ""
    kubelet: Kubelet | None = None
    binder: Binder | None = None
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    def node(self, short: str) -> str:
        return f"{self.name}-{short}"

    # --- objects ------------------------------------------------------------------------------

    def create(self, plural: str, body: dict[str, Any]) -> None:
        name = body["metadata"]["name"]
        self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        self.cleanup.append(lambda: self.custom.delete_cluster_custom_object(GROUP, VERSION, plural, name))

    def kueue_object(self, kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": name}, "spec": spec}

    def queue_spec(self, flavors: list[tuple[str, int, bool]]) -> dict[str, Any]:
        """(flavor, GPUs, retained): a retained flavor is rendered as WaitForIdle keeps it,
        nominalQuota 0 and, under a cohort, borrowingLimit and lendingLimit 0."""
        entries = []
        for name, gpus, retained in flavors:
            limits = {"borrowingLimit": "0", "lendingLimit": "0"} if retained else {}
            entries.append({"name": name, "resources": [{"name": GPU, "nominalQuota": str(gpus), **limits}]})
        return {
            "cohortName": self.name,
            "namespaceSelector": {},
            "stopPolicy": "None",
            "resourceGroups": [{"coveredResources": [GPU], "flavors": entries}],
        }

    def set_flavors(self, flavors: list[tuple[str, int, bool]]) -> None:
        """What the engine's apply of the rendered queue does to its flavors."""
        self.custom.patch_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", self.queue, {"spec": self.queue_spec(flavors)}
        )
        wait_for(f"Kueue's status of {self.queue}'s new generation", self.current, TIMEOUT_S)

    def get_queue(self) -> dict[str, Any]:
        found: dict[str, Any] = self.custom.get_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", self.queue
        )
        return found

    def current(self) -> dict[str, Any] | None:
        cq = self.get_queue()
        active = condition(cq, "Active")
        ok = (
            active
            and active["status"] == "True"
            and active.get("observedGeneration") == cq["metadata"]["generation"]
        )
        return cq if ok else None

    def relabel(self, short: str, labels: dict[str, str | None]) -> None:
        """What nfd-master does when a node's NodeFeature changes."""
        self.core.patch_node(self.node(short), {"metadata": {"labels": labels}})

    # --- Jobs ---------------------------------------------------------------------------------

    def submit(self, job: str, pods: int) -> None:
        """A Job of ``pods`` one-GPU Pods that must share one block; they run until finish(job)."""
        script = WAIT_FOR_FILE.format(path=str(self.work / f"{job}.done"))
        container = {
            "name": "main",
            "image": "registry.invalid/none",
            "command": ["python", "-c", script],
            "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}},
        }
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": job, "namespace": self.namespace, "labels": {QUEUE_NAME: "lq"}},
            "spec": {
                "parallelism": pods,
                "completions": pods,
                "template": {
                    "metadata": {"annotations": {REQUIRED_TOPOLOGY: BLOCK}},
                    # No ServiceAccount admission plugin runs here to name it; the kubelet
                    # stand-in asks for a token bound to the Pod's ServiceAccount.
                    "spec": {
                        "restartPolicy": "Never",
                        "serviceAccountName": "default",
                        "containers": [container],
                    },
                },
            },
        }
        client.BatchV1Api(self.api).create_namespaced_job(self.namespace, body)

    def finish(self, job: str) -> None:
        (self.work / f"{job}.done").write_text("")

    def workload(self, job: str) -> dict[str, Any] | None:
        found = self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "workloads")
        for wl in found["items"]:
            if any(ref["name"] == job for ref in wl["metadata"].get("ownerReferences") or []):
                result: dict[str, Any] = wl
                return result
        return None

    def admitted(self, job: str, flavor: str) -> dict[str, Any]:
        """The Job's Workload once admitted on flavor."""

        def probe() -> dict[str, Any] | None:
            wl = self.workload(job)
            cond = condition(wl, "Admitted") if wl else None
            return wl if wl and cond and cond["status"] == "True" and flavor_of(wl) == flavor else None

        return wait_for(f"{job} admitted on {flavor}", probe, TIMEOUT_S)

    def running(self, job: str, pods: int) -> dict[str, str]:
        """Pod uid -> node, once ``pods`` Pods of the Job are bound and running."""
        assert self.kubelet is not None

        def probe() -> dict[str, str] | None:
            found = self.core.list_namespaced_pod(
                self.namespace, label_selector=f"batch.kubernetes.io/job-name={job}"
            )
            assert self.kubelet is not None
            uids = {
                p.metadata.uid: p.spec.node_name
                for p in found.items
                if p.metadata.uid in self.kubelet.running
            }
            return uids if len(uids) == pods and all(uids.values()) else None

        return wait_for(f"{pods} Pods of {job} running on their nodes", probe, TIMEOUT_S)

    def pending_reasons(self, job: str) -> str:
        """Kueue's reasons for not admitting the Job: its QuotaReserved message and Pending
        events (each flavor tried has its own)."""
        wl = self.workload(job)
        if wl is None:
            return ""
        cond = condition(wl, "QuotaReserved")
        selector = f"involvedObject.name={wl['metadata']['name']},reason=Pending"
        events = self.core.list_namespaced_event(self.namespace, field_selector=selector).items
        return "\n".join([cond["message"] if cond else "", *(e.message or "" for e in events)])

    def close(self) -> None:
        for part in (self.binder, self.kubelet):
            if part is not None:
                part.stop()
        for fn in reversed(self.cleanup):
            with suppress(ApiException):
                fn()


def flavor_of(wl: dict[str, Any]) -> str | None:
    assignments = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
    found = (assignments[0].get("flavors") or {}).get(GPU)
    return str(found) if found else None


def hosts_of(wl: dict[str, Any]) -> dict[str, int]:
    """Node -> Pods, from the Workload's (compressed) topology assignment."""
    (podset,) = wl["status"]["admission"]["podSetAssignments"]
    assignment = podset["topologyAssignment"]
    last = len(assignment["levels"]) - 1
    hosts: dict[str, int] = {}
    for piece in assignment["slices"]:
        count = piece["domainCount"]
        values = piece["valuesPerLevel"][last]
        if values.get("universal") is not None:
            names = [values["universal"]] * count
        else:
            individual = values["individual"]
            prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
            names = [prefix + root + suffix for root in individual["roots"]]
        pods = piece["podCounts"]
        per = pods["individual"] if pods.get("individual") else [pods["universal"]] * count
        for name, n in zip(names, per, strict=True):
            hosts[name] = hosts.get(name, 0) + n
    return hosts


def usage(cq: dict[str, Any], flavor: str, key: str = "flavorsUsage") -> int | None:
    """The GPUs the queue's status reports in use (or reserved) on the flavor."""
    for entry in (cq.get("status") or {}).get(key) or []:
        if entry["name"] == flavor:
            return next(int(r["total"]) for r in entry["resources"] if r["name"] == GPU)
    return None


@pytest.fixture
def pool(api: client.ApiClient, tmp_path: Path) -> Iterator[Pool]:
    """Nodes, Topologies, flavors A and B, a queue offering A then B (8 GPUs each) in a cohort
    of its own where a lender queue offers 8 more GPUs of A, and a namespace whose Pods run."""
    p = Pool(api, unique("retain"), tmp_path)
    try:
        for short, labels in NODES.items():
            _ready_node(p, p.node(short), {POOL: p.name, BLOCK: "blk", **labels})
        ta, tb = f"{p.name}-a", f"{p.name}-b"
        p.create(
            "topologies",
            p.kueue_object("Topology", ta, {"levels": [{"nodeLabel": BLOCK}, {"nodeLabel": HOSTNAME}]}),
        )
        levels = [{"nodeLabel": BLOCK}, {"nodeLabel": RACK}, {"nodeLabel": HOSTNAME}]
        p.create("topologies", p.kueue_object("Topology", tb, {"levels": levels}))
        p.flavor_a, p.flavor_b = ta, tb
        for flavor, profile in ((ta, "a"), (tb, "b")):
            spec = {"nodeLabels": {POOL: p.name, PROFILE: profile}, "topologyName": flavor}
            p.create("resourceflavors", p.kueue_object("ResourceFlavor", flavor, spec))
        p.queue = p.name
        p.create(
            "clusterqueues",
            p.kueue_object("ClusterQueue", p.queue, p.queue_spec([(ta, 8, False), (tb, 8, False)])),
        )
        lender = p.kueue_object("ClusterQueue", f"{p.name}-lender", p.queue_spec([(ta, 8, False)]))
        lender["spec"]["namespaceSelector"] = {"matchLabels": {"nobody": "here"}}
        p.create("clusterqueues", lender)
        wait_for(f"{p.queue} active", p.current, TIMEOUT_S)
        p.namespace = p.name
        p.core.create_namespace({"metadata": {"name": p.namespace}})
        p.cleanup.append(lambda: p.core.delete_namespace(p.namespace))
        # The Pods' ServiceAccount (no ServiceAccount controller runs here to create it).
        p.core.create_namespaced_service_account(p.namespace, {"metadata": {"name": "default"}})
        lq = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "LocalQueue",
            "metadata": {"name": "lq"},
            "spec": {"clusterQueue": p.queue},
        }
        p.custom.create_namespaced_custom_object(GROUP, VERSION, p.namespace, "localqueues", lq)
        p.kubelet = Kubelet(api, p.namespace, tmp_path / "kubelet", bound_only=True)
        p.binder = Binder(api, p.namespace)
        p.kubelet.start()
        p.binder.start()
        yield p
    finally:
        p.close()


def _ready_node(p: Pool, name: str, labels: dict[str, str]) -> None:
    p.core.create_node({"metadata": {"name": name, "labels": {HOSTNAME: name, **labels}}})
    p.cleanup.append(lambda: p.core.delete_node(name))
    allocatable = {GPU: str(GPUS_PER_NODE), "pods": "110"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node"}
    p.core.patch_node_status(
        name, {"status": {"capacity": allocatable, "allocatable": allocatable, "conditions": [ready]}}
    )
    # The API server taints a new Node not-ready; no node controller lifts it here.
    p.core.patch_node(name, {"spec": {"taints": None}})


def _retain_a(pool: Pool) -> tuple[dict[str, Any], dict[str, str]]:
    """J1 (8 Pods) admitted on A and running on a1, a2; then the queue as WaitForIdle renders
    the drop of A: B first with all 16 GPUs, A kept after it at zero. Returns J1's Workload as
    admitted and its Pods (uid -> node)."""
    pool.submit("j1", 8)
    wl = pool.admitted("j1", pool.flavor_a)
    pods = pool.running("j1", 8)
    assert sorted(pods.values()) == sorted([pool.node("a1")] * 4 + [pool.node("a2")] * 4)
    pool.set_flavors([(pool.flavor_b, 16, False), (pool.flavor_a, 0, True)])
    return wl, pods


def _untouched(pool: Pool, before: dict[str, Any], pods: dict[str, str]) -> None:
    """J1 is as it was admitted: never evicted, same admission, its Pods still running."""
    wl = pool.workload("j1")
    assert wl is not None and wl["metadata"]["uid"] == before["metadata"]["uid"]
    assert condition(wl, "Evicted") is None, wl["status"]
    assert condition(wl, "Preempted") is None, wl["status"]
    assert wl["status"]["admission"] == before["status"]["admission"]
    assert pool.get_queue()["spec"]["stopPolicy"] == "None"
    assert pool.kubelet is not None
    assert set(pods) <= set(pool.kubelet.running) and not set(pods) & set(pool.kubelet.done)


def _pending(pool: Pool, name: str, reason: re.Pattern[str], what: str) -> None:
    """Kueue gives ``reason`` for not admitting the Job ``name``, and has not admitted it."""
    wait_for(what, lambda: reason.search(pool.pending_reasons(name)), TIMEOUT_S)
    wl = pool.workload(name)
    assert wl is not None and "admission" not in wl["status"]


def _a_idle(pool: Pool) -> None:
    """Wait until the queue's status counts nothing on A."""
    wait_for(
        "A idle in the queue's status",
        lambda: (cq := pool.current()) and usage(cq, pool.flavor_a) == 0,
        TIMEOUT_S,
    )


def test_a_retained_flavor_evicts_nothing_admits_nothing_and_keeps_counting(pool: Pool) -> None:
    before, pods = _retain_a(pool)
    cq = pool.current()
    assert cq is not None
    # Kueue keeps accounting for what runs on the retained flavor, beyond its zero quota.
    assert usage(cq, pool.flavor_a) == 8 and usage(cq, pool.flavor_a, "flavorsReservation") == 8

    pool.submit("j2", 8)  # new work lands on B's nodes
    j2 = pool.admitted("j2", pool.flavor_b)
    assert set(hosts_of(j2)) == {pool.node("b1"), pool.node("b2")}
    pool.running("j2", 8)

    # J3 fits nowhere on B (b1, b2 are full) and A admits nothing at zero quota, although the
    # lender queue of the cohort has 8 idle GPUs of A: borrowingLimit 0 keeps them out.
    pool.submit("j3", 4)
    quota = re.compile(
        rf"insufficient quota for {re.escape(GPU)} in flavor {re.escape(pool.flavor_a)}, .*"
        r"maximum capacity \(0\)"
    )
    _pending(pool, "j3", quota, "Kueue's quota reason for A")
    _untouched(pool, before, pods)

    # J1 ends: Kueue marks its Workload Finished and no longer counts it on A.
    pool.finish("j1")
    wait_for(
        "J1's Workload Finished",
        lambda: (c := condition(pool.workload("j1") or {}, "Finished")) and c["status"] == "True",
        TIMEOUT_S,
    )
    _a_idle(pool)
    finished = pool.workload("j1")
    assert finished is not None and condition(finished, "Evicted") is None


def test_tas_double_books_nodes_relabelled_out_of_a_retained_flavor(pool: Pool) -> None:
    """Kueue keeps a TAS workload's usage in its flavor's own cache, per topology domain, and
    leaves TAS Pods out of the per-node usage every flavor sees: B is blind to J1's Pods."""
    before, pods = _retain_a(pool)
    pool.submit("j2", 8)
    pool.admitted("j2", pool.flavor_b)
    pool.running("j2", 8)
    # a1 and a2 get their rack recorded, which moves them into profile b, while J1 runs there.
    for short in ("a1", "a2"):
        pool.relabel(short, {PROFILE: "b", RACK: "r2"})

    pool.submit("j3", 4)
    j3 = pool.admitted("j3", pool.flavor_b)
    booked = hosts_of(j3)
    assert set(booked) <= {pool.node("a1"), pool.node("a2")}, booked
    # J1's 4 Pods already fill each of those nodes: Kueue placed 4 more GPUs on them.
    on_node = {node: list(pods.values()).count(node) for node in booked}
    assert all(on_node[node] + n > GPUS_PER_NODE for node, n in booked.items()), (on_node, booked)
    _untouched(pool, before, pods)


def test_nodes_kept_in_the_retained_profile_are_not_double_booked(pool: Pool) -> None:
    """What tasgen renders while a queue retains A: the rack label lands, the profile label
    waits until A leaves. B never sees J1's nodes; once J1 ends and A goes, it gets them."""
    before, pods = _retain_a(pool)
    pool.submit("j2", 8)
    pool.admitted("j2", pool.flavor_b)
    pool.running("j2", 8)
    for short in ("a1", "a2"):
        pool.relabel(short, {RACK: "r2"})

    pool.submit("j3", 4)
    no_room = re.compile(rf'topology "{re.escape(pool.flavor_b)}" doesn\'t allow to fit any of 4 pod\(s\)')
    _pending(pool, "j3", no_room, "Kueue's topology reason for B")
    _untouched(pool, before, pods)

    # J1 ends; the next render drops A (idle), which moves a1 and a2 into profile b.
    pool.finish("j1")
    _a_idle(pool)
    for short in ("a1", "a2"):
        pool.relabel(short, {PROFILE: "b"})
    pool.set_flavors([(pool.flavor_b, 16, False)])
    j3 = pool.admitted("j3", pool.flavor_b)
    assert set(hosts_of(j3)) <= {pool.node("a1"), pool.node("a2")}
    pool.running("j3", 4)
