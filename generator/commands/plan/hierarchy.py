"""Hierarchies: profiles added, removed and changed, nodes moved between them, and a Mermaid
diagram of each side aggregated to stay readable at any fleet size: per profile, one box per
level with its domain and node counts; the domains whose nodes change are drawn below their
level (a few, then "and N more")."""

from __future__ import annotations

from collections import Counter

from ...model import HOSTNAME_KEY, PROFILE_KEY
from .shape import (
    BeforeAfter,
    Move,
    ProfileChanged,
    ProfileNodes,
    Profiles,
    SourceLevels,
)
from .side import Side

#: changed domains drawn per level and side before "and N more"
SHOWN_DOMAINS = 6


def compare_profiles(base: Side, head: Side) -> Profiles:
    """Profiles counted by the labels each render writes: a profile whose nodes are all pinned
    to it is still written (with its Topology and flavor), so it is changed, not removed."""
    before, after = _written_counts(base), _written_counts(head)
    changed = tuple(
        ProfileChanged(id=p, levels=_levels(head, base, p), nodes_before=before[p], nodes_after=after[p])
        for p in sorted(before.keys() & after.keys())
        if before[p] != after[p]
    )
    touched = _touched(base, head)
    return Profiles(
        added=tuple(_profile(head, base, p, after[p]) for p in sorted(after.keys() - before.keys())),
        removed=tuple(_profile(base, head, p, before[p]) for p in sorted(before.keys() - after.keys())),
        changed=changed,
        moves=_moves(base, head),
        sources=_source_levels(base, head),
        diagram=BeforeAfter(before=diagram(base, touched), after=diagram(head, touched)),
    )


def _profile(side: Side, other: Side, profile: str, nodes: int) -> ProfileNodes:
    return ProfileNodes(id=profile, levels=_levels(side, other, profile), nodes=nodes)


def _written_counts(side: Side) -> Counter[str]:
    """Nodes per profile label the side's render writes (a node in transit carries none)."""
    return Counter(p for node in side.profile_of if (p := _written(side, node)) is not None)


def _levels(side: Side, other: Side, profile: str) -> tuple[str, ...]:
    """A profile's levels, from the other side when this one writes it only on pinned nodes
    (no longer planned there)."""
    return side.profiles.get(profile) or other.profiles.get(profile, ())


def _moves(base: Side, head: Side) -> tuple[Move, ...]:
    """Nodes whose written profile label changes, counted per (from, to); a node new or gone
    has null. A node the render keeps on its previous row (or in transit) does not move: it is
    a pin (report.nodes.pins)."""
    counts: Counter[tuple[str | None, str | None]] = Counter()
    for node in base.profile_of.keys() | head.profile_of.keys():
        if node in head.kept or node in head.transit or node in base.transit:
            continue
        old, new = _written(base, node), _written(head, node)
        if old != new:
            counts[(old, new)] += 1
    return tuple(
        Move(from_=old, to=new, nodes=n)
        for (old, new), n in sorted(
            counts.items(), key=lambda item: (-item[1], str(item[0][0]), str(item[0][1]))
        )
    )


def _written(side: Side, node: str) -> str | None:
    """The profile label the side's render writes on the node (its planned profile when the
    side was not rendered with rows)."""
    row = side.rows.get(node)
    return row.get(PROFILE_KEY) if row is not None else side.profile_of.get(node)


def _source_levels(base: Side, head: Side) -> tuple[SourceLevels, ...]:
    names = sorted(base.source_levels.keys() | head.source_levels.keys())
    return tuple(
        SourceLevels(source=n, before=base.source_levels.get(n), after=head.source_levels.get(n))
        for n in names
        if base.source_levels.get(n) != head.source_levels.get(n)
    )


def _touched(base: Side, head: Side) -> set[tuple[str, tuple[str, ...]]]:
    """(profile, domain path) of every domain a node leaves or joins, on either side."""
    parents: set[tuple[str | None, tuple[str, ...] | None]] = set()
    for node in base.profile_of.keys() | head.profile_of.keys():
        old = (base.profile_of.get(node), base.domain_of.get(node))
        new = (head.profile_of.get(node), head.domain_of.get(node))
        if old != new:
            parents.add((old[0], old[1][:-1] if old[1] else None))
            parents.add((new[0], new[1][:-1] if new[1] else None))
    # Few distinct parent domains, however many nodes: expand those into every coarser domain.
    return {
        (profile, path[:depth])
        for profile, path in parents
        if profile is not None and path is not None
        for depth in range(1, len(path) + 1)
    }


def diagram(side: Side, touched: set[tuple[str, tuple[str, ...]]]) -> str:
    """A Mermaid flowchart of one side; a handful of lines per profile and changed level."""
    lines = ["flowchart TD"]
    if not side.profiles:
        return "\n".join([*lines, '  empty["no inventory"]'])
    for index, profile in enumerate(sorted(side.profiles)):
        lines += _profile_lines(side, f"p{index}", profile, touched)
    return "\n".join(lines)


def domain_counts(side: Side, profile: str) -> list[Counter[tuple[str, ...]]]:
    """Per level above hostname, coarsest first: nodes per domain (a domain is the path of values
    down to it). One pass over the nodes, then over their parent domains."""
    nodes = side.members[profile]
    parents = Counter(side.domain_of[n][:-1] for n in nodes)
    levels: list[Counter[tuple[str, ...]]] = []
    for cut in range(1, len(side.profiles[profile])):
        per_domain: Counter[tuple[str, ...]] = Counter()
        for path, count in parents.items():
            per_domain[path[:cut]] += count
        levels.append(per_domain)
    return levels


def _profile_lines(
    side: Side, ident: str, profile: str, touched: set[tuple[str, tuple[str, ...]]]
) -> list[str]:
    keys, nodes = side.profiles[profile], len(side.members[profile])
    lines = [f'  {ident}["profile {profile}<br/>{nodes} nodes"]']
    parent = ident
    for depth, paths in enumerate(domain_counts(side, profile), start=1):
        box = f"{ident}l{depth}"
        lines.append(f'  {parent} --> {box}["{_quote(keys[depth - 1])}<br/>{len(paths)} domains"]')
        changed = sorted(p for p in paths if (profile, p) in touched)
        for i, path in enumerate(changed[:SHOWN_DOMAINS]):
            lines.append(f'  {box} -.- {box}d{i}(["{_quote(path[-1])}: {paths[path]} nodes"])')
        if len(changed) > SHOWN_DOMAINS:
            lines.append(f'  {box} -.- {box}more(["and {len(changed) - SHOWN_DOMAINS} more changed"])')
        parent = box
    lines.append(f'  {parent} --> {ident}host["{HOSTNAME_KEY}<br/>{nodes} nodes"]')
    return lines


def _quote(text: str) -> str:
    """Mermaid labels are quoted: a quote inside is written as its entity."""
    return text.replace('"', "#quot;")
