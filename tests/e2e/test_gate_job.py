"""The rendered gate and retire Jobs under kube-controller-manager's real Job controller.

A control plane of this module's own, started with the Job, TTL-after-finished and garbage
collector controllers (``harness.start(..., controllers=["job"])``); tests/e2e/kubelet.py
plays the kubelet, running each Pod's real command (``python -m tasgen.gate`` with the
rendered arguments and plan) with a token of the rendered ServiceAccount. What is under test
is the Job's spec as gate_manifests and retire_manifests render it: backoffLimit,
podFailurePolicy, ttlSecondsAfterFinished (the retire Job's; Flux adds the
gate's), and the RBAC the Pods run with.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import PLAN_KEY, gate_manifests, retire_manifests
from tasgen.model import Manifest
from tests.e2e.kubelet import Kubelet
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    admitted_on,
    as_rendered,
    cluster_queue,
    flavors_of,
    garbage_api_server,
    unique,
    wait_for,
)

pytestmark = pytest.mark.cluster

IMAGE = "example.invalid/tasgen-gate:test"  # never pulled: the kubelet stand-in runs no image
JOB_LABEL = "batch.kubernetes.io/job-name"
#: The Job controller waits 10 s before it replaces a failed Pod; a run takes seconds.
JOB_TIMEOUT_S = 120


# --- the control plane with the Job controllers ----------------------------------------------


@pytest.fixture
def kueue(api: client.ApiClient) -> Iterator[Kueue]:
    k = Kueue(api)
    yield k
    k.close()


@dataclass
class Deployed:
    """Rendered objects created on the server, with the kubelet stand-in of their namespace."""

    api: client.ApiClient
    namespace: str
    job: str
    kubelet: Kubelet

    def finished(self) -> client.V1Job:
        """The Job once it has a Complete or Failed condition."""

        def done() -> client.V1Job | None:
            job = client.BatchV1Api(self.api).read_namespaced_job(self.job, self.namespace)
            return job if final_condition(job) else None

        return wait_for(f"Job {self.job} to finish", done, JOB_TIMEOUT_S)

    def pods(self) -> list[client.V1Pod]:
        """The Job's Pods, oldest first."""
        found = client.CoreV1Api(self.api).list_namespaced_pod(
            self.namespace, label_selector=f"{JOB_LABEL}={self.job}"
        )
        return sorted(found.items, key=lambda p: p.metadata.creation_timestamp)

    def logs(self) -> str:
        return "\n".join(f"--- {p.metadata.name}\n{self.kubelet.log(p.metadata.uid)}" for p in self.pods())


@pytest.fixture
def deploy(api: client.ApiClient, tmp_path: Path) -> Iterator[Callable[..., Deployed]]:
    """Create rendered manifests in their order (the namespace first, then a kubelet
    stand-in for it); everything is deleted after the test."""
    dyn = dynamic.DynamicClient(api)
    created: list[tuple[Any, dict[str, Any]]] = []
    kubelets: list[Kubelet] = []

    def create(manifests: list[Manifest], namespace: str, server: str | None = None) -> Deployed:
        if not any(m.kind == "Namespace" for m in manifests):
            client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
        kubelet = Kubelet(api, namespace, tmp_path / namespace, server=server)
        kubelets.append(kubelet)
        for m in manifests:
            body = as_rendered(m.body)
            resource = dyn.resources.get(api_version=body["apiVersion"], kind=m.kind)
            resource.create(body=body, namespace=body["metadata"].get("namespace"))
            created.append((resource, body))
            if m.kind == "Namespace":
                kubelet.start()
        if not kubelet.is_alive():
            kubelet.start()
        (job,) = [m.body["metadata"]["name"] for m in manifests if m.kind == "Job"]
        return Deployed(api, namespace, job, kubelet)

    yield create
    for kubelet in kubelets:
        kubelet.stop()
    for resource, body in reversed(created):
        meta = body["metadata"]
        with suppress(ApiException):
            resource.delete(name=meta["name"], namespace=meta.get("namespace"))


def gate(queues: list[dict[str, Any]], timeout_seconds: int = 60) -> tuple[list[Manifest], str]:
    """The gate's rendered objects for queues, under fresh names; and their namespace."""
    namespace = unique("gate-job")
    manifests = gate_manifests(
        queues, namespace=namespace, image=IMAGE, timeout_seconds=timeout_seconds, name=unique("tasgen-gate")
    )
    return manifests, namespace


