"""Each PodSet's verdict on an empty cluster, as Kueue v0.17's scheduling cycles reach it: the
flavor assigner walks the queue's flavors in order for each PodSet group (the TAS checks, the
flavor's taints, node affinity, then quota, the workload's earlier PodSets counted), then
topology-aware scheduling places the groups on their flavors, each on what the earlier left; a
failed cycle is retried from the next flavors. The reasons are Kueue's own
(:mod:`generator.fit.reasons`).

Pure: a function of the :class:`~generator.fit.cluster.Cluster` and the workloads. Each flavor's
domains are indexed once (:mod:`generator.fit.index`); a PodSet alone on its flavor costs its
node kinds and domain compositions; PodSets sharing a flavor, or a leader and its workers, are
placed domain by domain (:mod:`generator.fit.assign`). Explained in docs/explanation/fit.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..kube.quantities import kueue_text
from ..kube.selectors import holds, selects, terms_match
from ..kube.taints import untolerated
from ..model import Taint
from . import assign, reasons
from . import index as domain_index
from .cluster import Cluster, ClusterQueue, Flavor, Group, NodeFacts
from .podsets import PodSet, TopologyRequest

INFINITE = 2**31 - 1


@dataclass(frozen=True)
class Verdict:
    fits: bool
    flavor: str | None = None
    level: str | None = None
    domains: int = 0
    reason: reasons.Reason | None = None

    @property
    def cause(self) -> reasons.Cause | None:
        """What the reason is about."""
        return self.reason.cause if self.reason is not None else None


@dataclass
class _State:
    state: int = 0
    slices: int = 0


@dataclass
class Engine:
    """Verdicts over one cluster; indexes are built on first use and kept."""

    cluster: Cluster
    #: judge with the cluster's usage (what fits now) rather than on an empty cluster
    with_usage: bool = False
    _indexes: dict[str, domain_index.FlavorIndex | None] = field(default_factory=dict)
    _trees: dict[str, assign.Tree] = field(default_factory=dict)

    def index(self, flavor: str) -> domain_index.FlavorIndex | None:
        if flavor not in self._indexes:
            found = self.cluster.flavors.get(flavor)
            self._indexes[flavor] = domain_index.build(self.cluster, found) if found else None
        return self._indexes[flavor]

    def judge(self, queue: ClusterQueue, podsets: Sequence[PodSet]) -> list[Verdict]:
        """One verdict per PodSet, in order, as Kueue's scheduling cycles reach it: each cycle
        assigns flavors group by group (PodSets of one ``podset-group-name`` together, quota
        adding up over the workload), then places the TAS PodSets flavor by flavor, each on
        what the earlier ones left. A cycle that fails while a PodSet's flavor was not its
        last one is retried at once from the next flavor (Kueue's LastTriedFlavorIdx), until
        one admits or none is left. Unadmitted, the verdicts are those of the first cycle that
        ends a turn through the flavors (:meth:`_ends_turn`), not of the retries after it."""
        groups = _groups(podsets)
        start: dict[tuple[int, int], int] = {}
        turn: list[Verdict] | None = None
        for _ in range(2 + sum(len(g.flavors) for g in queue.groups)):
            verdicts, tried, ends = self._cycle(queue, podsets, groups, start)
            if all(v.fits for v in verdicts):
                return verdicts
            if turn is None and ends:
                turn = verdicts
            if all(i == -1 for i in tried.values()):
                break
            start = {k: i + 1 for k, i in tried.items()}
        return turn if turn is not None else verdicts

    def _cycle(
        self,
        queue: ClusterQueue,
        podsets: Sequence[PodSet],
        groups: list[list[int]],
        start: Mapping[tuple[int, int], int],
    ) -> tuple[list[Verdict], dict[tuple[int, int], int], bool]:
        """One scheduling cycle: the verdicts, the flavor index each (group, resource group)
        tried last (-1 after the last flavor), and whether its failure ends a turn."""
        verdicts: dict[int, Verdict] = {}
        usage: Counter[tuple[str, str]] = Counter()
        tried: dict[tuple[int, int], int] = {}
        tas: list[tuple[list[int], str]] = []  # (members, flavor) to place, in order
        tas_only = all(self._topology_of(n) is not None for g in queue.groups for n, _ in g.flavors)
        for g, members in enumerate(groups):
            found = self._assign(queue, [podsets[i] for i in members], g, start, usage, tried, tas_only)
            if isinstance(found, Verdict):
                # Kueue places nothing then; the groups before are shown where they would go
                self._place_all(podsets, tas, tas_only, verdicts)
                return self._failed(podsets, members, found, verdicts), tried, True
            if found is None or self.index(found) is None:
                for i in members:  # no flavor (nothing asked for), or one without topology
                    verdicts[i] = Verdict(True, found)
            else:
                tas.append((members, found))
        failure = self._place_all(podsets, tas, tas_only, verdicts)
        if failure is not None:
            members, verdict = failure
            flavor = next(f for m, f in tas if m == members)
            ends = _ends_turn(queue, flavor)
            return self._failed(podsets, members, verdict, verdicts), tried, ends
        return [verdicts[i] for i in range(len(podsets))], tried, False

    def _assign(
        self,
        queue: ClusterQueue,
        pods: list[PodSet],
        g: int,
        start: Mapping[tuple[int, int], int],
        usage: Counter[tuple[str, str]],
        tried: dict[tuple[int, int], int],
        tas_only: bool,
    ) -> str | Verdict | None:
        """Kueue's flavor assignment of one group: its TAS flavor (None when it asks for
        nothing: Kueue then assigns none and admits it), or why none."""
        requests = _total(queue, pods)
        rgs = _resource_groups(queue, requests)
        if isinstance(rgs, Verdict) or not rgs:
            return rgs if isinstance(rgs, Verdict) else None
        picked: str | None = None
        for r, rg in enumerate(queue.groups):
            if rg not in rgs:
                continue
            is_tas = rg is rgs[0]
            first = start.get((g, r), 0)
            found, last = self._pick(queue, rg, pods, requests, usage, first, tas=is_tas, tas_only=tas_only)
            if isinstance(found, Verdict):
                return found
            tried[(g, r)] = -1 if last == len(rg.flavors) - 1 else last
            if is_tas:
                picked = found
        return picked

    @staticmethod
    def _failed(
        podsets: Sequence[PodSet], members: list[int], verdict: Verdict, verdicts: Mapping[int, Verdict]
    ) -> list[Verdict]:
        """The cycle's verdicts when ``members`` fail: PodSets after them are not tried, and
        those placed before them are admitted only with them."""
        failed = podsets[members[0]].name
        skipped = Verdict(False, reason=reasons.not_tried(failed))
        return [verdict if i in members else verdicts.get(i, skipped) for i in range(len(podsets))]

    def _pick(
        self,
        queue: ClusterQueue,
        group: Group,
        members: list[PodSet],
        requests: Mapping[str, int],
        usage: Counter[tuple[str, str]],
        first: int,
        *,
        tas: bool,
        tas_only: bool,
    ) -> tuple[str | Verdict, int]:
        """Kueue's ``findFlavorForPodSets`` from flavor ``first``: the flavor quota takes
        (its usage added), or why none does; and the index of the last flavor tried."""
        why: list[reasons.Reason] = []
        keys = self.cluster.label_keys(group)
        wanted = {r: v for r, v in requests.items() if r in group.covered}
        borrowing_pick: str | None = None
        last = first
        for index in range(first, len(group.flavors)):
            last = index
            name = group.flavors[index][0]
            flavor = self.cluster.flavors.get(name)
            check = self._check(queue, flavor, name, members, keys, tas_only) if tas else None
            if check is not None:
                why.append(check)
                continue
            quota_reason, borrows = self._quota(queue, name, wanted, usage)
            if quota_reason is not None:
                why.append(quota_reason)
                continue
            if borrows and queue.try_next_when_borrowing:
                borrowing_pick = borrowing_pick or name
                continue
            return self._taken(name, wanted, usage), last
        if borrowing_pick is not None:
            return self._taken(borrowing_pick, wanted, usage), last
        return Verdict(False, reason=reasons.joined(why)), last

    def _place_all(
        self,
        podsets: Sequence[PodSet],
        tas: list[tuple[list[int], str]],
        tas_only: bool,
        verdicts: dict[int, Verdict],
    ) -> tuple[list[int], Verdict] | None:
        """Kueue's ``FindTopologyAssignmentsForWorkload``: each flavor's groups in order, each
        on what the earlier ones left; the first group that does not fit, with its verdict."""
        by_flavor: dict[str, list[list[int]]] = {}
        for members, flavor in tas:
            by_flavor.setdefault(flavor, []).append(members)
        for flavor, groups in by_flavor.items():
            if len(groups) == 1 and len(groups[0]) == 1:  # alone, no leader: the index answers
                placed = [self._place(flavor, [podsets[i] for i in groups[0]], tas_only)]
            else:
                placed = self._place_together(flavor, [[podsets[i] for i in g] for g in groups], tas_only)
            for members, verdict in zip(groups, placed, strict=False):
                if not verdict.fits:
                    return members, verdict
                for i in members:
                    verdicts[i] = verdict
        return None

    def _place_together(self, flavor: str, groups: list[list[PodSet]], tas_only: bool) -> list[Verdict]:
        """Groups sharing a flavor, placed domain by domain, each on what the earlier left;
        stops at the first that does not fit."""
        idx = self.index(flavor)
        assert idx is not None
        if flavor not in self._trees:
            self._trees[flavor] = assign.tree(idx.levels, idx.nodes)
        t = self._trees[flavor]
        assumed: assign.Usage = {}
        out: list[Verdict] = []
        for members in groups:
            workers, leader = _leader_and_workers(members)
            implied = tas_only and not _explicit(workers)
            shape = _shape(idx.levels, workers.topology, implied)
            if isinstance(shape, Verdict):
                return [*out, shape]
            level, slice_level, size = shape
            request = workers.topology
            found = assign.find(
                t,
                assign.Request(
                    workers.count,
                    workers.requests,
                    level,
                    slice_level,
                    size,
                    required=request is not None and request.required is not None,
                    unconstrained=implied
                    or (request is not None and (bool(request.unconstrained) or request.slice_only)),
                    tolerations=(*workers.tolerations, *idx.flavor.tolerations),
                    node_selector=workers.node_selector,
                    affinity=workers.affinity,
                    leader=leader.requests if leader is not None else None,
                ),
                assumed,
            )
            if isinstance(found, assign.NoDomains):
                return [*out, Verdict(False, reason=reasons.no_domains(idx.levels[found.level]))]
            if isinstance(found, assign.NotFit):
                unit = "slice" if size > 1 else "pod"
                return [*out, _not_fit(idx, found.fit, found.count, unit, found.nodes, found.excluded)]
            assign.add_usage(assumed, found.workers, workers.requests)
            if leader is not None:
                assign.add_usage(assumed, found.leaders, leader.requests)
            out.append(Verdict(True, flavor, idx.levels[found.level], found.domains))
        return out

    @staticmethod
    def _taken(name: str, wanted: Mapping[str, int], usage: Counter[tuple[str, str]]) -> str:
        for r, v in wanted.items():
            usage[(name, r)] += v
        return name

    def _topology_of(self, flavor: str) -> str | None:
        found = self.cluster.flavors.get(flavor)
        return found.topology if found else None

    def _check(
        self,
        queue: ClusterQueue,
        flavor: Flavor | None,
        name: str,
        members: list[PodSet],
        keys: frozenset[str],
        tas_only: bool,
    ) -> reasons.Reason | None:
        """Kueue's ``checkFlavorForPodSets``: why the flavor is not tried, or None."""
        if flavor is None:
            return reasons.flavor_not_found(name)
        for ps in members:
            if ps.topology is not None and ps.topology.explicit:
                if flavor.topology is None:
                    return reasons.no_tas_support(name)
                idx = self.index(name)
                if idx is None:
                    return reasons.tas_cache_missing(name)
                if not _has_level(idx.levels, ps.topology):
                    return reasons.level_missing(name)
            elif not tas_only and flavor.topology is not None:
                return reasons.tas_only(name)
            taint = untolerated(flavor.node_taints, [*ps.tolerations, *flavor.tolerations])
            if taint is not None:
                return reasons.untolerated_taint(taint, name)
            if not _matches_flavor(ps, keys, flavor.node_labels):
                return reasons.affinity_mismatch(name)
        return None

    def _quota(
        self, queue: ClusterQueue, flavor: str, wanted: Mapping[str, int], usage: Counter[tuple[str, str]]
    ) -> tuple[reasons.Reason | None, bool]:
        borrows = False
        for resource in sorted(wanted):
            before, value = usage[(flavor, resource)], wanted[resource]
            most = self.cluster.potential(queue, flavor, resource)
            if self.with_usage:
                most = min(most, self.cluster.available(queue, flavor, resource))
            if before + value > most:
                texts = [kueue_text(resource, v) for v in (before, value, most)]
                return reasons.quota(resource, flavor, *texts), False
            if before + value > _nominal(queue, flavor, resource):
                borrows = True
        return None, borrows

    def _place(self, flavor: str, members: list[PodSet], tas_only: bool) -> Verdict:
        """A PodSet alone on its flavor, judged on the index."""
        idx = self.index(flavor)
        if idx is None:  # a flavor without topology: placement is kube-scheduler's
            return Verdict(True, flavor)
        [alone] = members
        return _find(idx, alone, implied=tas_only and not _explicit(alone))


