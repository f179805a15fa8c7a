"""Risks: inventories that are valid but probably not what their author meant. Each is a warning
(``--strict`` makes it fail) that ``validate``, ``render`` and ``plan`` report alike."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal

from generator.model import Finding, Level, Node, Source
from generator.validate.quantities import parse, quantity_error
from generator.validate.rules.base import Context, Rule


def _selector_unmatched(ctx: Context) -> Iterable[Finding]:
    """A typo in a nodeSelector selects nothing: the source quietly gives no node a tree."""
    for src in ctx.loaded_sources():
        if not ctx.selected[src.name]:
            message = (
                f"the nodeSelector of source {src.name!r} matches no node of the NodeInventory: "
                "it gives no node a hierarchy (a typo in a label key or value?)"
            )
            yield Finding(src.where.at("spec", "nodeSelector"), "selector-unmatched", message, Level.WARNING)


def _level_uncarried(ctx: Context) -> Iterable[Finding]:
    """A level no selected node has a value for cuts every node's hierarchy above it (a typo in
    the coarsest level makes every node hostname-only)."""
    for src in ctx.loaded_sources():
        if ctx.expired(src) or not ctx.selected[src.name]:
            continue
        carried = {k for _, values in ctx.hierarchy_values(src) for k in values}
        for i, key in enumerate(src.declared_levels):
            # A gap below a carried level is hierarchy-parent-chain's error, not echoed here.
            if not carried & set(src.declared_levels[i:]):
                yield _uncarried(src, i, key)


def _uncarried(src: Source, index: int, key: str) -> Finding:
    where = "states" if src.writes else "carries"
    message = (
        f"no node that source {src.name!r} selects {where} level {key!r}: its nodes' hierarchies "
        "stop above it (a typo in the level, or labels not there yet?)"
    )
    return Finding(src.where.at("spec", "levels", index), "level-uncarried", message, Level.WARNING)


def _source_expiring(ctx: Context) -> Iterable[Finding]:
    days = ctx.inventory.settings.expiry_warning_days
    for src in ctx.loaded_sources():
        expires = src.snapshot.expires_at if src.snapshot else None
        if src.snapshot is None or expires is None or ctx.expired(src) or days <= 0:
            continue
        if expires - ctx.now <= timedelta(days=days):
            message = (
                f"source {src.name!r} expires at {expires.isoformat()}, within {days} days: then its "
                "nodes fall back to hostname-only and its queues drain; refresh the snapshot "
                "(GeneratorConfig expiryWarningDays sets the warning's horizon)"
            )
            yield Finding(src.snapshot.where.at("expiresAt"), "source-expiring", message, Level.WARNING)


def _quota_above_allocatable(ctx: Context) -> Iterable[Finding]:
    """A quota larger than the nodes can give is admitted but never fits: workloads wait."""
    nodes = ctx.inventory.nodes.values()
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            matching = [n for n in nodes if all(n.labels.get(k) == v for k, v in hw.identity.items())]
            for resource, declared in (hw.nominal_quota or {}).items():
                total = _allocatable(matching, resource)
                if quantity_error(declared) is None and 0 < total < parse(declared):
                    message = (
                        f"queue {plan.name!r} declares {resource}: {declared} for {hw.identity}, but "
                        f"the matching nodes' allocatable is {total.normalize():f}: the excess can be "
                        "admitted but never placed"
                    )
                    where = hw.where.at("nominalQuota", resource)
                    yield Finding(where, "quota-above-allocatable", message, Level.WARNING)


def _allocatable(nodes: list[Node], resource: str) -> Decimal:
    total = Decimal(0)
    for node in nodes:
        value = node.allocatable.get(resource)
        if value is not None and quantity_error(value) is None:
            total += parse(value)
    return total


RULES = (
    Rule(
        "selector-unmatched",
        "A TopologySource's nodeSelector matches at least one node (warning).",
        _selector_unmatched,
        Level.WARNING,
    ),
    Rule(
        "level-uncarried",
        "Every level of a source is stated for (or carried by) at least one node it selects (warning).",
        _level_uncarried,
        Level.WARNING,
    ),
    Rule(
        "source-expiring",
        "A source does not expire within GeneratorConfig expiryWarningDays (default 14; warning).",
        _source_expiring,
        Level.WARNING,
    ),
    Rule(
        "quota-above-allocatable",
        "A declared nominalQuota is at most the allocatable of the nodes it splits over (warning).",
        _quota_above_allocatable,
        Level.WARNING,
    ),
)
