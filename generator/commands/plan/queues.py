"""Queues: flavors added, removed and replaced, quota and limit deltas, and what the drain gate
will do with the new plan (its rules, docs/explanation/gate.md, for the worst case offline: a dropped
flavor may hold reservations; with --kubeconfig, generator/commands/plan/live.py asks the gate's own
decision against the live queue)."""

from __future__ import annotations

from typing import Any

from generator.commands.plan.side import FlavorFacts, QueueFacts, Side
from generator.validate.quantities import format_units, parse, scale_for, to_units

#: drain values of the report (the JSON Schema lists them too)
CREATED, DELETED, NONE, IN_PLACE, HOLD_AND_DRAIN, HELD_EMPTY, STOPPED, HELD = (
    "created",
    "deleted",
    "none",
    "in-place",
    "hold-and-drain",
    "held-empty",
    "stopped",
    "held",
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
    flavors_changed = _flavors_changed(old, new)
    locals_before = set(before.local_queues) if before else set()
    locals_after = set(after.local_queues) if after else set()
    # What is written decides: the rendered ClusterQueue's spec, and the ResourceFlavors it
    # names (a flavor's taints change what it admits though the queue's text stays the same).
    changed = bool(
        before and after and (before.body["spec"] != after.body["spec"] or flavors_changed)
    ) or bool(locals_before ^ locals_after)
    entry = {
        "name": name,
        "change": _change(before, after, changed),
        "stopPolicy": {
            "before": before.stop_policy if before else None,
            "after": after.stop_policy if after else None,
        },
        "flavorsAdded": [_flavor(f) for f in added],
        "flavorsRemoved": [_flavor(f) for f in removed],
        "flavorsReplaced": replaced,
        "quota": quota,
        "flavorOrder": _order(old, new),
        "flavorsChanged": flavors_changed,
        "settingsChanged": settings,
        "localQueuesAdded": sorted(locals_after - locals_before),
        "localQueuesRemoved": sorted(locals_before - locals_after),
        "drain": _drain(before, after, removed),
    }
    return entry


def _settings_changed(before: QueueFacts | None, after: QueueFacts | None) -> list[str]:
    """The ClusterQueue spec fields, flavors and stop policy aside, that differ (cohort,
    namespaceSelector, preemption, queueing strategy..., and the covered resources' order):
    Kueue applies them in place."""
    if before is None or after is None:
        return []
    old, new = before.settings, after.settings
    fields = [k for k in old.keys() | new.keys() if old.get(k) != new.get(k)]
    return sorted(fields + (["coveredResources"] if before.covered != after.covered else []))


def _order(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> dict[str, list[str]] | None:
    """The flavors both plans hold, when the new one lists them in another order: Kueue tries
    a queue's flavors in order, so this moves workloads to other hardware."""
    kept_before = [f for f in old if f in new]
    kept_after = [f for f in new if f in old]
    return None if kept_before == kept_after else {"before": kept_before, "after": kept_after}


def _flavors_changed(old: dict[str, FlavorFacts], new: dict[str, FlavorFacts]) -> list[dict[str, Any]]:
    """The flavors both plans hold whose ResourceFlavor changes (node taints, tolerations...):
    applied in place, and they change which workloads the flavor admits."""
    return [
        {
            "name": name,
            "fields": sorted(k for k in a.spec.keys() | b.spec.keys() if a.spec.get(k) != b.spec.get(k)),
        }
        for name, a in old.items()
        if name in new and (b := new[name]).spec != a.spec
    ]


def _change(before: QueueFacts | None, after: QueueFacts | None, changed: bool) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    return "changed" if changed else "unchanged"


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
    """Per resource and field (nominalQuota, borrowingLimit, lendingLimit) that differs: per
    flavor where an identity keeps its flavors (quota that moves between them shows), else
    the identity's total over its flavors (a profile change renames flavors but moves no
    quota)."""
    identities = sorted({f.identity for f in (*old.values(), *new.values())})
    rows = []
    for identity in identities:
        before = [f for f in old.values() if f.identity == identity]
        after = [f for f in new.values() if f.identity == identity]
        if sorted(f.name for f in before) == sorted(f.name for f in after):
            for flavor in sorted(f.name for f in before):
                rows += _rows(identity, _totals([old[flavor]]), _totals([new[flavor]]), flavor)
        else:
            rows += _rows(identity, _totals(before), _totals(after))
    return rows


def _rows(
    identity: Any, before: dict[Any, str], after: dict[Any, str], flavor: str | None = None
) -> list[dict[str, Any]]:
    rows = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            _, resource, field = key
            row = {"identity": dict(identity), "resource": resource, "field": field}
            row |= {"flavor": flavor} if flavor is not None else {}
            rows.append(row | {"before": before.get(key), "after": after.get(key)})
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
    if after.stop_policy == "HoldAndDrain" and before.stop_policy != "HoldAndDrain":
        return {
            "action": STOPPED,
            "reason": "stopPolicy HoldAndDrain: Kueue evicts every workload the queue admitted "
            "and admits none until the policy changes",
        }
    if not after.flavors:
        if not before.flavors:
            return {"action": NONE, "reason": "no flavor before or after: the queue stays held"}
        return {"action": HELD_EMPTY, "reason": "no flavor left: switched and held until one returns"}
    if after.stop_policy == "Hold" and before.stop_policy == "None" and not removed:
        return {
            "action": HELD,
            "reason": "stopPolicy Hold: Kueue admits no new workload; admitted ones keep running",
        }
    if not removed:
        return {"action": NONE, "reason": "no flavor dropped: applied in place"}
    names = ", ".join(f.name for f in removed)
    return {
        "action": HOLD_AND_DRAIN,
        "reason": f"drops {names}: the gate holds the queue (HoldAndDrain) and evicts what they "
        "reserve before switching, unless Kueue reports them idle",
    }
