"""The gate's ValidatingAdmissionPolicy on the real API server: an unsafe write by
anyone but the gate is refused, the gate's own switch goes through, safe changes are anyone's.

Each test renders the gate's objects (gate_manifests: ServiceAccount, RBAC, the policy and its
binding) for its own queues under fresh names, and writes as two users: "alice", a cluster
admin by impersonation (as `kubectl apply` by a person or a GitOps engine would), and the gate's
ServiceAccount through a TokenRequest token (as the Job does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.gate.install import PLURAL, GateInstall, apply, patch, refused
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    admitted_on,
    block_current_status,
    cluster_queue,
    flavors_of,
    gate_process,
    recorded,
    run_gate,
    unblock,
    unique,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.cluster


@pytest.fixture
def gate_for(
    api_client: client.ApiClient, kueue: Kueue, tmp_path: Path
) -> Iterator[Callable[..., GateInstall]]:
    made: list[GateInstall] = []

    def make(*queues: str) -> GateInstall:
        gate = GateInstall(api_client, list(queues), tmp_path)
        made.append(gate)
        gate.await_active(kueue)
        return gate

    yield make
    for gate in made:
        gate.close()


def _busy(kueue: Kueue, held_by_workload: bool = False) -> tuple[str, dict[str, str], str]:
    """A managed queue over flavors a (no quota) and b, with one workload admitted on b: a Job
    (Kueue releases it when evicted) or a bare Workload (released only by the test)."""
    f = {k: kueue.flavor(unique(f"gate-adm-{k}")) for k in ("a", "b")}
    cq = unique("gate-adm-cq")
    kueue.queue(cq, {f["a"]: 0, f["b"]: 4}, managed=True)
    ns = kueue.namespace(cq)
    if held_by_workload:
        kueue.workload(ns, "serve")
    else:
        kueue.job(ns, "train")
    wait_for(
        "the workload admitted on b",
        lambda: any(admitted_on(w) == f["b"] for w in kueue.workloads(ns)),
    )
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))
    return cq, f, ns


def test_gate_admission_policy_type_checks(
    api_client: client.ApiClient, gate_for: Callable[..., GateInstall]
) -> None:
    """The CEL compiles (the API server refuses a policy that does not) and type-checks against
    the ClusterQueue schema without a warning: kube-controller-manager's ValidatingAdmissionPolicy
    status controller writes status.typeChecking. A policy with a wrong field name, as a
    control, does get a warning."""
    gate = gate_for(unique("gate-tc"))
    adm = client.AdmissionregistrationV1Api(api_client)

    def checked(name: str) -> Any:
        vap = adm.read_validating_admission_policy(name)
        done = vap.status and vap.status.observed_generation == vap.metadata.generation
        return vap.status if done else None

    status = wait_for("type checking of the policy", lambda: checked(gate.name))
    assert not (status.type_checking and status.type_checking.expression_warnings), status

    broken = {**gate.policy, "metadata": {"name": unique("gate-tc-broken")}}
    broken["spec"] = {
        **gate.policy["spec"],
        "variables": [],
        "validations": [{"expression": "oldObject.spec.noSuchField == 1"}],
    }
    adm.create_validating_admission_policy(broken)
    try:
        control = wait_for("type checking of the control", lambda: checked(broken["metadata"]["name"]))
        assert control.type_checking and control.type_checking.expression_warnings, control
    finally:
        adm.delete_validating_admission_policy(broken["metadata"]["name"])


def test_gate_admission_refuses_an_unsafe_apply_and_lets_the_gate_switch(
    kueue: Kueue, gate_for: Callable[..., GateInstall], tmp_path: Path
) -> None:
    cq, f, ns = _busy(kueue, held_by_workload=True)
    gate = gate_for(cq)
    rendered = cluster_queue(cq, {f["a"]: 4}, managed=True)

    message = refused(lambda: apply(gate.alice, rendered))
    assert message and f"ClusterQueue {cq}: this update drops a flavor" in message, message
    assert flavors_of(kueue.get(cq)) == {f["a"]: "0", f["b"]: "4"}

    plan = write_plan(tmp_path / "plan.yaml", [rendered])
    with gate_process(gate.kubeconfig, plan, "--timeout", "120") as proc:
        wait_for("the gate to hold the queue", lambda: recorded(kueue.get(cq)) == "None")
        # What a GitOps engine does when it does not wait for the gate (a vanished Job, a
        # selective sync): refused while the drain is in progress.
        early = refused(lambda: apply(gate.alice, rendered, manager="kustomize-controller"))
        assert early and "drops a flavor" in early, early
        unhold = refused(lambda: patch(gate.alice, cq, {"spec": {"stopPolicy": "None"}}))
        assert unhold and "the tasgen drain gate is draining this queue" in unhold, unhold
        kueue.release(ns, "serve")
        assert proc.wait(timeout=90) == 0, proc.stdout.read() if proc.stdout else ""
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "4"} and live["spec"]["stopPolicy"] == "None"
    assert recorded(live) is None
    after = apply(gate.alice, rendered, manager="kustomize-controller")  # now a no-op
    assert after["metadata"]["generation"] == live["metadata"]["generation"]


def test_gate_admission_allows_safe_changes_by_anyone(
    kueue: Kueue, gate_for: Callable[..., GateInstall]
) -> None:
    f = {k: kueue.flavor(unique(f"gate-adm-{k}")) for k in ("a", "b")}
    cq = unique("gate-adm-cq")
    kueue.queue(cq, {f["a"]: 4, f["b"]: 4}, managed=True)
    gate = gate_for(cq)
    wait_for("Kueue's status", lambda: kueue.current(cq))

    apply(gate.alice, cluster_queue(cq, {f["a"]: 8, f["b"]: 2}, managed=True))  # quota only
    assert flavors_of(kueue.get(cq)) == {f["a"]: "8", f["b"]: "2"}
    wait_for("Kueue's status", lambda: kueue.current(cq))
    apply(gate.alice, cluster_queue(cq, {f["a"]: 8}, managed=True))  # b is idle
    assert flavors_of(kueue.get(cq)) == {f["a"]: "8"}
    patch(gate.alice, cq, {"spec": {"stopPolicy": "Hold"}})  # no drain in progress
    assert kueue.get(cq)["spec"]["stopPolicy"] == "Hold"
    # ... but not the gate's record: one added by someone else would be "restored"
    record = {"metadata": {"annotations": {PREVIOUS_POLICY_ANNOTATION: "HoldAndDrain"}}}
    assert "only the gate" in refused(lambda: patch(gate.alice, cq, record))


def test_gate_admission_refuses_an_idle_drop_on_a_stale_status(
    api_client: client.ApiClient, kueue: Kueue, gate_for: Callable[..., GateInstall]
) -> None:
    """An idle flavor, but Kueue has not reported the status of the queue's current
    generation: unknown, so refused. (A test policy holds Kueue's status back.)"""
    f = {k: kueue.flavor(unique(f"gate-adm-{k}")) for k in ("a", "b")}
    cq = unique("gate-adm-cq")
    kueue.queue(cq, {f["a"]: 4, f["b"]: 4}, managed=True)
    gate = gate_for(cq)
    wait_for("Kueue's status", lambda: kueue.current(cq))
    blocker = block_current_status(api_client, cq)
    try:
        quota = iter(range(5, 100))

        def stale() -> bool:
            apply(kueue.api, cluster_queue(cq, {f["a"]: next(quota), f["b"]: 4}, managed=True))
            time.sleep(2)
            return kueue.current(cq) is None

        wait_for("a queue status one generation behind", stale, timeout=60)
        a = flavors_of(kueue.get(cq))[f["a"]]
        message = refused(lambda: apply(gate.alice, cluster_queue(cq, {f["a"]: int(a)}, managed=True)))
        assert message and "drops a flavor" in message, message
    finally:
        unblock(api_client, blocker)
    wait_for("Kueue to catch up", lambda: poke(kueue, cq) and kueue.current(cq))
    apply(gate.alice, cluster_queue(cq, {f["a"]: 4}, managed=True))  # current and idle: allowed
    assert flavors_of(kueue.get(cq)) == {f["a"]: "4"}


def poke(kueue: Kueue, cq: str) -> bool:
    """A change makes Kueue reconcile at once instead of after its backoff."""
    patch(kueue.api, cq, {"metadata": {"annotations": {"test/poke": str(time.monotonic_ns())}}})
    time.sleep(1)
    return True


def test_gate_admission_delete_of_a_busy_queue_waits_for_a_drain(
    kueue: Kueue, gate_for: Callable[..., GateInstall]
) -> None:
    """Finding 4: Kueue does not evict from a terminating queue, so a prune of a busy queue
    (removed or renamed plan) would hang; it is refused until the queue drains."""
    cq, _, ns = _busy(kueue)
    gate = gate_for()  # a queue removed from the plan is no longer named: the label counts
    message = refused(
        lambda: client.CustomObjectsApi(gate.alice).delete_cluster_custom_object(GROUP, VERSION, PLURAL, cq)
    )
    assert message and "set spec.stopPolicy to HoldAndDrain first" in message, message
    assert not kueue.get(cq)["metadata"].get("deletionTimestamp")

    patch(gate.alice, cq, {"spec": {"stopPolicy": "HoldAndDrain"}})
    client.CustomObjectsApi(gate.alice).delete_cluster_custom_object(GROUP, VERSION, PLURAL, cq)

    def gone() -> bool:
        try:
            kueue.get(cq)
        except ApiException as err:
            return err.status == 404
        return False

    wait_for("the drained queue to be deleted", gone, timeout=90)
    assert all(admitted_on(w) is None for w in kueue.workloads(ns))


def test_gate_admission_revert_and_policy_choice_during_a_drain(
    kueue: Kueue, gate_for: Callable[..., GateInstall], tmp_path: Path
) -> None:
    """Finding 5: a drain interrupted (the Job deleted) and then reverted converges: the gate
    with the reverted plan restores the policy. While the record is on, an administrator picks
    the policy to restore through the annotation, never through spec.stopPolicy."""
    cq, f, _ = _busy(kueue, held_by_workload=True)
    gate = gate_for(cq)
    dropped = write_plan(tmp_path / "drop.yaml", [cluster_queue(cq, {f["a"]: 4}, managed=True)])
    with gate_process(gate.kubeconfig, dropped, "--timeout", "120") as proc:
        wait_for("the gate to hold the queue", lambda: recorded(kueue.get(cq)) == "None")
        proc.kill()  # the Job deleted mid-drain
        proc.wait(timeout=30)

    refusal = refused(lambda: patch(gate.alice, cq, {"spec": {"stopPolicy": "Hold"}}))
    assert refusal and "set the annotation to None or Hold" in refusal, refusal
    patch(gate.alice, cq, {"metadata": {"annotations": {PREVIOUS_POLICY_ANNOTATION: "Hold"}}})

    reverted = cluster_queue(cq, {f["a"]: 0, f["b"]: 4}, "Hold", managed=True)
    run = run_gate(gate.kubeconfig, write_plan(tmp_path / "revert.yaml", [reverted]), "--timeout", "60")
    assert run.code == 0, run
    assert run.updates() == ["Restore"], run
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "0", f["b"]: "4"}
    assert live["spec"]["stopPolicy"] == "Hold" and recorded(live) is None
    after = apply(gate.alice, reverted, manager="kustomize-controller")  # the revert's queues wave
    assert after["metadata"]["generation"] == live["metadata"]["generation"]


