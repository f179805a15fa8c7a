"""The drain gate on the real API server and Kueue (docs/explanation/gate.md).

Each test builds its own flavors, queue and namespace with fresh names, runs ``python -m
tasgen.gate`` as a subprocess (as the Job does), and reads the result back from the API.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.e2e import harness
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    admitted_on,
    block_current_status,
    block_reserving_status,
    cluster_queue,
    condition,
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
def kubeconfig(cluster: harness.Cluster) -> Path:
    """The admin kubeconfig, for the gate subprocess."""
    return cluster.kubeconfig


def _setup(kueue: Kueue, quotas: dict[str, int]) -> tuple[str, dict[str, str]]:
    """A queue over fresh flavors named by the keys of quotas; returns its name and the
    mapping key -> flavor name."""
    names = {key: kueue.flavor(unique(f"gate-{key}")) for key in quotas}
    cq = unique("gate-cq")
    kueue.queue(cq, {names[k]: q for k, q in quotas.items()})
    wait_for("Kueue's status for the new queue", lambda: kueue.current(cq))
    return cq, names


def _plan(tmp_path: Path, cq: str, flavors: dict[str, int], policy: str = "None") -> Path:
    return write_plan(tmp_path / f"plan-{time.monotonic_ns()}.yaml", [cluster_queue(cq, flavors, policy)])


def _ready(cq: dict[str, Any]) -> tuple[str, str]:
    cond = condition(cq, "TopologyReady")
    assert cond is not None, cq
    return cond["status"], cond["reason"]


def _assert_gitops_apply_is_a_no_op(kueue: Kueue, rendered: dict[str, Any]) -> None:
    """After the gate, the GitOps wave that applies the rendered queue changes no spec field."""
    before = kueue.get(rendered["metadata"]["name"])
    after = kueue.apply_rendered(rendered)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"] == before["spec"]


def test_gate_quota_only_change_is_applied_in_place(kueue: Kueue, kubeconfig: Path, tmp_path: Path) -> None:
    cq, f = _setup(kueue, {"a": 4})
    run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 8}))
    assert run.code == 0, run
    assert run.updates() == ["Apply"], run
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "8"}
    assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None
    assert _ready(live) == ("True", "AppliedInPlace")
    # The condition is ours alone (server-side apply), Kueue's Active stays Kueue's.
    ours = [
        m
        for m in live["metadata"]["managedFields"]
        if m["manager"] == "tasgen-gate" and m.get("subresource") == "status"
    ]
    assert [m["operation"] for m in ours] == ["Apply"]
    owned = str(ours[0]["fieldsV1"])
    assert '{"type":"TopologyReady"}' in owned and '{"type":"Active"}' not in owned
    assert condition(live, "Active") is not None


def test_gate_idle_flavor_dropped_in_place(kueue: Kueue, kubeconfig: Path, tmp_path: Path) -> None:
    cq, f = _setup(kueue, {"a": 4, "b": 4})
    run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}))
    assert run.code == 0, run
    assert run.updates() == ["Apply"], run  # no hold
    assert flavors_of(kueue.get(cq)) == {f["a"]: "4"}


def test_gate_dry_run_changes_nothing(kueue: Kueue, kubeconfig: Path, tmp_path: Path) -> None:
    cq, f = _setup(kueue, {"a": 4, "b": 4})
    before = kueue.get(cq)
    run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}), "--dry-run")
    assert run.code == 0, run
    assert run.actions() == ["Apply"], run
    assert kueue.get(cq)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize("admin_policy", ["None", "Hold"])
def test_gate_busy_flavor_dropped_drains_switches_and_restores(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path, admin_policy: str
) -> None:
    # Flavor a has no quota, so Kueue must put the Job on b, the flavor the plan drops.
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    kueue.job(ns, "train")
    wl = wait_for(
        "the Job's Workload admitted on b",
        lambda: next((w for w in kueue.workloads(ns) if admitted_on(w) == f["b"]), None),
    )
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))
    if admin_policy != "None":  # an administrator's Hold: running work stays, nothing new
        kueue.patch_spec(cq, {"stopPolicy": admin_policy})
        wait_for("Kueue to observe the Hold", lambda: kueue.reserving(cq, 1))

    rendered = cluster_queue(cq, {f["a"]: 4}, admin_policy)
    run = run_gate(kubeconfig, write_plan(tmp_path / "plan.yaml", [rendered]))

    assert run.code == 0, run
    assert run.updates() == ["Hold", "Switch", "Restore"], run
    _assert_gitops_apply_is_a_no_op(kueue, rendered)
    held = [ln for ln in run.lines if ln["event"] == "updated" and ln["action"] == "Hold"]
    assert held[0]["stopPolicy"] == "HoldAndDrain"
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "4"}
    assert live["spec"]["stopPolicy"] == admin_policy and recorded(live) is None
    assert _ready(live) == ("True", "Switched")
    assert kueue.events(cq) == ["Draining", "Switched", "StopPolicyRestored"]
    if admin_policy == "None":
        # Restored: Kueue admits the evicted Job again, now on the new plan's flavor.
        wait_for("readmission on a", lambda: admitted_on(kueue.workloads(ns)[0]) == f["a"])
    else:  # Hold restored: evicted by the drain, and not admitted again
        now = kueue.workloads(ns)[0]
        evicted = condition(now, "Evicted")
        assert evicted is not None and evicted["reason"] == "ClusterQueueStopped", (wl, now)
        assert admitted_on(now) is None


def test_gate_emptied_plan_stays_held_until_a_flavor_returns(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path
) -> None:
    cq, f = _setup(kueue, {"a": 4})
    run = run_gate(kubeconfig, _plan(tmp_path, cq, {}, policy="Hold"))
    assert run.code == 0, run
    _assert_gitops_apply_is_a_no_op(kueue, cluster_queue(cq, {}, "Hold"))
    live = kueue.get(cq)
    assert "resourceGroups" not in live["spec"] or not live["spec"]["resourceGroups"]
    assert live["spec"]["stopPolicy"] == "Hold" and recorded(live) == "None"
    assert _ready(live) == ("False", "HeldEmpty")

    again = run_gate(kubeconfig, _plan(tmp_path, cq, {}, policy="Hold"))
    assert again.code == 0 and again.updates() == [], again  # idempotent

    back = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}))
    assert back.code == 0, back
    assert back.updates() == ["Switch", "Restore"], back
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "4"}
    assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None


def _evicted(wl: dict[str, Any]) -> bool:
    cond = condition(wl, "Evicted")
    return bool(cond and cond["status"] == "True" and cond["reason"] == "ClusterQueueStopped")


def test_gate_killed_mid_drain_converges(kueue: Kueue, kubeconfig: Path, tmp_path: Path) -> None:
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    kueue.workload(ns, "serve")  # no owner: stays reserved until released below
    wait_for("the Workload reserving on b", lambda: kueue.reserving(cq, 1))
    kueue.patch_spec(cq, {"stopPolicy": "Hold"})
    wait_for("Kueue to observe the Hold", lambda: kueue.reserving(cq, 1))
    plan = _plan(tmp_path, cq, {f["a"]: 4})

    with gate_process(kubeconfig, plan, "--timeout", "120") as proc:
        wait_for(
            "the gate to hold the queue", lambda: kueue.get(cq)["spec"].get("stopPolicy") == "HoldAndDrain"
        )
        wait_for("Kueue to evict the Workload", lambda: _evicted(kueue.workloads(ns)[0]))
        proc.kill()  # SIGKILL mid-drain: nothing gets to clean up
        proc.wait(timeout=30)
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "0", f["b"]: "4"}, "switched with a reservation"
    assert recorded(live) == "Hold"

    timeout = run_gate(kubeconfig, plan, "--timeout", "2")  # still draining: bounded wait
    assert timeout.code == 1, timeout
    assert flavors_of(kueue.get(cq)) == {f["a"]: "0", f["b"]: "4"}
    assert _ready(kueue.get(cq))[1] == "Draining"

    kueue.release(ns, "serve")
    run = run_gate(kubeconfig, plan, "--timeout", "60")
    assert run.code == 0, run
    assert run.updates() == ["Switch", "Restore"], run
    live = kueue.get(cq)
    assert flavors_of(live) == {f["a"]: "4"}
    assert live["spec"]["stopPolicy"] == "Hold" and recorded(live) is None
    assert run_gate(kubeconfig, plan).updates() == []


# --- stale status: Kueue cannot write the current generation's status ----------------------


def _poke(api: client.ApiClient, cq: str) -> bool:
    """Any change to the queue makes Kueue reconcile it (and retry its status) at once, rather
    than after the backoff that the refused writes built up."""
    client.CustomObjectsApi(api).patch_cluster_custom_object(
        GROUP,
        VERSION,
        "clusterqueues",
        cq,
        {"metadata": {"annotations": {"test/poke": str(time.monotonic_ns())}}},
    )
    time.sleep(1)
    return True


def test_gate_stale_status_awaits_queue_status(
    kueue: Kueue, api_client: client.ApiClient, kubeconfig: Path, tmp_path: Path
) -> None:
    cq, f = _setup(kueue, {"a": 4, "b": 4})
    policy = block_current_status(api_client, cq)
    try:
        # Bump the generation until Kueue demonstrably cannot catch up (the policy needs a
        # moment to reach the API server's admission chain).
        quota = iter(range(5, 100))

        def stale() -> bool:
            kueue.patch_spec(
                cq,
                {
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": f["a"],
                                    "resources": [{"name": "cpu", "nominalQuota": str(next(quota))}],
                                },
                                {"name": f["b"], "resources": [{"name": "cpu", "nominalQuota": "4"}]},
                            ],
                        }
                    ]
                },
            )
            time.sleep(2)
            return kueue.current(cq) is None

        wait_for("a queue status one generation behind", stale, timeout=60)

        run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}), "--timeout", "3")
        assert run.code == 1, run  # bounded wait
        assert "AwaitStatus" in run.actions(), run
        live = kueue.get(cq)
        assert f["b"] in flavors_of(live), "dropped a flavor on a stale status"
        assert _ready(live) == ("Unknown", "AwaitingQueueStatus")

        # A gate that is still waiting when Kueue catches up goes on by itself.
        with gate_process(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}), "--timeout", "90") as gate:
            time.sleep(3)
            assert gate.poll() is None and f["b"] in flavors_of(kueue.get(cq))
            unblock(api_client, policy)
            policy = ""
            wait_for("Kueue to catch up", lambda: _poke(api_client, cq) and kueue.current(cq))
            assert gate.wait(timeout=90) == 0
    finally:
        if policy:
            unblock(api_client, policy)
    assert flavors_of(kueue.get(cq)) == {f["a"]: "4"}


def test_gate_restores_only_once_kueue_has_observed_the_switch(
    kueue: Kueue, api_client: client.ApiClient, kubeconfig: Path, tmp_path: Path
) -> None:
    """A queue switched under the gate's hold whose switch Kueue has not observed (its status
    is one generation behind) keeps the hold: the recorded policy comes back, and workloads
    are readmitted, only on Kueue's status of the switched generation."""
    cq, f = _setup(kueue, {"a": 4, "b": 4})
    policy = block_current_status(api_client, cq)
    try:
        quota = iter(range(5, 100))

        def switched_unobserved() -> bool:
            # The state a gate killed right after its switch leaves: the new plan, held, the
            # record on; each write is a new generation, until Kueue demonstrably lags.
            body = kueue.get(cq)
            body["spec"]["resourceGroups"] = cluster_queue(cq, {f["a"]: next(quota)})["spec"][
                "resourceGroups"
            ]
            body["spec"]["stopPolicy"] = "HoldAndDrain"
            body["metadata"].setdefault("annotations", {})[PREVIOUS_POLICY_ANNOTATION] = "None"
            kueue.custom.replace_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq, body)
            time.sleep(2)
            return kueue.current(cq) is None

        wait_for("a switch that Kueue has not observed", switched_unobserved, timeout=60)
        plan = _plan(tmp_path, cq, {f["a"]: int(flavors_of(kueue.get(cq))[f["a"]])})

        run = run_gate(kubeconfig, plan, "--timeout", "3")
        assert run.code == 1, run
        assert run.updates() == [], run  # no restore
        assert "AwaitStatus" in run.actions(), run
        live = kueue.get(cq)
        assert live["spec"]["stopPolicy"] == "HoldAndDrain" and recorded(live) == "None"
        assert _ready(live) == ("Unknown", "AwaitingQueueStatus")

        unblock(api_client, policy)
        policy = ""
        wait_for("Kueue to observe the switch", lambda: _poke(api_client, cq) and kueue.current(cq))
        done = run_gate(kubeconfig, plan, "--timeout", "60")
        assert done.code == 0, done
        assert done.updates() == ["Restore"], done
    finally:
        if policy:
            unblock(api_client, policy)
    live = kueue.get(cq)
    assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None


