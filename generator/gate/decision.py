"""The drain gate's decision: a pure function of the live ClusterQueue and the desired one.

Every step is decided from what is on the API server alone (spec, status and one annotation,
and the flavors that Workloads admitted to the queue hold, from their status.admission), never
from what an earlier run remembers, so a run killed between any two writes resumes where it
stopped. The states and the action that leaves each: docs/explanation/design.md; what the
gate does per queue: docs/explanation/gate.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..kube.quantities import is_zero

PREVIOUS_POLICY_ANNOTATION = "topology.gpustack.ai/previous-stop-policy"
HOLD_AND_DRAIN = "HoldAndDrain"
CONDITION_TYPE = "TopologyReady"

Obj = Mapping[str, Any]
#: (flavor, resource) pairs that Workloads admitted to the queue hold (generator.gate.admissions)
Held = frozenset[tuple[str, str]]


class Kind(StrEnum):
    """What the gate does next for one queue."""

    ABSENT = "Absent"  # no live queue (or one being deleted): nothing to switch
    DONE = "Done"  # live plan is the desired one and no policy is left to restore
    HELD_EMPTY = "HeldEmpty"  # desired plan has no flavor: switched and left held
    APPLY = "Apply"  # write the plan in place, no hold needed
    AWAIT_STATUS = "AwaitStatus"  # Kueue's status is not for the current generation
    HOLD = "Hold"  # record the stop policy and set HoldAndDrain
    DRAIN = "Drain"  # held; Kueue still reports reserving workloads
    SWITCH = "Switch"  # held and drained: write the complete plan
    RESTORE = "Restore"  # new plan in place: put the recorded stop policy back
    REFUSED = "Refused"  # the API server refuses the plan (a dry run of the switch): no hold


#: Kinds after which the queue needs nothing more from this run.
TERMINAL = frozenset({Kind.ABSENT, Kind.DONE, Kind.HELD_EMPTY, Kind.REFUSED})
#: Kinds that wait for Kueue instead of writing the spec.
WAITING = frozenset({Kind.AWAIT_STATUS, Kind.DRAIN})


@dataclass(frozen=True)
class Condition:
    """The TopologyReady condition the gate reports for a decision."""

    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str


@dataclass(frozen=True)
class Action:
    kind: Kind
    condition: Condition | None
    #: spec.stopPolicy to write (None: leave it as it is)
    stop_policy: str | None = None
    #: the previous-policy annotation to write; "" removes it, None leaves it
    record: str | None = None
    #: write the desired plan (every spec field but stopPolicy)
    write_plan: bool = False
    #: flavors the plan drops, for the log
    dropped: tuple[str, ...] = ()
    #: (flavor, resource) the plan drops from a flavor it keeps (coveredResources), for the log
    dropped_resources: tuple[tuple[str, str], ...] = ()


def decide(live: Obj | None, desired: Obj, held: Held) -> Action:
    """The next step for one queue: live is the object as read (None when absent), held what
    the Workloads admitted to it hold, read after it.

    A dropped flavor is idle only when Kueue's status says so and no Workload's admission
    names it: Kueue writes the queue's status some time after it admits, and once a flavor has
    left the spec its status never reports the flavor again. More held can only make a
    decision more cautious, never less: a decision that waits with nothing held waits with
    anything held (the gate reads the Workloads only when it would act).
    """
    if live is None or (live.get("metadata") or {}).get("deletionTimestamp"):
        # A queue being deleted only waits for Kueue's finalizer: there is no plan to switch.
        return Action(Kind.ABSENT, None)
    view = _View(live, desired, held)
    if view.same_plan:
        return _settled(view)
    if not view.dropped and not view.dropped_resources and view.desired_flavors:
        return _grow(view)
    if not view.dropped and not flavor_names(live) and view.policy != "None":
        # An empty queue, already held, whose other settings change: no flavor, so nothing
        # reserved to drain; a hold to HoldAndDrain would evict what it admitted.
        return Action(
            Kind.APPLY,
            Condition(
                "False", "HeldEmpty", f"the plan has no flavor; applied in place, still held ({view.policy})"
            ),
            write_plan=True,
        )
    return _shrink(view)


@dataclass(frozen=True)
class _View:
    """The facts the decision reads from the live and the desired queue."""

    live: Obj
    desired: Obj
    admitted: Held  # what Workloads admitted to the queue hold

    @property
    def policy(self) -> str:
        return str(_spec(self.live).get("stopPolicy") or "None")

    @property
    def recorded(self) -> str | None:
        annotations = (self.live.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(PREVIOUS_POLICY_ANNOTATION)
        return None if value is None else str(value)

    @property
    def desired_flavors(self) -> list[str]:
        return flavor_names(self.desired)

    @property
    def dropped(self) -> tuple[str, ...]:
        keep = set(self.desired_flavors)
        return tuple(f for f in flavor_names(self.live) if f not in keep)

    @property
    def dropped_resources(self) -> tuple[tuple[str, str], ...]:
        """(flavor, resource) of a kept flavor that the plan no longer covers: Kueue forgets
        their usage as it forgets a dropped flavor's, so they are judged alike."""
        kept, keep = set(self.desired_flavors), set(resource_pairs(self.desired))
        return tuple(p for p in resource_pairs(self.live) if p[0] in kept and p not in keep)

    @property
    def held_flavors(self) -> frozenset[str]:
        return frozenset(flavor for flavor, _ in self.admitted)

    @property
    def stranded(self) -> tuple[tuple[str, str], ...]:
        """(flavor, resource) that admitted Workloads hold but the live queue no longer covers:
        their reservation is stranded (Kueue no longer counts it, nor reports it)."""
        named = set(resource_pairs(self.live))
        return tuple(sorted(p for p in self.admitted if p not in named))

    def busy(self, status: QueueStatus) -> list[str]:
        """The dropped flavors that Kueue does not report idle or that a Workload holds."""
        return [f for f in self.dropped if not status.idle(f) or f in self.held_flavors]

    def busy_resources(self, status: QueueStatus) -> list[tuple[str, str]]:
        """The dropped resources that Kueue does not report idle or that a Workload holds."""
        return [p for p in self.dropped_resources if not status.idle_resource(*p) or p in self.admitted]

    @property
    def same_plan(self) -> bool:
        return plan_matches(_spec(self.live), _spec(self.desired))

    @property
    def rendered_policy(self) -> str:
        return str(_spec(self.desired).get("stopPolicy") or "None")

    @property
    def held(self) -> bool:
        return self.policy == HOLD_AND_DRAIN

    def restore_to(self) -> str:
        # An annotation someone edited to an unknown value restores Hold: it admits nothing
        # new and evicts nothing, the safe middle until an administrator looks.
        # HoldAndDrain included: the gate never records it, so someone else wrote it.
        value = self.recorded or "None"
        return value if value in ("None", "Hold") else "Hold"


