"""Queues: flavors added, removed and replaced, quota and limit deltas, and what the drain gate
will do with the new plan (its rules, docs/explanation/gate.md, for the worst case offline: a dropped
flavor may hold reservations; with --kubeconfig, generator/commands/plan/live.py asks the gate's own
decision against the live queue)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from .shape import (
    CREATED,
    DELETED,
    HELD,
    HELD_EMPTY,
    HOLD_AND_DRAIN,
    IN_PLACE,
    NONE,
    RETAIN,
    STOPPED,
    BeforeAfter,
    Drain,
    Flavor,
    FlavorChanged,
    Names,
    Queue,
    QuotaChange,
    QuotaField,
    Replaced,
)
from .side import FlavorFacts, QueueFacts, Side

Fields = dict[tuple[str, QuotaField], str]  # (resource, field) -> the quantity as written


def compare_queues(base: Side, head: Side, now: datetime | None = None) -> tuple[Queue, ...]:
    """``now``: the plan's time, which tells a retention that gate.retainFor ends."""
    names = sorted(base.queues.keys() | head.queues.keys())
    return tuple(_queue(name, base.queues.get(name), head.queues.get(name), now) for name in names)


def _queue(name: str, before: QueueFacts | None, after: QueueFacts | None, now: datetime | None) -> Queue:
    old = before.flavors if before else {}
    new = after.flavors if after else {}
    added = [new[f] for f in new if f not in old]
    removed = [old[f] for f in old if f not in new]
    replaced = _replaced(added, removed)
    quota = _quota(old, new)
    settings = _settings_changed(before, after)
    flavors_changed = _flavors_changed(old, new)
    locals_before = set(before.local_queues) if before else set()
    locals_after = set(after.local_queues) if after else set()
    # What is written decides: the rendered ClusterQueue's spec, and the ResourceFlavors it
    # names (a flavor's taints change what it admits though the queue's text stays the same).
    # A flavor that goes into retention keeps its quota offline: the spec may stay the same,
    # the queue changes all the same (it now retires the flavor).
    retained = (before.retained if before else ()) != (after.retained if after else ())
    changed = bool(
        before and after and (before.body["spec"] != after.body["spec"] or flavors_changed or retained)
    ) or bool(locals_before ^ locals_after)
    return Queue(
        name=name,
        change=_change(before, after, changed),
        stop_policy=BeforeAfter(
            before=before.stop_policy if before else None,
            after=after.stop_policy if after else None,
        ),
        drop_policy=after.drop_policy if after else None,
        flavors_added=tuple(_flavor(f) for f in added),
        flavors_removed=tuple(_flavor(f) for f in removed),
        flavors_replaced=replaced,
        flavors_retained=after.retained if after else (),
        quota=quota,
        flavor_order=_order(old, new),
        flavors_changed=flavors_changed,
        settings_changed=settings,
        local_queues_added=tuple(sorted(locals_after - locals_before)),
        local_queues_removed=tuple(sorted(locals_before - locals_after)),
        drain=_drain(name, before, after, removed, now),
    )


def _settings_changed(before: QueueFacts | None, after: QueueFacts | None) -> tuple[str, ...]:
    """The ClusterQueue spec fields, flavors and stop policy aside, that differ (cohort,
    namespaceSelector, preemption, queueing strategy..., and the covered resources' order):
    Kueue applies them in place."""
    if before is None or after is None:
        return ()
    old, new = before.settings, after.settings
    fields = [k for k in old.keys() | new.keys() if old.get(k) != new.get(k)]
    return tuple(sorted(fields + (["coveredResources"] if before.covered != after.covered else [])))