# --- idleness from Workloads: Kueue's status lags its admissions ---------------------------


def _refused_status(kueue: Kueue, cq: str) -> bool:
    """A (dry-run) status write counting a reserving workload is refused: the test's policy is
    in the API server's admission chain."""
    body = {"status": {"reservingWorkloads": 1}}
    try:
        kueue.custom.patch_cluster_custom_object_status(
            GROUP, VERSION, "clusterqueues", cq, body, dry_run="All"
        )
    except client.ApiException as err:
        return err.status in (403, 422)
    return False


def _stranded(kueue: Kueue, cq: str, ns: str) -> list[str]:
    """Workloads admitted on a flavor the queue no longer names (Kueue no longer counts them)."""
    named = set(flavors_of(kueue.get(cq)))
    return [w["metadata"]["name"] for w in kueue.workloads(ns) if admitted_on(w) not in (None, *named)]


def test_gate_judges_idleness_from_workloads_not_only_the_queue_status(
    kueue: Kueue, api_client: client.ApiClient, kubeconfig: Path, tmp_path: Path
) -> None:
    """Kueue admits a Job onto the flavor the plan drops, but the queue's status (current, for
    this generation) still reports that flavor idle: the instant between Kueue's admission and
    its status write, made to last by a policy that refuses status writes counting it. The
    Workload's admission names the flavor, so the gate holds and drains instead of dropping it
    in place, which would strand the reservation where Kueue never reports it again."""
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    policy = block_reserving_status(api_client, cq)
    try:
        wait_for("the test's policy to refuse", lambda: _refused_status(kueue, cq))
        kueue.job(ns, "train")
        wait_for(
            "the Job's Workload admitted on b",
            lambda: next((w for w in kueue.workloads(ns) if admitted_on(w) == f["b"]), None),
        )
        live = kueue.current(cq)
        assert live is not None and live["status"].get("reservingWorkloads", 0) == 0, live
        run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: 4}), "--timeout", "90")
        assert run.code == 0, run
        assert run.updates() == ["Hold", "Switch", "Restore"], run
        assert _stranded(kueue, cq, ns) == []
    finally:
        unblock(api_client, policy)
    assert flavors_of(kueue.get(cq)) == {f["a"]: "4"}
    wait_for("readmission on a", lambda: admitted_on(kueue.workloads(ns)[0]) == f["a"])


