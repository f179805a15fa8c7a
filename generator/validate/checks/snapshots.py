"""Rules on writing sources' snapshots: which nodes and labels a snapshot may state.

A snapshot that breaks any of them is rejected whole, before any NodeFeature changes: since
any error stops the render, nothing of it reaches rendered/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain, repeat
from operator import attrgetter, contains

from ...model import Node, Source, Where
from ...rules import Hit, Rule
from ...rules.semantic import (
    LABEL_NOT_WRITABLE,
    SNAPSHOT_LABEL_SYNTAX,
    SNAPSHOT_READ_ONLY_MISMATCH,
    SNAPSHOT_UNDECLARED_LEVEL,
    SNAPSHOT_UNKNOWN_NODE,
    SNAPSHOT_UNSELECTED_NODE,
    SOURCE_EXPIRED,
)
from ..labels import (
    READ_ONLY_PARENTS,
    label_key_error,
    label_value_error,
    write_refusal,
)
from .base import Check, Context


def _stated(ctx: Context) -> Iterable[tuple[Source, str, dict[str, str]]]:
    for src in ctx.writing_sources():
        assert src.snapshot is not None
        for node_name, labels in src.snapshot.nodes.items():
            yield src, node_name, labels


def _unknown_node(ctx: Context) -> Iterable[Hit]:
    known = ctx.inventory.nodes.keys()
    if all(src.snapshot is None or src.snapshot.nodes.keys() <= known for src in ctx.writing_sources()):
        return  # every stated node is known (a set operation, at C speed)
    yield from each_unknown_node(ctx)


def each_unknown_node(ctx: Context) -> Iterable[Hit]:
    """SNAPSHOT_UNKNOWN_NODE stated node by stated node (what _unknown_node finds, the slow way)."""
    for src, node_name, _ in _stated(ctx):
        if node_name not in ctx.inventory.nodes:
            assert src.snapshot is not None
            message = (
                f"snapshot of source {src.name!r} names node {node_name!r}, which is not in "
                "the NodeInventory (run 'tasgen import-nodes' or fix the name)"
            )
            yield Hit(src.snapshot.where.key_of("nodes", node_name), message)


def _unselected_node(ctx: Context) -> Iterable[Hit]:
    for src in ctx.writing_sources():
        assert src.snapshot is not None
        selected = set(map(attrgetter("name"), ctx.selected[src.name]))
        if (src.snapshot.nodes.keys() - selected) & ctx.inventory.nodes.keys():
            yield from each_unselected_node(ctx, src)  # (usually a snapshot states only selected nodes)


def each_unselected_node(ctx: Context, src: Source) -> Iterable[Hit]:
    """SNAPSHOT_UNSELECTED_NODE node by node (what _unselected_node finds, the slow way)."""
    assert src.snapshot is not None
    selected = {n.name for n in ctx.selected[src.name]}
    for node_name in src.snapshot.nodes:
        if node_name in ctx.inventory.nodes and node_name not in selected:
            message = (
                f"snapshot of source {src.name!r} describes node {node_name!r}, which its "
                "nodeSelector does not select"
            )
            yield Hit(src.snapshot.where.key_of("nodes", node_name), message)


def _labels(rule: Rule) -> Check:
    """The check of one rule about stated labels; the labels are judged once per run (a
    label has at most one problem) and each rule reports its share."""

    def check(ctx: Context) -> Iterable[Hit]:
        return (hit for judged, hit in ctx.memo("stated-labels", _judge_labels) if judged is rule)

    return check


#: a stated label's problem: (the rule, the message), or None
Verdict = tuple[Rule, str] | None


def _judge_labels(ctx: Context) -> list[tuple[Rule, Hit]]:
    admin = ctx.inventory.settings.admin_label_prefix
    found: list[tuple[Rule, Hit]] = []
    for src in ctx.writing_sources():
        assert src.snapshot is not None
        # A snapshot states few distinct labels (a rack's nodes share theirs): judge each
        # once, and look at the nodes only when one is wrong.
        pairs = set(chain.from_iterable(map(dict.items, src.snapshot.nodes.values())))
        verdicts = {pair: label_problem(src, *pair, admin) for pair in pairs}
        if any(verdicts.values()):
            found += placed_labels(src, verdicts.__getitem__)
    return found


def placed_labels(src: Source, judge: Callable[[tuple[str, str]], Verdict]) -> list[tuple[Rule, Hit]]:
    """Each stated label's problem as ``judge`` finds it for (key, value), at the label, in
    the snapshot's order (judged by label_problem, what _judge_labels finds the slow way)."""
    assert src.snapshot is not None
    found: list[tuple[Rule, Hit]] = []
    for node_name, labels in src.snapshot.nodes.items():
        where = src.snapshot.where.at("nodes", node_name)
        for key, value in labels.items():
            judged = judge((key, value))
            if judged is not None:
                rule, message = judged
                on_key = rule is not SNAPSHOT_LABEL_SYNTAX or label_key_error(key) is not None
                found.append((rule, Hit(where.key_of(key) if on_key else where.at(key), message)))
    return found