def _settled(v: _View) -> Action:
    """The live plan is the desired one: finish the hold/restore bookkeeping."""
    status = QueueStatus(v.live)
    if v.recorded is not None and v.desired_flavors and not status.current:
        # Readmit only once Kueue has taken the switched plan (its status of this
        # generation): until then it may still be working from the old one.
        return _awaiting(status)
    if v.stranded:
        # A flavor (or a resource of one) left the queue while a Workload held it (admitted in
        # the instant before a drop in place, or dropped by someone else): only a drain frees
        # that reservation.
        flavors = tuple(sorted({f for f, _ in v.stranded}))
        why = f"Workloads admitted to the queue hold {_pairs(v.stranded)}, which it no longer covers"
        if v.held:
            return _draining(f"{why}; waiting for Kueue to evict them", flavors)
        return _hold(v, why, flavors)
    if not v.desired_flavors:
        # Hold or HoldAndDrain both keep an emptied queue from admitting anything (the
        # renderer writes Hold for it); only None must not stay.
        if v.policy == "None":
            # Neither plan has a flavor: nothing is reserved to drain, so the queue goes
            # straight to the policy it is rendered with (Hold) and no record is kept, which
            # would refuse the engine's apply of that same policy.
            held = v.rendered_policy if v.rendered_policy != "None" else "Hold"
            return Action(
                Kind.HOLD,
                Condition("False", "HeldEmpty", f"the plan has no flavor; holding the queue ({held})"),
                stop_policy=held,
            )
        return Action(
            Kind.HELD_EMPTY,
            Condition(
                "False",
                "HeldEmpty",
                f"the plan has no flavor; the queue stays held ({v.policy}) until one returns",
            ),
        )
    if v.recorded is not None:
        # The engine applies the rendered stopPolicy after the gate: when it holds, go there
        # at once, not through the recorded None (which would readmit what was just evicted).
        policy = v.rendered_policy if v.rendered_policy != "None" else v.restore_to()
        return Action(
            Kind.RESTORE,
            Condition("True", "Switched", f"plan switched; stop policy {policy} restored"),
            stop_policy=policy,
            record="",
        )
    return Action(Kind.DONE, _kept_ready(v.live))