def final_condition(job: client.V1Job) -> client.V1JobCondition | None:
    conditions = job.status.conditions or []
    return next((c for c in conditions if c.type in ("Complete", "Failed") and c.status == "True"), None)


def exit_codes(pods: list[client.V1Pod]) -> list[int | None]:
    return [
        s.state.terminated.exit_code if s.state.terminated else None
        for p in pods
        for s in p.status.container_statuses or []
    ]


def _setup(kueue: Kueue, quotas: dict[str, int]) -> tuple[str, dict[str, str]]:
    names = {key: kueue.flavor(unique(f"gate-{key}")) for key in quotas}
    cq = unique("gate-cq")
    kueue.queue(cq, {names[k]: q for k, q in quotas.items()})
    wait_for("Kueue's status for the new queue", lambda: kueue.current(cq))
    return cq, names


def _busy_on_b(kueue: Kueue) -> tuple[str, dict[str, str]]:
    """A queue over a (no quota) and b, with a Workload admitted on b that nobody releases."""
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    kueue.workload(ns, "serve")
    wait_for("the Workload admitted on b", lambda: any(admitted_on(w) == f["b"] for w in kueue.workloads(ns)))
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))
    return cq, f


# --- the gate's verdicts fail the Job at once -------------------------------------------------


def test_gate_job_timeout_exit_1_fails_the_job_at_once(kueue: Kueue, deploy: Callable[..., Deployed]) -> None:
    """A drain that outlasts the gate's --timeout: exit 1, and podFailurePolicy fails the Job
    with that one Pod (backoffLimit would start a second one that meets the same queue)."""
    cq, f = _busy_on_b(kueue)
    manifests, namespace = gate([cluster_queue(cq, {f["a"]: 4})], timeout_seconds=3)
    run = deploy(manifests, namespace)
    job = run.finished()
    failed = final_condition(job)
    assert (failed.type, failed.reason) == ("Failed", "PodFailurePolicy"), run.logs()
    assert exit_codes(run.pods()) == [1], run.logs()
    assert job.status.failed == 1
    # The gate's own work stands: the queue is held, draining, not switched.
    live = kueue.get(cq)
    assert live["spec"]["stopPolicy"] == "HoldAndDrain"
    assert flavors_of(live) == {f["a"]: "0", f["b"]: "4"}


def test_gate_job_unusable_plan_exit_2_fails_the_job_at_once(deploy: Callable[..., Deployed]) -> None:
    """A plan the gate refuses (two Kueue API versions in one plan): exit 2, Job failed with
    its one Pod; a new Pod would read the same plan."""
    v1beta1 = {**cluster_queue(unique("gate-cq"), {"x": 1}), "apiVersion": f"{GROUP}/v1beta1"}
    manifests, namespace = gate([cluster_queue(unique("gate-cq"), {"x": 1}), v1beta1])
    run = deploy(manifests, namespace)
    job = run.finished()
    failed = final_condition(job)
    assert (failed.type, failed.reason) == ("Failed", "PodFailurePolicy"), run.logs()
    assert exit_codes(run.pods()) == [2], run.logs()
    assert "mixes" in run.logs()


def test_gate_job_deeply_nested_plan_exit_2_fails_the_job_at_once(deploy: Callable[..., Deployed]) -> None:
    """A plan nested past the YAML parser's recursion was a crash, which the Job retries (or,
    through click, exit 1); it is an unusable plan: exit 2, one Pod, a line that says why."""
    manifests, namespace = gate([cluster_queue(unique("gate-cq"), {"x": 1})])
    deep = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec: "
    deep += "[" * 5000 + "]" * 5000 + "\n"
    manifests = [
        Manifest(m.file, {**m.body, "data": {PLAN_KEY: deep}}) if m.file == "gate/configmap-plan.yaml" else m
        for m in manifests
    ]
    run = deploy(manifests, namespace)
    job = run.finished()
    failed = final_condition(job)
    assert (failed.type, failed.reason) == ("Failed", "PodFailurePolicy"), run.logs()
    assert exit_codes(run.pods()) == [2], run.logs()
    # the guarded reader's answer, positioned at the bracket past the parser's nesting limit
    assert "invalid YAML: recursion limit exceeded [yaml-syntax]" in run.logs(), run.logs()
    assert "Traceback" not in run.logs()