def test_gate_admission_guards_a_queue_that_becomes_managed_in_the_same_sync(
    kueue: Kueue, gate_for: Callable[..., GateInstall]
) -> None:
    """A busy queue that tasgen starts to manage in this sync: the installed policy is the
    previous render's, which does not name it, and the engine's apply (labelled, dropping the
    busy flavor) may come before the gate's. Refused all the same: the drop rule holds for every
    queue the policy matches, not only the names of the render that installed it."""
    f = {k: kueue.flavor(unique(f"gate-adm-{k}")) for k in ("a", "b")}
    cq = unique("gate-adm-new")
    kueue.queue(cq, {f["a"]: 0, f["b"]: 4})  # someone else's so far: no label
    ns = kueue.namespace(cq)
    kueue.workload(ns, "serve")
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))
    gate = gate_for()  # the previous render: cq is not among its queues
    message = refused(lambda: apply(gate.alice, cluster_queue(cq, {f["a"]: 4}, managed=True)))
    assert message and f"ClusterQueue {cq}: this update drops a flavor" in message, message
    assert flavors_of(kueue.get(cq)) == {f["a"]: "0", f["b"]: "4"}
    # the label alone, or a quota change, is no drop: still anyone's
    apply(gate.alice, cluster_queue(cq, {f["a"]: 2, f["b"]: 4}, managed=True))
    assert flavors_of(kueue.get(cq)) == {f["a"]: "2", f["b"]: "4"}


