"""The gate's I/O loop: read, decide (generator.gate.decision), write one step, repeat.

Queues are stepped round-robin so that one queue waiting for its drain does not delay the
others. A queue is finished when its decision is terminal; the run ends when every queue is
finished (exit 0) or the deadline passes (exit 1: the waiting queues stay held, their plan is
not switched, and the next run resumes from what it reads).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from .admissions import held_resources
from .decision import (
    HOLD_AND_DRAIN,
    TERMINAL,
    WAITING,
    Action,
    Condition,
    Held,
    Kind,
    QueueStatus,
    decide,
    next_object,
    refused,
    stamped,
    trial_object,
)
from .kube import Conflict, Deadline, Queues, condition_is, utcnow, with_backoff

#: Writes one queue may make in a row before yielding to the others; a full transition needs
#: at most three (hold, switch, restore) plus conflicts.
MAX_STEPS = 8
#: Seconds to wait after a write of ours for Kueue to observe it before deciding again.
OBSERVE_GRACE = 5.0

#: Event reason and whether it is a warning, per action that changes something.
EVENTS: dict[Kind, tuple[str, bool]] = {
    Kind.APPLY: ("AppliedInPlace", False),
    Kind.HOLD: ("Draining", False),
    Kind.SWITCH: ("Switched", False),
    Kind.RESTORE: ("StopPolicyRestored", False),
    Kind.AWAIT_STATUS: ("AwaitingQueueStatus", False),
    Kind.HELD_EMPTY: ("HeldEmpty", True),
    Kind.REFUSED: ("PlanRefused", True),
}
#: API answers to a dry run that refuse the plan itself: invalid (CRD schema, CEL), refused by
#: an admission webhook (Kueue's answers 403) or policy, or malformed
REFUSALS = (400, 403, 422)


class Terminated(BaseException):
    """The pod is being stopped (SIGTERM: the Job's activeDeadlineSeconds, a deleted Job, a
    drained node). A BaseException, so that no handler of API errors swallows it."""


class JsonLog:
    """One JSON object per line: what the gate decided or changed, for log pipelines."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self._out = out

    def __call__(self, event: str, **fields: Any) -> None:
        line = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "event": event}
        line.update(fields)
        self._out.write(json.dumps(line, sort_keys=False, default=str) + "\n")
        self._out.flush()


@dataclass
class _QueueState:
    """What this run last reported for a queue, so that waiting is not logged every poll."""

    last: tuple[str, str] | None = None
    failed: bool = False