def _total(queue: ClusterQueue, members: list[PodSet]) -> Counter[str]:
    """The PodSets' requests (a pod's times the count), and their pods when the queue has quota
    for pods."""
    requests: Counter[str] = Counter()
    for ps in members:
        for r, v in ps.requests.items():
            requests[r] += v * ps.count
        if queue.covers_pods:
            requests["pods"] += ps.count
    return requests


def _resource_groups(queue: ClusterQueue, requests: Mapping[str, int]) -> list[Group] | Verdict:
    groups: list[Group] = []
    for resource in sorted(requests):
        group = queue.group_of(resource)
        if group is None:
            if requests[resource] == 0:
                continue  # a zero request of a resource the queue does not know is skipped
            return Verdict(False, reason=reasons.resource_unavailable(resource))
        if group not in groups:
            groups.append(group)
    return groups


def _ends_turn(queue: ClusterQueue, flavor: str) -> bool:
    """Whether topology failing on ``flavor`` ends a turn through the queue's flavors: it is
    the last of its resource group. A cycle whose flavor assignment fails ends one whatever
    flavors are left for the PodSets before: no flavor fits the PodSet it names (Kueue's
    retry from those PodSets' next flavors would name one of them only because it skips the
    flavor that PodSet fits on)."""
    return any(g.flavors and g.flavors[-1][0] == flavor for g in queue.groups)


