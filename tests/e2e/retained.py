"""WaitForIdle end to end (docs/explanation/gate.md): a rack edit drops the flavor a running
Job was admitted on, and nothing is evicted; the same scenario under real Flux
(test_flux_retained.py) and real Argo CD (test_argocd_retained.py).

The example fleet with ``gate.dropPolicy: WaitForIdle``, synced from a git repository on
127.0.0.1. A Job of ``training`` runs on ``…5ce26b67c9cf`` (the four H100 nodes of rack
b-r02, recorded nowhere yet); recording the rack in the DCIM snapshot moves those nodes into
profile ``…7de0bea5615a`` and drops ``…5ce2…`` from ``training`` and ``inference``. The render
keeps it in both queues at the quota it had and keeps the nodes' profile and flavor labels while
they may be busy; Kueue evicts nothing and admits new work on ``…7de0…`` elsewhere. Once the Job
ends, ``tasgen render --kubeconfig`` lowers the flavor to zero and takes the nodes out of it, the
next live render drops it and moves the nodes, and the retire step deletes it. Every write is
read back in the API server's order (flux.History); Kueue's TAS places the Jobs' Pods,
tests/e2e/binder.py binds them and the kubelet stand-in runs them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.conftest import NOW, tasgen
from tests.e2e import flux, harness, kube
from tests.e2e.binder import Binder
from tests.e2e.busy import CLUSTER_QUEUES, flavor_names, named, queue, rendered_objects, stop_policy
from tests.e2e.kubelet import Kubelet
from tests.edits import record_rack_b_r02

ADMISSION_TIMEOUT_S = 120
GPU = "nvidia.com/gpu"
PROFILE = "topology.gpustack.ai/profile"
RACK = "topology.gpustack.ai/rack"
BLOCK = "infra.example.com/block"
OLD = "gpustack-nvidia-h100-80gb-hbm3-b46e62-5ce26b67c9cf"
NEW = "gpustack-nvidia-h100-80gb-hbm3-b46e62-7de0bea5615a"
OLD_PROFILE, NEW_PROFILE = "5ce26b67c9cf", "7de0bea5615a"
RACK_B_R02 = [f"h100-1b-r2-0{i}" for i in range(1, 5)]
QUEUES = ("training", "inference")  # both offer OLD in the example
TEAM, LOCAL_QUEUE = "ml-research", "training"
WORKLOADS = ("kueue.x-k8s.io", "v1beta2", "workloads")


class Env(Protocol):
    """An engine's test environment (flux.FluxEnv, argocd.ArgoEnv)."""

    cluster: harness.Cluster
    api: client.ApiClient
    dyn: DynamicClient
    repo: flux.Repo


@dataclass
class Engine:
    """How the scenario drives one GitOps engine: point it at the repository (once the first
    revision is pushed); wait until every step of a sync is done at a revision; the objects
    whose versions report its syncs; the failed syncs among their versions."""

    env: Env
    start: Callable[[], object]
    wait_synced: Callable[[str], object]
    syncs: Callable[[], dict[str, flux.History]]
    failures: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


@contextlib.contextmanager
def team_pods(env: Env, work: Path) -> Iterator[Path]:
    """The training team's namespace runs its Pods: bound where Kueue's TAS put them, then
    run until the test lets a Job end (a file named after it, in the folder yielded)."""
    core = client.CoreV1Api(env.api)
    # The Pods' ServiceAccount (no ServiceAccount controller runs here to create it).
    core.create_namespaced_service_account(TEAM, {"metadata": {"name": "default"}})
    kubelet, binder = Kubelet(env.api, TEAM, work / "kubelet", bound_only=True), Binder(env.api, TEAM)
    kubelet.start()
    binder.start()
    try:
        yield work
    finally:
        binder.stop()
        kubelet.stop()


# --- the inventory edits ----------------------------------------------------------------------


def wait_for_idle(work: Path) -> None:
    """GeneratorConfig gate.dropPolicy: WaitForIdle, for every queue of the example."""
    config = work / "inventories" / "config.yaml"
    text = config.read_text()
    gate = "  gate:\n    namespace: tasgen-system\n"
    assert gate in text
    config.write_text(text.replace(gate, gate + "    dropPolicy: WaitForIdle\n"))


def render_live_and_commit(env: Env, message: str) -> str:
    """What init's scheduled refresh workflow does: render with the live cluster, commit."""
    run = tasgen(
        "render",
        "-i",
        str(env.repo.work / "inventories"),
        "-o",
        str(env.repo.work / "rendered"),
        "--now",
        NOW,
        "--kubeconfig",
        str(env.cluster.kubeconfig),
    )
    assert run.exit_code == 0, run.output
    return env.repo.commit(message)