def _kept_ready(live: Obj) -> Condition:
    """A settled queue keeps a True condition's reason (say, Switched) as the last transition
    it describes; anything else becomes PlanCurrent."""
    for cond in (live.get("status") or {}).get("conditions") or []:
        if cond.get("type") == CONDITION_TYPE and cond.get("status") == "True":
            return Condition("True", str(cond.get("reason")), unstamped(str(cond.get("message", ""))))
    return Condition("True", "PlanCurrent", "the queue runs the desired plan")


def _grow(v: _View) -> Action:
    """Flavors added or quotas changed, nothing dropped: no reservation can be stranded."""
    if v.recorded is not None:
        # A hold of ours is in progress (e.g. a flavor returns to an emptied queue): switch
        # under the hold; Restore follows.
        return Action(Kind.SWITCH, _switched(), write_plan=True)
    return Action(
        Kind.APPLY,
        Condition("True", "AppliedInPlace", "no flavor dropped; plan applied in place"),
        write_plan=True,
    )


def _shrink(v: _View) -> Action:
    """A flavor is dropped (or none is left): hold and drain unless every dropped one is idle."""
    status = QueueStatus(v.live)
    if v.held:
        return _drain_or_switch(v, status)
    if v.recorded is not None or not v.desired_flavors:
        # Our hold was undone mid-way, or the queue must be held for good: hold (again).
        return _hold(v, "holding the queue before switching its plan")
    if not status.current:
        return _awaiting(status)
    busy, busy_resources = v.busy(status), v.busy_resources(status)
    if not busy and not busy_resources:
        return Action(
            Kind.APPLY,
            Condition(
                "True",
                "AppliedInPlace",
                f"{_dropping(v.dropped, v.dropped_resources)} idle; plan applied in place",
            ),
            write_plan=True,
            dropped=v.dropped,
            dropped_resources=v.dropped_resources,
        )
    return _hold(v, f"{_dropping(busy, busy_resources)} hold reservations or are not reported")


def _drain_or_switch(v: _View, status: QueueStatus) -> Action:
    if not status.current:
        return _awaiting(status)
    if status.reserving > 0 or v.busy(status) or v.busy_resources(status):
        resources = f"; dropped {_pairs(v.dropped_resources)}" if v.dropped_resources else ""
        return _draining(
            f"waiting for Kueue to evict {status.reserving} reserving workloads"
            f" (dropped flavors: {', '.join(v.dropped) or 'none'}{resources})",
            v.dropped,
        )
    # An emptied plan is switched straight to the policy it is rendered with when that one
    # holds too (drained, Hold is as safe), so that the GitOps apply after the gate is a no-op.
    rendered = str(_spec(v.desired).get("stopPolicy") or "None")
    policy = rendered if not v.desired_flavors and rendered != "None" else None
    return Action(
        Kind.SWITCH,
        _switched(),
        stop_policy=policy,
        write_plan=True,
        dropped=v.dropped,
        dropped_resources=v.dropped_resources,
    )


def _hold(v: _View, why: str, dropped: tuple[str, ...] | None = None) -> Action:
    # Never record HoldAndDrain as "previous": _hold is only reached when the queue is not
    # held, and an existing record (from an interrupted run) is kept, not overwritten.
    record = None if v.recorded is not None else v.policy
    return Action(
        Kind.HOLD,
        Condition("Unknown", "Draining", f"{why}; set HoldAndDrain"),
        stop_policy=HOLD_AND_DRAIN,
        record=record,
        dropped=v.dropped if dropped is None else dropped,
        dropped_resources=v.dropped_resources,
    )


def _draining(message: str, dropped: tuple[str, ...]) -> Action:
    return Action(Kind.DRAIN, Condition("Unknown", "Draining", message), dropped=dropped)