def test_gate_admission_keeps_a_queue_guarded_by_name_and_its_label(
    kueue: Kueue, gate_for: Callable[..., GateInstall]
) -> None:
    """Removing the managed-by label is refused (in one write it would take the queue out of
    a label selector for every later write), and a queue of the plan is guarded by its name
    even without the label."""
    cq, f, _ = _busy(kueue, held_by_workload=True)
    plain = unique("gate-adm-plain")
    kueue.queue(plain, {f["a"]: 0, f["b"]: 4})  # of the plan, but unlabelled
    plain_ns = kueue.namespace(plain)
    kueue.workload(plain_ns, "serve")
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(plain, 1))
    gate = gate_for(cq, plain)

    unlabel = {"metadata": {"labels": {"app.kubernetes.io/managed-by": None}}}
    message = refused(lambda: patch(gate.alice, cq, unlabel))
    assert message and f"ClusterQueue {cq}: the label app.kubernetes.io/managed-by" in message, message
    relabel = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "someone-else"}}}
    assert refused(lambda: patch(gate.alice, cq, relabel))
    assert kueue.get(cq)["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tasgen"

    message = refused(lambda: apply(gate.alice, cluster_queue(plain, {f["a"]: 4})))
    assert message and f"ClusterQueue {plain}: this update drops a flavor" in message, message
    assert flavors_of(kueue.get(plain)) == {f["a"]: "0", f["b"]: "4"}
