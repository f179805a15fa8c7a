"""Nodes: the labels tasgen writes (through NodeFeatures) that change, summarised by the source
that writes them and by coarse domain (the node's first level), with the nodes' names and
changes only when they are few - never a line per node at scale."""

from __future__ import annotations

from collections import Counter
from typing import Any

from generator.diff.side import Side
from generator.model import PROFILE_KEY

#: up to this many changed nodes, the report names them and lists their changes
NAMED_NODES = 20


def compare_nodes(base: Side, head: Side) -> dict[str, Any]:
    changes = {n: _changes(base, head, n) for n in sorted(base.written.keys() | head.written.keys())}
    changes = {n: c for n, c in changes.items() if c}
    by_source: dict[str, Counter[str]] = {}
    for node_changes in changes.values():
        for change in node_changes:
            writer = _writer(base, head, change["key"])
            by_source.setdefault(writer, Counter())[change["key"]] += 1
    return {
        "total": len(head.nodes),
        "changed": len(changes),
        "bySource": [
            {"source": s, "nodes": _nodes_of(changes, base, head, s), "keys": dict(sorted(c.items()))}
            for s, c in sorted(by_source.items())
        ],
        "byDomain": _by_domain(base, head, changes),
        "changes": [{"node": n, "labels": c} for n, c in changes.items()]
        if len(changes) <= NAMED_NODES
        else None,
    }


def _changes(base: Side, head: Side, node: str) -> list[dict[str, Any]]:
    old, new = base.written.get(node, {}), head.written.get(node, {})
    return [
        {"key": k, "before": old.get(k), "after": new.get(k)}
        for k in sorted(old.keys() | new.keys())
        if old.get(k) != new.get(k)
    ]


def _writer(base: Side, head: Side, key: str) -> str:
    """The source that writes a key (the profile label is tasgen's own)."""
    if key == PROFILE_KEY:
        return "(profile)"
    return head.writer.get(key) or base.writer.get(key) or "(unknown)"


def _nodes_of(changes: dict[str, list[dict[str, Any]]], base: Side, head: Side, source: str) -> int:
    return sum(any(_writer(base, head, c["key"]) == source for c in cs) for cs in changes.values())


def _by_domain(base: Side, head: Side, changes: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Changed nodes per coarse domain: the first level of the node's profile after (before, for
    a node that leaves), e.g. its zone; hostname-only nodes count under "(no topology)"."""
    counts: Counter[tuple[str, str]] = Counter()
    for node in changes:
        side = head if node in head.profile_of else base
        keys = side.profiles.get(side.profile_of.get(node, ""), ())
        if len(keys) > 1:
            counts[(keys[0], side.domain_of[node][0])] += 1
        else:
            counts[("(no topology)", "")] += 1
    return [
        {"level": level, "domain": domain, "nodes": n}
        for (level, domain), n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]