def _explicit(ps: PodSet) -> bool:
    return ps.topology is not None and ps.topology.explicit


def _nominal(queue: ClusterQueue, flavor: str, resource: str) -> int:
    for group in queue.groups:
        for name, quotas in group.flavors:
            if name == flavor and resource in quotas:
                return quotas[resource].nominal
    return 0


def _groups(podsets: Sequence[PodSet]) -> list[list[int]]:
    """Indexes of the PodSets judged together, in order of first appearance."""
    order: dict[str, list[int]] = {}
    for i, ps in enumerate(podsets):
        key = ps.topology.group if ps.topology and ps.topology.group else f"#{i}"
        order.setdefault(key, []).append(i)
    return list(order.values())


def _leader_and_workers(members: list[PodSet]) -> tuple[PodSet, PodSet | None]:
    """Kueue's ``findLeaderAndWorkers``: of two PodSets, the larger one is the workers."""
    if len(members) < 2:
        return members[0], None
    workers, leader = members[0], members[1]
    if leader.count > workers.count:
        workers, leader = leader, workers
    return workers, leader


def _has_level(levels: tuple[str, ...], request: TopologyRequest) -> bool:
    """Kueue's ``TASFlavorSnapshot.HasLevel``."""
    main = _level_key(levels, request)
    if main is None or main not in levels:
        return False
    return (request.slice_level or levels[-1]) in levels


