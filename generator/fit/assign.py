"""Kueue's topology assignment, domain by domain: where each pod of a PodSet goes, so that the
next PodSet of the same workload on the same flavor is placed on what is left (Kueue's
``FindTopologyAssignmentsForFlavor`` keeps the earlier PodSets' usage as ``assumedUsage``).

The fast index (:mod:`generator.fit.index`) answers whether one PodSet fits; this walk also
says where it goes, at a cost of the flavor's nodes per PodSet. The engine uses it only for the
PodSets of a workload that share a flavor after the first. Port of Kueue v0.17's
pkg/cache/scheduler/tas_flavor_snapshot.go (TASProfileMixed on, TASBalancedPlacement and
TASMultiLayerTopology off: their defaults).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..kube.selectors import Requirement, selects, terms_match
from ..kube.taints import untolerated
from ..model import HOSTNAME_KEY
from .cluster import NodeFacts

INFINITE = 2**31 - 1

#: a leaf domain's values (every level's) -> resources already assumed taken there
Usage = dict[tuple[str, ...], Counter[str]]


def count_in(request: Mapping[str, int], capacity: Mapping[str, int]) -> tuple[int, str]:
    """Kueue's ``Requests.CountInWithLimitingResource``: how many times ``request`` fits, and
    the resource that limits it (ties: the first by name)."""
    result: int | None = None
    limiting = ""
    for name in sorted(request):
        value = request[name]
        if name not in capacity and value != 0:
            return 0, name
        count = INFINITE if value == 0 else min(INFINITE, _go_div(capacity.get(name, 0), value))
        if result is None or count < result:
            result, limiting = count, name
    return (result or 0), limiting


def _go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@dataclass(eq=False)
class Domain:
    values: tuple[str, ...]
    children: list[Domain] = field(default_factory=list)
    capacity: dict[str, int] = field(default_factory=dict)  # leaves: free capacity
    node: NodeFacts | None = None  # leaves, when the lowest level is the hostname
    state: int = 0
    with_leader: int = 0
    slices: int = 0
    slices_with_leader: int = 0
    leader: int = 0


@dataclass
class Tree:
    """A flavor's domains, built from its nodes as Kueue's TAS cache builds them."""

    levels: tuple[str, ...]
    per_level: list[list[Domain]]
    roots: list[Domain]
    leaves: list[Domain]

    @property
    def node_level(self) -> bool:
        return bool(self.levels) and self.levels[-1] == HOSTNAME_KEY


def tree(levels: tuple[str, ...], nodes: Sequence[NodeFacts]) -> Tree:
    by_values: list[dict[tuple[str, ...], Domain]] = [{} for _ in levels]
    node_level = bool(levels) and levels[-1] == HOSTNAME_KEY
    for node in nodes:
        values = tuple(node.labels[k] for k in levels)
        leaf = by_values[-1].get(values)
        if leaf is None:
            leaf = by_values[-1][values] = Domain(values, node=node if node_level else None)
            for depth in range(len(levels) - 2, -1, -1):
                parent = by_values[depth].get(values[: depth + 1])
                child = by_values[depth + 1][values[: depth + 2]]
                if parent is None:
                    parent = by_values[depth][values[: depth + 1]] = Domain(values[: depth + 1])
                    parent.children.append(child)
                else:
                    parent.children.append(child)
                    break
        for r, v in node.allocatable.items():
            leaf.capacity[r] = leaf.capacity.get(r, 0) + v
    per_level = [list(d.values()) for d in by_values]
    return Tree(levels, per_level, per_level[0] if per_level else [], per_level[-1] if per_level else [])


@dataclass(frozen=True)
class Request:
    """One PodSet's placement request, resolved against the flavor's levels."""

    count: int
    requests: Mapping[str, int]  # one pod's
    level: int
    slice_level: int
    size: int
    required: bool
    unconstrained: bool
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] | None = None
    affinity: tuple[tuple[Requirement, ...], ...] | None = None
    leader: Mapping[str, int] | None = None  # the leader's one pod, in a group


@dataclass(frozen=True)
class Placed:
    level: int
    domains: int  # domains at ``level`` that could take it whole
    workers: dict[tuple[str, ...], int]  # leaf values -> pods
    leaders: dict[tuple[str, ...], int]


@dataclass(frozen=True)
class NotFit:
    fit: int
    count: int
    excluded: Counter[str]
    nodes: int


@dataclass(frozen=True)
class NoDomains:
    level: int


def find(t: Tree, request: Request, assumed: Usage) -> Placed | NotFit | NoDomains:
    """Kueue's ``findTopologyAssignment`` for one PodSet (and its group's leader)."""
    per_pod = dict(request.requests) | {"pods": 1}
    per_leader = (dict(request.leader) | {"pods": 1}) if request.leader is not None else None
    leaders = 1 if per_leader is not None else 0
    excluded, nodes = _fill(t, request, per_pod, per_leader, assumed)
    search = _Search(t, request, leaders, excluded, nodes)
    found = search.level_with_fit_domains(request.level)
    if not isinstance(found, tuple):
        return found
    level, fit_domains, whole = found
    count, size, unconstrained = request.count, request.size, request.unconstrained
    current = _minimum(fit_domains, count, leaders, size, unconstrained, slices=True)
    depth = level
    while depth < min(len(t.levels) - 1, request.slice_level):
        lower = _sorted([c for d in current for c in d.children], unconstrained)
        current = _minimum(lower, count, leaders, size, unconstrained, slices=True)
        depth += 1
    while depth < len(t.levels) - 1:
        size_here = size if depth < request.slice_level else 1
        chosen: list[Domain] = []
        for d in current:
            chosen += _minimum(
                _sorted(d.children, unconstrained),
                d.state,
                d.leader,
                size_here,
                unconstrained,
                slices=size_here > 1,
            )
        current = chosen
        depth += 1
    leader_at = {d.values: d.leader for d in current if d.leader > 0} if leaders else {}
    workers_at = {d.values: d.state for d in current if d.state > 0}
    return Placed(level, whole, workers_at, leader_at)


def add_usage(assumed: Usage, placed: Mapping[tuple[str, ...], int], one_pod: Mapping[str, int]) -> None:
    """Kueue's ``addAssumedUsage``: a pod's requests (its pod slot not counted) times the pods."""
    for values, count in placed.items():
        into = assumed.setdefault(values, Counter())
        for r, v in one_pod.items():
            into[r] += v * count


def _fill(
    t: Tree,
    request: Request,
    per_pod: Mapping[str, int],
    per_leader: Mapping[str, int] | None,
    assumed: Usage,
) -> tuple[Counter[str], int]:
    """Kueue's ``fillInCounts``: each domain's pods and slices, and the nodes left out."""
    excluded: Counter[str] = Counter()
    for level in t.per_level:
        for d in level:
            d.state = d.with_leader = d.slices = d.slices_with_leader = d.leader = 0
    for leaf in t.leaves:
        why = _left_out(leaf.node, request) if t.node_level and leaf.node is not None else None
        if why is not None:
            excluded[why] += 1
        else:
            _fill_leaf(leaf, per_pod, per_leader, assumed.get(leaf.values), excluded)
    for root in t.roots:
        _fill_parent(root, request.size, request.slice_level, 0)
    return excluded, len(t.leaves)


def _fill_leaf(
    leaf: Domain,
    per_pod: Mapping[str, int],
    per_leader: Mapping[str, int] | None,
    assumed: Counter[str] | None,
    excluded: Counter[str],
) -> None:
    remaining = dict(leaf.capacity)
    for r, v in (assumed or {}).items():
        remaining[r] = remaining.get(r, 0) - v
    leaf.state, limiting = count_in(per_pod, remaining)
    if leaf.state == 0 and limiting:
        excluded[f"resource {limiting}"] += 1
    if per_leader is not None and count_in(per_leader, remaining)[0] > 0:
        leaf.leader = 1
        for r, v in per_leader.items():
            remaining[r] = remaining.get(r, 0) - v
    leaf.with_leader = count_in(per_pod, remaining)[0]


def _left_out(node: NodeFacts, request: Request) -> str | None:
    taint = untolerated(node.taints, request.tolerations)
    if taint is not None:
        key, value, effect = taint
        return f"taint {key}={value}:{effect}" if value else f"taint {key}:{effect}"
    if not selects(request.node_selector or {}, (), node.labels):
        return "nodeSelector"
    if request.affinity is not None and not terms_match(request.affinity, node.labels):
        return "affinity"
    return None


def _fill_parent(d: Domain, size: int, slice_level: int, level: int) -> None:
    if not d.children:
        if level == slice_level:
            d.slices, d.slices_with_leader = d.state // size, d.with_leader // size
        return
    state = slices = leader = 0
    gap = slice_gap = INFINITE
    for child in d.children:
        _fill_parent(child, size, slice_level, level + 1)
        state += child.state
        slices += child.slices
        gap = min(gap, child.state - child.with_leader)
        slice_gap = min(slice_gap, child.slices - child.slices_with_leader)
        leader = max(leader, child.leader)
    d.state, d.with_leader, d.leader = state, state - gap, leader
    d.slices, d.slices_with_leader = slices, slices - slice_gap
    if level == slice_level:
        d.slices, d.slices_with_leader = d.state // size, d.with_leader // size


def _sorted(domains: list[Domain], unconstrained: bool) -> list[Domain]:
    """Kueue's ``sortedDomains``: BestFit (slices descending) or, unconstrained,
    LeastFreeCapacity (slices ascending); then pods ascending, then the values."""
    sign = 1 if unconstrained else -1
    return sorted(domains, key=lambda d: (sign * d.slices, d.state, d.values))


def _sorted_with_leader(domains: list[Domain], unconstrained: bool) -> list[Domain]:
    sign = 1 if unconstrained else -1
    return sorted(domains, key=lambda d: (-d.leader, sign * d.slices_with_leader, d.with_leader, d.values))


def _best_fit(domains: list[Domain], needed: int, state: Callable[[Domain], int]) -> Domain:
    """Kueue's ``findBestFitDomainBy``: the first domain with the least state that holds
    ``needed``; the first domain when none does."""
    best = domains[0]
    for d in domains:
        if needed <= state(d) < state(best):
            best = d
    return best


def _slice_state(leaders: int) -> Callable[[Domain], int]:
    return _slices_with_leader if leaders > 0 else _slices


@dataclass
class _Search:
    t: Tree
    request: Request
    leaders: int
    excluded: Counter[str]
    nodes: int

    def level_with_fit_domains(self, level: int) -> tuple[int, list[Domain], int] | NotFit | NoDomains:
        """Kueue's ``findLevelWithFitDomains``: the level, its chosen domains, and how many
        of its domains hold the whole PodSet."""
        request, leaders = self.request, self.leaders
        domains = self.t.per_level[level] if self.t.per_level else []
        if not domains:
            return NoDomains(level)
        unconstrained = request.unconstrained
        ordered = _sorted_with_leader(domains, unconstrained)
        top = ordered[0]
        count = request.count // request.size
        whole = sum(1 for d in domains if d.slices_with_leader >= count and d.leader >= leaders)
        if not unconstrained and top.slices_with_leader >= count and top.leader >= leaders:
            top = _best_fit(ordered, count, _slice_state(leaders))
        if unconstrained:  # LeastFreeCapacity
            for candidate in ordered:
                if candidate.slices >= count:
                    return level, [candidate], whole
            if request.required:
                return self._not_fit(ordered[-1].state, count)
        if top.slices_with_leader < count or top.leader < leaders:
            if request.required:
                return self._not_fit(top.slices, count)
            if level > 0 and not unconstrained:
                return self.level_with_fit_domains(level - 1)
            return self._spread(ordered, level, count, unconstrained)
        return level, [top], whole

    def _spread(
        self, ordered: list[Domain], level: int, count: int, unconstrained: bool
    ) -> tuple[int, list[Domain], int] | NotFit:
        results: list[Domain] = []
        remaining, remaining_leaders = count, self.leaders
        i = 0
        while remaining_leaders > 0 and i < len(ordered) and ordered[i].leader > 0:
            d = ordered[i]
            if not unconstrained and d.slices_with_leader >= remaining:
                d = _best_fit(ordered[i:], remaining, _slice_state(remaining_leaders))
            results.append(d)
            remaining_leaders -= d.leader
            remaining -= d.slices_with_leader
            i += 1
        if remaining_leaders > 0:
            return self._not_fit(self.leaders - remaining_leaders, count)
        rest = _sorted(ordered[i:], unconstrained)
        for j in range(len(rest)):
            if remaining <= 0:
                break
            d = rest[j]
            if not unconstrained and d.slices >= remaining:
                d = _best_fit(rest[j:], remaining, _slice_state(0))
            results.append(d)
            remaining -= d.slices
        if remaining > 0:
            return self._not_fit(count - remaining, count)
        return level, results, 0

    def _not_fit(self, fit: int, count: int) -> NotFit:
        return NotFit(fit, count, self.excluded, self.nodes)


def _minimum(
    domains: list[Domain], count: int, leaders: int, size: int, unconstrained: bool, *, slices: bool
) -> list[Domain]:
    """Kueue's ``updateCountsToMinimumGeneric``: the fewest domains, in order, that take
    ``count`` pods (``count // size`` slices) and the leaders; their states set to what they
    take."""
    result: list[Domain] = []
    remaining = count // size if slices else count
    remaining_leaders = leaders
    for i in range(len(domains)):
        if remaining_leaders > 0:
            d, remaining, remaining_leaders, done = _take_with_leader(
                domains, i, remaining, remaining_leaders, size, unconstrained, slices
            )
        else:
            d, remaining, done = _take(domains, i, remaining, size, unconstrained, slices)
        result.append(d)
        if done:
            return result
    return []  # Kueue logs "unexpected remainingCount" and assigns nothing


def _take_with_leader(
    domains: list[Domain], i: int, remaining: int, leaders: int, size: int, unconstrained: bool, slices: bool
) -> tuple[Domain, int, int, bool]:
    """Kueue's ``consumeWithLeadersGeneric``."""
    d = domains[i]
    with_leader = _slices_with_leader if slices else _pods_with_leader
    if not unconstrained and with_leader(d) >= remaining and d.leader >= leaders:
        d = _best_fit(domains[i:], remaining, with_leader)
    if with_leader(d) >= remaining and d.leader >= leaders:
        if slices:
            d.slices = remaining
        d.leader = leaders
        d.state = remaining * (size if slices else 1)
        return d, 0, 0, True
    if slices:
        d.slices_with_leader = min(d.slices_with_leader, remaining)
        d.leader = min(d.leader, leaders)
        d.state = d.slices_with_leader * size
        return d, remaining - d.slices_with_leader, leaders - d.leader, False
    # pods: Kueue subtracts first, then clamps
    remaining -= d.with_leader
    leaders -= d.leader
    d.with_leader = min(d.with_leader, remaining)
    d.leader = min(d.leader, leaders)
    return d, remaining, leaders, False


def _take(
    domains: list[Domain], i: int, remaining: int, size: int, unconstrained: bool, slices: bool
) -> tuple[Domain, int, bool]:
    """The tail of ``updateCountsToMinimumGeneric``, once every leader is placed."""
    d = domains[i]
    own = _slices if slices else _pods
    if not unconstrained and own(d) >= remaining:
        d = _best_fit(domains[i:], remaining, own)
    d.leader = 0
    if own(d) >= remaining:
        d.state = remaining * (size if slices else 1)
        if slices:
            d.slices = remaining
        return d, 0, True
    if slices:
        d.state = d.slices * size
    return d, remaining - own(d), False


def _slices(d: Domain) -> int:
    return d.slices


def _slices_with_leader(d: Domain) -> int:
    return d.slices_with_leader


def _pods(d: Domain) -> int:
    return d.state


def _pods_with_leader(d: Domain) -> int:
    return d.with_leader
