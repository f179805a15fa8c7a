"""Rules on writing sources' snapshots: which nodes and labels a snapshot may state.

A snapshot that breaks any of them is rejected whole (seed: "before any NodeFeature
changes"); since any error stops the render, nothing of it reaches rendered/.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from generator.model import Finding, Level, Source
from generator.validate.labels import (
    READ_ONLY_PARENTS,
    label_key_error,
    label_value_error,
    write_refusal,
)
from generator.validate.rules.base import Context, Rule


def _stated(ctx: Context) -> Iterable[tuple[Source, str, dict[str, str]]]:
    for src in ctx.writing_sources():
        assert src.snapshot is not None
        for node_name, labels in src.snapshot.nodes.items():
            yield src, node_name, labels


def _unknown_node(ctx: Context) -> Iterable[Finding]:
    for src, node_name, _ in _stated(ctx):
        if node_name not in ctx.inventory.nodes:
            assert src.snapshot is not None
            message = (
                f"snapshot of source {src.name!r} names node {node_name!r}, which is not in "
                "the NodeInventory (run 'tasgen import-nodes' or fix the name)"
            )
            yield Finding(src.snapshot.where.key_of("nodes", node_name), "snapshot-unknown-node", message)


def _unselected_node(ctx: Context) -> Iterable[Finding]:
    for src in ctx.writing_sources():
        assert src.snapshot is not None
        selected = {n.name for n in ctx.selected[src.name]}
        for node_name in src.snapshot.nodes:
            if node_name in ctx.inventory.nodes and node_name not in selected:
                message = (
                    f"snapshot of source {src.name!r} describes node {node_name!r}, which its "
                    "nodeSelector does not select"
                )
                where = src.snapshot.where.key_of("nodes", node_name)
                yield Finding(where, "snapshot-unselected-node", message)


def _labels(rule_id: str) -> Callable[[Context], Iterable[Finding]]:
    """The check of one rule about stated labels; the labels are judged once per run (a
    label has at most one problem) and each rule reports its share."""

    def check(ctx: Context) -> Iterable[Finding]:
        return (f for f in ctx.memo("stated-labels", _judge_labels) if f.rule == rule_id)

    return check


def _judge_labels(ctx: Context) -> list[Finding]:
    admin = ctx.inventory.settings.admin_label_prefix
    found: list[Finding] = []
    for src, node_name, labels in _stated(ctx):
        assert src.snapshot is not None
        where = src.snapshot.where.at("nodes", node_name)
        for key, value in labels.items():
            rule, message = _label_problem(src, key, value, admin)
            if rule:
                on_key = rule != "snapshot-label-syntax" or label_key_error(key) is not None
                found.append(Finding(where.key_of(key) if on_key else where.at(key), rule, message))
    return found


def _label_problem(src: Source, key: str, value: str, admin: str | None) -> tuple[str, str]:
    syntax = label_key_error(key)
    if syntax:
        return "snapshot-label-syntax", f"label key {key!r}: {syntax}"
    if key not in src.levels:
        levels = ", ".join(src.levels)
        return "snapshot-undeclared-level", f"{key!r} is not one of the source's levels ({levels})"
    if key not in READ_ONLY_PARENTS:
        refusal = write_refusal(key, admin)
        if refusal:
            return "label-not-writable", f"source {src.name!r} may not publish {key!r}: {refusal}"
    syntax = label_value_error(value)
    if syntax:
        return "snapshot-label-syntax", f"label {key}={value!r}: {syntax}"
    return "", ""


def _read_only_parents(ctx: Context) -> Iterable[Finding]:
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
                yield Finding(
                    src.snapshot.where.at("nodes", node_name, key), "snapshot-read-only-mismatch", message
                )


def _expired(ctx: Context) -> Iterable[Finding]:
    for src in ctx.writing_sources():
        if ctx.expired(src):
            assert src.snapshot is not None and src.snapshot.expires_at is not None
            message = (
                f"source {src.name!r} expired at {src.snapshot.expires_at.isoformat()}: it is "
                "not Ready, its NodeFeatures are removed and its nodes fall back to the "
                "hostname-only profile; refresh the snapshot"
            )
            yield Finding(src.snapshot.where.at("expiresAt"), "source-expired", message, Level.WARNING)


RULES = (
    Rule("snapshot-unknown-node", "A snapshot names only nodes of the NodeInventory.", _unknown_node),
    Rule(
        "snapshot-unselected-node",
        "A snapshot names only nodes its source's nodeSelector selects.",
        _unselected_node,
    ),
    Rule(
        "snapshot-undeclared-level",
        "A snapshot states only keys listed in its source's levels.",
        _labels("snapshot-undeclared-level"),
    ),
    Rule(
        "label-not-writable",
        "A writing source publishes only topology.gpustack.ai/* (not the profile key) and the admin prefix.",
        _labels("label-not-writable"),
    ),
    Rule(
        "snapshot-label-syntax",
        "Snapshot label keys and values follow Kubernetes syntax.",
        _labels("snapshot-label-syntax"),
    ),
    Rule(
        "snapshot-read-only-mismatch",
        "A repeated topology.kubernetes.io/region or zone equals the node's own label.",
        _read_only_parents,
    ),
    Rule("source-expired", "A source past its expiresAt is not Ready (warning).", _expired, Level.WARNING),
)