def _level_key(levels: tuple[str, ...], request: TopologyRequest | None) -> str | None:
    if request is None or not levels:
        return None
    if request.required is not None:
        return request.required
    if request.preferred is not None:
        return request.preferred
    if request.slice_only:
        return levels[0]
    if request.unconstrained:
        return levels[-1]
    return None


def _taint_text(taint: Taint) -> str:
    """``corev1.Taint.ToString``."""
    key, value, effect = taint
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


# --- node selection ---------------------------------------------------------------------


def _matches_flavor(ps: PodSet, keys: frozenset[str], labels: Mapping[str, str]) -> bool:
    """Kueue's ``flavorSelector``: the PodSet's nodeSelector and required affinity, cut to the
    keys the group's flavors set, against the flavor's nodeLabels."""
    if not selects(ps.node_selector or {}, (), labels, only=keys):
        return False
    if ps.affinity is None:
        return True
    terms = []
    for term in ps.affinity:
        kept = tuple(e for e in term if e[0] in keys)
        if not kept:
            return True  # an emptied term matches any flavor
        terms.append(kept)
    return not terms or any(all(holds(e, labels) for e in term) for term in terms)


def _node_filter(ps: PodSet) -> Any:
    def keep(node: NodeFacts) -> str | None:
        if not selects(ps.node_selector or {}, (), node.labels):
            return "nodeSelector"
        if ps.affinity is not None and not terms_match(ps.affinity, node.labels):
            return "affinity"
        return None

    return keep


