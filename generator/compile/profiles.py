"""Assign every node exactly one hierarchy profile (docs/reference/rendered.md).

A profile ID is the first 12 hex digits of the SHA-256 of the profile's label keys, coarsest
first, each followed by a newline (UTF-8). It is a valid label value and a valid part of a
Kubernetes name, it depends on nothing but the ordered keys, and it never changes between
releases (changing it would rename every generated Topology and ResourceFlavor).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from itertools import repeat
from operator import attrgetter, itemgetter

from ..model import HOSTNAME_KEY, Finding, Source
from ..rules.compile import NODE_AMBIGUOUS, PROFILE_COLLISION
from ..validate.checks import Context
from ..validate.hierarchy import populated_prefix

#: how many node names a warning lists before it says "and N more"
_SHOWN = 5


@cache
def profile_id(keys: tuple[str, ...]) -> str:
    digest = hashlib.sha256("".join(k + "\n" for k in keys).encode()).hexdigest()
    return digest[:12]


@dataclass(frozen=True)
class Profile:
    id: str
    keys: tuple[str, ...]  # coarsest first, ending with kubernetes.io/hostname


@dataclass
class Assignment:
    """Every node's profile, and which source (if any) gave it."""

    profile_of: dict[str, Profile] = field(default_factory=dict)  # node name -> profile
    source_of: dict[str, str] = field(default_factory=dict)  # node name -> the one source (any order)
    #: node name -> its rack path: the node's values of its profile's levels above the
    #: hostname ("" for a hostname-only node); what labels shards are keyed on (any order)
    domain_of: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def nodes_per_profile(self) -> Counter[str]:
        """Profile ID -> how many nodes have it. (A comprehension reads ``p.id`` through
        3.11's specialised attribute load, faster here than ``map(attrgetter("id"), ...)``;
        the node names are not touched.)"""
        return Counter([p.id for p in self.profile_of.values()])

    def profiles(self) -> dict[str, Profile]:
        return {p.id: p for p in self.profile_of.values()}


def assign(ctx: Context) -> Assignment:
    ready = [s for s in ctx.loaded_sources() if not ctx.expired(s)]
    selected = [list(map(attrgetter("name"), ctx.selected[s.name])) for s in ready]
    if sum(map(len, selected)) == len(set().union(*selected)):
        return assign_disjoint(ctx, ready)  # no node selected twice (the usual fleet)
    return assign_one_by_one(ctx, ready)


def assign_disjoint(ctx: Context, ready: list[Source]) -> Assignment:
    """What assign_one_by_one makes when no node is selected by two Ready sources: each
    distinct set of level values placed once, the nodes mapped in C-speed passes."""
    by_keys: dict[tuple[str, ...], Profile] = {}
    profile: dict[str, Profile] = {}
    source_of: dict[str, str] = {}
    domain: dict[str, str] = {}
    for source in ready:
        stated = ctx.stated(source)
        placed = {row: _place(by_keys, source, values) for row, values in stated.distinct.items()}
        names = list(map(attrgetter("name"), ctx.selected[source.name]))
        places = list(map(placed.__getitem__, stated.rows))
        profile.update(zip(names, map(itemgetter(0), places), strict=True))
        domain.update(zip(names, map(itemgetter(1), places), strict=True))
        source_of.update(zip(names, repeat(source.name)))
    order = ctx.node_names
    if len(profile) < len(order):  # nodes no Ready source selects: hostname-only
        hostname_only = _profile(by_keys, (HOSTNAME_KEY,))
        profile = dict(zip(order, map(profile.get, order, repeat(hostname_only)), strict=True))
    elif len(ready) > 1:
        profile = dict(zip(order, map(profile.__getitem__, order), strict=True))
    # (else one source selects every node, in node order: its mapping is in order already)
    result = Assignment(profile)
    result.source_of, result.domain_of = source_of, domain  # (looked up by node, never iterated)
    # Every profile made, not one per ID: two key lists with one ID are what this finds.
    result.findings += _collisions(ctx, by_keys.values())
    return result