def test_gate_drains_a_reservation_stranded_on_a_flavor_already_dropped(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path
) -> None:
    """A flavor dropped while a Job was admitted on it (by hand, or in the instant before the
    gate's in-place write): the queue runs the plan, its status no longer lists the flavor, yet
    the Workload holds it. The gate holds the queue until Kueue has evicted it, then restores."""
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    kueue.job(ns, "train")
    wait_for("the Job's reservation on b", lambda: kueue.reserving(cq, 1))
    rendered = cluster_queue(cq, {f["a"]: 4})
    kueue.patch_spec(cq, {"resourceGroups": rendered["spec"]["resourceGroups"]})  # drops b, busy
    wait_for("Kueue's status of the drop", lambda: kueue.current(cq))
    assert _stranded(kueue, cq, ns) != []

    run = run_gate(kubeconfig, write_plan(tmp_path / "plan.yaml", [rendered]), "--timeout", "90")
    assert run.code == 0, run
    assert run.updates() == ["Hold", "Restore"], run
    live = kueue.get(cq)
    assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None
    assert _stranded(kueue, cq, ns) == []
    wait_for("readmission on a", lambda: admitted_on(kueue.workloads(ns)[0]) == f["a"])


# --- a resource dropped from coveredResources --------------------------------------------------