def _pairs(pairs: Sequence[tuple[str, str]]) -> str:
    """'nvidia.com/gpu of flavor a, memory of flavor b'"""
    return ", ".join(f"{resource} of flavor {flavor}" for flavor, resource in pairs)


def _dropping(flavors: Sequence[str], resources: Sequence[tuple[str, str]]) -> str:
    """What a plan drops, for a condition: 'dropped flavors a, b are', 'dropped resources
    memory of flavor c are', or both joined by 'and'."""
    parts = [f"flavors {', '.join(flavors)}"] if flavors else []
    parts += [f"resources {_pairs(resources)}"] if resources else []
    return f"dropped {' and '.join(parts)} are"


#: the end of a condition message that names the plan of the gate run that wrote it
_STAMP = re.compile(r" \(plan [0-9a-f]{1,64}\)\Z")


def stamped(cond: Condition, plan: str) -> Condition:
    """The condition as a gate run of this plan (its hash) writes it: a run of another plan
    writes it again, which is what makes an older run's later writes conflict
    (docs/explanation/gate.md, "Two runs at once")."""
    return Condition(cond.status, cond.reason, f"{unstamped(cond.message)} (plan {plan})") if plan else cond


def unstamped(message: str) -> str:
    return _STAMP.sub("", message)


def _awaiting(status: QueueStatus) -> Action:
    return Action(
        Kind.AWAIT_STATUS,
        Condition(
            "Unknown",
            "AwaitingQueueStatus",
            f"Kueue has not written the queue status for generation {status.generation}"
            f" (Active condition observed {status.observed})",
        ),
    )


def _switched() -> Condition:
    return Condition("Unknown", "Switched", "plan switched while held; restoring the stop policy")


# --- reading objects ------------------------------------------------------------------


class QueueStatus:
    """Kueue's view of the queue, and whether it describes the current generation."""

    def __init__(self, live: Obj) -> None:
        status = live.get("status") or {}
        self.generation = (live.get("metadata") or {}).get("generation")
        active = _condition(status, "Active")
        self.observed = None if active is None else active.get("observedGeneration")
        self.current = self.observed is not None and self.observed == self.generation
        self.reserving = int(status.get("reservingWorkloads") or 0)
        self._reservation = _by_flavor(status.get("flavorsReservation"))
        self._usage = _by_flavor(status.get("flavorsUsage"))
        self._reservation_of = _by_resource(status.get("flavorsReservation"))
        self._usage_of = _by_resource(status.get("flavorsUsage"))

    def idle(self, flavor: str) -> bool:
        """Listed in both reservation and usage, every total zero; unlisted means unknown."""
        lists = (self._reservation, self._usage)
        return all(flavor in m and all(is_zero(q) for q in m[flavor]) for m in lists)

    def idle_resource(self, flavor: str, resource: str) -> bool:
        """That resource of the flavor listed in both reservation and usage at zero."""
        lists = (self._reservation_of, self._usage_of)
        key = (flavor, resource)
        return all(key in m and all(is_zero(q) for q in m[key]) for m in lists)

    def flavors(self) -> set[str]:
        """Every flavor Kueue lists a reservation or usage figure for."""
        return set(self._reservation) | set(self._usage)

    def busy(self, flavor: str) -> bool:
        """Kueue lists a reservation or usage above zero on it (a flavor the spec no longer
        names can still carry one: Kueue strands it when the flavor leaves resourceGroups)."""
        lists = (self._reservation, self._usage)
        return any(not is_zero(q) for m in lists for q in m.get(flavor, []))


