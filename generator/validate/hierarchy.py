"""Hierarchies: the ordered level keys of a source and the values a node has for them."""

from __future__ import annotations

import re
from collections.abc import Mapping

from generator.model import Node, Source
from generator.validate.labels import READ_ONLY_PARENTS

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
