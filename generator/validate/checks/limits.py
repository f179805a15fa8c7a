"""Rules on borrowingLimit and lendingLimit, as Kueue's ClusterQueue webhook checks them."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from ...kube.quantities import parse, quantity_error
from ...model import Hardware, Node
from ...rules import Hit, Rule
from ...rules.semantic import LENDING_LIMIT, PLAN_LIMIT_COHORT
from .base import Check, Context


def _cohort(ctx: Context) -> Iterable[Hit]:
    """Kueue: a limit 'must be nil when cohort is empty' (there is nobody to borrow from)."""
    for plan in ctx.inventory.plans.values():
        if plan.cluster_queue.get("cohortName"):
            continue
        for hw in plan.hardware:
            for field, declared in hw.limits:
                if declared:
                    message = (
                        f"queue {plan.name!r} has no cohort, so {field} has nothing to borrow from or "
                        "lend to and Kueue refuses it: set clusterQueue.cohortName or drop the limit"
                    )
                    yield Hit(hw.where.key_of(field), message)


def _lending(ctx: Context) -> Iterable[Hit]:
    """Kueue: lendingLimit 'must be less than or equal to the nominalQuota'. tasgen splits both
    with the same weights and caps each flavor's lending part at its nominal part, so the
    total is what needs checking."""
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for resource, value in hw.lending_limit.items():
                if resource not in plan.covered_resources or quantity_error(value):
                    continue  # reported by plan-quota / quantity
                found = _nominal(ctx, hw, resource)
                if found is None:
                    continue  # a node's allocatable is no quantity: reported by quantity
                nominal, source = found
                if parse(value) > nominal:
                    message = (
                        f"lendingLimit {resource}: {value} exceeds the nominalQuota {source}; a queue "
                        "cannot lend more than it has"
                    )
                    yield Hit(hw.where.at("lendingLimit", resource), message)


def _nominal(ctx: Context, hw: Hardware, resource: str) -> tuple[Decimal, str] | None:
    """The nominal quota a lending limit is held against: the declared one, else the matching
    nodes' allocatable; None when one of those is no quantity (the rules run side by side,
    so this one must not parse what quantity has yet to report)."""
    declared = (hw.nominal_quota or {}).get(resource)
    if declared is not None and not quantity_error(declared):
        return parse(declared), declared
    nodes = [n for n in ctx.inventory.nodes.values() if _matches(n, hw.identity)]
    values = [n.allocatable[resource] for n in nodes if resource in n.allocatable]
    if any(quantity_error(value, resource) for value in values):
        return None
    total = sum(map(parse, values), Decimal(0))
    return total, f"{total} (the matching nodes' allocatable)"


def _matches(node: Node, identity: dict[str, str]) -> bool:
    return all(node.labels.get(k) == v for k, v in identity.items())


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (PLAN_LIMIT_COHORT, _cohort),
    (LENDING_LIMIT, _lending),
)