def _place(
    by_keys: dict[tuple[str, ...], Profile], source: Source, values: dict[str, str]
) -> tuple[Profile, str]:
    """The profile and rack path of the nodes with these values."""
    keys = _keys(source, values)
    return _profile(by_keys, keys), _domain(keys, values)


def _profile(by_keys: dict[tuple[str, ...], Profile], keys: tuple[str, ...]) -> Profile:
    """The one Profile of these keys (made once, shared by every node that has them)."""
    return by_keys.get(keys) or by_keys.setdefault(keys, Profile(profile_id(keys), keys))


def assign_one_by_one(ctx: Context, ready: list[Source]) -> Assignment:
    """Every node's profile, node by node (what assign_disjoint makes, the slow way); nodes
    selected by several Ready sources fall back to hostname-only, with a warning."""
    result = Assignment()
    ambiguous: dict[tuple[str, ...], list[str]] = defaultdict(list)
    by_keys: dict[tuple[str, ...], Profile] = {}
    candidates = _candidates(ctx, ready)
    placed: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[tuple[str, ...], str]] = {}
    for name in sorted(ctx.inventory.nodes):
        mine = candidates.get(name, [])
        keys: tuple[str, ...] = (HOSTNAME_KEY,)
        if len(mine) == 1:
            keys, result.domain_of[name] = _placement(placed, *mine[0])
            result.source_of[name] = mine[0][0].name
        elif mine:
            ambiguous[tuple(s.name for s, _ in mine)].append(name)
        result.profile_of[name] = _profile(by_keys, keys)
    result.findings += _ambiguity_warnings(ctx, ambiguous)
    result.findings += _collisions(ctx, by_keys.values())
    return result


def _candidates(ctx: Context, ready: list[Source]) -> dict[str, list[tuple[Source, dict[str, str]]]]:
    """Node name -> the Ready sources selecting it, each with the values it gives the node."""
    found: dict[str, list[tuple[Source, dict[str, str]]]] = defaultdict(list)
    for source in ready:
        for node, values in ctx.hierarchy_values(source):
            found[node.name].append((source, values))
    return found


def _placement(
    placed: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[tuple[str, ...], str]],
    source: Source,
    values: dict[str, str],
) -> tuple[tuple[str, ...], str]:
    """A node's profile keys and rack path, made once per source and set of level values (a
    rack's nodes share them)."""
    memo = (source.name, tuple(values.items()))
    found = placed.get(memo)
    if found is None:
        keys = _keys(source, values)
        found = placed[memo] = keys, _domain(keys, values)
    return found


def _keys(source: Source, values: dict[str, str]) -> tuple[str, ...]:
    return (*populated_prefix(source.levels, values), HOSTNAME_KEY)


def _domain(keys: tuple[str, ...], values: dict[str, str]) -> str:
    return "".join(f"{key}={values[key]}\n" for key in keys[:-1])


def _ambiguity_warnings(ctx: Context, ambiguous: dict[tuple[str, ...], list[str]]) -> Iterable[Finding]:
    for names, nodes in sorted(ambiguous.items()):
        shown = ", ".join(nodes[:_SHOWN]) + (
            f" and {len(nodes) - _SHOWN} more" if len(nodes) > _SHOWN else ""
        )
        message = (
            f"{len(nodes)} node(s) are selected by several Ready sources ({', '.join(names)}): "
            f"{shown}; they fall back to the hostname-only profile (no tree is invented). "
            "Narrow the nodeSelectors so that one source selects each node"
        )
        where = ctx.inventory.sources[names[-1]].where.at("spec", "nodeSelector")
        yield NODE_AMBIGUOUS(where, message)


def _collisions(ctx: Context, profiles: Iterable[Profile]) -> Iterable[Finding]:
    seen: dict[str, Profile] = {}
    for profile in sorted(profiles, key=lambda p: p.keys):
        other = seen.setdefault(profile.id, profile)
        if other.keys != profile.keys:
            where = next(iter(ctx.inventory.sources.values())).where if ctx.inventory.sources else None
            message = (
                f"profiles {list(other.keys)} and {list(profile.keys)} hash to the same ID "
                f"{profile.id}; rename a level key"
            )
            if where is not None:
                yield PROFILE_COLLISION(where, message)
