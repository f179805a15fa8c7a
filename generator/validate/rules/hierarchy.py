"""Hierarchy rules, for writing sources (on their snapshots) and nodeLabels sources (on the
labels the selected nodes already carry). A nodeLabels violation is an error too: one
mislabelled node must block the change for review rather than silently move every node of
the source to the hostname-only profile, which would drain its queues."""

from __future__ import annotations

from collections.abc import Iterable

from generator.model import Finding, Node, Source, Where
from generator.validate.hierarchy import first_gap
from generator.validate.labels import READ_ONLY_PARENTS
from generator.validate.rules.base import Context, Rule


def _where(src: Source, node: Node, key: str) -> Where:
    """Where a node's value for a level is stated: in the snapshot, or on the node."""
    if src.writes and key not in READ_ONLY_PARENTS and src.snapshot is not None:
        return src.snapshot.where.at("nodes", node.name, key)
    return node.where.at("labels", key)


def _parent_chain(ctx: Context) -> Iterable[Finding]:
    for src in ctx.loaded_sources():
        if src.writes and src.snapshot is None:
            continue
        for node, values in ctx.hierarchy_values(src):
            gap = first_gap(src.levels, values)
            if gap is not None:
                missing, finer = gap
                message = (
                    f"node {node.name!r} has {finer}={values[finer]!r} but no {missing}: "
                    f"a level of source {src.name!r} needs every coarser level"
                )
                yield Finding(_where(src, node, finer), "hierarchy-parent-chain", message, source=src.name)


def _single_parent(ctx: Context) -> Iterable[Finding]:
    for src in ctx.loaded_sources():
        if src.writes and src.snapshot is None:
            continue
        first: dict[tuple[int, str], tuple[tuple[str, ...], str]] = {}
        for node, values in ctx.hierarchy_values(src):
            chain: list[str] = []
            for depth, key in enumerate(src.levels):
                if key not in values:
                    break
                parents = tuple(chain)
                chain.append(values[key])
                if depth == 0:
                    continue
                seen = first.setdefault((depth, values[key]), (parents, node.name))
                if seen[0] != parents:
                    yield _two_parents(src, node, key, values[key], parents, seen)


def _two_parents(
    src: Source, node: Node, key: str, value: str, parents: tuple[str, ...], seen: tuple[tuple[str, ...], str]
) -> Finding:
    message = (
        f"{key}={value!r} sits under {'/'.join(parents)} on node {node.name!r} but under "
        f"{'/'.join(seen[0])} on node {seen[1]!r}: one child value has one parent "
        f"(source {src.name!r}); give the domains distinct values"
    )
    return Finding(_where(src, node, key), "hierarchy-ambiguous-parent", message, source=src.name)


def conflicts(ctx: Context) -> Iterable[tuple[str, str, str, str]]:
    """(node, key, first writer, second writer) for every key two writing sources state."""
    owner: dict[tuple[str, str], str] = {}
    for src in ctx.writing_sources():
        if ctx.expired(src):
            continue  # an expired source writes nothing, so it contends with no one
        assert src.snapshot is not None
        for node_name, labels in src.snapshot.nodes.items():
            for key in labels:
                if key in READ_ONLY_PARENTS:
                    continue  # repeated read-only values are not written
                other = owner.setdefault((node_name, key), src.name)
                if other != src.name:
                    yield node_name, key, other, src.name


def _ownership(ctx: Context) -> Iterable[Finding]:
    for node_name, key, first, second in conflicts(ctx):
        snapshot = ctx.inventory.sources[second].snapshot
        assert snapshot is not None
        message = (
            f"sources {first!r} and {second!r} both write {key} on node {node_name!r} "
            "(OwnershipConflict): one key of a node has one writer"
        )
        yield Finding(
            snapshot.where.key_of("nodes", node_name, key), "ownership-conflict", message, source=second
        )


RULES = (
    Rule(
        "hierarchy-parent-chain",
        "A node has a value for a level only with values for every coarser level.",
        _parent_chain,
    ),
    Rule(
        "hierarchy-ambiguous-parent",
        "One child value sits under one parent tuple across a source's nodes.",
        _single_parent,
    ),
    Rule("ownership-conflict", "Two writing sources never state the same key for the same node.", _ownership),
)
