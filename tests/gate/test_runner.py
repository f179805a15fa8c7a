"""The gate's loop against an in-memory API server with a tiny Kueue: crash safety at every
write, conflicts, timeouts. (The real API server and Kueue are in tests/e2e/test_gate_*.py.)"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from generator.gate.decision import HOLD_AND_DRAIN, PREVIOUS_POLICY_ANNOTATION, Condition
from generator.gate.kube import Conflict, Deadline, condition_body
from generator.gate.runner import Gate, JsonLog, Terminated
from tests.gate.test_decision import desired, queue


class Killed(BaseException):
    """The process dies: nothing in the gate may catch this."""


class FakeKueue:
    """One ClusterQueue on a fake API server. Kueue here observes every spec change at once,
    and evicts the reserving workloads `drain_reads` reads after a HoldAndDrain."""

    def __init__(self, live: dict[str, Any], reserving: int, drain_reads: int = 2) -> None:
        self.obj = copy.deepcopy(live)
        self.reserving = reserving
        self.drain_reads = drain_reads
        self.writes = 0
        self.kill_at: int | None = None
        self.conflicts = 0  # the next N writes fail as if Kueue wrote in between
        #: write number -> what someone else changes just before that write lands
        self.meddle: dict[int, Callable[[FakeKueue], None]] = {}
        self.events: list[str] = []
        self.admin_set: str | None = None  # the policy an administrator set, if one did
        self._observe()

    # -- the Queues interface used by the gate ---------------------------------------------

    def get(self, name: str) -> dict[str, Any] | None:
        if self.obj["spec"].get("stopPolicy") == HOLD_AND_DRAIN and self.reserving:
            self.drain_reads -= 1
            if self.drain_reads <= 0:
                self.reserving = 0
                self._observe()
        return copy.deepcopy(self.obj)

    def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        self._write(body["metadata"]["resourceVersion"])
        if self.reserving and _flavors(body) != _flavors(self.obj):
            dropped = set(_flavors(self.obj)) - set(_flavors(body))
            assert not dropped, f"switched away from {dropped} with reservations"
        self.obj["metadata"] = copy.deepcopy(body["metadata"])
        if body["spec"] != self.obj["spec"]:
            self.obj["metadata"]["generation"] += 1
        self.obj["spec"] = copy.deepcopy(body["spec"])
        self._bump()
        self._observe()
        return copy.deepcopy(self.obj)

    def set_condition(
        self,
        live: dict[str, Any],
        cond: Condition,
        now: datetime,
    ) -> dict[str, Any]:
        self._write(live["metadata"]["resourceVersion"])
        conds = [c for c in self.obj["status"]["conditions"] if c["type"] != "TopologyReady"]
        self.obj["status"]["conditions"] = [*conds, condition_body(self.obj, cond, now)]
        self._bump()
        return copy.deepcopy(self.obj)

    def event(self, live: dict[str, Any], reason: str, message: str, warning: bool, now: datetime) -> None:
        self.events.append(reason)

    # -- the fake server -------------------------------------------------------------------

    def _write(self, resource_version: str) -> None:
        self.writes += 1
        if self.kill_at is not None and self.writes >= self.kill_at:
            raise Killed
        if self.writes in self.meddle:
            self.meddle.pop(self.writes)(self)
        if self.conflicts:
            self.conflicts -= 1
            self._bump()
            raise Conflict("Kueue wrote the status")
        if resource_version != self.obj["metadata"]["resourceVersion"]:
            raise Conflict("stale resourceVersion")

    def _bump(self) -> None:
        meta = self.obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)

    def _observe(self) -> None:
        """Kueue's status: current generation, the reservation on the queue's last flavor."""
        status = self.obj.setdefault("status", {})
        mine = [c for c in status.get("conditions", []) if c["type"] == "TopologyReady"]
        status["conditions"] = [
            {"type": "Active", "status": "True", "observedGeneration": self.obj["metadata"]["generation"]},
            *mine,
        ]
        names = _flavors(self.obj)
        listing = [
            {
                "name": f,
                "resources": [
                    {
                        "name": "nvidia.com/gpu",
                        "borrowed": "0",
                        "total": str(self.reserving if f == names[-1] else 0),
                    }
                ],
            }
            for f in names
        ]
        status.update(
            reservingWorkloads=self.reserving, flavorsReservation=listing, flavorsUsage=copy.deepcopy(listing)
        )

    # -- what others do between the gate's read and its write ------------------------------

    def admit(self) -> None:
        """Kueue admits a workload on the queue's last flavor (only while it admits at all)."""
        if self.obj["spec"].get("stopPolicy", "None") == "None":
            self.reserving = 1
            self._observe()
            self._bump()

    def admin_policy(self, policy: str) -> None:
        """An administrator sets the stop policy (as the admission policy lets them: never
        during a drain of the gate's)."""
        if PREVIOUS_POLICY_ANNOTATION in (self.obj["metadata"].get("annotations") or {}):
            return
        self.admin_set = policy
        self.obj["spec"]["stopPolicy"] = policy
        self.obj["metadata"]["generation"] += 1
        self._observe()
        self._bump()


