"""Rules on how workloads reach a ClusterQueue: its LocalQueues and its namespaceSelector."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...model import LocalQueue, QueuePlan, Selector
from ...rules import Hit, Rule
from ...rules.semantic import LOCAL_QUEUE, LOCAL_QUEUE_UNSELECTED, NAMESPACE_SELECTOR_MISSING
from ..documents import selector
from .base import Check, Context

#: the label the API server puts on every Namespace, with its name as value
NAMESPACE_NAME_KEY = "kubernetes.io/metadata.name"


def _local_queues(ctx: Context) -> Iterable[Hit]:
    seen: dict[tuple[str, str], tuple[QueuePlan, LocalQueue]] = {}
    for name in sorted(ctx.inventory.plans):
        plan = ctx.inventory.plans[name]
        for lq in plan.local_queues:
            first, first_lq = seen.setdefault((lq.namespace, lq.name), (plan, lq))
            problem = _name_problem(plan, lq)
            if problem is None and first_lq is not lq:
                problem = f"LocalQueue {lq.namespace}/{lq.name} is listed by queue {first.name!r} already"
            if problem:
                yield Hit(lq.where, problem)


def _name_problem(plan: QueuePlan, lq: LocalQueue) -> str | None:
    """Jobs name their LocalQueue in a label (kueue.x-k8s.io/queue-name): a DNS-1123 label.
    An explicit name is checked by the schema; the default, the queue's name, here."""
    if len(lq.name) <= 63 and "." not in lq.name:
        return None
    return (
        f"the LocalQueue takes the queue's name {plan.name!r} by default, which is not a "
        "DNS-1123 label (at most 63 characters, no '.'): give it a name"
    )


def _namespace_selector(ctx: Context) -> Iterable[Hit]:
    for plan in ctx.inventory.plans.values():
        if "namespaceSelector" in plan.cluster_queue:
            continue
        namespaces = sorted({lq.namespace for lq in plan.local_queues})
        fix = (
            "{matchExpressions: [{key: " + NAMESPACE_NAME_KEY + ", operator: In, values: "
            f"{json.dumps(namespaces)}}}]}} (the namespaces of its LocalQueues)"
            if namespaces
            else "{} for every namespace, or a selector of your teams' namespaces"
        )
        message = (
            f"queue {plan.name!r} has no clusterQueue.namespaceSelector: Kueue then admits workloads "
            f"from no namespace. Set namespaceSelector: {fix}"
        )
        yield Hit(plan.where.key_of("spec"), message)


def _unselected(ctx: Context) -> Iterable[Hit]:
    """A LocalQueue whose namespace the queue's namespaceSelector refuses admits nothing. Only
    decidable when the selector reads the namespace's name alone (the one label tasgen knows)."""
    for plan in ctx.inventory.plans.values():
        selector = _name_selector(plan.cluster_queue.get("namespaceSelector"))
        if selector is None:
            continue
        for lq in plan.local_queues:
            if not selector.selects({NAMESPACE_NAME_KEY: lq.namespace}):
                message = (
                    f"queue {plan.name!r} does not select namespace {lq.namespace!r} (its namespaceSelector "
                    f"reads {NAMESPACE_NAME_KEY}): workloads of LocalQueue {lq.namespace}/{lq.name} are "
                    "never admitted; add the namespace to the selector"
                )
                yield Hit(lq.where.at("namespace"), message)


def _name_selector(raw: Any) -> Selector | None:
    """The selector, when it is well-formed and constrains kubernetes.io/metadata.name only."""
    if not isinstance(raw, dict) or not raw or set(raw) - {"matchLabels", "matchExpressions"}:
        return None
    labels, expressions = raw.get("matchLabels") or {}, raw.get("matchExpressions") or []
    if not isinstance(labels, dict) or not isinstance(expressions, list):
        return None
    if not all(isinstance(e, dict) and _well_formed(e) for e in expressions):
        return None
    if {*labels, *(e["key"] for e in expressions)} != {NAMESPACE_NAME_KEY}:
        return None
    return selector(raw)


def _well_formed(expression: dict[str, Any]) -> bool:
    values = expression.get("values", [])
    return (
        isinstance(expression.get("key"), str)
        and expression.get("operator") in ("In", "NotIn", "Exists", "DoesNotExist")
        and isinstance(values, list)
        and all(isinstance(v, str) for v in values)
    )


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (LOCAL_QUEUE, _local_queues),
    (NAMESPACE_SELECTOR_MISSING, _namespace_selector),
    (LOCAL_QUEUE_UNSELECTED, _unselected),
)
