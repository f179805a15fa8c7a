"""The gate's crash safety and its answer to others writing in between, on the real API server
and Kueue: a fault at every one of the gate's writes in turn (tests/gate/faulty_gate.py).

The scene is a queue over flavors a (no quota) and b, whose plan drops b: a Job reserving on b
makes the gate hold, drain, switch and restore. Whatever the fault, the queue ends on its
plan, with the policy in force, no drain record, and no workload stranded on b (a switch away
from b while a workload held a reservation there would leave it admitted on a flavor the queue
no longer names).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import harness
from tests.gate.support import (
    ROOT,
    GateRun,
    Kueue,
    _env,
    admitted_on,
    cluster_queue,
    flavors_of,
    recorded,
    run_gate,
    unique,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.cluster


@dataclass(frozen=True)
class Scene:
    queue: str
    a: str
    b: str
    namespace: str
    plan: Path


@pytest.fixture
def kubeconfig(cluster: harness.Cluster) -> Path:
    return cluster.kubeconfig


def scenes(kueue: Kueue, tmp_path: Path, count: int, *, busy: bool, policy: str = "None") -> list[Scene]:
    """count fresh queues over flavors a (no quota) and b, made at once; busy: a Job reserving
    on b in each; policy: the stopPolicy an administrator set (the plan keeps it)."""
    made = []
    for _ in range(count):
        a, b = kueue.flavor(unique("fault-a")), kueue.flavor(unique("fault-b"))
        cq = unique("fault-cq")
        kueue.queue(cq, {a: 0, b: 4})
        ns = kueue.namespace(cq)
        if busy:
            kueue.job(ns, "train")
        plan = write_plan(tmp_path / f"{cq}.yaml", [cluster_queue(cq, {a: 4}, policy)])
        made.append(Scene(cq, a, b, ns, plan))
    for scene in made:
        wait_for(
            "Kueue's status for the new queue",
            lambda s=scene: kueue.reserving(s.queue, int(busy)),
            state=lambda s=scene: kueue.seen(s.queue, s.namespace),
        )
        if policy != "None":
            kueue.patch_spec(scene.queue, {"stopPolicy": policy})
    for scene in made:
        wait_for("Kueue to observe the policy", lambda s=scene: kueue.reserving(s.queue, int(busy)))
    return made


def faulty(kubeconfig: Path, scene: Scene, fault: str, k: int = 0) -> GateRun:
    command = [sys.executable, "-m", "tests.gate.faulty_gate", fault, str(k), scene.namespace, "--"]
    options = ["--plan", str(scene.plan), "--kubeconfig", str(kubeconfig), "--poll-interval", "0.3"]
    proc = subprocess.run(
        command + options, capture_output=True, text=True, timeout=180, cwd=ROOT, env=_env(), check=False
    )
    return GateRun(proc.returncode, proc.stdout, proc.stderr)


def faults(run: GateRun) -> list[dict[str, Any]]:
    """What the faulty gate says of its fault (``count`` lines apart)."""
    return [ln for ln in run.lines if ln["event"] == "fault" and ln["fault"] != "count"]


def writes(run: GateRun) -> int:
    """How many writes a run that ended made."""
    [counted] = [ln["writes"] for ln in run.lines if ln["event"] == "fault" and ln["fault"] == "count"]
    return int(counted)


def writes_of_a_clean_run(kueue: Kueue, kubeconfig: Path, tmp_path: Path, **kind: Any) -> int:
    """How many writes the gate makes in this scene without a fault (at least hold, switch and
    restore when busy). Another run may make fewer (this one met a conflict with Kueue's own
    status writes) or more: a fault at a k it never reaches is checked as such."""
    [scene] = scenes(kueue, tmp_path, 1, **kind)
    run = faulty(kubeconfig, scene, "count")
    assert run.code == 0, run
    assert writes(run) >= (3 if kind["busy"] else 1), run
    return writes(run)


def assert_settled(kueue: Kueue, scene: Scene, policy: str) -> None:
    """On the plan, the policy in force, no record, nothing stranded on b (no workload
    admitted there, and Kueue's current status reports no reservation on it)."""
    live = wait_for("Kueue's status of the settled queue", lambda: kueue.current(scene.queue))
    assert flavors_of(live) == {scene.a: "4"}, live["spec"]
    assert live["spec"]["stopPolicy"] == policy, live["spec"]
    assert recorded(live) is None, live["metadata"]
    stranded = [w["metadata"]["name"] for w in kueue.workloads(scene.namespace) if admitted_on(w) == scene.b]
    assert stranded == [], f"admitted on the dropped flavor {scene.b}: {stranded}"
    on_b = [
        r["total"]
        for f in (live.get("status") or {}).get("flavorsReservation") or []
        if f["name"] == scene.b
        for r in f["resources"]
    ]
    assert all(total in ("0", 0) for total in on_b), live["status"]


@pytest.mark.parametrize(
    ("policy", "when"), [("None", "kill-before"), ("None", "kill-after"), ("Hold", "kill-before")]
)
def test_gate_killed_at_every_write_then_run_again_converges(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path, policy: str, when: str
) -> None:
    """SIGKILL just before the k-th write leaves or just after its answer arrives, for every k;
    then the gate is run again (the Job's next pod) and must finish the switch."""
    total = writes_of_a_clean_run(kueue, kubeconfig, tmp_path, busy=True, policy=policy)
    for k, scene in enumerate(scenes(kueue, tmp_path, total, busy=True, policy=policy), start=1):
        killed = faulty(kubeconfig, scene, when, k)
        if killed.code != -9:  # this run settled in fewer writes: it never came to the k-th
            assert killed.code == 0 and k > 3 and writes(killed) < k, f"write {k}: {killed}"
        again = run_gate(kubeconfig, scene.plan, "--timeout", "90")
        assert again.code == 0, f"killed {when} write {k}: {again}"
        assert_settled(kueue, scene, policy)
    settled = run_gate(kubeconfig, scene.plan)  # a settled queue is not written again
    assert settled.code == 0 and [ln for ln in settled.lines if ln["event"] in ("updated", "condition")] == []


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
@pytest.mark.parametrize("meddler", ["admit", "hold"])
def test_gate_decides_again_after_a_change_before_any_write(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path, meddler: str, busy: bool
) -> None:
    """Just before each of the gate's writes in turn, Kueue admits a new Job (on b while the
    queue names it) or an administrator sets Hold. The write then carries a stale
    resourceVersion, the API server refuses it, and the gate decides again: an idle drop becomes
    a drain once a workload arrives, nothing is stranded, and the administrator's policy is the
    one in force at the end."""
    total = writes_of_a_clean_run(kueue, kubeconfig, tmp_path, busy=busy)
    for k, scene in enumerate(scenes(kueue, tmp_path, total, busy=busy), start=1):
        run = faulty(kubeconfig, scene, meddler, k)
        assert run.code == 0, f"meddled at write {k}: {run}"
        if not faults(run):  # this run settled in fewer writes: it never came to the k-th
            assert k > 1 and writes(run) < k, f"write {k}: {run}"
            assert_settled(kueue, scene, "None")
            continue
        [fault] = faults(run)
        assert_settled(kueue, scene, "Hold" if fault["applied"] == "Hold" else "None")
        if fault["applied"] == scene.b:  # admitted on the flavor the plan drops: a drain, always
            assert "Hold" in run.updates(), f"admitted on b before write {k}, yet no drain: {run}"


def test_gate_stuck_drain_does_not_hold_up_other_queues(
    kueue: Kueue, kubeconfig: Path, tmp_path: Path
) -> None:
    """One queue's drain never ends (a Workload nobody releases); the gate times out on it
    with its old plan held, and has switched the other queue meanwhile."""
    [stuck] = scenes(kueue, tmp_path, 1, busy=False)
    kueue.workload(stuck.namespace, "serve")  # no owner: never released here
    wait_for("the Workload reserving on b", lambda: kueue.reserving(stuck.queue, 1))
    [other] = scenes(kueue, tmp_path, 1, busy=False)
    both = write_plan(
        tmp_path / f"both-{time.monotonic_ns()}.yaml",
        [cluster_queue(stuck.queue, {stuck.a: 4}), cluster_queue(other.queue, {other.a: 4})],
    )
    run = run_gate(kubeconfig, both, "--timeout", "8")
    assert run.code == 1, run
    assert flavors_of(kueue.get(other.queue)) == {other.a: "4"}
    held = kueue.get(stuck.queue)
    assert flavors_of(held) == {stuck.a: "0", stuck.b: "4"}
    assert held["spec"]["stopPolicy"] == "HoldAndDrain" and recorded(held) == "None"
    assert kueue.events(stuck.queue)[-1] == "GateTimeout"
    assert any(ln["event"] == "timeout" for ln in run.lines), run