# --- Jobs -----------------------------------------------------------------------------------


def submit(env: Env, work: Path, name: str, pods: int) -> None:
    """A Job of one-GPU Pods in one block, to the training team's LocalQueue; its Pods run
    until finish(name)."""
    script = f"import os, time\nwhile not os.path.exists({str(work / name)!r}):\n    time.sleep(0.2)\n"
    container = {
        "name": "main",
        "image": "registry.invalid/none",
        "command": ["python", "-c", script],
        "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}},
    }
    template = {
        "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": BLOCK}},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "default",
            "containers": [container],
            # The flavor's toleration is enough for Kueue's TAS to place the Pods, but Kueue
            # v0.17.0-v0.17.2's node controller judges NoSchedule taints by the Workload's own
            # tolerations (kueue#11152, fixed by #11228 in v0.17.3) and would terminate a Pod
            # pinned to a tainted node before it is bound. GPU Jobs tolerate the GPU taint.
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": TEAM, "labels": {"kueue.x-k8s.io/queue-name": LOCAL_QUEUE}},
        "spec": {"parallelism": pods, "completions": pods, "template": template},
    }
    client.BatchV1Api(env.api).create_namespaced_job(TEAM, job)


def finish(work: Path, name: str) -> None:
    (work / name).write_text("")


def workload_of(env: Env, job: str) -> dict[str, Any] | None:
    found = client.CustomObjectsApi(env.api).list_namespaced_custom_object(*WORKLOADS[:2], TEAM, WORKLOADS[2])
    return next(
        (
            w
            for w in found["items"]
            if any(r["name"] == job for r in w["metadata"].get("ownerReferences") or [])
        ),
        None,
    )


def flavor_of(wl: dict[str, Any]) -> str | None:
    assignments = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
    found = (assignments[0].get("flavors") or {}).get(GPU)
    return str(found) if found else None


