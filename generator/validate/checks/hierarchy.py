"""Hierarchy rules, for writing sources (on their snapshots) and nodeLabels sources (on the
labels the selected nodes already carry). A nodeLabels violation is an error too: one
mislabelled node must block the change for review rather than silently move every node of
the source to the hostname-only profile, which would drain its queues."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...model import Node, Source, Where
from ...rules import Hit, Rule
from ...rules.semantic import HIERARCHY_AMBIGUOUS_PARENT, HIERARCHY_PARENT_CHAIN, OWNERSHIP_CONFLICT
from ..hierarchy import first_gap
from ..labels import READ_ONLY_PARENTS
from .base import Check, Context


def _where(src: Source, node: Node, key: str) -> Where:
    """Where a node's value for a level is stated: in the snapshot, or on the node."""
    if src.writes and key not in READ_ONLY_PARENTS and src.snapshot is not None:
        return src.snapshot.where.at("nodes", node.name, key)
    return node.where.at("labels", key)


def _parent_chain(ctx: Context) -> Iterable[Hit]:
    for src in ctx.loaded_sources():
        if src.writes and src.snapshot is None:
            continue
        stated = ctx.stated(src)
        if not any(first_gap(src.levels, values) for values in stated.distinct.values()):
            continue  # the usual fleet: each distinct set of values judged once, none has a gap
        yield from each_node_gap(src, stated.pairs)


def each_node_gap(src: Source, pairs: Iterable[tuple[Node, dict[str, str]]]) -> Iterable[Hit]:
    """HIERARCHY_PARENT_CHAIN node by node (what _parent_chain finds, the slow way)."""
    for node, values in pairs:
        gap = first_gap(src.levels, values)
        if gap is not None:
            missing, finer = gap
            message = (
                f"node {node.name!r} has {finer}={values[finer]!r} but no {missing}: "
                f"a level of source {src.name!r} needs every coarser level"
            )
            yield Hit(_where(src, node, finer), message, source=src.name)


def _single_parent(ctx: Context) -> Iterable[Hit]:
    for src in ctx.loaded_sources():
        if src.writes and src.snapshot is None:
            continue
        stated = ctx.stated(src)
        # Nodes with the same values add no parent the first of them did not: when the
        # distinct values give no value two parents, no node does (the usual fleet).
        if next(_second_parents(src, ((None, v) for v in stated.distinct.values())), None) is None:
            continue
        yield from each_node_second_parent(src, stated.pairs)


def each_node_second_parent(src: Source, pairs: Iterable[tuple[Node, dict[str, str]]]) -> Iterable[Hit]:
    """HIERARCHY_AMBIGUOUS_PARENT node by node (what _single_parent finds, the slow way)."""
    for node, key, value, parents, seen in _second_parents(src, pairs):
        assert node is not None
        yield _two_parents(src, node, key, value, parents, seen)


Parents = tuple[tuple[str, ...], str | None]  # a value's parent values, and the first node that had them


def _second_parents(
    src: Source, pairs: Iterable[tuple[Node | None, dict[str, str]]]
) -> Iterator[tuple[Node | None, str, str, tuple[str, ...], Parents]]:
    """Each node and level whose value sits under other parent values than it did first."""
    first: dict[tuple[int, str], Parents] = {}
    for node, values in pairs:
        chain: list[str] = []
        for depth, key in enumerate(src.levels):
            if key not in values:
                break
            parents = tuple(chain)
            chain.append(values[key])
            if depth == 0:
                continue
            seen = first.setdefault((depth, values[key]), (parents, node.name if node else None))
            if seen[0] != parents:
                yield node, key, values[key], parents, seen


def _two_parents(
    src: Source, node: Node, key: str, value: str, parents: tuple[str, ...], seen: Parents
) -> Hit:
    message = (
        f"{key}={value!r} sits under {'/'.join(parents)} on node {node.name!r} but under "
        f"{'/'.join(seen[0])} on node {seen[1]!r}: one child value has one parent "
        f"(source {src.name!r}); give the domains distinct values"
    )
    return Hit(_where(src, node, key), message, source=src.name)


def conflicts(ctx: Context) -> Iterable[tuple[str, str, str, str]]:
    """(node, key, first writer, second writer) for every key two writing sources state."""
    if ctx.memo("writers-disjoint", _writers_disjoint):
        return iter(())  # no node is stated by two sources (a usual fleet): nothing to contend for
    return contended(_writers(ctx))


def _writers(ctx: Context) -> list[Source]:
    """The writing sources that write: an expired one contends with no one."""
    return [s for s in ctx.writing_sources() if not ctx.expired(s)]


def _writers_disjoint(ctx: Context) -> bool:
    """Whether no node is stated by two writing sources (judged once: validation and the
    plan's source statuses both ask, and it takes a set of every stated node)."""
    stated = [set(s.snapshot.nodes) for s in _writers(ctx) if s.snapshot is not None]
    return sum(map(len, stated)) == len(set().union(*stated))


def contended(writers: Iterable[Source]) -> Iterable[tuple[str, str, str, str]]:
    """conflicts() of these writers, node by node."""
    owner: dict[tuple[str, str], str] = {}
    for src in writers:
        assert src.snapshot is not None
        for node_name, labels in src.snapshot.nodes.items():
            for key in labels:
                if key in READ_ONLY_PARENTS:
                    continue  # repeated read-only values are not written
                other = owner.setdefault((node_name, key), src.name)
                if other != src.name:
                    yield node_name, key, other, src.name


def _ownership(ctx: Context) -> Iterable[Hit]:
    for node_name, key, first, second in conflicts(ctx):
        snapshot = ctx.inventory.sources[second].snapshot
        assert snapshot is not None
        message = (
            f"sources {first!r} and {second!r} both write {key} on node {node_name!r} "
            "(OwnershipConflict): one key of a node has one writer"
        )
        yield Hit(snapshot.where.key_of("nodes", node_name, key), message, source=second)


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (HIERARCHY_PARENT_CHAIN, _parent_chain),
    (HIERARCHY_AMBIGUOUS_PARENT, _single_parent),
    (OWNERSHIP_CONFLICT, _ownership),
)
