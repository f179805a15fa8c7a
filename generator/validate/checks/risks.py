"""Risks: inventories that are valid but probably not what their author meant. Each is a warning
(``--strict`` makes it fail) that ``validate``, ``render`` and ``plan`` report alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import timedelta
from decimal import Decimal

from ...kube.quantities import parse, quantity_error
from ...model import PLACEHOLDER_REPO_URL, Hardware, Node, Source
from ...rules import Hit, Rule
from ...rules.semantic import (
    LEVEL_UNCARRIED,
    QUOTA_ABOVE_ALLOCATABLE,
    REPO_URL_PLACEHOLDER,
    SELECTOR_UNMATCHED,
    SOURCE_EXPIRING,
)
from .base import Check, Context


def _selector_unmatched(ctx: Context) -> Iterable[Hit]:
    """A typo in a nodeSelector selects nothing: the source quietly gives no node a tree."""
    for src in ctx.loaded_sources():
        if not ctx.selected[src.name]:
            message = (
                f"the nodeSelector of source {src.name!r} matches no node of the NodeInventory: "
                "it gives no node a hierarchy (a typo in a label key or value?)"
            )
            yield Hit(src.where.at("spec", "nodeSelector"), message)


def _level_uncarried(ctx: Context) -> Iterable[Hit]:
    """A level no selected node has a value for cuts every node's hierarchy above it (a typo in
    the coarsest level makes every node hostname-only)."""
    for src in ctx.loaded_sources():
        if ctx.expired(src) or not ctx.selected[src.name]:
            continue
        carried = {k for values in ctx.stated(src).distinct.values() for k in values}
        for i, key in enumerate(src.declared_levels):
            # A gap below a carried level is hierarchy-parent-chain's error, not echoed here.
            if not carried & set(src.declared_levels[i:]):
                yield _uncarried(src, i, key)


def _uncarried(src: Source, index: int, key: str) -> Hit:
    where = "states" if src.writes else "carries"
    message = (
        f"no node that source {src.name!r} selects {where} level {key!r}: its nodes' hierarchies "
        "stop above it (a typo in the level, or labels not there yet?)"
    )
    return Hit(src.where.at("spec", "levels", index), message)


def _source_expiring(ctx: Context) -> Iterable[Hit]:
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
            yield Hit(src.snapshot.where.at("expiresAt"), message)


def _quota_above_allocatable(ctx: Context) -> Iterable[Hit]:
    """A quota larger than the nodes can give is admitted but never fits: workloads wait."""
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            declared = {r: v for r, v in (hw.nominal_quota or {}).items() if quantity_error(v) is None}
            if not declared:
                continue
            matching = _matching(ctx, hw.identity)
            for resource, value in declared.items():
                total = _allocatable(matching, resource)
                if 0 < total < parse(value):
                    yield _above(plan.name, hw, resource, value, total)


def _matching(ctx: Context, identity: dict[str, str]) -> list[Node]:
    return [n for n in ctx.inventory.nodes.values() if all(n.labels.get(k) == v for k, v in identity.items())]


def _above(queue: str, hw: Hardware, resource: str, declared: str, total: Decimal) -> Hit:
    message = (
        f"queue {queue!r} declares {resource}: {declared} for {hw.identity}, but the matching "
        f"nodes' allocatable is {total.normalize():f}: the excess can be admitted but never placed"
    )
    return Hit(hw.where.at("nominalQuota", resource), message)


def _allocatable(nodes: list[Node], resource: str) -> Decimal:
    # Fleets repeat a few allocatable values: count them, then parse each once.
    values = Counter(n.allocatable.get(resource) for n in nodes)
    return sum(
        (parse(v) * c for v, c in values.items() if v is not None and quantity_error(v) is None), Decimal(0)
    )


def _repo_url_placeholder(ctx: Context) -> Iterable[Hit]:
    """tasgen init's stand-in URL, never replaced: Argo CD would fetch a repository that does
    not exist."""
    settings = ctx.inventory.settings
    argocd = settings.sync.get("argocd") or {}
    if settings.where is not None and argocd.get("repoURL") == PLACEHOLDER_REPO_URL:
        message = (
            f"repoURL is still {PLACEHOLDER_REPO_URL}, the placeholder tasgen init writes without "
            "--repo-url: Argo CD would fetch a repository that does not exist; set the URL it "
            "fetches this repository from (here and in deploy/argocd/application.yaml)"
        )
        yield Hit(settings.where.at("sync", "argocd", "repoURL"), message)


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SELECTOR_UNMATCHED, _selector_unmatched),
    (LEVEL_UNCARRIED, _level_uncarried),
    (SOURCE_EXPIRING, _source_expiring),
    (QUOTA_ABOVE_ALLOCATABLE, _quota_above_allocatable),
    (REPO_URL_PLACEHOLDER, _repo_url_placeholder),
)
