"""The drain gate's decision as a table: live spec and status x desired plan -> action.

The decision is a pure function, so every row builds plain dicts; the end-to-end behaviour on
a real API server and Kueue is in tests/e2e/test_gate_*.py.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from tasgen.gate.decision import (
    HOLD_AND_DRAIN,
    PREVIOUS_POLICY_ANNOTATION,
    TERMINAL,
    WAITING,
    Held,
    Kind,
    QueueStatus,
    decide,
    next_object,
    plan_matches,
    refused,
    stamped,
    trial_object,
    unstamped,
)

Usage = dict[str, str]  # flavor -> total gpus


def queue(
    flavors: list[str] | dict[str, int],
    *,
    policy: str | None = None,
    record: str | None = None,
    generation: int = 3,
    observed: int | None = 3,
    reserving: int = 0,
    reservation: Usage | None = None,
    usage: Usage | None = None,
    ready: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """A ClusterQueue as read (live) or as rendered (desired: leave the status arguments)."""
    quotas = flavors if isinstance(flavors, dict) else dict.fromkeys(flavors, 8)
    spec: dict[str, Any] = {"namespaceSelector": {}}
    if quotas:
        spec["resourceGroups"] = [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": q}]}
                    for f, q in quotas.items()
                ],
            }
        ]
    if policy is not None:
        spec["stopPolicy"] = policy
    meta: dict[str, Any] = {"name": "cq", "generation": generation, "resourceVersion": "7"}
    if record is not None:
        meta["annotations"] = {PREVIOUS_POLICY_ANNOTATION: record}
    conditions: list[dict[str, Any]] = []
    if observed is not None:
        conditions.append({"type": "Active", "status": "True", "observedGeneration": observed})
    if ready is not None:
        conditions.append({"type": "TopologyReady", "status": ready[0], "reason": ready[1]})
    listed = reservation if reservation is not None else dict.fromkeys(quotas, "0")
    used = usage if usage is not None else listed
    status = {
        "conditions": conditions,
        "reservingWorkloads": reserving,
        "flavorsReservation": _listing(listed),
        "flavorsUsage": _listing(used),
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }


def _listing(totals: Usage) -> list[dict[str, Any]]:
    return [
        {"name": f, "resources": [{"name": "nvidia.com/gpu", "total": t, "borrowed": "0"}]}
        for f, t in totals.items()
    ]


def desired(flavors: list[str] | dict[str, int], policy: str = "None") -> dict[str, Any]:
    body = queue(flavors, policy=policy)
    del body["status"]
    return body


def _cohort(body: dict[str, Any]) -> dict[str, Any]:
    body["spec"]["cohortName"] = "new"
    return body


def _unlist_cpu(live: dict[str, Any]) -> dict[str, Any]:
    """Kueue's status lists flavor a's gpu only: its cpu is unknown, never idle."""
    for key in ("flavorsReservation", "flavorsUsage"):
        for entry in live["status"][key]:
            entry["resources"] = [r for r in entry["resources"] if r["name"] != "cpu"]
    return live


def _deleting(live: dict[str, Any]) -> dict[str, Any]:
    live["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:00Z"
    return live


def _unlisted(live: dict[str, Any], what: str) -> dict[str, Any]:
    """Flavor b's reservation listed without its resources, or without their totals (the CRD
    allows both): unknown, never idle."""
    entry = next(e for e in live["status"]["flavorsReservation"] if e["name"] == "b")
    if what == "resources":
        entry["resources"] = []
    else:
        for resource in entry["resources"]:
            del resource["total"]
    return live


def covering(body: dict[str, Any], *resources: str, busy: dict[str, str] | None = None) -> dict[str, Any]:
    """The queue with its one group covering these resources (each flavor's quota 8), and, if
    it has a status, each listed per resource: 0, or the totals of busy (resource -> total)."""
    group = body["spec"]["resourceGroups"][0]
    group["coveredResources"] = list(resources)
    for flavor in group["flavors"]:
        flavor["resources"] = [{"name": r, "nominalQuota": 8} for r in resources]
    if "status" in body:
        for key in ("flavorsReservation", "flavorsUsage"):
            body["status"][key] = [
                {
                    "name": flavor["name"],
                    "resources": [
                        {
                            "name": r,
                            "total": (busy or {}).get(r, "0") if flavor["name"] == "a" else "0",
                            "borrowed": "0",
                        }
                        for r in resources
                    ],
                }
                for flavor in group["flavors"]
            ]
    return body


AB, A, B, C = ["a", "b"], ["a"], ["b"], ["c"]
BUSY_B = {"a": "0", "b": "4"}
GPU = "nvidia.com/gpu"
ON_A, ON_B = frozenset({("a", GPU)}), frozenset({("b", GPU)})


class Row(NamedTuple):
    id: str
    live: dict[str, Any] | None
    desired: dict[str, Any]
    kind: Kind
    stop_policy: str | None  # written
    record: str | None  # previous-policy annotation written ("" removes it)
    write_plan: bool
    reason: str | None  # of the TopologyReady condition
    held: Held = frozenset()  # (flavor, resource) that Workloads admitted to the queue hold


# The table reads best one row per case, aligned: keep the formatter out of it.
# fmt: off
CASES = [Row(*row) for row in [
    ("no live queue: GitOps creates it", None, desired(AB),
     Kind.ABSENT, None, None, False, None),
    ("queue being deleted: nothing to switch", _deleting(queue(AB, reserving=1,
                                                              reservation=BUSY_B)), desired(A),
     Kind.ABSENT, None, None, False, None),
    ("same plan", queue(AB), desired(AB),
     Kind.DONE, None, None, False, "PlanCurrent"),
    ("same plan keeps a True reason", queue(AB, ready=("True", "Switched")), desired(AB),
     Kind.DONE, None, None, False, "Switched"),
    ("quota-only change: in place", queue(AB), desired({"a": 8, "b": 16}),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("flavor added: in place even with stale status", queue(A, observed=2), desired(AB),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("quantity 8 and '8' are the same", queue({"a": "8"}), desired({"a": 8}),
     Kind.DONE, None, None, False, "PlanCurrent"),
    ("idle flavor dropped: in place", queue(AB), desired(A),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("idle with zero in other units", queue(AB, reservation={"a": "1", "b": "0m"},
                                            usage={"a": "1", "b": "0Gi"}), desired(A),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("dropped flavor reserved: hold", queue(AB, reserving=1, reservation=BUSY_B), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("dropped flavor used only: hold", queue(AB, usage=BUSY_B), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("dropped flavor not listed: hold", queue(AB, reservation={"a": "0"}), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("dropped flavor listed without resources: hold", _unlisted(queue(AB), "resources"), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("dropped flavor's total missing: hold", _unlisted(queue(AB), "total"), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("dropped, stale status: await", queue(AB, observed=2), desired(A),
     Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("dropped, no Active condition: await", queue(AB, observed=None), desired(A),
     Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("admin Hold is recorded", queue(AB, policy="Hold", reservation=BUSY_B), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "Hold", False, "Draining"),
    ("held, draining", queue(AB, policy=HOLD_AND_DRAIN, record="None", reserving=2,
                             reservation=BUSY_B), desired(A),
     Kind.DRAIN, None, None, False, "Draining"),
    ("held, reserving on a kept flavor only: still draining",
     queue(AB, policy=HOLD_AND_DRAIN, record="None", reserving=1,
           reservation={"a": "2", "b": "0"}), desired(A),
     Kind.DRAIN, None, None, False, "Draining"),
    ("held, stale status: await", queue(AB, policy=HOLD_AND_DRAIN, record="None", observed=2),
     desired(A), Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("held and drained: switch", queue(AB, policy=HOLD_AND_DRAIN, record="None"), desired(A),
     Kind.SWITCH, None, None, True, "Switched"),
    ("switched: restore None", queue(A, policy=HOLD_AND_DRAIN, record="None"), desired(A),
     Kind.RESTORE, "None", "", False, "Switched"),
    ("switched: restore Hold", queue(A, policy=HOLD_AND_DRAIN, record="Hold"), desired(A),
     Kind.RESTORE, "Hold", "", False, "Switched"),
    ("switched, Kueue has not observed the switch: await before restoring",
     queue(A, policy=HOLD_AND_DRAIN, record="None", generation=4, observed=3), desired(A),
     Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("switched, no Active condition yet: await before restoring",
     queue(A, policy=HOLD_AND_DRAIN, record="Hold", observed=None), desired(A),
     Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("reverted during a drain, status stale: await before restoring",
     queue(AB, policy=HOLD_AND_DRAIN, record="None", observed=2, reserving=1,
           reservation=BUSY_B), desired(AB),
     Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("unknown record restores Hold", queue(A, policy=HOLD_AND_DRAIN, record="Stop"),
     desired(A), Kind.RESTORE, "Hold", "", False, "Switched"),
    ("hold undone mid-drain: hold again, keep the record",
     queue(AB, policy="None", record="Hold", reservation=BUSY_B), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, None, False, "Draining"),
    ("admin HoldAndDrain is never recorded; switch when drained",
     queue(AB, policy=HOLD_AND_DRAIN), desired(A),
     Kind.SWITCH, None, None, True, "Switched"),
    ("admin HoldAndDrain kept after the switch", queue(A, policy=HOLD_AND_DRAIN), desired(A),
     Kind.DONE, None, None, False, "PlanCurrent"),
    ("emptied plan: hold first, even if idle", queue(AB), desired([]),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("emptied plan, Hold recorded", queue(AB, policy="Hold", observed=1), desired([]),
     Kind.HOLD, HOLD_AND_DRAIN, "Hold", False, "Draining"),
    ("emptied plan, held and drained: switch", queue(AB, policy=HOLD_AND_DRAIN, record="None"),
     desired([]), Kind.SWITCH, None, None, True, "Switched"),
    ("emptied plan switched: stays held", queue([], policy=HOLD_AND_DRAIN, record="None"),
     desired([]), Kind.HELD_EMPTY, None, None, False, "HeldEmpty"),
    ("emptied plan rendered with Hold: switched to Hold",
     queue(AB, policy=HOLD_AND_DRAIN, record="None"), desired([], policy="Hold"),
     Kind.SWITCH, "Hold", None, True, "Switched"),
    ("emptied queue under Hold stays held", queue([], policy="Hold", record="None"),
     desired([], policy="Hold"), Kind.HELD_EMPTY, None, None, False, "HeldEmpty"),
    ("empty queue not held: straight to its rendered Hold, no record (nothing to drain)",
     queue([], policy="None"), desired([], policy="Hold"),
     Kind.HOLD, "Hold", None, False, "HeldEmpty"),
    ("empty queue not held, rendered None: Hold", queue([], policy="None"), desired([]),
     Kind.HOLD, "Hold", None, False, "HeldEmpty"),
    ("empty queue under Hold, other settings change: in place, no eviction",
     queue([], policy="Hold", reserving=2), _cohort(desired([], policy="Hold")),
     Kind.APPLY, None, None, True, "HeldEmpty"),
    ("switched, rendered HoldAndDrain: restored to it, not to the recorded None",
     queue(A, policy=HOLD_AND_DRAIN, record="None"), desired(A, policy=HOLD_AND_DRAIN),
     Kind.RESTORE, HOLD_AND_DRAIN, "", False, "Switched"),
    ("switched, rendered Hold: restored to Hold", queue(A, policy=HOLD_AND_DRAIN, record="None"),
     desired(A, policy="Hold"), Kind.RESTORE, "Hold", "", False, "Switched"),
    ("a HoldAndDrain record (never the gate's) restores Hold",
     queue(A, policy=HOLD_AND_DRAIN, record=HOLD_AND_DRAIN), desired(A),
     Kind.RESTORE, "Hold", "", False, "Switched"),
    ("flavor returns to a queue emptied under Hold: switch, then restore",
     queue([], policy="Hold", record="None"), desired(A),
     Kind.SWITCH, None, None, True, "Switched"),
    ("... and restore the recorded policy", queue(A, policy="Hold", record="None"), desired(A),
     Kind.RESTORE, "None", "", False, "Switched"),
    ("flavor returns to an emptied queue: switch under the hold",
     queue([], policy=HOLD_AND_DRAIN, record="Hold"), desired(C),
     Kind.SWITCH, None, None, True, "Switched"),
    ("replace every flavor, idle: in place", queue(AB), desired(C),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("replace every flavor, busy: hold", queue(AB, reserving=1, reservation={"a": "1", "b": "0"}),
     desired(C), Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    # --- Workloads' admissions: the authority Kueue's status lags behind
    ("idle-looking flavor a Workload holds (status not yet written): hold", queue(AB), desired(A),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining", ON_B),
    ("a Workload on a kept flavor only: dropped idle flavor in place", queue(AB), desired(A),
     Kind.APPLY, None, None, True, "AppliedInPlace", ON_A),
    ("held, drained by the status, yet a Workload holds the dropped flavor: drain",
     queue(AB, policy=HOLD_AND_DRAIN, record="None"), desired(A),
     Kind.DRAIN, None, None, False, "Draining", ON_B),
    ("a Workload holds a flavor the queue no longer names: hold to free it",
     queue(A), desired(A), Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining", ON_B),
    ("... held: drain until Kueue evicts it", queue(A, policy=HOLD_AND_DRAIN, record="None"),
     desired(A), Kind.DRAIN, None, None, False, "Draining", ON_B),
    ("switched, a Workload still holds the dropped flavor: drain, no restore",
     queue(A, policy=HOLD_AND_DRAIN, record="Hold"), desired(A),
     Kind.DRAIN, None, None, False, "Draining", ON_B),
    ("stranded under an administrator's Hold: recorded, then HoldAndDrain",
     queue(A, policy="Hold"), desired(A), Kind.HOLD, HOLD_AND_DRAIN, "Hold", False, "Draining", ON_B),
    ("a Workload on the plan's own flavor: settled", queue(A), desired(A),
     Kind.DONE, None, None, False, "PlanCurrent", ON_A),
    # --- a resource dropped from coveredResources: judged as a dropped flavor
    ("resource dropped, idle: in place", covering(queue(A), GPU, "cpu"), covering(desired(A), GPU),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
    ("resource dropped, reserved by the status: hold",
     covering(queue(A, reserving=1), GPU, "cpu", busy={"cpu": "2"}), covering(desired(A), GPU),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("resource dropped, status idle but a Workload holds it: hold",
     covering(queue(A), GPU, "cpu"), covering(desired(A), GPU),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining", frozenset({("a", "cpu")})),
    ("resource dropped, a Workload holds only a kept one: in place",
     covering(queue(A), GPU, "cpu"), covering(desired(A), GPU),
     Kind.APPLY, None, None, True, "AppliedInPlace", ON_A),
    ("resource dropped, not listed by the status: hold",
     _unlist_cpu(covering(queue(A), GPU, "cpu")), covering(desired(A), GPU),
     Kind.HOLD, HOLD_AND_DRAIN, "None", False, "Draining"),
    ("resource dropped, stale status: await", covering(queue(A, observed=2), GPU, "cpu"),
     covering(desired(A), GPU), Kind.AWAIT_STATUS, None, None, False, "AwaitingQueueStatus"),
    ("resource dropped, held, still reserved: drain",
     covering(queue(A, policy=HOLD_AND_DRAIN, record="None", reserving=1), GPU, "cpu",
              busy={"cpu": "2"}), covering(desired(A), GPU),
     Kind.DRAIN, None, None, False, "Draining"),
    ("resource dropped, held and drained: switch",
     covering(queue(A, policy=HOLD_AND_DRAIN, record="None"), GPU, "cpu"), covering(desired(A), GPU),
     Kind.SWITCH, None, None, True, "Switched"),
    ("resource switched away, a Workload still holds it: drain, no restore",
     covering(queue(A, policy=HOLD_AND_DRAIN, record="None"), GPU), covering(desired(A), GPU),
     Kind.DRAIN, None, None, False, "Draining", frozenset({("a", "cpu")})),
    ("a resource added: in place", covering(queue(A), GPU), covering(desired(A), GPU, "cpu"),
     Kind.APPLY, None, None, True, "AppliedInPlace"),
]]
# fmt: on


@pytest.mark.parametrize("row", CASES, ids=[c.id for c in CASES])
def test_decision_table(row: Row) -> None:
    action = decide(row.live, row.desired, row.held)
    assert action.kind is row.kind
    assert (action.stop_policy, action.record, action.write_plan) == (
        row.stop_policy,
        row.record,
        row.write_plan,
    )
    assert (action.condition.reason if action.condition else None) == row.reason


def test_restore_only_on_the_status_of_the_current_generation() -> None:
    """No row restores a stop policy (readmits) before Kueue's status describes the queue's
    current generation, the one the switch wrote."""
    for row in CASES:
        action = decide(row.live, row.desired, row.held)
        if action.kind is Kind.RESTORE:
            assert row.live is not None and QueueStatus(row.live).current, row.id


def test_decision_never_records_hold_and_drain() -> None:
    for row in CASES:
        record = decide(row.live, row.desired, row.held).record
        assert record != HOLD_AND_DRAIN


def test_switch_requires_current_status_and_no_reservation() -> None:
    """The safety property: no row switches a plan while a dropped flavor is busy or unknown,
    by Kueue's status or by a Workload's admission."""
    for row in CASES:
        live, action = row.live, decide(row.live, row.desired, row.held)
        if live is None or not (action.write_plan and (action.dropped or action.dropped_resources)):
            continue
        status = live["status"]
        active = status["conditions"][0]
        assert active["observedGeneration"] == live["metadata"]["generation"]
        assert not {f for f, _ in row.held} & set(action.dropped), row.id
        assert not row.held & set(action.dropped_resources), row.id
        if action.kind is Kind.APPLY:  # in place: only what Kueue reports idle is dropped
            assert all(QueueStatus(live).idle(f) for f in action.dropped), row.id
            assert all(QueueStatus(live).idle_resource(*p) for p in action.dropped_resources), row.id
        else:  # switched under the hold: once nothing reserves
            assert status["reservingWorkloads"] == 0, row.id


HELD_SETS = [frozenset(), ON_A, ON_B, ON_A | ON_B, frozenset({("c", GPU)}), frozenset({("b", "cpu")})]


@pytest.mark.parametrize(
    "held", HELD_SETS, ids=lambda h: ",".join(sorted(f"{f}/{r}" for f, r in h)) or "none"
)
def test_what_workloads_hold_only_makes_a_decision_more_cautious(held: Held) -> None:
    """The runner lists the Workloads only when the decision on the status alone would act:
    a decision that waits with nothing held must wait, the same way, with anything held; and
    nothing held never turns a hold or a drain into a write of the plan."""
    for row in CASES:
        alone, informed = decide(row.live, row.desired, frozenset()), decide(row.live, row.desired, held)
        if alone.kind in WAITING or alone.kind is Kind.ABSENT:
            assert informed == alone, row.id
        if alone.kind in (Kind.HOLD, Kind.DRAIN):
            assert not informed.write_plan, row.id


def test_next_object_hold_records_policy_and_keeps_resource_version() -> None:
    live = queue(AB, policy="Hold", reservation=BUSY_B)
    body = next_object(live, desired(A), decide(live, desired(A), frozenset()))
    assert body["spec"]["stopPolicy"] == HOLD_AND_DRAIN
    assert body["metadata"]["annotations"] == {PREVIOUS_POLICY_ANNOTATION: "Hold"}
    assert body["metadata"]["resourceVersion"] == "7"
    assert "status" not in body
    assert [f["name"] for f in body["spec"]["resourceGroups"][0]["flavors"]] == AB


def test_next_object_switch_writes_complete_plan_and_keeps_hold() -> None:
    live = queue(AB, policy=HOLD_AND_DRAIN, record="None")
    want = desired({"c": 4})
    want["spec"]["cohortName"] = "team"
    body = next_object(live, want, decide(live, want, frozenset()))
    assert body["spec"]["stopPolicy"] == HOLD_AND_DRAIN
    assert body["spec"]["cohortName"] == "team"
    assert body["spec"]["resourceGroups"] == want["spec"]["resourceGroups"]
    assert body["metadata"]["annotations"] == {PREVIOUS_POLICY_ANNOTATION: "None"}


def test_trial_object_is_the_switch_that_would_follow_the_hold() -> None:
    """What the gate dry-runs before holding: the complete plan, held, with the hold's record,
    on the resourceVersion the hold was decided on."""
    live = queue(AB, policy="Hold", reservation=BUSY_B)
    want = _cohort(desired({"c": 4}))
    hold = decide(live, want, frozenset())
    assert hold.kind is Kind.HOLD
    body = trial_object(live, want, hold)
    assert body["spec"]["resourceGroups"] == want["spec"]["resourceGroups"]
    assert body["spec"]["cohortName"] == "new"
    assert body["spec"]["stopPolicy"] == HOLD_AND_DRAIN
    assert body["metadata"]["annotations"] == {PREVIOUS_POLICY_ANNOTATION: "Hold"}
    assert body["metadata"]["resourceVersion"] == "7" and "status" not in body
    # an interrupted hold keeps its record: the trial keeps it too
    again = queue(AB, policy="None", record="Hold", reservation=BUSY_B)
    assert trial_object(again, want, decide(again, want, frozenset()))["metadata"]["annotations"] == {
        PREVIOUS_POLICY_ANNOTATION: "Hold"
    }


def test_a_refused_plan_is_reported_and_never_writes() -> None:
    action = refused(403, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value")
    assert action.kind is Kind.REFUSED and action.kind in TERMINAL
    assert (action.stop_policy, action.record, action.write_plan) == (None, None, False)
    assert action.condition is not None
    assert (action.condition.status, action.condition.reason) == ("False", "PlanRefused")
    assert "403" in action.condition.message and "nominalQuota" in action.condition.message


def test_next_object_restore_removes_record() -> None:
    live = queue(A, policy=HOLD_AND_DRAIN, record="Hold")
    body = next_object(live, desired(A), decide(live, desired(A), frozenset()))
    assert body["spec"]["stopPolicy"] == "Hold"
    assert PREVIOUS_POLICY_ANNOTATION not in body["metadata"]["annotations"]


def test_next_object_emptied_plan_drops_resource_groups() -> None:
    live = queue(AB, policy=HOLD_AND_DRAIN, record="None")
    body = next_object(live, desired([]), decide(live, desired([]), frozenset()))
    assert "resourceGroups" not in body["spec"]
    assert body["spec"]["stopPolicy"] == HOLD_AND_DRAIN


@pytest.mark.parametrize(
    ("live", "want", "same"),
    [
        ({"resourceGroups": [], "queueingStrategy": "BestEffortFIFO"}, {}, True),
        ({"resourceGroups": [{"flavors": [{"name": "a"}]}]}, {}, False),
        ({"cohortName": "x", "stopPolicy": "Hold"}, {"cohortName": "x", "stopPolicy": "None"}, True),
        ({"cohortName": "x"}, {"cohortName": "y"}, False),
        (
            {"preemption": {"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}},
            {"preemption": {"withinClusterQueue": "Never"}},
            True,
        ),
        ({"admissionChecks": ["a", "b"]}, {"admissionChecks": ["a"]}, False),
    ],
)
def test_plan_matches_is_a_subset_test_ignoring_stop_policy(
    live: dict[str, Any], want: dict[str, Any], same: bool
) -> None:
    assert plan_matches(live, want) is same


def test_a_condition_names_the_plan_of_the_run_that_wrote_it() -> None:
    """Runs of different plans write different conditions (so a newer run always writes each
    queue once, which voids an older run's later writes); a run of the same plan finds its
    own condition and writes nothing."""
    cond = decide(queue(AB), desired({"a": 8, "b": 16}), frozenset()).condition
    assert cond is not None
    mine, theirs = stamped(cond, "0123456789abcdef"), stamped(cond, "fedcba9876543210")
    assert mine.message.endswith(" (plan 0123456789abcdef)") and mine != theirs
    assert stamped(mine, "fedcba9876543210") == theirs  # one stamp, never two
    assert unstamped(mine.message) == cond.message
    assert stamped(cond, "") == cond
    # A settled queue keeps its True condition's reason and text, stamped anew by the runner.
    live = queue(AB, ready=("True", "Switched"))
    live["status"]["conditions"][1]["message"] = mine.message
    kept = decide(live, desired(AB), frozenset()).condition
    assert kept is not None and kept.reason == "Switched" and kept.message == cond.message
