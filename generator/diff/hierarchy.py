"""Hierarchies: profiles added, removed and changed, nodes moved between them, and a Mermaid
diagram of each side aggregated to stay readable at any fleet size: per profile, one box per
level with its domain and node counts; the domains whose nodes change are drawn below their
level (a few, then "and N more")."""

from __future__ import annotations

from collections import Counter
from typing import Any

from generator.diff.side import Side

#: changed domains drawn per level and side before "and N more"
SHOWN_DOMAINS = 6


def compare_profiles(base: Side, head: Side) -> dict[str, Any]:
    before, after = Counter(base.profile_of.values()), Counter(head.profile_of.values())
    moved = _moves(base, head)
    changed = [
        {"id": p, "levels": list(head.profiles[p]), "nodesBefore": before[p], "nodesAfter": after[p]}
        for p in sorted(before.keys() & after.keys())
        if before[p] != after[p]
    ]
    touched = _touched(base, head)
    return {
        "added": [_profile(head, p, after[p]) for p in sorted(after.keys() - before.keys())],
        "removed": [_profile(base, p, before[p]) for p in sorted(before.keys() - after.keys())],
        "changed": changed,
        "moves": moved,
        "sources": _source_levels(base, head),
        "diagram": {"before": diagram(base, touched), "after": diagram(head, touched)},
    }


def _profile(side: Side, profile: str, nodes: int) -> dict[str, Any]:
    return {"id": profile, "levels": list(side.profiles[profile]), "nodes": nodes}


def _moves(base: Side, head: Side) -> list[dict[str, Any]]:
    """Nodes that change profile, counted per (from, to); a node new or gone has null."""
    counts: Counter[tuple[str | None, str | None]] = Counter()
    for node in base.profile_of.keys() | head.profile_of.keys():
        old, new = base.profile_of.get(node), head.profile_of.get(node)
        if old != new:
            counts[(old, new)] += 1
    return [
        {"from": old, "to": new, "nodes": n}
        for (old, new), n in sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    ]


def _source_levels(base: Side, head: Side) -> list[dict[str, Any]]:
    names = sorted(base.source_levels.keys() | head.source_levels.keys())
    return [
        {"source": n, "before": _levels(base, n), "after": _levels(head, n)}
        for n in names
        if base.source_levels.get(n) != head.source_levels.get(n)
    ]


def _levels(side: Side, source: str) -> list[str] | None:
    levels = side.source_levels.get(source)
    return None if levels is None else list(levels)


def _touched(base: Side, head: Side) -> set[tuple[str, tuple[str, ...]]]:
    """(profile, domain path) of every domain a node leaves or joins, on either side."""
    touched: set[tuple[str, tuple[str, ...]]] = set()
    for node in base.profile_of.keys() | head.profile_of.keys():
        old = (base.profile_of.get(node), base.domain_of.get(node))
        new = (head.profile_of.get(node), head.domain_of.get(node))
        if old != new:
            for profile, path in (old, new):
                if profile is not None and path is not None:
                    touched.update((profile, path[:depth]) for depth in range(1, len(path)))
    return touched


def diagram(side: Side, touched: set[tuple[str, tuple[str, ...]]]) -> str:
    """A Mermaid flowchart of one side; a handful of lines per profile and changed level."""
    lines = ["flowchart TD"]
    if not side.profiles:
        return "\n".join([*lines, '  empty["no inventory"]'])
    members: dict[str, list[str]] = {}
    for node, profile in sorted(side.profile_of.items()):
        members.setdefault(profile, []).append(node)
    for index, profile in enumerate(sorted(side.profiles)):
        lines += _profile_lines(side, f"p{index}", profile, members[profile], touched)
    return "\n".join(lines)


def _profile_lines(
    side: Side, ident: str, profile: str, nodes: list[str], touched: set[tuple[str, tuple[str, ...]]]
) -> list[str]:
    keys = side.profiles[profile]
    lines = [f'  {ident}["profile {profile}<br/>{len(nodes)} nodes"]']
    parent = ident
    for depth, key in enumerate(keys, start=1):
        paths = Counter(side.domain_of[n][:depth] for n in nodes)
        box = f"{ident}l{depth}"
        lines.append(f'  {parent} --> {box}["{_quote(key)}<br/>{len(paths)} domains"]')
        changed = sorted(p for p in paths if (profile, p) in touched)
        for i, path in enumerate(changed[:SHOWN_DOMAINS]):
            label = f"{_quote(path[-1])}: {paths[path]} nodes"
            lines.append(f'  {box} -.- {box}d{i}(["{label}"])')
        if len(changed) > SHOWN_DOMAINS:
            lines.append(f'  {box} -.- {box}more(["and {len(changed) - SHOWN_DOMAINS} more changed"])')
        parent = box
    return lines


def _quote(text: str) -> str:
    """Mermaid labels are quoted: a quote inside is written as its entity."""
    return text.replace('"', "#quot;")