def label_problem(src: Source, key: str, value: str, admin: str | None) -> Verdict:
    syntax = label_key_error(key)
    if syntax:
        return SNAPSHOT_LABEL_SYNTAX, f"label key {key!r}: {syntax}"
    if key not in src.levels:
        levels = ", ".join(src.levels)
        return SNAPSHOT_UNDECLARED_LEVEL, f"{key!r} is not one of the source's levels ({levels})"
    if key not in READ_ONLY_PARENTS:
        refusal = write_refusal(key, admin)
        if refusal:
            return LABEL_NOT_WRITABLE, f"source {src.name!r} may not publish {key!r}: {refusal}"
    syntax = label_value_error(value)
    if syntax:
        return SNAPSHOT_LABEL_SYNTAX, f"label {key}={value!r}: {syntax}"
    return None


def _read_only_parents(ctx: Context) -> Iterable[Hit]:
    if any(map(_may_repeat_wrongly, ctx.writing_sources(), repeat(ctx))):
        yield from each_read_only_parent(ctx)


def _may_repeat_wrongly(src: Source, ctx: Context) -> bool:
    """Whether a snapshot may repeat a read-only value other than its node's: each distinct
    (stated, actual) pair is judged once, gathered at C speed (an unknown node counts as a
    maybe; each_read_only_parent passes over it). Most snapshots repeat none."""
    assert src.snapshot is not None
    stated = list(src.snapshot.nodes.values())
    repeats = [key for key in READ_ONLY_PARENTS if any(map(contains, stated, repeat(key)))]
    if not repeats:
        return False
    nodes = map(ctx.inventory.nodes.get, src.snapshot.nodes, repeat(_NO_NODE))
    labels = list(map(attrgetter("labels"), nodes))
    for key in repeats:
        repeated = map(dict.get, stated, repeat(key), repeat(_ABSENT))
        pairs = set(zip(repeated, map(dict.get, labels, repeat(key)), strict=True))
        if any(value is not _ABSENT and value != actual for value, actual in pairs):
            return True
    return False


_ABSENT = object()
_NO_NODE = Node("", {}, {}, Where("", 0), 0)


def each_read_only_parent(ctx: Context) -> Iterable[Hit]:
    """SNAPSHOT_READ_ONLY_MISMATCH stated node by stated node (what _read_only_parents finds,
    the slow way)."""
    for src, node_name, labels in _stated(ctx):
        node = ctx.inventory.nodes.get(node_name)
        assert src.snapshot is not None
        for key in READ_ONLY_PARENTS:
            if key not in labels or node is None:
                continue
            actual = node.labels.get(key)
            if actual != labels[key]:
                found = "has no such label" if actual is None else f"has {actual!r}"
                message = (
                    f"{key} is read-only: the snapshot repeats {labels[key]!r} but node "
                    f"{node_name!r} {found}; tasgen never creates or changes cloud labels"
                )
                yield Hit(src.snapshot.where.at("nodes", node_name, key), message)


def _expired(ctx: Context) -> Iterable[Hit]:
    for src in ctx.writing_sources():
        if ctx.expired(src):
            assert src.snapshot is not None and src.snapshot.expires_at is not None
            message = (
                f"source {src.name!r} expired at {src.snapshot.expires_at.isoformat()}: it is "
                "not Ready, its NodeFeatures are removed and its nodes fall back to the "
                "hostname-only profile; refresh the snapshot"
            )
            yield Hit(src.snapshot.where.at("expiresAt"), message)


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (SNAPSHOT_UNKNOWN_NODE, _unknown_node),
    (SNAPSHOT_UNSELECTED_NODE, _unselected_node),
    (SNAPSHOT_UNDECLARED_LEVEL, _labels(SNAPSHOT_UNDECLARED_LEVEL)),
    (LABEL_NOT_WRITABLE, _labels(LABEL_NOT_WRITABLE)),
    (SNAPSHOT_LABEL_SYNTAX, _labels(SNAPSHOT_LABEL_SYNTAX)),
    (SNAPSHOT_READ_ONLY_MISMATCH, _read_only_parents),
    (SOURCE_EXPIRED, _expired),
)
