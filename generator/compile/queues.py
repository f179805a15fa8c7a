"""Flavors and ClusterQueues: hardware identity x profile, with quota conserved.

Each identity's quota is split across its profile flavors in proportion to their nodes'
allocatable, by largest remainder in integer units (millicores for CPU, bytes for memory,
whole GPUs and pods), so that the parts sum exactly to the declared total. A flavor's nodes are
those it selects as the render writes them: a node kept on its previous flavors (compile/pins.py)
counts for those, one in transit for none (docs/explanation/gate.md, "Quota follows the nodes").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import compress, repeat
from operator import eq
from typing import Any

from ..kube.quantities import beyond_range, format_units, parse, scale_for, to_units
from ..model import FLAVOR_KEY_PREFIX, PROFILE_KEY, Finding, Hardware, KueueVersion, Node, QueuePlan
from ..rules.compile import (
    FLAVOR_COLLISION,
    FLAVOR_LIMIT,
    IDENTITY_UNMATCHED,
    QUEUE_EMPTY,
    QUOTA_RANGE,
    QUOTA_SPLIT_UNSTATED,
    QUOTA_UNPLACEABLE,
)
from ..util.columns import group
from .pins import Pinned
from .profiles import Assignment, Profile
from .retention import Retained, Retention

MAX_FLAVORS = 64  # Kueue's limit for one resource group
#: Kueue's bound on flavor x resource pairs in one resource group (its webhook refuses more)
MAX_FLAVOR_RESOURCES = 512


@dataclass(frozen=True)
class Flavor:
    name: str
    identity: tuple[tuple[str, str], ...]
    profile: Profile
    tolerations: tuple[dict[str, Any], ...] = ()
    node_taints: tuple[dict[str, str], ...] = ()


@dataclass
class QueueFlavor:
    flavor: Flavor
    quota: dict[str, str]  # covered resource -> quantity, in coveredResources order
    borrowing_limit: dict[str, str] = field(default_factory=dict)  # declared resources only
    lending_limit: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """One hardware entry of a plan: its flavors, one per profile group, whose quota is split
    once the nodes each flavor selects are known."""

    hardware: Hardware
    identity: tuple[tuple[str, str], ...]
    groups: list[tuple[str, list[Node]]]
    parts: list[QueueFlavor]


@dataclass
class Queue:
    plan: QueuePlan
    flavors: list[QueueFlavor] = field(default_factory=list)
    #: flavors the plan dropped that the queue keeps at zero quota (WaitForIdle), after these
    retained: list[Retained] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list, repr=False)


def flavor_name(identity: tuple[tuple[str, str], ...], profile: str, frozen: tuple[Any, ...] = ()) -> str:
    """gpustack-<readable identity>-<hash>-<profile>: readable in kubectl, unique by the hash,
    and embedding the profile so that its immutable fields never change. The hash covers the
    identity and, when there are any, the other spec fields Kueue will not update on a
    topology-aware flavor (``frozen``: its tolerations, and on v1beta1 its nodeTaints), so that
    changing them gives a new flavor, switched to through the drain gate."""
    readable = re.sub(r"[^a-z0-9]+", "-", "-".join(v for _, v in identity).lower()).strip("-")[:30]
    hashed: Any = [identity, frozen] if frozen else identity
    digest = hashlib.sha256(json.dumps(hashed, separators=(",", ":")).encode()).hexdigest()[:6]
    return "-".join(p for p in ("gpustack", readable.strip("-"), digest, profile) if p)


class QueueBuilder:
    def __init__(
        self,
        nodes: list[Node],
        assignment: Assignment,
        version: KueueVersion = "v1beta2",
        unstated: Mapping[str, Unstated] | None = None,
    ) -> None:
        """``nodes``: every node, in name order (groups keep that order, and the nodes
        themselves: a group's allocatable is read without looking a node up by name);
        ``unstated``: node -> the writing source that selects it without stating it."""
        self.nodes, self.assignment = nodes, assignment
        self.unstated = unstated or {}
        # Kueue v0.14 to v0.16 (the v1beta1 target) freeze a topology-aware flavor's whole
        # spec; v0.17.0 to v0.19.2 let nodeTaints change in place but not tolerations.
        self.frozen_taints = version == "v1beta1"
        self.findings: list[Finding] = []
        self.flavors: dict[str, Flavor] = {}
        #: flavor name -> its nodes (the nodes of its identity and profile)
        self.members: dict[str, list[Node]] = {}
        self._hashed: dict[str, tuple[Any, ...]] = {}  # flavor name -> what its hash covers
        self.profiles = assignment.profiles()
        # Queues often share an identity (training and batch on the same GPUs): group its
        # nodes by profile, and sum their allocatable per resource, once.
        self._groups: dict[tuple[tuple[str, str], ...], list[tuple[str, list[Node]]]] = {}
        self._sums: dict[tuple[tuple[tuple[str, str], ...], str, tuple[str, ...]], dict[str, Decimal]] = {}
        self._labels = [node.labels for node in nodes]
        self._by_key: dict[str, dict[str | None, list[Node]]] = {}

    def queue(self, plan: QueuePlan) -> Queue:
        """The queue's flavors, their quota not split yet (:meth:`split`)."""
        queue = Queue(plan)
        for hw in plan.hardware:
            entry = self._hardware(plan, hw)
            if entry is not None:
                queue.entries.append(entry)
                queue.flavors += entry.parts
        return queue

    def split(self, queue: Queue, pinned: Pinned | None = None) -> None:
        """Each identity's quota across its flavors, by the nodes each selects as written
        (``pinned``: the nodes kept on other flavors than the plan gives them, or in transit)."""
        moved = _Moved(pinned, self.nodes) if pinned is not None and pinned.moved() else None
        for entry in queue.entries:
            self._split(queue.plan, entry, moved)
            if len(entry.groups) > 1 and self.unstated:
                self._split_by_unstated(queue.plan, entry.hardware, entry.groups, entry.parts)

    def limits(self, queue: Queue) -> None:
        """Kueue's bounds on one resource group, retained flavors counted: the 65th flavor is
        an error rather than an early drop of a retained one, which would evict (under
        HoldAndDrain) the very work WaitForIdle promised to leave running."""
        plan, count = queue.plan, len(queue.flavors) + len(queue.retained)
        needs = f"{count} flavors (hardware identities x profiles)"
        if queue.retained:
            needs = (
                f"{count} flavors ({len(queue.flavors)} of its hardware identities x profiles and "
                f"{len(queue.retained)} retained until idle, dropPolicy WaitForIdle)"
            )
        wait = (
            "; wait until the retained flavors are idle (tasgen render --kubeconfig drops them) or "
            "let this change drain the queue (dropPolicy: HoldAndDrain)"
            if queue.retained
            else ""
        )
        if count > MAX_FLAVORS:
            message = (
                f"queue {plan.name!r} needs {needs} but Kueue allows {MAX_FLAVORS} in a resource "
                f"group; nothing is written{wait}"
            )
            self.findings.append(FLAVOR_LIMIT(plan.where.at("spec", "hardware"), message))
        elif count * len(plan.covered_resources) > MAX_FLAVOR_RESOURCES:
            message = (
                f"queue {plan.name!r} needs {needs} x {len(plan.covered_resources)} "
                f"covered resources = {count * len(plan.covered_resources)} quotas, but "
                f"Kueue allows {MAX_FLAVOR_RESOURCES} in a resource group; nothing is written{wait}"
            )
            self.findings.append(FLAVOR_LIMIT(plan.where.at("spec", "coveredResources"), message))
        if not queue.flavors:
            message = (
                f"queue {plan.name!r} has no flavor: it is rendered with stopPolicy Hold "
                "(a queue without resource groups would admit every workload)"
            )
            self.findings.append(QUEUE_EMPTY(plan.where.at("spec", "hardware"), message))

    def _matching(self, identity: dict[str, str]) -> list[Node]:
        """The nodes that have every label of an identity, in name order."""
        (key, value), *more = sorted(identity.items())
        nodes = self._by_value(key).get(value, [])
        for key, value in more:  # rare: an identity of several labels
            labels = [node.labels for node in nodes]
            nodes = list(compress(nodes, map(eq, repeat(value), map(dict.get, labels, repeat(key)))))
        return nodes

    def _by_value(self, key: str) -> dict[str | None, list[Node]]:
        """The nodes by their value of a label, in name order (identities share their keys)."""
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = group(list(map(dict.get, self._labels, repeat(key))), self.nodes)
        return found

    def _hardware(self, plan: QueuePlan, hw: Hardware) -> Entry | None:
        identity = tuple(sorted(hw.identity.items()))
        groups = self._groups.get(identity)
        if groups is None:
            groups = self._groups[identity] = self._by_profile(hw.identity)
        if not groups:
            self._unmatched(plan, hw)
            return None
        parts = [QueueFlavor(self._flavor(hw, identity, pid), {}) for pid, _ in groups]
        for part, (_, nodes) in zip(parts, groups, strict=True):
            self.members.setdefault(part.flavor.name, nodes)
        return Entry(hw, identity, groups, parts)

    def _split_by_unstated(
        self, plan: QueuePlan, hw: Hardware, groups: list[tuple[str, list[Node]]], parts: list[QueueFlavor]
    ) -> None:
        """A warning when the identity's quota splits because a source leaves some of the nodes
        it selects unstated: the figures of each flavor, and of the source."""
        sources = {self.unstated[n.name] for _, nodes in groups for n in nodes if n.name in self.unstated}
        for source in sorted(sources, key=lambda s: s.name):
            split = "; ".join(
                f"{part.flavor.name}: {', '.join(f'{r}={v}' for r, v in part.quota.items())}"
                for part in parts
            )
            message = (
                f"source {source.name!r} states {source.stated} of the {source.selected} nodes its "
                f"nodeSelector selects; the other {source.selected - source.stated} get no hierarchy "
                f"from it, so queue {plan.name!r} splits the quota of {hw.identity} across "
                f"{len(parts)} flavors ({split})"
            )
            self.findings.append(QUOTA_SPLIT_UNSTATED(hw.where.at("identity"), message))

    def _by_profile(self, identity: dict[str, str]) -> list[tuple[str, list[Node]]]:
        """The nodes of an identity by profile ID, in ID order."""
        nodes = self._matching(identity)
        profile_of = self.assignment.profile_of
        return sorted(group([profile_of[node.name].id for node in nodes], nodes).items())

    def _unmatched(self, plan: QueuePlan, hw: Hardware) -> None:
        """No node has this identity: without a quota that is only a flavor less; a declared
        quota would vanish, and tasgen conserves quota, so that is an error."""
        declared = {r: v for r, v in (hw.nominal_quota or {}).items() if parse(v) > 0}
        for resource, value in declared.items():
            message = (
                f"queue {plan.name!r} declares {resource}: {value} for {hw.identity}, but no node has "
                "that identity; there is nowhere to put it (quota is conserved)"
            )
            self.findings.append(QUOTA_UNPLACEABLE(hw.where.at("nominalQuota", resource), message))
        if not declared:
            message = f"identity {hw.identity} of queue {plan.name!r} matches no node: it gives no flavor"
            self.findings.append(IDENTITY_UNMATCHED(hw.where.at("identity"), message + _dropped(hw)))

    def _flavor(self, hw: Hardware, identity: tuple[tuple[str, str], ...], profile_id: str) -> Flavor:
        frozen: tuple[Any, ...] = hw.tolerations
        if self.frozen_taints and hw.node_taints:
            frozen = (*hw.tolerations, {"nodeTaints": list(hw.node_taints)})
        name = flavor_name(identity, profile_id, frozen)
        if name not in self.flavors:
            profile = self.profiles[profile_id]
            self.flavors[name] = Flavor(name, identity, profile, hw.tolerations, hw.node_taints)
            self._hashed[name] = (identity, frozen)
        elif self._hashed[name] != (identity, frozen):
            self._collision(hw, name)
        return self.flavors[name]

    def _collision(self, hw: Hardware, name: str) -> None:
        """Two identities (or settings) whose names agree in their readable 30 characters and
        6 hex digits of hash: the second would silently share the first one's flavor."""
        first = dict(self.flavors[name].identity)
        message = (
            f"identity {hw.identity} gets the flavor name {name!r} of another identity ({first}); "
            "tell them apart by a label, or report this (the name's hash is too short)"
        )
        self.findings.append(FLAVOR_COLLISION(hw.where.at("identity"), message))

    def _split(self, plan: QueuePlan, entry: Entry, moved: _Moved | None) -> None:
        """The planned nodes set the total of an undeclared quota; the nodes each flavor selects
        as written, its share (the planned ones when the written ones of the whole identity have
        none of a resource, as when every node is kept elsewhere: the quota stays conserved)."""
        hw, identity, groups, parts = entry.hardware, entry.identity, entry.groups, entry.parts
        resources = plan.covered_resources
        sums = [self._sum(identity, pid, nodes, resources) for pid, nodes in groups]
        actual = sums
        if moved is not None:
            actual = [
                self._sum(identity, pid, nodes, resources)
                if (written := moved.members(part.flavor.name, nodes)) is nodes
                else _allocatable([node.allocatable for node in written], resources)
                for part, (pid, nodes) in zip(parts, groups, strict=True)
            ]
        for resource in plan.covered_resources:
            planned = [found[resource] for found in sums]
            weights = [found[resource] for found in actual]
            if not any(weights):
                weights = planned
            declared = (hw.nominal_quota or {}).get(resource)
            total = sum(planned, Decimal(0))
            nominal, scale = self._resource_split(plan, hw, resource, declared, weights, total)
            for part, units in zip(parts, nominal, strict=True):
                part.quota[resource] = format_units(units, scale, resource)
            if any(beyond_range(units, scale, resource) for units in nominal):
                self._out_of_range(plan, hw, resource, max(nominal), scale)
            self._limits(plan, hw, resource, weights, (nominal, scale), parts)

    def _out_of_range(self, plan: QueuePlan, hw: Hardware, resource: str, units: int, scale: int) -> None:
        """Only a sum of allocatable gets here: a declared quota is held to the range itself."""
        message = (
            f"queue {plan.name!r}: the nodes of {hw.identity} sum to a {resource} quota of "
            f"{format_units(units, scale, resource)} for one flavor, beyond Kueue's 64-bit range; "
            "declare a nominalQuota for it"
        )
        self.findings.append(QUOTA_RANGE(hw.where.at("identity"), message))

    def _sum(
        self, identity: tuple[tuple[str, str], ...], pid: str, nodes: list[Node], resources: tuple[str, ...]
    ) -> dict[str, Decimal]:
        """Resources' allocatable, each summed over the nodes of one identity and profile."""
        key = (identity, pid, resources)
        if key not in self._sums:
            self._sums[key] = _allocatable([node.allocatable for node in nodes], resources)
        return self._sums[key]

    def _limits(
        self,
        plan: QueuePlan,
        hw: Hardware,
        resource: str,
        weights: list[Decimal],
        nominal: tuple[list[int], int],
        parts: list[QueueFlavor],
    ) -> None:
        """borrowingLimit and lendingLimit split as nominalQuota is; a flavor's lending part
        never exceeds its nominal part (Kueue requires that of each flavor)."""
        for field_name, declared in hw.limits:
            if resource not in declared:
                continue
            total = parse(declared[resource])
            scale = max(nominal[1], scale_for(resource, [total, *weights]))
            caps = [u * (scale // nominal[1]) for u in nominal[0]] if field_name == "lendingLimit" else None
            units = largest_remainder(to_units(total, scale), [to_units(w, scale) for w in weights], caps)
            if units is None:
                self._unplaceable(plan, hw, resource, f"{field_name}: {declared[resource]}", field_name)
                units = [0] * len(weights)
            for part, amount in zip(parts, units, strict=True):
                limits = part.borrowing_limit if field_name == "borrowingLimit" else part.lending_limit
                limits[resource] = format_units(amount, scale, resource)

    def _unplaceable(self, plan: QueuePlan, hw: Hardware, resource: str, what: str, field_name: str) -> None:
        message = (
            f"queue {plan.name!r} declares {resource} {what} for {hw.identity}, but no matching "
            f"node has allocatable {resource}; there is nowhere to put it"
        )
        self.findings.append(QUOTA_UNPLACEABLE(hw.where.at(field_name, resource), message))

    def _resource_split(
        self,
        plan: QueuePlan,
        hw: Hardware,
        resource: str,
        declared: str | None,
        weights: list[Decimal],
        allocatable: Decimal,
    ) -> tuple[list[int], int]:
        """The nominal quota's parts, in units, and the scale of the units (``allocatable``:
        the identity's total, the quota when none is declared)."""
        total = parse(declared) if declared is not None else allocatable
        scale = scale_for(resource, [total, *weights])
        units = largest_remainder(to_units(total, scale), [to_units(w, scale) for w in weights])
        if units is None:
            self._unplaceable(plan, hw, resource, f"nominalQuota: {declared}", "nominalQuota")
            units = [0] * len(weights)
        return units, scale


class _Moved:
    """The nodes written otherwise than the plan gives them (compile/pins.py), by flavor."""

    def __init__(self, pinned: Pinned, nodes: list[Node]) -> None:
        by_name = {node.name: node for node in nodes if node.name in pinned.planned}
        self.leaving: dict[str, set[str]] = {}
        self.joining: dict[str, list[Node]] = {}
        for name, flavors in pinned.planned.items():
            for flavor in flavors:
                self.leaving.setdefault(flavor, set()).add(name)
        for name, flavors in sorted(pinned.kept.items()):
            for flavor in flavors:
                if name in by_name:
                    self.joining.setdefault(flavor, []).append(by_name[name])

    def members(self, flavor: str, planned: list[Node]) -> list[Node]:
        """The nodes ``flavor`` selects as written; ``planned`` itself when they are the same."""
        leaving, joining = self.leaving.get(flavor), self.joining.get(flavor, [])
        if leaving is None and not joining:
            return planned
        kept = [node for node in planned if node.name not in (leaving or ())]
        names = {node.name for node in kept}
        return [*kept, *(node for node in joining if node.name not in names)]


def _allocatable(stated: list[dict[str, str]], resources: tuple[str, ...]) -> dict[str, Decimal]:
    """Each resource's sum over a group's allocatable. Fleets repeat a few sets of values: each
    node's values of all the resources are counted as one row (at C speed), the rows' counts
    added up per value, and each value's total parsed and multiplied once, in the order the
    values first occur (the same operations as summing one resource's column, so the same
    Decimal result to the last digit)."""
    rows = Counter(zip(*(map(dict.get, stated, repeat(resource)) for resource in resources), strict=True))
    counts: dict[str, Counter[str | None]] = {resource: Counter() for resource in resources}
    for row, count in rows.items():
        for resource, value in zip(resources, row, strict=True):
            counts[resource][value] += count
    return {resource: _total(found) for resource, found in counts.items()}


def _total(counts: Counter[str | None]) -> Decimal:
    """A resource's sum from how many nodes state each value (None: no value)."""
    return sum((parse(value) * count for value, count in counts.items() if value is not None), Decimal(0))


def largest_remainder(total: int, weights: list[int], caps: list[int] | None = None) -> list[int] | None:
    """``total`` split in proportion to ``weights``; the parts sum to ``total`` exactly.
    Remainders go to the largest fractions first, ties to the earlier part. With ``caps``
    (whose sum is at least ``total``), a part never exceeds its cap: a remainder unit skips a
    part that is full (the parts of a smaller total can otherwise outgrow those of a larger
    one, the Alabama paradox). None when there is a positive total but no weight to carry it."""
    weight = sum(weights)
    if weight == 0:
        return None if total > 0 else [0] * len(weights)
    floors = [total * w // weight for w in weights]
    if caps is not None:
        floors = [min(f, c) for f, c in zip(floors, caps, strict=True)]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % weight), i))
    while sum(floors) < total:
        room = [i for i in order if caps is None or floors[i] < caps[i]]
        if not room:
            break  # only when caps sum below total, which validation rules out
        for i in room[: total - sum(floors)]:
            floors[i] += 1
    return floors


@dataclass(frozen=True)
class Unstated:
    """A writing source that selects nodes it does not state: its name and its counts."""

    name: str
    selected: int
    stated: int


def build_queues(
    plans: Iterable[QueuePlan],
    nodes: list[Node],
    assignment: Assignment,
    version: KueueVersion = "v1beta2",
    retention: Retention | None = None,
    unstated: Mapping[str, Unstated] | None = None,
    pinning: Callable[[QueueBuilder], Pinned] | None = None,
) -> tuple[list[Queue], QueueBuilder, list[Finding], Pinned | None]:
    """The queues and their flavors; with ``retention``, each WaitForIdle queue also keeps
    the flavors of the previous render that its plan drops (decided once every queue's new
    flavors are known: a flavor another queue still has needs no retained ResourceFlavor).
    ``pinning``: the nodes' rows as written, from the flavors and their planned nodes; each
    identity's quota is split by the nodes its flavors select in them."""
    ordered = sorted(plans, key=lambda p: p.name)
    builder = QueueBuilder(nodes, assignment, version, unstated)
    queues = [builder.queue(plan) for plan in ordered]
    pinned = pinning(builder) if pinning is not None else None
    for queue in queues:
        builder.split(queue, pinned)
    if retention is not None:
        topologies = {f"gpustack-{p}" for p in builder.profiles}
        for queue in queues:
            kept = {qf.flavor.name for qf in queue.flavors}
            queue.retained = retention.of(queue.plan, kept, builder.flavors, topologies)
        for queue in queues:
            for retained in queue.retained:
                identity = _identity_of(retained.name, builder.flavors, retention)
                _conserve(queue, queues, identity, retained.quota)
    for queue in queues:
        builder.limits(queue)
    return queues, builder, builder.findings, pinned


def _identity_of(name: str, flavors: dict[str, Flavor], retention: Retention) -> tuple[tuple[str, str], ...]:
    """A retained flavor's hardware identity: its nodeLabels but the profile and flavor labels."""
    if name in flavors:
        return flavors[name].identity
    spec = retention.flavor_specs.get(name) or retention.carried.flavors.get(name) or {}
    found = spec.get("nodeLabels")
    labels: dict[str, Any] = found if isinstance(found, dict) else {}
    return tuple(
        sorted(
            (str(k), str(v))
            for k, v in labels.items()
            if k != PROFILE_KEY and not str(k).startswith(FLAVOR_KEY_PREFIX)
        )
    )


def _conserve(
    queue: Queue, queues: list[Queue], identity: tuple[tuple[str, str], ...], held: dict[str, str]
) -> None:
    """The quota a retained flavor keeps is taken from the new flavors of its identity, the
    queue's own first, then its cohort peers', each group in proportion to their quotas: the
    identity's total stays what the plans declare (unless the retained quota exceeds it)."""
    cohort = queue.plan.cluster_queue.get("cohortName")
    own = [qf for qf in queue.flavors if qf.flavor.identity == identity]
    peers = [
        qf
        for other in queues
        if cohort and other is not queue and other.plan.cluster_queue.get("cohortName") == cohort
        for qf in other.flavors
        if qf.flavor.identity == identity
    ]
    for resource, amount in held.items():
        left = parse(amount)
        for takers in (own, peers):
            parts = [qf for qf in takers if resource in qf.quota]
            if parts and left > 0:
                left = _lower(parts, resource, left)


def _lower(parts: list[QueueFlavor], resource: str, amount: Decimal) -> Decimal:
    """Lowers the parts' quota of ``resource`` by ``amount`` in proportion to it, at most to
    zero; returns what is left to take elsewhere."""
    current = [parse(qf.quota[resource]) for qf in parts]
    scale = scale_for(resource, [amount, *current])
    weights = [to_units(c, scale) for c in current]
    wanted = to_units(amount, scale)
    total = max(0, sum(weights) - wanted)
    units = largest_remainder(total, weights) or [0] * len(parts)
    for qf, share in zip(parts, units, strict=True):
        qf.quota[resource] = format_units(share, scale, resource)
        lending = qf.lending_limit.get(resource)
        if lending is not None and parse(lending) > parse(qf.quota[resource]):
            qf.lending_limit[resource] = qf.quota[resource]  # Kueue: lending <= nominal
    return amount - (Decimal(sum(weights) - total) / scale if scale else 0)


def _dropped(hw: Hardware) -> str:
    """The limits an unmatched identity states: without a flavor they apply to nothing, which
    the warning says rather than dropping them unmentioned."""
    named = [field for field, limits in hw.limits if limits]
    verb = "apply" if len(named) > 1 else "applies"
    return f", so its {' and '.join(named)} {verb} to nothing" if named else ""