@dataclass
class Gate:
    queues: Queues
    desired: Mapping[str, Mapping[str, Any]]
    deadline: Deadline
    log: JsonLog
    poll_seconds: float = 2.0
    sleep: Callable[[float], None] = time.sleep
    #: the plan's hash, on every condition this run writes ("" writes none)
    plan: str = ""
    #: whether the cluster's plan (its ConfigMap) is still this run's; None: not checked
    current: Callable[[], bool] | None = None
    _state: dict[str, _QueueState] = field(default_factory=dict)

    def run(self) -> int:
        pending = sorted(self.desired)
        try:
            while True:
                pending = [name for name in pending if not self._step(name)]
                if not pending:
                    return 1 if any(s.failed for s in self._state.values()) else 0
                if self.deadline.passed:
                    return self._timed_out(pending)
                self.sleep(min(self.poll_seconds, max(self.deadline.left(), 0.0)))
        except Terminated:
            # Stopped from outside before our own timeout: say so on every waiting queue, as
            # a timeout does (the writes so far are safe, the next run resumes from them).
            self.log("terminated", queues=pending)
            return self._timed_out(pending, "the gate was stopped")

    def _step(self, name: str) -> bool:
        """Advance one queue as far as it goes without waiting; True when it is finished."""
        state = self._state.setdefault(name, _QueueState())
        try:
            for _ in range(MAX_STEPS):
                outcome = self._decide_and_act(name, state)
                if outcome is not None:
                    return outcome
            return False
        except ApiException as err:
            # Forbidden, invalid: retrying cannot help; the other queues go on.
            self.log("error", queue=name, status=err.status, reason=err.reason, message=_api_message(err))
        except (HTTPError, OSError) as err:
            # The API server stayed unreachable until the deadline.
            self.log("error", queue=name, message=str(err)[:500])
        state.failed = True
        return True

    def _decide_and_act(self, name: str, state: _QueueState) -> bool | None:
        """One read, one decision, its writes: True finished, False waiting, None to read
        again (after a spec write, or a conflict). A conflict means someone else changed the
        queue after our read, so the decision is void: the caller reads again and decides
        again, never writes the old decision with the new resourceVersion."""
        live = self._get(name)
        action = self._decide(name, live)
        if live is not None and action.kind is Kind.HOLD:
            try:
                action = self._trial(live, action)
            except Conflict:
                self.log("conflict", queue=name, resourceVersion=live["metadata"]["resourceVersion"])
                return None
        state.failed |= action.kind is Kind.REFUSED
        cond = None if action.condition is None else stamped(action.condition, self.plan)
        writes = (live is not None and cond is not None and not condition_is(live, cond)) or (
            live is not None and action.kind not in TERMINAL | WAITING
        )
        if writes and not self._still_current(name, live):
            state.failed = True
            return True
        self._report(name, live, action, state)
        if live is not None and cond is not None:
            # Continue with the object the condition write returned, which differs from the
            # one decided on only by our own condition, so the spec write does not conflict
            # with it.
            live = self._set_condition(name, live, cond)
            if live is None:
                return None
        if action.kind in TERMINAL:
            return True
        if action.kind in WAITING or live is None:
            return False
        self._write(name, live, action)
        return None

    def _still_current(self, name: str, live: Mapping[str, Any] | None) -> bool:
        """Before the writes of a decision (after the read they were decided on): is the
        cluster's plan still this run's? A newer run of another plan stamps each queue with
        its plan before it finishes with it, so once it has, this run's writes conflict or
        come after its own read of the ConfigMap, and it writes nothing more
        (docs/explanation/gate.md, "Two runs at once")."""
        if self.current is None or self._call(self.current):
            return True
        message = (
            "the plan ConfigMap no longer holds this run's plan"
            f" (plan {self.plan}): a newer gate run owns the queue; this run writes nothing more"
        )
        self.log("superseded", queue=name, message=message)
        if live is not None:
            self._try(
                lambda: self.queues.event(live, "GateSuperseded", message, True, utcnow()), name, "event"
            )
        return False

    def _decide(self, name: str, live: dict[str, Any] | None) -> Action:
        """The decision on the queue as read and on the Workloads read after it. A decision
        that waits on Kueue's status alone waits whatever the Workloads hold (decide), so they
        are listed only when the gate would act or finish, not at every poll of a drain."""
        action = decide(live, self.desired[name], frozenset())
        if action.kind in WAITING or action.kind is Kind.ABSENT:
            return action
        return decide(live, self.desired[name], self._held(name))

    def _trial(self, live: dict[str, Any], hold: Action) -> Action:
        """A server-side dry run of the switch that would follow this hold: the hold when the
        API server would take it, else the refusal (a refused switch would leave the queue held
        for good). A Conflict means the queue changed: decide again."""
        body = trial_object(live, self.desired[live["metadata"]["name"]], hold)
        try:
            self._call(lambda: self.queues.trial(body))
        except ApiException as err:
            if err.status not in REFUSALS:
                raise
            message = _api_message(err)
            self.log("refused", queue=body["metadata"]["name"], status=err.status, message=message[:1000])
            return refused(int(err.status), message[:2000])
        return hold

    def _held(self, name: str) -> Held:
        found: Held = self._call(lambda: held_resources(self.queues.workloads(), name))
        return found

    def _write(self, name: str, live: Mapping[str, Any], action: Action) -> None:
        """Write the action's spec change, then give Kueue a moment to observe it. On a
        conflict (usually Kueue's status) the caller decides again on a fresh read."""
        body = next_object(live, self.desired[name], action)
        try:
            new = self._call(lambda: self.queues.replace(body))
        except Conflict:
            self.log("conflict", queue=name, resourceVersion=live["metadata"]["resourceVersion"])
            return
        meta = new["metadata"]
        self.log(
            "updated",
            queue=name,
            action=action.kind.value,
            stopPolicy=new["spec"].get("stopPolicy"),
            generation=meta.get("generation"),
            resourceVersion=meta.get("resourceVersion"),
        )
        self._await_observed(name, meta.get("generation"))

    def _await_observed(self, name: str, generation: Any) -> None:
        """Poll briefly until Kueue's Active condition observes our write, so that the normal
        catch-up after each of our own writes is not reported as AwaitingQueueStatus."""
        until = min(OBSERVE_GRACE, max(self.deadline.left(), 0.0))
        waited = 0.0
        while waited < until:
            live = self._get(name)
            if live is None or QueueStatus(live).observed == generation:
                return
            self.sleep(0.2)
            waited += 0.2

    def _report(self, name: str, live: dict[str, Any] | None, action: Action, state: _QueueState) -> None:
        """Log the decision and emit an Event, each only when it changed."""
        cond = action.condition
        key = (action.kind.value, cond.message if cond else "")
        if key == state.last:
            return
        state.last = key
        self.log(
            "decision",
            queue=name,
            action=action.kind.value,
            reason=cond.reason if cond else None,
            message=cond.message if cond else "no live queue: nothing to gate",
            dropped=list(action.dropped),
            droppedResources=[list(p) for p in action.dropped_resources],
            generation=(live or {}).get("metadata", {}).get("generation"),
        )
        if live is not None and cond is not None and action.kind in EVENTS:
            reason, warning = EVENTS[action.kind]
            if action.kind is Kind.HOLD and action.stop_policy != HOLD_AND_DRAIN:
                reason = "Held"  # a plain hold of an empty queue: nothing drains
            self._try(lambda: self.queues.event(live, reason, cond.message, warning, utcnow()), name, "event")

    def _set_condition(self, name: str, live: dict[str, Any], cond: Condition) -> dict[str, Any] | None:
        """The condition of the decision, written on the object it was decided on: the queue
        as it is afterwards, or None when the write met a conflict."""
        if condition_is(live, cond):
            return live
        try:
            new = self._apply_condition(live, cond)
        except Conflict:
            self.log("conflict", queue=name, resourceVersion=live["metadata"]["resourceVersion"])
            return None
        self.log("condition", queue=name, status=cond.status, reason=cond.reason)
        return new

    def _apply_condition(self, live: Mapping[str, Any], cond: Condition) -> dict[str, Any]:
        new: dict[str, Any] = self._call(lambda: self.queues.set_condition(live, cond, utcnow()))
        return new

    def _timed_out(self, pending: list[str], why: str = "gate timed out") -> int:
        for name in pending:
            try:
                self._report_timeout(name, why)
            except (ApiException, Conflict, HTTPError, OSError) as err:
                self.log("timeout", queue=name, message=f"and reading it failed: {err}"[:500])
        return 1

    def _report_timeout(self, name: str, why: str) -> None:
        live = self.queues.get(name)  # once, without backoff: the time is up
        action = decide(live, self.desired[name], frozenset())  # what it waits for
        what = action.condition.message if action.condition else ""
        message = (
            f"{why} ({action.kind.value}: {what}); the plan was not switched"
            " and the next run resumes from here"
        )
        self.log("timeout", queue=name, action=action.kind.value, message=message)
        if live is not None:
            try:
                self.queues.event(live, "GateTimeout", message, True, utcnow())
            except ApiException as err:
                self.log("report_failed", queue=name, what="event", error=str(err)[:300])

    def _get(self, name: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self._call(lambda: self.queues.get(name))
        return result

    def _call(self, fn: Callable[[], Any]) -> Any:
        return with_backoff(fn, self.deadline, lambda err: self.log("retry", error=str(err)[:300]))

    def _try(self, fn: Callable[[], Any], name: str, what: str) -> None:
        """Best-effort reporting: a lost Event must not stop a drain."""
        try:
            self._call(fn)
        except (ApiException, Conflict) as err:
            self.log("report_failed", queue=name, what=what, error=str(err)[:300])


def _api_message(err: ApiException) -> str:
    try:
        return str(json.loads(err.body or "{}").get("message", err.body))
    except ValueError:
        return str(err.body)[:500]