# --- a crash is retried ---------------------------------------------------------------------


@pytest.fixture
def garbage_server() -> Iterator[str]:
    with garbage_api_server() as url:
        yield url


def test_gate_job_crash_exit_3_is_retried_then_backoff_limit(
    deploy: Callable[..., Deployed], garbage_server: str
) -> None:
    """The Pods are told an API server address that answers garbage: the gate cannot read it
    and exits 3 (a crash, not a verdict). The Job starts backoffLimit more Pods, then fails
    with BackoffLimitExceeded."""
    manifests, namespace = gate([cluster_queue(unique("gate-cq"), {"x": 1})])
    run = deploy(manifests, namespace, server=garbage_server)
    job = run.finished()
    failed = final_condition(job)
    assert (failed.type, failed.reason) == ("Failed", "BackoffLimitExceeded"), run.logs()
    retries = job.spec.backoff_limit
    assert retries >= 1
    assert exit_codes(run.pods()) == [3] * (retries + 1), run.logs()
    assert job.status.failed == retries + 1
    assert run.logs().count('"event": "crash"') == retries + 1


# --- success, and the TTL ---------------------------------------------------------------------


def test_gate_job_success_completes_and_ttl_deletes_the_job(
    api: client.ApiClient, kueue: Kueue, deploy: Callable[..., Deployed]
) -> None:
    """An idle flavor dropped: the gate switches the queue, exits 0, the Job completes. A short
    TTL is set on the live Job (the rendered Job has none: Flux's Kustomization patches 900 s on,
    test_kustomize_build), and the TTL controller deletes the Job, the garbage collector its
    Pod, once it is over."""
    cq, f = _setup(kueue, {"a": 4, "b": 4})
    manifests, namespace = gate([cluster_queue(cq, {f["a"]: 4})])
    run = deploy(manifests, namespace)
    job = run.finished()
    complete = final_condition(job)
    assert (complete.type, complete.reason) == ("Complete", "CompletionsReached"), run.logs()
    assert job.status.succeeded == 1
    assert exit_codes(run.pods()) == [0], run.logs()
    assert flavors_of(kueue.get(cq)) == {f["a"]: "4"}
    # The stand-in's record of the run (what an environment such as the Flux tests' reads).
    (uid,) = [p.metadata.uid for p in run.pods()]
    assert run.kubelet.done == {uid: 0} and run.kubelet.running == {}
    assert run.kubelet.names == {uid: run.job}
    assert [ln["exitCode"] for ln in run.kubelet.lines(uid) if ln["event"] == "finish"] == [0]

    batch, ttl = client.BatchV1Api(api), 5
    batch.patch_namespaced_job(run.job, namespace, {"spec": {"ttlSecondsAfterFinished": ttl}})

    def gone() -> bool:
        try:
            batch.read_namespaced_job(run.job, namespace)
        except ApiException as exc:
            return exc.status == 404
        return False

    wait_for("the TTL controller to delete the Job", gone, JOB_TIMEOUT_S)
    # Not before the TTL: the clock starts at the Complete condition (whole seconds).
    elapsed = time.time() - complete.last_transition_time.timestamp()
    assert elapsed >= ttl - 1, elapsed
    wait_for("the garbage collector to delete the Job's Pod", lambda: not run.pods(), JOB_TIMEOUT_S)


def test_gate_job_deleted_mid_drain_stops_its_pod(
    api: client.ApiClient, kueue: Kueue, deploy: Callable[..., Deployed]
) -> None:
    """An operator deletes the Job mid-drain: the garbage collector
    deletes the Pod, the kubelet stand-in sends SIGTERM, the gate reports being stopped and
    the queue stays held, not switched."""
    cq, f = _busy_on_b(kueue)
    manifests, namespace = gate([cluster_queue(cq, {f["a"]: 4})], timeout_seconds=120)
    run = deploy(manifests, namespace)
    wait_for("the gate to hold the queue", lambda: kueue.get(cq)["spec"]["stopPolicy"] == "HoldAndDrain", 60)
    (pod,) = run.pods()
    client.BatchV1Api(api).delete_namespaced_job(run.job, namespace, propagation_policy="Background")
    wait_for("the Pod to be gone", lambda: not run.pods(), JOB_TIMEOUT_S)
    log = run.kubelet.log(pod.metadata.uid)
    assert '"event": "terminated"' in log, log
    live = kueue.get(cq)
    assert live["spec"]["stopPolicy"] == "HoldAndDrain"
    assert flavors_of(live) == {f["a"]: "0", f["b"]: "4"}


