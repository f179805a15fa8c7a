"""Queues: flavors added, removed and replaced, quota and limit deltas, and what the drain gate
will do with the new plan (its rules, contract section 6, for the worst case offline: a dropped
flavor may hold reservations; with --kubeconfig, generator/diff/live.py asks the gate's own
decision against the live queue)."""

from __future__ import annotations

from typing import Any

from generator.diff.side import FlavorFacts, QueueFacts, Side
from generator.validate.quantities import format_units, parse, scale_for, to_units

#: drain values of the report (the JSON Schema lists them too)
CREATED, DELETED, NONE, IN_PLACE, HOLD_AND_DRAIN, HELD_EMPTY = (
    "created",
    "deleted",
    "none",
    "in-place",
    "hold-and-drain",
    "held-empty",
)


def compare_queues(base: Side, head: Side) -> list[dict[str, Any]]:
    names = sorted(base.queues.keys() | head.queues.keys())
    return [_queue(name, base.queues.get(name), head.queues.get(name)) for name in names]


def _queue(name: str, before: QueueFacts | None, after: QueueFacts | None) -> dict[str, Any]:
    old = before.flavors if before else {}
    new = after.flavors if after else {}
    added = [new[f] for f in new if f not in old]
    removed = [old[f] for f in old if f not in new]
    replaced = _replaced(added, removed)
    quota = _quota(old, new)
    settings = _settings_changed(before, after)
    locals_before = set(before.local_queues) if before else set()
    locals_after = set(after.local_queues) if after else set()
    changed = bool(added or removed or quota or settings or locals_before ^ locals_after)
    entry = {
        "name": name,
        "change": _change(before, after, changed or _policy_changed(before, after)),
        "stopPolicy": {
            "before": before.stop_policy if before else None,
            "after": after.stop_policy if after else None,
        },
        "flavorsAdded": [_flavor(f) for f in added],
        "flavorsRemoved": [_flavor(f) for f in removed],
        "flavorsReplaced": replaced,
        "quota": quota,
        "settingsChanged": settings,
        "localQueuesAdded": sorted(locals_after - locals_before),
        "localQueuesRemoved": sorted(locals_before - locals_after),
        "drain": _drain(before, after, removed),
    }
    return entry


def _settings_changed(before: QueueFacts | None, after: QueueFacts | None) -> list[str]:
    """The ClusterQueue spec fields, flavors and stop policy aside, that differ (cohort,
    namespaceSelector, preemption, queueing strategy...): Kueue applies them in place."""
    if before is None or after is None:
        return []
    old, new = before.settings, after.settings
    return sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))


def _change(before: QueueFacts | None, after: QueueFacts | None, changed: bool) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "changed" if changed else "unchanged"


def _policy_changed(before: QueueFacts | None, after: QueueFacts | None) -> bool:
    return before is not None and after is not None and before.stop_policy != after.stop_policy


def _flavor(f: FlavorFacts) -> dict[str, Any]:
    return {"name": f.name, "identity": dict(f.identity), "profile": f.profile}


def _replaced(added: list[FlavorFacts], removed: list[FlavorFacts]) -> list[dict[str, Any]]:
    """Same hardware identity, new profile: Kueue sees a new flavor, the fleet the same GPUs."""
    result = []
    for old in removed:
        for new in (f for f in added if f.identity == old.identity):
            result.append(
                {
                    "identity": dict(old.identity),
                    "from": old.name,
                    "to": new.name,
                    "fromProfile": old.profile,
                    "toProfile": new.profile,
                }
            )
    return result


def _quota(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> list[dict[str, Any]]:
    """Per identity, resource and field (nominalQuota, borrowingLimit, lendingLimit): the total
    over its flavors before and after, when they differ. Totals, because a profile change
    renames flavors but moves no quota."""
    before, after = _totals(old.values()), _totals(new.values())
    rows = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            identity, resource, field = key
            rows.append(
                {
                    "identity": dict(identity),
                    "resource": resource,
                    "field": field,
                    "before": before.get(key),
                    "after": after.get(key),
                }
            )
    return rows


def _totals(flavors: Any) -> dict[tuple[Any, str, str], str]:
    sums: dict[tuple[Any, str, str], list[str]] = {}
    for f in flavors:
        for resource, fields in f.resources.items():
            for field, value in fields.items():
                sums.setdefault((f.identity, resource, field), []).append(value)
    result = {}
    for key, values in sums.items():
        numbers = [parse(v) for v in values]
        scale = scale_for(key[1], numbers)
        result[key] = format_units(sum(to_units(n, scale) for n in numbers), scale, key[1])
    return result


def _drain(before: QueueFacts | None, after: QueueFacts | None, removed: list[FlavorFacts]) -> dict[str, Any]:
    """What the gate will do when this plan lands (without --kubeconfig: for the worst case,
    a dropped flavor that still holds reservations)."""
    if before is None:
        return {"action": CREATED, "reason": "a new ClusterQueue: applied by the GitOps engine"}
    if after is None:
        return {
            "action": DELETED,
            "reason": "the ClusterQueuePlan is gone: the GitOps engine prunes the queue",
        }
    if not after.flavors:
        return {"action": HELD_EMPTY, "reason": "no flavor left: switched and held until one returns"}
    if not removed:
        return {"action": NONE, "reason": "no flavor dropped: applied in place"}
    names = ", ".join(f.name for f in removed)
    return {
        "action": HOLD_AND_DRAIN,
        "reason": f"drops {names}: the gate holds the queue (HoldAndDrain) and evicts what they "
        "reserve before switching, unless Kueue reports them idle",
    }