def _condition(status: Obj, kind: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


#: what a flavor's figure reads as when Kueue lists none: not zero, so neither idle nor
#: switched away from (the CRD makes a total optional; Kueue v0.17 always writes it)
_UNKNOWN = "unknown"


def _by_flavor(entries: Any) -> dict[str, list[Any]]:
    """flavor name -> every total and borrowed quantity Kueue lists for it; a flavor listed
    without resources, or a resource without its total, is unknown."""
    out: dict[str, list[Any]] = {}
    for entry in entries or []:
        quantities = out.setdefault(str(entry.get("name")), [])
        resources = entry.get("resources") or []
        quantities += [] if resources else [_UNKNOWN]
        for res in resources:
            quantities += [res.get("total", _UNKNOWN), res.get("borrowed", 0)]
    return out


def _by_resource(entries: Any) -> dict[tuple[str, str], list[Any]]:
    """(flavor, resource) -> its total and borrowed quantities as Kueue lists them."""
    out: dict[tuple[str, str], list[Any]] = {}
    for entry in entries or []:
        for res in entry.get("resources") or []:
            key = (str(entry.get("name")), str(res.get("name")))
            out.setdefault(key, []).extend([res.get("total", _UNKNOWN), res.get("borrowed", 0)])
    return out


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def flavor_names(queue: Obj) -> list[str]:
    """The flavors of a ClusterQueue's resource groups, in order."""
    return [
        str(f.get("name"))
        for group in _spec(queue).get("resourceGroups") or []
        for f in group.get("flavors") or []
    ]


def resource_pairs(queue: Obj) -> list[tuple[str, str]]:
    """(flavor, resource) for every resource each flavor of the queue's groups has quota of."""
    return [
        (str(f.get("name")), str(r.get("name")))
        for group in _spec(queue).get("resourceGroups") or []
        for f in group.get("flavors") or []
        for r in f.get("resources") or []
    ]


def plan_matches(live_spec: Obj, desired_spec: Obj) -> bool:
    """Every field of the desired plan (all of spec but stopPolicy) is what the live spec has.

    A subset test, because the API server fills defaults into the live object; fields the
    desired spec leaves out are the GitOps engine's to prune when it applies the queue.
    """
    keys = set(desired_spec) - {"stopPolicy"}
    if "resourceGroups" not in desired_spec and live_spec.get("resourceGroups"):
        return False  # an emptied plan: the live groups must go
    return all(_matches(live_spec.get(k), desired_spec[k]) for k in keys)


def _matches(live: Any, want: Any) -> bool:
    if isinstance(want, Mapping):
        return isinstance(live, Mapping) and all(_matches(live.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(live, list)
            and len(live) == len(want)
            and all(_matches(a, b) for a, b in zip(live, want, strict=True))
        )
    if isinstance(want, bool) or want is None:
        return bool(live == want)
    # Quantities are int-or-string: 8 and "8" are the same request.
    return live is not None and str(live) == str(want)


def trial_object(live: Obj, desired: Obj, hold: Action) -> dict[str, Any]:
    """What the switch after this hold would write (the plan, held, the hold's record), for a
    server-side dry run before the hold: a plan the API server or Kueue's webhook refuses
    would otherwise leave the queue held for good."""
    switch = Action(Kind.SWITCH, None, stop_policy=hold.stop_policy, record=hold.record, write_plan=True)
    return next_object(live, desired, switch)


def refused(status: int, message: str) -> Action:
    """The dry run of the switch was refused: report it, do not hold."""
    return Action(
        Kind.REFUSED,
        Condition(
            "False",
            "PlanRefused",
            f"the API server refuses this plan for the queue ({status}: {message}); the queue is"
            " not held and keeps its plan: fix the ClusterQueuePlan and sync again",
        ),
    )


def next_object(live: Obj, desired: Obj, action: Action) -> dict[str, Any]:
    """The object to PUT for a writing action: live (with its resourceVersion, so a change in
    between fails with a conflict instead of being overwritten) with the action applied."""
    body = {k: _copy(v) for k, v in live.items() if k != "status"}
    spec: dict[str, Any] = body.setdefault("spec", {})
    policy = action.stop_policy or spec.get("stopPolicy") or "None"
    if action.write_plan:
        spec = {k: _copy(v) for k, v in _spec(desired).items() if k != "stopPolicy"}
        body["spec"] = spec
    spec["stopPolicy"] = policy
    meta: dict[str, Any] = body.setdefault("metadata", {})
    annotations: dict[str, Any] = dict(meta.get("annotations") or {})
    if action.record == "":
        annotations.pop(PREVIOUS_POLICY_ANNOTATION, None)
    elif action.record is not None:
        annotations[PREVIOUS_POLICY_ANNOTATION] = action.record
    meta["annotations"] = annotations
    return body


def _copy(value: Any) -> Any:
    """A deep copy of plain JSON-like data (the API objects the gate handles)."""
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
