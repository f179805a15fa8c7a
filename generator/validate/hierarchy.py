"""Hierarchies: the ordered level keys of a source and the values a node has for them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from operator import attrgetter
from typing import Any

from ..model import Node, Source
from .labels import READ_ONLY_PARENTS

_FABRIC_TIER = re.compile(r"^fabric\.topograph\.run/tier-(\d+)$")


def normalize_levels(levels: tuple[str, ...]) -> tuple[str, ...]:
    """Reorder each contiguous run of Topograph fabric tiers coarsest first.

    Topograph numbers its fabric tiers from the nodes up (tier-1 is the switch nearest
    the nodes), so the highest N is the coarsest; users often list them finest first.
    """
    result = list(levels)
    start = 0
    while start < len(result):
        end = start
        while end < len(result) and _FABRIC_TIER.match(result[end]):
            end += 1
        if end - start > 1:
            result[start:end] = sorted(result[start:end], key=_tier, reverse=True)
        start = max(end, start + 1)
    return tuple(result)


def _tier(key: str) -> int:
    found = _FABRIC_TIER.match(key)
    assert found is not None
    return int(found[1])


def stated_values(source: Source, node: Node) -> dict[str, str]:
    """The level values a source gives a node: writable keys from the snapshot, read-only
    keys (the cloud's region and zone, or every key of a nodeLabels source) from the node."""
    if not source.writes:
        return {k: node.labels[k] for k in source.levels if k in node.labels}
    stated = source.snapshot.nodes.get(node.name, {}) if source.snapshot else {}
    values: dict[str, str] = {}
    for key in source.levels:
        if key in READ_ONLY_PARENTS:
            if key in node.labels:
                values[key] = node.labels[key]
        elif key in stated:
            values[key] = stated[key]
    return values


#: a node's values of a source's levels, in level order, _ABSENT where it has none
Row = tuple[Any, ...]
_ABSENT = object()
_NOTHING: dict[str, str] = {}


@dataclass
class Stated:
    """The level values a source gives each node it selects (:func:`stated_values` of each),
    where nodes with the same values share one dict: a rack's nodes do, so a rule or the
    profiles can judge each distinct one once."""

    nodes: list[Node]  # every selected node, in the given order
    rows: list[Row]  # each node's values as a row, in the same order
    distinct: dict[Row, dict[str, str]]  # each distinct row's values, in first-seen order

    @cached_property
    def pairs(self) -> list[tuple[Node, dict[str, str]]]:
        """Each node with its values (made when asked for: the rules and profiles of a
        usual fleet read only the distinct ones)."""
        return list(zip(self.nodes, map(self.distinct.__getitem__, self.rows), strict=True))


def stated_of(source: Source, nodes: list[Node]) -> Stated:
    """:func:`stated_values` of every node, in C-speed passes (a column of values per
    level, zipped into rows); only a distinct row is made a dict."""
    labels = list(map(attrgetter("labels"), nodes))
    stated = _stated(source, nodes) if source.writes else []
    columns = [_column(key, labels if _on_node(source, key) else stated) for key in source.levels]
    rows: list[Row] = list(zip(*columns, strict=True)) if columns else [()] * len(nodes)
    distinct = {row: _values(source.levels, row) for row in dict.fromkeys(rows)}
    return Stated(nodes, rows, distinct)


def _on_node(source: Source, key: str) -> bool:
    """Whether a level's values are read from the node (else from the source's snapshot)."""
    return not source.writes or key in READ_ONLY_PARENTS


def _stated(source: Source, nodes: list[Node]) -> list[dict[str, str]]:
    by_node: dict[str, dict[str, str]] = source.snapshot.nodes if source.snapshot else {}
    return list(map(by_node.get, map(attrgetter("name"), nodes), repeat(_NOTHING)))


def _column(key: str, mappings: list[dict[str, str]]) -> Iterable[Any]:
    return map(dict.get, mappings, repeat(key), repeat(_ABSENT))


def _values(levels: tuple[str, ...], row: Row) -> dict[str, str]:
    return {key: value for key, value in zip(levels, row, strict=True) if value is not _ABSENT}


def populated_prefix(levels: tuple[str, ...], values: Mapping[str, str]) -> tuple[str, ...]:
    """The longest run of levels, from the coarsest, that the node has values for."""
    prefix: list[str] = []
    for key in levels:
        if key not in values:
            break
        prefix.append(key)
    return tuple(prefix)


def first_gap(levels: tuple[str, ...], values: Mapping[str, str]) -> tuple[str, str] | None:
    """(missing coarser key, present finer key) when a finer level has no parent value."""
    missing: str | None = None
    for key in levels:
        if key not in values:
            missing = missing or key
        elif missing is not None:
            return missing, key
    return None