def _covering(cq: str, flavor: str, resources: dict[str, str]) -> dict[str, Any]:
    """A queue over one flavor whose group covers these resources (name -> quota)."""
    body = cluster_queue(cq, {flavor: 0})
    body["spec"]["resourceGroups"] = [
        {
            "coveredResources": list(resources),
            "flavors": [
                {"name": flavor, "resources": [{"name": r, "nominalQuota": q} for r, q in resources.items()]}
            ],
        }
    ]
    return body


def _assigned(wl: dict[str, Any]) -> dict[str, str]:
    """resource -> flavor of a Workload's admission ({} when it holds no quota)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    return {
        r: str(f)
        for a in admission.get("podSetAssignments") or []
        for r, f in (a.get("flavors") or {}).items()
    }


def test_gate_drains_a_resource_dropped_from_covered_resources(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path
) -> None:
    """A plan that stops covering memory on a flavor where a Job holds memory strands that
    reservation as a dropped flavor would (Kueue no longer counts it): the gate holds and drains
    before it switches, and nothing stays admitted with a resource the queue no longer covers."""
    flavor = kueue.flavor(unique("gate-a"))
    cq = unique("gate-cq")
    live = _covering(cq, flavor, {"cpu": "4", "memory": "4Gi"})
    kueue.custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", live)
    kueue.on_cleanup(lambda: kueue.custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", cq))
    ns = kueue.namespace(cq)
    kueue.job(ns, "train", also={"memory": "1Gi"})
    wait_for(
        "the Job admitted with cpu and memory",
        lambda: any(_assigned(w).get("memory") for w in kueue.workloads(ns)),  # once Kueue made it
    )
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))

    rendered = _covering(cq, flavor, {"cpu": "4"})
    run = run_gate(kubeconfig, write_plan(tmp_path / "plan.yaml", [rendered]), "--timeout", "90")
    assert run.code == 0, run
    assert run.updates() == ["Hold", "Switch", "Restore"], run
    after = kueue.get(cq)
    assert after["spec"]["resourceGroups"][0]["coveredResources"] == ["cpu"]
    assert after["spec"]["stopPolicy"] == "None" and recorded(after) is None
    # Evicted by the drain; memory is no longer covered, so Kueue does not admit it again.
    assert [w["metadata"]["name"] for w in kueue.workloads(ns) if "memory" in _assigned(w)] == []


# --- a plan the API server refuses ------------------------------------------------------------


def test_gate_does_not_hold_a_queue_for_a_plan_kueue_refuses(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path
) -> None:
    """A plan that drops a busy flavor but that Kueue's webhook refuses (a negative quota):
    the gate dry-runs the switch before it holds, so the queue is neither held nor drained
    (a hold whose switch is refused would stay for good); it says so on the queue's condition,
    in an Event and in its log, and exits 1."""
    cq, f = _setup(kueue, {"a": 0, "b": 4})
    ns = kueue.namespace(cq)
    kueue.job(ns, "train")
    wait_for("the Job's reservation on b", lambda: kueue.reserving(cq, 1))
    before = kueue.get(cq)

    run = run_gate(kubeconfig, _plan(tmp_path, cq, {f["a"]: -1}), "--timeout", "30")
    assert run.code == 1, run
    assert run.updates() == [], run  # no hold
    [refusal] = [ln for ln in run.lines if ln["event"] == "refused"]
    assert refusal["status"] == 403 and "admission webhook" in refusal["message"], refusal
    assert "nominalQuota" in refusal["message"], refusal
    live = kueue.get(cq)
    assert live["spec"] == before["spec"] and recorded(live) is None
    assert _ready(live) == ("False", "PlanRefused")
    assert "nominalQuota" in condition(live, "TopologyReady")["message"]  # type: ignore[index]
    assert kueue.events(cq) == ["PlanRefused"]
    [wl] = kueue.workloads(ns)
    assert admitted_on(wl) == f["b"] and condition(wl, "Evicted") is None, wl
