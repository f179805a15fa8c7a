"""Rules on the tolerations and nodeTaints of hardware entries (written on their flavors)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ...kube.taints import BLOCKING, tolerates
from ...model import Hardware, Node, QueuePlan, Taint, Where
from ...rules import Hit, Rule
from ...rules.semantic import FLAVOR_SETTINGS_CONFLICT, PLAN_TOLERATIONS, TAINT_UNTOLERATED
from ..labels import label_key_error, label_value_error
from .base import Check, Context

#: taints the node lifecycle sets and lifts by itself (cordon, not-ready, pressure): a state
#: of the moment, not a property of the hardware that a flavor should tolerate
TRANSIENT_PREFIX = "node.kubernetes.io/"


def _entries(ctx: Context) -> Iterator[tuple[QueuePlan, int, Hardware, dict[str, Any]]]:
    """Every hardware entry with its text as written (tolerations in their written order)."""
    for name in sorted(ctx.inventory.plans):
        plan = ctx.inventory.plans[name]
        for i, hw in enumerate(plan.hardware):
            yield plan, i, hw, plan.spec["hardware"][i]


def _syntax(ctx: Context) -> Iterable[Hit]:
    for _, _, hw, raw in _entries(ctx):
        for j, toleration in enumerate(raw.get("tolerations", ())):
            for field, problem in _toleration_problems(toleration):
                yield Hit(hw.where.at("tolerations", j, *field), problem)
        seen: dict[tuple[str, str], Any] = {}  # (key, effect) -> the first such taint
        for j, taint in enumerate(raw.get("nodeTaints", ())):
            for field, problem in _taint_problems(taint):
                yield Hit(hw.where.at("nodeTaints", j, *field), problem)
            first = seen.setdefault((taint["key"], taint.get("effect", "")), taint)
            if first != taint:  # (an exact repeat is one taint: it is written once)
                message = (
                    f"taint {taint['key']}:{taint.get('effect', '')} is given twice with different "
                    "values; Kueue refuses a flavor whose taints repeat a key and effect"
                )
                yield Hit(hw.where.at("nodeTaints", j), message)


def _toleration_problems(toleration: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Kubernetes' rules for a Toleration (Kueue's CRD checks a part of them)."""
    key, operator = toleration.get("key", ""), toleration.get("operator", "Equal")
    if key and label_key_error(key):
        yield ("key",), f"toleration key {key!r}: {label_key_error(key)}"
    if not key and operator != "Exists":
        yield (), "a toleration without a key tolerates every taint only with operator: Exists"
    if operator == "Exists" and "value" in toleration:
        yield ("value",), "a toleration with operator Exists has no value"
    value = toleration.get("value", "")
    if operator == "Equal" and value and label_value_error(value):
        yield ("value",), f"toleration value {value!r}: {label_value_error(value)}"
    if "tolerationSeconds" in toleration and toleration.get("effect") != "NoExecute":
        yield ("tolerationSeconds",), "tolerationSeconds applies only to effect NoExecute"


def _taint_problems(taint: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    if label_key_error(taint["key"]):
        yield ("key",), f"taint key {taint['key']!r}: {label_key_error(taint['key'])}"
    value = taint.get("value", "")
    if value and label_value_error(value):
        yield ("value",), f"taint value {value!r}: {label_value_error(value)}"


def _agreement(ctx: Context) -> Iterable[Hit]:
    """One identity, one set of flavors: every entry naming it states the same settings."""
    first: dict[tuple[tuple[str, str], ...], tuple[QueuePlan, int, Hardware]] = {}
    for plan, i, hw, raw in _entries(ctx):
        identity = tuple(sorted(hw.identity.items()))
        if identity not in first:
            first[identity] = (plan, i, hw)
            continue
        other_plan, j, other = first[identity]
        for field, mine, theirs in (
            ("tolerations", hw.tolerations, other.tolerations),
            ("nodeTaints", hw.node_taints, other.node_taints),
        ):
            if mine != theirs:
                where = hw.where.at(field if field in raw else "identity")
                yield _conflict(plan, hw, field, mine, (other_plan, j, theirs), where)


def _conflict(
    plan: QueuePlan, hw: Hardware, field: str, mine: Any, other: tuple[QueuePlan, int, Any], where: Where
) -> Hit:
    other_plan, j, theirs = other
    message = (
        f"queue {plan.name!r} gives identity {hw.identity} {field} {_flow(mine)}, but queue "
        f"{other_plan.name!r} ({other_plan.where.file}, spec.hardware[{j}]) gives {_flow(theirs)}: "
        "the queues share this identity's ResourceFlavors, so every entry for it must state "
        f"the same {field}"
    )
    return Hit(where, message)


def _flow(entries: Iterable[dict[str, Any]]) -> str:
    """Entries as YAML flow mappings, as a user writes them."""
    return "[" + ", ".join("{" + ", ".join(f"{k}: {v}" for k, v in e.items()) + "}" for e in entries) + "]"


def _untolerated(ctx: Context) -> Iterable[Hit]:
    tainted = [n for n in ctx.inventory.nodes.values() if n.taints]
    if not tainted:
        return  # the common fleet: nothing to look at
    seen: set[tuple[tuple[str, str], ...]] = set()
    for _, _, hw, _ in _entries(ctx):
        identity = tuple(sorted(hw.identity.items()))
        if identity in seen:
            continue  # the agreement rule makes the other entries say the same
        seen.add(identity)
        yield from _untolerated_entry(hw, [n for n in tainted if _matches(n, hw.identity)])


def _matches(node: Node, identity: dict[str, str]) -> bool:
    return all(node.labels.get(k) == v for k, v in identity.items())


def _untolerated_entry(hw: Hardware, nodes: list[Node]) -> Iterable[Hit]:
    blocked: dict[Taint, list[str]] = {}
    for node in sorted(nodes, key=lambda n: n.name):
        for taint in node.taints:
            if _blocks(taint) and not any(tolerates(t, taint) for t in hw.tolerations):
                blocked.setdefault(taint, []).append(node.name)
    for (key, value, effect), names in sorted(blocked.items()):
        shown = f"{key}={value}:{effect}" if value else f"{key}:{effect}"
        message = (
            f"{len(names)} node(s) of identity {hw.identity} (e.g. {names[0]}) carry the taint "
            f"{shown}, which the flavor's tolerations do not cover: TAS places no pod there unless "
            f"the workload tolerates it itself. Add to this entry: tolerations: [{{key: {key}, "
            f"operator: Exists, effect: {effect}}}]"
        )
        yield Hit(hw.where.at("identity"), message)


def _blocks(taint: Taint) -> bool:
    return taint[2] in BLOCKING and not taint[0].startswith(TRANSIENT_PREFIX)


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (PLAN_TOLERATIONS, _syntax),
    (FLAVOR_SETTINGS_CONFLICT, _agreement),
    (TAINT_UNTOLERATED, _untolerated),
)