def admitted(env: Env, job: str, flavor: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        wl = workload_of(env, job)
        cond = kube.condition(wl, "Admitted") if wl else None
        return wl if wl and cond and cond["status"] == "True" and flavor_of(wl) == flavor else None

    return kube.wait_for(f"{job} admitted on {flavor}", probe, ADMISSION_TIMEOUT_S)


def nodes_of(env: Env, job: str, pods: int) -> set[str]:
    """The nodes the Job's Pods are bound to, once all of them run."""
    core = client.CoreV1Api(env.api)

    def probe() -> set[str] | None:
        found = core.list_namespaced_pod(TEAM, label_selector=f"batch.kubernetes.io/job-name={job}").items
        running = [p for p in found if p.status.phase == "Running" and p.spec.node_name]
        return {p.spec.node_name for p in running} if len(running) == pods else None

    return kube.wait_for(f"{pods} Pods of {job} running", probe, ADMISSION_TIMEOUT_S)


def finished(wl: dict[str, Any]) -> bool:
    cond = kube.condition(wl, "Finished")
    return bool(cond and cond["status"] == "True")


# --- what the API server wrote ----------------------------------------------------------------


def gpu_quota(cq: dict[str, Any], flavor: str) -> dict[str, str] | None:
    """The flavor's GPU resource entry in the queue's spec (None: not in the queue)."""
    for group in cq["spec"].get("resourceGroups") or []:
        for f in group["flavors"]:
            if f["name"] == flavor:
                return next(r for r in f["resources"] if r["name"] == GPU)
    return None


def profile_labels(env: Env, nodes: list[str]) -> dict[str, tuple[str | None, str | None]]:
    core = client.CoreV1Api(env.api)
    return {
        n: ((labels := core.read_node(n).metadata.labels or {}).get(PROFILE), labels.get(RACK)) for n in nodes
    }


def flavor_gone(env: Env, kind: str, name: str) -> bool | None:
    return kube.gone(env.dyn, kube.KUEUE_API, kind, name)


# --- the scenario ---------------------------------------------------------------------------


def refresh_until_dropped(engine: Engine) -> None:
    """The scheduled refresh twice, each synced: the first lowers the idle OLD to what is still
    reserved there (nothing: the live queues still give it quota, which could admit before the
    sync) and takes the nodes out of it (in transit); the next drops it and moves the nodes."""
    env = engine.env
    lowered = render_live_and_commit(env, "refresh: lower idle retained flavors")
    for q in QUEUES:
        cq = named(rendered_objects(env, "ClusterQueue"), q)
        assert (gpu_quota(cq, OLD) or {}).get("nominalQuota") == "0", cq["spec"]
    engine.wait_synced(lowered)
    idle = render_live_and_commit(env, "refresh: drop idle retained flavors")
    for q in QUEUES:
        assert OLD not in flavor_names(named(rendered_objects(env, "ClusterQueue"), q))
    engine.wait_synced(idle)


def retire_a_busy_flavor_without_evicting(engine: Engine, team: Path) -> None:
    """The example under WaitForIdle synced; the rack edit and the refresh, as docstring says."""
    env = engine.env
    wait_for_idle(env.repo.work)
    first = env.repo.render_and_commit("the example fleet, WaitForIdle")
    engine.start()
    engine.wait_synced(first)

    submit(env, team, "long", 4)
    before = admitted(env, "long", OLD)
    assert nodes_of(env, "long", 4) <= set(RACK_B_R02)
    name = before["metadata"]["name"]

    with ExitStack() as stack:
        queues = {q: stack.enter_context(flux.History(env.api, CLUSTER_QUEUES, q)) for q in QUEUES}
        held = stack.enter_context(flux.History(env.api, WORKLOADS, name, TEAM))
        syncs = {k: stack.enter_context(h) for k, h in engine.syncs().items()}

        # The rack edit: OLD leaves both plans; the render keeps it, after the new flavors, at
        # the quota it had (offline: never less than its Workloads may hold), borrowing nothing.
        had = {q: gpu_quota(named(rendered_objects(env, "ClusterQueue"), q), OLD) for q in QUEUES}
        record_rack_b_r02(env.repo.work / "inventories")
        dropped = env.repo.render_and_commit("record rack b-r02")
        for q in QUEUES:
            cq = named(rendered_objects(env, "ClusterQueue"), q)
            assert flavor_names(cq)[-1] == OLD, cq["spec"]
            kept = had[q]
            assert kept is not None
            assert gpu_quota(cq, OLD) == {
                "name": GPU,
                "nominalQuota": kept["nominalQuota"],
                "borrowingLimit": "0",
                "lendingLimit": "0",
            }
        engine.wait_synced(dropped)

        # Through the engine's apply: OLD in the live queues at that quota, the Job untouched.
        for q in QUEUES:
            live = gpu_quota(queue(env, q), OLD)
            kept = had[q]
            assert live is not None and kept is not None and live["nominalQuota"] == kept["nominalQuota"], q
        # The nodes of rack b-r02 got their rack, and kept OLD's profile while it is retained.
        assert profile_labels(env, RACK_B_R02) == dict.fromkeys(RACK_B_R02, (OLD_PROFILE, "b-r02"))
        # New work lands on NEW, on nodes no Pod of the retained flavor uses.
        submit(env, team, "next", 4)
        admitted(env, "next", NEW)
        assert not nodes_of(env, "next", 4) & set(RACK_B_R02)

        # The Job ends; the refresh workflow's live render drops OLD; the sync removes it.
        finish(team, "long")
        kube.wait_for("the first Job's Workload Finished", lambda: finished(workload_of(env, "long") or {}))
        refresh_until_dropped(engine)
        for q in QUEUES:
            assert OLD not in flavor_names(queue(env, q))
        assert profile_labels(env, RACK_B_R02) == dict.fromkeys(RACK_B_R02, (NEW_PROFILE, "b-r02"))
        # The retire step (after the queues) deleted the flavor and its Topology.
        kube.wait_for(f"{OLD} retired", lambda: flavor_gone(env, "ResourceFlavor", OLD))
        kube.wait_for("its Topology retired", lambda: flavor_gone(env, "Topology", f"gpustack-{OLD_PROFILE}"))
        versions = {q: h.versions() for q, h in queues.items()}
        workloads = held.versions()
        steps = {k: h.versions() for k, h in syncs.items()}
        assert not any(h.gaps for h in (*queues.values(), held, *syncs.values()))

    # stopPolicy never left None; OLD stayed in each queue until the idle render's sync.
    for q, seen in versions.items():
        assert {stop_policy(v) for v in seen} == {"None"}, q
        gone = next(i for i, v in enumerate(seen) if OLD not in flavor_names(v))
        assert gone > 0 and all(OLD in flavor_names(v) for v in seen[:gone]), q
    # The Workload was never evicted and kept its admission until it finished.
    for wl in workloads:
        assert kube.condition(wl, "Evicted") is None, wl["status"]
        assert wl["status"]["admission"] == before["status"]["admission"]
    assert finished(workloads[-1])
    # No failed sync in any step, from the rack edit to the retirement.
    assert {k: engine.failures(v) for k, v in steps.items()} == {k: [] for k in steps}
