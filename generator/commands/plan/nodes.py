"""Nodes: the labels tasgen writes (through NodeFeatures) that change, summarised by the source
that writes them and by coarse domain (the node's first level), with the nodes' names and
changes only when they are few - never a line per node at scale.

Compared source by source: a snapshot's per-node mapping is compared as a whole first (most
nodes of a change are untouched), label by label only where it differs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ...model import PROFILE_KEY
from ...validate.labels import READ_ONLY_PARENTS
from .shape import DomainNodes, LabelChange, NodeChange, Nodes, Pin, SourceNodes
from .side import Side

#: up to this many changed nodes, the report names them and lists their changes
NAMED_NODES = 20
#: the profile label is tasgen's own, not a source's
PROFILE_WRITER = "(profile)"

Change = LabelChange


def compare_nodes(base: Side, head: Side) -> Nodes:
    changes: dict[str, list[Change]] = {}
    by_source: dict[str, tuple[int, Counter[str]]] = {}
    per_source = {
        source: _source_changes(base.stated.get(source, {}), head.stated.get(source, {}))
        for source in sorted(base.stated.keys() | head.stated.keys())
    }
    for source, found in _net(per_source).items():
        _record(changes, by_source, source, found)
    _record(changes, by_source, PROFILE_WRITER, _profile_changes(base, head))
    named = len(changes) <= NAMED_NODES
    return Nodes(
        total=len(head.nodes),
        changed=len(changes),
        by_source=tuple(
            SourceNodes(source=s, nodes=n, keys=dict(sorted(keys.items())))
            for s, (n, keys) in by_source.items()
        ),
        by_domain=_by_domain(base, head, changes),
        changes=tuple(
            NodeChange(node=n, labels=tuple(sorted(changes[n], key=lambda c: c.key))) for n in sorted(changes)
        )
        if named
        else None,
        pins=pins_of(head),
    )


def pins_of(side: Side) -> tuple[Pin, ...]:
    """The nodes the render keeps off the row the plan gives them, grouped by what they keep
    and where the plan puts them: a pin is not a move (the render writes none), and the plan
    says where the node goes once a live render finds it idle."""
    groups: dict[tuple[str | None, tuple[str, ...], str], list[str]] = {}
    for node in sorted(side.kept.keys() | side.transit):
        kept = node not in side.transit
        key = (
            side.rows[node].get(PROFILE_KEY) if kept else None,
            tuple(sorted(side.kept.get(node, ()))) if kept else (),
            side.profile_of.get(node, ""),
        )
        groups.setdefault(key, []).append(node)
    return tuple(
        Pin(
            profile=profile,
            flavors=flavors,
            planned_profile=planned,
            nodes=len(names),
            names=tuple(names) if len(names) <= NAMED_NODES else None,
        )
        for (profile, flavors, planned), names in sorted(
            groups.items(), key=lambda item: (item[0][0] or "", item[0][1], item[0][2])
        )
    )


def _record(
    changes: dict[str, list[Change]],
    by_source: dict[str, tuple[int, Counter[str]]],
    source: str,
    found: dict[str, list[Change]],
) -> None:
    if not found:
        return
    for node, node_changes in found.items():
        changes.setdefault(node, []).extend(node_changes)
    keys = Counter(c.key for node_changes in found.values() for c in node_changes)
    by_source[source] = (len(found), keys)


def _source_changes(
    old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]
) -> dict[str, list[Change]]:
    found = {}
    for node in old.keys() | new.keys():
        before, after = old.get(node, {}), new.get(node, {})
        if before != after:
            labels = [
                Change(key=k, before=before.get(k), after=after.get(k))
                for k in before.keys() | after.keys()
                if k not in READ_ONLY_PARENTS and before.get(k) != after.get(k)
            ]
            if labels:
                found[node] = labels
    return found


def _net(per_source: dict[str, dict[str, list[Change]]]) -> dict[str, dict[str, list[Change]]]:
    """The changes with a label that moves from one source to another netted out: a renamed
    source (or a node handed to another) removes the label from the old source's NodeFeature
    and sets it in the new one's, and the node ends with the value it had. What remains of a
    node's change is the new writer's (the old one's when nobody writes the label any more)."""
    seen = Counter(node for found in per_source.values() for node in found)
    for node in (n for n, count in seen.items() if count > 1):
        by_key: dict[str, list[tuple[str, Change]]] = {}
        for source, found in per_source.items():
            for change in found.pop(node, []):
                by_key.setdefault(change.key, []).append((source, change))
        for key, made in by_key.items():
            before = next((c.before for _, c in made if c.before is not None), None)
            writer, after = next(((s, c.after) for s, c in made if c.after is not None), (made[0][0], None))
            if before != after:
                per_source[writer].setdefault(node, []).append(Change(key=key, before=before, after=after))
    return per_source


def _profile_changes(base: Side, head: Side) -> dict[str, list[Change]]:
    """The profile and flavor labels as the two renders write them: a node kept on its flavor
    until idle (compile/pins.py) shows no change, as the render writes none."""
    if not base.rows and not head.rows:  # a side that was not compiled
        old, new = base.profile_of, head.profile_of
        return {
            node: [Change(key=PROFILE_KEY, before=old.get(node), after=new.get(node))]
            for node in old.keys() | new.keys()
            if old.get(node) != new.get(node)
        }
    return _source_changes(_plain(base.rows), _plain(head.rows))


def _plain(rows: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    return {node: dict(labels) for node, labels in rows.items()}


def _by_domain(base: Side, head: Side, changes: dict[str, list[Change]]) -> tuple[DomainNodes, ...]:
    """Changed nodes per coarse domain: the first level of the node's profile after (before, for
    a node that leaves), e.g. its zone; hostname-only nodes count under "(no topology)"."""
    counts = Counter(_coarse(head if node in head.profile_of else base, node) for node in changes)
    return tuple(
        DomainNodes(level=level, domain=domain, nodes=n)
        for (level, domain), n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def _coarse(side: Side, node: str) -> tuple[str, str]:
    keys = side.profiles[side.profile_of[node]]
    return (keys[0], side.domain_of[node][0]) if len(keys) > 1 else ("(no topology)", "")