def _flavors(obj: dict[str, Any]) -> list[str]:
    return [f["name"] for g in obj["spec"].get("resourceGroups") or [] for f in g["flavors"]]


def _gate(fake: FakeKueue, want: dict[str, Any], timeout: float = 30.0) -> tuple[Gate, io.StringIO]:
    out = io.StringIO()
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    gate = Gate(
        fake,
        {"cq": want},
        Deadline(timeout, clock=lambda: clock[0]),  # type: ignore[arg-type]
        JsonLog(out),
        poll_seconds=1.0,
        sleep=sleep,
    )
    return gate, out


def _converged(fake: FakeKueue, want: dict[str, Any], policy: str) -> None:
    assert _flavors(fake.obj) == _flavors(want)
    assert fake.obj["spec"]["stopPolicy"] == policy
    assert PREVIOUS_POLICY_ANNOTATION not in (fake.obj["metadata"].get("annotations") or {})


@pytest.mark.parametrize("policy", ["None", "Hold"])
def test_busy_drop_runs_hold_switch_restore(policy: str) -> None:
    fake = FakeKueue(queue(["a", "b"], policy=policy), reserving=1)
    gate, out = _gate(fake, desired(["a"]))
    assert gate.run() == 0
    _converged(fake, desired(["a"]), policy)
    updates = [
        json.loads(ln)["action"] for ln in out.getvalue().splitlines() if json.loads(ln)["event"] == "updated"
    ]
    assert updates == ["Hold", "Switch", "Restore"]
    assert fake.events == ["Draining", "Switched", "StopPolicyRestored"]


@pytest.mark.parametrize("policy", ["None", "Hold"])
def test_killed_at_every_write_then_rerun_converges(policy: str) -> None:
    """Crash safety: kill the gate at its k-th write, for every k, then run it again."""
    clean = FakeKueue(queue(["a", "b"], policy=policy), reserving=1)
    assert _gate(clean, desired(["a"]))[0].run() == 0
    for k in range(1, clean.writes + 1):
        fake = FakeKueue(queue(["a", "b"], policy=policy), reserving=1)
        fake.kill_at = k
        with pytest.raises(Killed):
            _gate(fake, desired(["a"]))[0].run()
        fake.kill_at = None
        assert _gate(fake, desired(["a"]))[0].run() == 0, f"killed at write {k}"
        _converged(fake, desired(["a"]), policy)


def test_conflicts_are_retried_on_a_fresh_read() -> None:
    fake = FakeKueue(queue(["a", "b"]), reserving=1)
    fake.conflicts = 3
    assert _gate(fake, desired(["a"]))[0].run() == 0
    _converged(fake, desired(["a"]), "None")


def test_workload_admitted_on_an_idle_dropped_flavor_during_the_condition_write() -> None:
    """Issue 9, finding 1: the gate decided "b is idle, apply in place"; Kueue admits onto b
    while the gate writes its condition. The 409 must lead to a new decision (hold and
    drain), never to the old one written with the new resourceVersion."""
    fake = FakeKueue(queue(["a", "b"]), reserving=0)
    fake.meddle[1] = FakeKueue.admit  # write 1: the AppliedInPlace condition
    gate, out = _gate(fake, desired(["a"]))
    assert gate.run() == 0
    _converged(fake, desired(["a"]), "None")
    assert _updates(out) == ["Hold", "Switch", "Restore"]


def test_admin_hold_during_the_hold_decision_is_recorded() -> None:
    """Issue 9, finding 1: an administrator sets Hold while the gate writes the Draining
    condition of its decision to hold (recording None); the recorded policy must be Hold."""
    fake = FakeKueue(queue(["a", "b"]), reserving=1)
    fake.meddle[1] = lambda f: f.admin_policy("Hold")
    gate, out = _gate(fake, desired(["a"]))
    assert gate.run() == 0
    _converged(fake, desired(["a"]), "Hold")
    assert _updates(out) == ["Hold", "Switch", "Restore"]