def _order(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> BeforeAfter[Names] | None:
    """The flavors both plans hold, when the new one lists them in another order: Kueue tries
    a queue's flavors in order, so this moves workloads to other hardware."""
    kept_before = tuple(f for f in old if f in new)
    kept_after = tuple(f for f in new if f in old)
    return None if kept_before == kept_after else BeforeAfter(before=kept_before, after=kept_after)


def _flavors_changed(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> tuple[FlavorChanged, ...]:
    """The flavors both plans hold whose ResourceFlavor changes (node taints, tolerations...):
    applied in place, and they change which workloads the flavor admits."""
    return tuple(
        FlavorChanged(
            name=name,
            fields=tuple(sorted(k for k in a.spec.keys() | b.spec.keys() if a.spec.get(k) != b.spec.get(k))),
        )
        for name, a in old.items()
        if name in new and (b := new[name]).spec != a.spec
    )


def _change(
    before: QueueFacts | None, after: QueueFacts | None, changed: bool
) -> Literal["added", "removed", "changed", "unchanged"]:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "changed" if changed else "unchanged"


def _flavor(f: FlavorFacts) -> Flavor:
    return Flavor(name=f.name, identity=dict(f.identity), profile=f.profile)


def _replaced(added: list[FlavorFacts], removed: list[FlavorFacts]) -> tuple[Replaced, ...]:
    """Same hardware identity, new profile: Kueue sees a new flavor, the fleet the same GPUs."""
    return tuple(
        Replaced(
            identity=dict(old.identity),
            from_=old.name,
            to=new.name,
            from_profile=old.profile,
            to_profile=new.profile,
        )
        for old in removed
        for new in added
        if new.identity == old.identity
    )


def _quota(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> tuple[QuotaChange, ...]:
    """Per flavor, resource and field (nominalQuota, borrowingLimit, lendingLimit) that the
    rendered queue writes otherwise: every flavor it changes, adds or drops, so the rows are
    exactly the difference of the two renders (quota that moves between flavors shows: a rack
    recorded moves a short profile's GPUs onto the full one; a renamed flavor's quota shows
    leaving the old name and arriving on the new one)."""
    identities = sorted({f.identity for f in (*old.values(), *new.values())})
    rows: list[QuotaChange] = []
    for identity in identities:
        before = {f.name: f for f in old.values() if f.identity == identity}
        after = {f.name: f for f in new.values() if f.identity == identity}
        for flavor in sorted(before.keys() | after.keys()):
            rows += _rows(identity, _fields(before, flavor), _fields(after, flavor), flavor)
    return tuple(rows)


def _rows(identity: Any, before: Fields, after: Fields, flavor: str) -> list[QuotaChange]:
    return [
        QuotaChange(
            identity=dict(identity),
            flavor=flavor,
            resource=key[0],
            field=key[1],
            before=before.get(key),
            after=after.get(key),
        )
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


def _fields(flavors: dict[str, FlavorFacts], name: str) -> Fields:
    """(resource, field) -> the quantity as the rendered queue writes it for flavor ``name``."""
    found = flavors.get(name)
    if found is None:
        return {}
    return {(r, f): value for r, fields in found.resources.items() for f, value in fields.items()}


def retention(retained: str) -> str:
    """What WaitForIdle does instead of a drain (``retained``: the flavors, as the format
    writes names)."""
    return f"no eviction; {retained} kept until idle at the quota its Workloads hold"


def eviction(queue: str, action: str) -> str | None:
    """What the change evicts from the queue, in the words every format uses (``queue`` written
    as the format writes a name); None when it evicts nothing. Kueue's HoldAndDrain, which the
    gate sets to drain a dropped flavor, evicts every workload the queue admitted, on every
    flavor."""
    if action == HOLD_AND_DRAIN:
        return f"every workload admitted to {queue} is evicted, not only those on the dropped flavors"
    if action in (HELD_EMPTY, STOPPED):
        return f"every workload admitted to {queue} is evicted"
    return None


def _drain(
    name: str,
    before: QueueFacts | None,
    after: QueueFacts | None,
    removed: list[FlavorFacts],
    now: datetime | None = None,
) -> Drain:
    """What the gate will do when this plan lands (without --kubeconfig: for the worst case,
    a dropped flavor that still holds reservations)."""
    if before is None:
        return Drain(action=CREATED, reason="a new ClusterQueue: applied by the GitOps engine")
    if after is None:
        return Drain(
            action=DELETED, reason="the ClusterQueuePlan is gone: the GitOps engine prunes the queue"
        )
    if after.stop_policy == "HoldAndDrain" and before.stop_policy != "HoldAndDrain":
        return Drain(
            action=STOPPED,
            reason="stopPolicy HoldAndDrain: Kueue evicts every workload the queue admitted "
            "and admits none until the policy changes",
        )
    if not after.flavors:
        if not before.flavors:
            return Drain(action=NONE, reason="no flavor before or after: the queue stays held")
        return Drain(
            action=HELD_EMPTY,
            reason="no flavor left: the gate holds the queue (HoldAndDrain), switches and leaves it held "
            f"until one returns: {eviction(name, HELD_EMPTY)}",
        )
    if after.stop_policy == "Hold" and before.stop_policy == "None" and not removed:
        return Drain(
            action=HELD, reason="stopPolicy Hold: Kueue admits no new workload; admitted ones keep running"
        )
    newly = [f for f in after.retained if before.flavors.get(f, after.flavors[f]).retiring_since is None]
    if newly:
        # WaitForIdle: the dropped flavors stay in the rendered queue, so none is removed.
        return Drain(
            action=RETAIN,
            reason=f"dropPolicy WaitForIdle: {retention(', '.join(after.retained))}; the gate "
            "drops each once no Workload holds it",
        )
    if not removed:
        return Drain(action=NONE, reason="no flavor dropped: applied in place")
    return _retention_ends(after, removed, now) or _dropped(name, after, removed, now)


def _dropped(name: str, after: QueueFacts, removed: list[FlavorFacts], now: datetime | None) -> Drain:
    """Flavors leave the queue: held and drained unless Kueue reports them idle (retained ones
    whose gate.retainFor has passed are named: the scheduled refresh drops them busy or not)."""
    names = ", ".join(f.name for f in removed)
    expired = [f for f in removed if _expired(f, after.retain_for, now)]
    why = ""
    if expired:
        when = ", ".join(f"{f.name} since {f.retiring_since}" for f in expired)
        why = f"gate.retainFor ({_duration(after.retain_for)}) has passed for the retained {when}; "
    return Drain(
        action=HOLD_AND_DRAIN,
        reason=f"{why}drops {names}: unless Kueue reports them idle, the gate holds the queue (HoldAndDrain) "
        f"before it switches: {eviction(name, HOLD_AND_DRAIN)}",
    )


def _expired(flavor: FlavorFacts, retain_for: timedelta | None, now: datetime | None) -> bool:
    """A retained flavor whose gate.retainFor has passed at ``now`` (the live render drops it
    whatever runs on it)."""
    if flavor.retiring_since is None or retain_for is None or now is None:
        return False
    try:
        since = datetime.fromisoformat(flavor.retiring_since.replace("Z", "+00:00"))
    except ValueError:
        return False
    return now >= since + retain_for


def _retention_ends(after: QueueFacts, removed: list[FlavorFacts], now: datetime | None) -> Drain | None:
    """Retained flavors (WaitForIdle) that leave while their retainFor has not passed: only a
    live render leaves one out then, once no unfinished Workload names it and the live queue
    gives it no quota, so the gate finds it idle and removes it in place. None when another
    flavor leaves, one's retainFor passed, or the queue no longer retains (HoldAndDrain)."""
    if after.drop_policy != "WaitForIdle":
        return None
    if any(f.retiring_since is None or _expired(f, after.retain_for, now) for f in removed):
        return None
    names = ", ".join(f.name for f in removed)
    return Drain(
        action=IN_PLACE,
        reason=f"the retention of {names} ends: the live render found no Workload holding them and "
        "no quota left on them, so the gate removes them in place (were one busy again, it would "
        "hold and drain the queue)",
    )


def _duration(value: timedelta | None) -> str:
    """A retainFor as Go writes whole hours and minutes (168h, 1h30m)."""
    if value is None:
        return "unset"
    seconds = int(value.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (
        (f"{hours}h" if hours else "")
        + (f"{minutes}m" if minutes else "")
        + (f"{seconds}s" if seconds else "")
    )
    return text or "0s"
