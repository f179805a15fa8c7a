"""Rules on how workloads reach a ClusterQueue: its LocalQueues and its namespaceSelector."""

from __future__ import annotations

import json
from collections.abc import Iterable

from generator.model import Finding, Level, LocalQueue, QueuePlan
from generator.validate.rules.base import Context, Rule

#: the label the API server puts on every Namespace, with its name as value
NAMESPACE_NAME_KEY = "kubernetes.io/metadata.name"


def _local_queues(ctx: Context) -> Iterable[Finding]:
    seen: dict[tuple[str, str], tuple[QueuePlan, LocalQueue]] = {}
    for name in sorted(ctx.inventory.plans):
        plan = ctx.inventory.plans[name]
        for lq in plan.local_queues:
            first, first_lq = seen.setdefault((lq.namespace, lq.name), (plan, lq))
            problem = _name_problem(plan, lq)
            if problem is None and first_lq is not lq:
                problem = f"LocalQueue {lq.namespace}/{lq.name} is listed by queue {first.name!r} already"
            if problem:
                yield Finding(lq.where, "local-queue", problem)


def _name_problem(plan: QueuePlan, lq: LocalQueue) -> str | None:
    """Jobs name their LocalQueue in a label (kueue.x-k8s.io/queue-name): a DNS-1123 label.
    An explicit name is checked by the schema; the default, the queue's name, here."""
    if len(lq.name) <= 63 and "." not in lq.name:
        return None
    return (
        f"the LocalQueue takes the queue's name {plan.name!r} by default, which is not a "
        "DNS-1123 label (at most 63 characters, no '.'): give it a name"
    )


def _namespace_selector(ctx: Context) -> Iterable[Finding]:
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
        yield Finding(plan.where.key_of("spec"), "namespace-selector-missing", message, Level.WARNING)


RULES = (
    Rule(
        "local-queue",
        "LocalQueue names are DNS-1123 labels; no two plans list the same namespace/name.",
        _local_queues,
    ),
    Rule(
        "namespace-selector-missing",
        "A ClusterQueue sets namespaceSelector; without one Kueue admits from no namespace (warning).",
        _namespace_selector,
        Level.WARNING,
    ),
)