@pytest.mark.parametrize("meddler", ["admit", "hold"])
@pytest.mark.parametrize("start", [0, 1])
def test_a_change_before_any_write_is_decided_again(meddler: str, start: int) -> None:
    """Someone else writes just before each of the gate's writes in turn (Kueue admitting on
    the flavor being dropped, an administrator's Hold): no write is based on the stale read,
    so reservations are never stranded (FakeKueue.replace asserts it) and the
    administrator's policy is the one in force at the end."""
    clean = FakeKueue(queue(["a", "b"]), reserving=start)
    assert _gate(clean, desired(["a"]))[0].run() == 0
    for k in range(1, clean.writes + 1):
        fake = FakeKueue(queue(["a", "b"]), reserving=start)
        fake.meddle[k] = FakeKueue.admit if meddler == "admit" else lambda f: f.admin_policy("Hold")
        assert _gate(fake, desired(["a"]))[0].run() == 0, f"meddled at write {k}"
        assert _flavors(fake.obj) == ["a"]
        assert not fake.meddle, f"write {k} never came"
        assert fake.obj["spec"]["stopPolicy"] == (fake.admin_set or "None"), k
        assert PREVIOUS_POLICY_ANNOTATION not in (fake.obj["metadata"].get("annotations") or {})


def _updates(out: io.StringIO) -> list[str]:
    lines = [json.loads(ln) for ln in out.getvalue().splitlines()]
    return [ln["action"] for ln in lines if ln["event"] == "updated"]


def test_timeout_leaves_the_old_plan_held() -> None:
    fake = FakeKueue(queue(["a", "b"]), reserving=1, drain_reads=10**9)
    gate, out = _gate(fake, desired(["a"]), timeout=5)
    assert gate.run() == 1
    assert _flavors(fake.obj) == ["a", "b"]
    assert fake.obj["spec"]["stopPolicy"] == HOLD_AND_DRAIN
    assert fake.obj["metadata"]["annotations"][PREVIOUS_POLICY_ANNOTATION] == "None"
    assert fake.events[-1] == "GateTimeout"
    assert '"event": "timeout"' in out.getvalue()


def test_settled_queue_is_not_written_again() -> None:
    fake = FakeKueue(queue(["a"]), reserving=0)
    assert _gate(fake, desired(["a"]))[0].run() == 0
    writes = fake.writes
    assert _gate(fake, desired(["a"]))[0].run() == 0
    assert fake.writes == writes


class TwoQueues:
    """Routes the gate's calls to one FakeKueue per queue name."""

    def __init__(self, **fakes: FakeKueue) -> None:
        self.fakes = fakes

    def get(self, name: str) -> dict[str, Any] | None:
        return self.fakes[name].get(name)

    def replace(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.fakes[body["metadata"]["name"]].replace(body)

    def set_condition(self, live: dict[str, Any], cond: Condition, now: datetime) -> dict[str, Any]:
        return self.fakes[live["metadata"]["name"]].set_condition(live, cond, now)

    def event(self, live: dict[str, Any], reason: str, message: str, warning: bool, now: datetime) -> None:
        self.fakes[live["metadata"]["name"]].event(live, reason, message, warning, now)


def test_a_stuck_drain_does_not_hold_up_other_queues() -> None:
    stuck = FakeKueue(queue(["a", "b"]), reserving=1, drain_reads=10**9)
    quota = FakeKueue(queue(["a"]), reserving=0)
    for name, fake in (("stuck", stuck), ("quota", quota)):
        fake.obj["metadata"]["name"] = name
    want = {"stuck": desired(["a"]), "quota": desired({"a": 16})}
    clock = [0.0]
    gate = Gate(
        TwoQueues(stuck=stuck, quota=quota),  # type: ignore[arg-type]
        want,
        Deadline(10, clock=lambda: clock[0]),
        JsonLog(io.StringIO()),
        sleep=lambda s: clock.__setitem__(0, clock[0] + s),
    )
    assert gate.run() == 1  # the stuck one timed out...
    assert quota.obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 16
    assert _flavors(stuck.obj) == ["a", "b"]  # ...and kept its old plan, held
    assert stuck.obj["spec"]["stopPolicy"] == HOLD_AND_DRAIN


def test_stopped_from_outside_reports_gate_timeout_itself() -> None:
    """Finding 6: whatever stops the pod before its own timeout (the Job's deadline, a deleted
    Job) sends SIGTERM; the gate reports GateTimeout on the waiting queue before it exits."""
    fake = FakeKueue(queue(["a", "b"]), reserving=1, drain_reads=10**9)
    gate, out = _gate(fake, desired(["a"]), timeout=600)
    slept = [0]

    def sleep(seconds: float) -> None:
        slept[0] += 1
        if slept[0] == 3:
            raise Terminated

    gate.sleep = sleep
    assert gate.run() == 1
    assert fake.events[-1] == "GateTimeout"
    lines = [json.loads(ln) for ln in out.getvalue().splitlines()]
    assert [ln["event"] for ln in lines][-2:] == ["terminated", "timeout"]
    assert lines[-1]["message"].startswith("the gate was stopped (Drain:")
    assert _flavors(fake.obj) == ["a", "b"]
