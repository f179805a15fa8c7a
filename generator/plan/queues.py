"""Flavors and ClusterQueues: hardware identity x profile, with quota conserved.

Each identity's quota is split across its profile flavors in proportion to their nodes'
allocatable, by largest remainder in integer units (millicores for CPU, bytes for memory,
whole GPUs and pods), so that the parts sum exactly to the declared total.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from generator.model import Finding, Hardware, Level, Node, QueuePlan
from generator.plan.profiles import Assignment, Profile
from generator.validate.quantities import format_units, parse, scale_for, to_units

MAX_FLAVORS = 64  # Kueue's limit for one resource group


@dataclass(frozen=True)
class Flavor:
    name: str
    identity: tuple[tuple[str, str], ...]
    profile: Profile


@dataclass
class QueueFlavor:
    flavor: Flavor
    quota: dict[str, str]  # covered resource -> quantity, in coveredResources order


@dataclass
class Queue:
    plan: QueuePlan
    flavors: list[QueueFlavor] = field(default_factory=list)


def flavor_name(identity: tuple[tuple[str, str], ...], profile: str) -> str:
    """gpustack-<readable identity>-<identity hash>-<profile>: readable in kubectl, unique by
    the hash, and embedding the profile so that its immutable fields never change."""
    readable = re.sub(r"[^a-z0-9]+", "-", "-".join(v for _, v in identity).lower()).strip("-")[:30]
    digest = hashlib.sha256(json.dumps(identity, separators=(",", ":")).encode()).hexdigest()[:6]
    return "-".join(p for p in ("gpustack", readable.strip("-"), digest, profile) if p)


class Planner:
    def __init__(self, nodes: dict[str, Node], assignment: Assignment, plans: list[QueuePlan]) -> None:
        self.nodes, self.assignment = nodes, assignment
        self.findings: list[Finding] = []
        self.flavors: dict[str, Flavor] = {}
        self.profiles = assignment.profiles()
        # Nodes by the value of each identity label: a plan's identity then looks up its
        # candidates instead of scanning the fleet.
        self._by_label: dict[tuple[str, str], list[str]] = defaultdict(list)
        keys = {k for plan in plans for hw in plan.hardware for k in hw.identity}
        for name in sorted(nodes):
            labels = nodes[name].labels
            for key in keys & labels.keys():
                self._by_label[(key, labels[key])].append(name)

    def queue(self, plan: QueuePlan) -> Queue:
        queue = Queue(plan)
        for hw in plan.hardware:
            queue.flavors += self._hardware(plan, hw)
        if len(queue.flavors) > MAX_FLAVORS:
            message = (
                f"queue {plan.name!r} needs {len(queue.flavors)} flavors (hardware identities x "
                f"profiles) but Kueue allows {MAX_FLAVORS} in a resource group; nothing is written"
            )
            self.findings.append(Finding(plan.where.at("spec", "hardware"), "flavor-limit", message))
        if not queue.flavors:
            message = (
                f"queue {plan.name!r} has no flavor: it is rendered with stopPolicy Hold "
                "(a queue without resource groups would admit every workload)"
            )
            self.findings.append(
                Finding(plan.where.at("spec", "hardware"), "queue-empty", message, Level.WARNING)
            )
        return queue

    def _matching(self, identity: dict[str, str]) -> list[str]:
        pairs = sorted(identity.items())
        candidates = self._by_label.get(pairs[0], [])
        return [n for n in candidates if all(self.nodes[n].labels.get(k) == v for k, v in pairs[1:])]

    def _hardware(self, plan: QueuePlan, hw: Hardware) -> list[QueueFlavor]:
        identity = tuple(sorted(hw.identity.items()))
        by_profile: dict[str, list[str]] = defaultdict(list)
        for name in self._matching(hw.identity):
            by_profile[self.assignment.profile_of[name].id].append(name)
        if not by_profile:
            message = f"identity {hw.identity} of queue {plan.name!r} matches no node: it gives no flavor"
            self.findings.append(
                Finding(hw.where.at("identity"), "identity-unmatched", message, Level.WARNING)
            )
            return []
        groups = [(pid, by_profile[pid]) for pid in sorted(by_profile)]
        quotas = self._split(plan, hw, [nodes for _, nodes in groups])
        return [
            QueueFlavor(self._flavor(identity, pid), quota)
            for (pid, _), quota in zip(groups, quotas, strict=True)
        ]

    def _flavor(self, identity: tuple[tuple[str, str], ...], profile_id: str) -> Flavor:
        name = flavor_name(identity, profile_id)
        if name not in self.flavors:
            self.flavors[name] = Flavor(name, identity, self.profiles[profile_id])
        return self.flavors[name]

    def _split(self, plan: QueuePlan, hw: Hardware, groups: list[list[str]]) -> list[dict[str, str]]:
        parts: list[dict[str, str]] = [{} for _ in groups]
        for resource in plan.covered_resources:
            weights = [self._allocatable(nodes, resource) for nodes in groups]
            declared = (hw.nominal_quota or {}).get(resource)
            amounts = self._resource_split(plan, hw, resource, declared, weights)
            for part, amount in zip(parts, amounts, strict=True):
                part[resource] = amount
        return parts

    def _allocatable(self, nodes: list[str], resource: str) -> Decimal:
        # Fleets repeat a few allocatable values: count them, then parse each once.
        values = Counter(self.nodes[n].allocatable.get(resource) for n in nodes)
        values.pop(None, None)
        return sum((parse(v) * count for v, count in values.items() if v is not None), Decimal(0))

    def _resource_split(
        self, plan: QueuePlan, hw: Hardware, resource: str, declared: str | None, weights: list[Decimal]
    ) -> list[str]:
        total = parse(declared) if declared is not None else sum(weights, Decimal(0))
        scale = scale_for(resource, [total, *weights])
        units = largest_remainder(to_units(total, scale), [to_units(w, scale) for w in weights])
        if units is None:
            message = (
                f"queue {plan.name!r} declares {resource}: {declared} for {hw.identity}, but no "
                f"matching node has allocatable {resource}; there is nowhere to put it"
            )
            self.findings.append(Finding(hw.where.at("nominalQuota", resource), "quota-unplaceable", message))
            units = [0] * len(weights)
        return [format_units(u, scale, resource) for u in units]


def largest_remainder(total: int, weights: list[int]) -> list[int] | None:
    """``total`` split in proportion to ``weights``; the parts sum to ``total`` exactly.
    Remainders go to the largest fractions first, ties to the earlier part. None when
    there is a positive total but no weight to carry it."""
    weight = sum(weights)
    if weight == 0:
        return None if total > 0 else [0] * len(weights)
    floors = [total * w // weight for w in weights]
    order = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % weight), i))
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return floors


def plan_queues(
    plans: Iterable[QueuePlan], nodes: dict[str, Node], assignment: Assignment
) -> tuple[list[Queue], dict[str, Flavor], list[Finding]]:
    ordered = sorted(plans, key=lambda p: p.name)
    planner = Planner(nodes, assignment, ordered)
    queues = [planner.queue(plan) for plan in ordered]
    return queues, planner.flavors, planner.findings