def test_gate_job_deadline_stops_its_pod_with_a_gate_timeout_event(
    api: client.ApiClient, kueue: Kueue, deploy: Callable[..., Deployed]
) -> None:
    """activeDeadlineSeconds over (shortened on the live Job; rendered, it is longer than every
    Pod's own timeout): the Job controller fails the Job and deletes its Pod; the gate, stopped
    by SIGTERM, still reports GateTimeout on the queue, which stays held."""
    cq, f = _busy_on_b(kueue)
    manifests, namespace = gate([cluster_queue(cq, {f["a"]: 4})], timeout_seconds=120)
    run = deploy(manifests, namespace)
    wait_for("the gate to hold the queue", lambda: kueue.get(cq)["spec"]["stopPolicy"] == "HoldAndDrain", 60)
    (pod,) = run.pods()
    client.BatchV1Api(api).patch_namespaced_job(run.job, namespace, {"spec": {"activeDeadlineSeconds": 1}})
    failed = final_condition(run.finished())
    assert (failed.type, failed.reason) == ("Failed", "DeadlineExceeded"), run.logs()
    wait_for("the Pod to be gone", lambda: not run.pods(), JOB_TIMEOUT_S)
    log = run.kubelet.log(pod.metadata.uid)
    assert '"event": "terminated"' in log, log
    assert kueue.events(cq)[-1] == "GateTimeout", log
    assert kueue.get(cq)["spec"]["stopPolicy"] == "HoldAndDrain"


# --- the retire Job ---------------------------------------------------------------------------


def _managed_flavor(api: client.ApiClient, kueue: Kueue, name: str) -> dict[str, Any]:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceFlavor",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "tasgen"}},
        "spec": {},
    }
    custom = client.CustomObjectsApi(api)
    custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", body)
    kueue.on_cleanup(lambda: custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", name))
    return body


def test_gate_retire_job_completes_and_deletes_the_old_flavor(
    api: client.ApiClient, kueue: Kueue, deploy: Callable[..., Deployed]
) -> None:
    """The retire Job, with its own ServiceAccount and RBAC: deletes the managed flavor the
    render no longer holds, keeps the rendered one, completes."""
    kept = _managed_flavor(api, kueue, unique("gate-kept"))
    old = _managed_flavor(api, kueue, unique("gate-old"))["metadata"]["name"]
    namespace = unique("gate-job")
    manifests = retire_manifests([kept], namespace=namespace, image=IMAGE, name=unique("tasgen-retire"))
    run = deploy(manifests, namespace)
    job = run.finished()
    complete = final_condition(job)
    assert (complete.type, complete.reason) == ("Complete", "CompletionsReached"), run.logs()
    assert exit_codes(run.pods()) == [0], run.logs()
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as missing:
        custom.get_cluster_custom_object(GROUP, VERSION, "resourceflavors", old)
    assert missing.value.status == 404
    custom.get_cluster_custom_object(GROUP, VERSION, "resourceflavors", kept["metadata"]["name"])


def test_gate_job_kubelet_stand_in_fails_a_pod_it_cannot_run(api: client.ApiClient, tmp_path: Path) -> None:
    """The stand-in runs what the gate's Pods are; a Pod of two containers is failed with a
    reason rather than run half right."""
    core, namespace = client.CoreV1Api(api), unique("gate-job")
    core.create_namespace({"metadata": {"name": namespace}})
    kubelet = Kubelet(api, namespace, tmp_path)
    kubelet.start()
    try:
        containers = [{"name": n, "image": IMAGE, "command": ["python", "-V"]} for n in ("a", "b")]
        core.create_namespaced_pod(
            namespace,
            {"metadata": {"name": "two"}, "spec": {"restartPolicy": "Never", "containers": containers}},
        )
        pod = wait_for(
            "the Pod to be failed",
            lambda: (p := core.read_namespaced_pod("two", namespace)).status.phase == "Failed" and p,
        )
        assert pod.status.reason == "Unsupported", pod.status
    finally:
        kubelet.stop()
        core.delete_namespace(namespace)