# --- topology-aware placement -----------------------------------------------------------


def _find(idx: domain_index.FlavorIndex, workers: PodSet, *, implied: bool) -> Verdict:
    """Kueue's ``findTopologyAssignment`` on an empty flavor: whether it places the PodSet, at
    which level, and in how many domains of that level it could be placed whole."""
    shape = _shape(idx.levels, workers.topology, implied)
    if isinstance(shape, Verdict):
        return shape
    level, slice_level, size = shape
    tolerations = [*workers.tolerations, *idx.flavor.tolerations]
    levelled, dropped = _levels_for(idx, workers)
    states, excluded = _states(idx, levelled, workers, tolerations, size, slice_level)
    excluded.update(dropped)
    request = workers.topology
    required = request is not None and request.required is not None
    unconstrained = implied or (request is not None and (bool(request.unconstrained) or request.slice_only))
    search = _Search(idx, workers.count // size, "slice" if size > 1 else "pod", excluded)
    return search.run(states, level, required=required, unconstrained=unconstrained)


def _shape(
    levels: tuple[str, ...], request: TopologyRequest | None, implied: bool
) -> Verdict | tuple[int, int, int]:
    """(level, slice level, slice size) of the request, or why Kueue cannot place it."""
    key = _level_key(levels, request) or (levels[-1] if implied and levels else None)
    if key is None:
        return Verdict(False, reason=reasons.level_not_specified())
    if key not in levels:
        return Verdict(False, reason=reasons.no_level(key))
    slice_key = (request.slice_level if request else None) or levels[-1]
    if slice_key not in levels:
        return Verdict(False, reason=reasons.no_slice_level(slice_key))
    level, slice_level = levels.index(key), levels.index(slice_key)
    if level > slice_level:
        return Verdict(False, reason=reasons.slice_above(slice_key, key))
    if request is None or request.slice_level is None:
        return level, slice_level, 1
    if request.slice_size is None:
        return Verdict(False, reason=reasons.slice_size_missing())
    return level, slice_level, request.slice_size


@dataclass(frozen=True)
class _Search:
    """Kueue's ``findLevelWithFitDomains``, over compositions instead of domains."""

    idx: domain_index.FlavorIndex
    count: int  # slices (pods when the slice is one pod)
    unit: str
    excluded: Counter[str]

    def run(
        self, states: list[dict[int, tuple[_State, int]]], level: int, *, required: bool, unconstrained: bool
    ) -> Verdict:
        levels, count = self.idx.levels, self.count
        while True:
            at = states[level]
            if not at:
                return Verdict(False, reason=reasons.no_domains(levels[level]))
            whole = sum(n for s, n in at.values() if s.slices >= count)
            if whole:
                return Verdict(True, self.idx.flavor.name, levels[level], whole)
            if required:
                # Kueue's first domain: the most slices, then the fewest pods
                best = max(at.values(), key=lambda s: (s[0].slices, -s[0].state))
                return self._not_fit(best[0].slices)
            if level > 0 and not unconstrained:
                level -= 1  # a preferred level: the next coarser one
                continue
            total = sum(s.slices * n for s, n in at.values())
            if total >= count:
                return Verdict(True, self.idx.flavor.name, levels[level], 0)
            return self._not_fit(min(total, count))

    def _not_fit(self, fit: int) -> Verdict:
        return _not_fit(self.idx, fit, self.count, self.unit, self.idx.whole.leaves, self.excluded)


def largest(
    idx: domain_index.FlavorIndex, requests: Mapping[str, int], tolerations: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Per level of the flavor's Topology, coarsest first: the most pods of ``requests`` that one
    domain holds (a node's allocatable pods not counted), with the flavor's tolerations and
    ``tolerations`` (tasgen plan's fit preview)."""
    if not idx.levels:
        return []
    workers = PodSet("preview", 1, requests)
    every = [*tolerations, *idx.flavor.tolerations]
    # a PodSet that asks for nothing the nodes have: one pod per node
    cap = INFINITE if any(v > 0 for v in requests.values()) else 1
    states, _ = _states(idx, idx.whole, workers, every, 1, len(idx.levels) - 1, pods=False, cap=cap)
    return [max((s.state for s, _ in level.values()), default=0) for level in states]


def per_domain(
    idx: domain_index.FlavorIndex, requests: Mapping[str, int], tolerations: Sequence[Mapping[str, Any]]
) -> list[list[tuple[int, int]]]:
    """Per level of the flavor's Topology, coarsest first: (pods of ``requests`` one domain
    holds, how many domains hold that many), as TAS counts a PodSet's pods (each takes one of a
    node's allocatable pods), with the flavor's tolerations and ``tolerations``. Costs the
    distinct node kinds and compositions (tasgen capacity)."""
    if not idx.levels:
        return []
    workers = PodSet("capacity", 1, requests)
    every = [*tolerations, *idx.flavor.tolerations]
    states, _ = _states(idx, idx.whole, workers, every, 1, len(idx.levels) - 1)
    return [[(s.state, n) for s, n in level.values()] for level in states]


def _not_fit(
    idx: domain_index.FlavorIndex, fit: int, count: int, unit: str, nodes: int, excluded: Counter[str]
) -> Verdict:
    return Verdict(False, reason=reasons.not_fit(idx.topology, fit, count, unit, nodes, excluded))


def _levels_for(idx: domain_index.FlavorIndex, ps: PodSet) -> tuple[domain_index.Levels, Counter[str]]:
    if not idx.node_level or (not ps.node_selector and ps.affinity is None):
        return idx.whole, Counter()
    key = (tuple(sorted((ps.node_selector or {}).items())), ps.affinity)
    return idx.restricted(key, _node_filter(ps))


def _states(
    idx: domain_index.FlavorIndex,
    levelled: domain_index.Levels,
    workers: PodSet,
    tolerations: Sequence[Mapping[str, Any]],
    size: int,
    slice_level: int,
    *,
    pods: bool = True,
    cap: int = INFINITE,
) -> tuple[list[dict[int, tuple[_State, int]]], Counter[str]]:
    """Per level: composition -> (its counts, how many domains have it); and the nodes left
    out per reason, as Kueue counts them (``pods``: each pod takes one of a node's pods;
    ``cap``: the most pods a node takes)."""
    depth = len(idx.levels)
    excluded: Counter[str] = Counter()
    per_pod = dict(workers.requests) | ({"pods": 1} if pods else {})
    leaves = levelled.counts[depth - 1]
    kind_states: dict[int, _State] = {}
    for kind_id, (allocatable, taints) in enumerate(levelled.kinds):
        state = _State()
        taint = untolerated(taints, tolerations) if idx.node_level else None
        if taint is not None:
            excluded[f"taint {_taint_text(taint)}"] += leaves[kind_id]
        else:
            capacity = dict(allocatable)
            state.state, limiting = assign.count_in(per_pod, capacity)
            state.state = min(state.state, cap)
            if state.state == 0 and limiting:
                excluded[f"resource {limiting}"] += leaves[kind_id]
        if depth - 1 == slice_level:
            state.slices = state.state // size
        kind_states[kind_id] = state
    states: list[dict[int, tuple[_State, int]]] = [{} for _ in range(depth)]
    states[depth - 1] = {k: (kind_states[k], n) for k, n in leaves.items()}
    for level in range(depth - 2, -1, -1):
        below = states[level + 1]
        for comp, n in levelled.counts[level].items():
            states[level][comp] = (
                _parent(levelled.children[level][comp], below, level == slice_level, size),
                n,
            )
    return states, excluded


def _parent(
    children: tuple[tuple[int, int], ...], below: Mapping[int, tuple[_State, int]], at_slice: bool, size: int
) -> _State:
    state = _State()
    for comp, n in children:
        child = below[comp][0]
        state.state += child.state * n
        state.slices += child.slices * n
    if at_slice:
        state.slices = state.state // size
    return state
