"""WaitForIdle: a flavor that a queue's new plan drops stays in the queue, after the new
flavors, at zero quota, until nothing holds it (docs/explanation/gate.md, WaitForIdle).

What the previous render gave each queue is an input (:class:`generator.model.Carried`), so
the decision is a pure function of the inventory, the previous rendered/, the time and, with a
live cluster, which flavors are idle: a flavor goes into retention at the first render that
drops it (the time it is annotated with is that render's ``now``, carried from then on), and
leaves when the cluster shows it idle or, in a live render only, when ``gate.retainFor`` has
passed since then: an offline render (a pull request's) never drops a busy flavor because time
passed, so that no one's unrelated change turns into a drain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..kube.quantities import parse
from ..model import DEFAULT_DROP_POLICY, RETIRING_PREFIX, Carried, DropPolicy, QueuePlan, Settings

__all__ = ["RETIRING_PREFIX", "Retained", "Retention", "since_text"]


def _canonical(quantity: str) -> str:
    """A quantity as Kubernetes prints it (``0`` for any zero, so retained entries compare)."""
    try:
        return "0" if parse(quantity) == 0 else quantity
    except ValueError:
        return "0"


def since_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _whole_second(moment: datetime) -> datetime:
    """As the annotation holds it, so that the first render and the next agree on the end."""
    return moment.astimezone(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class Retained:
    """A flavor a queue keeps until idle: its name, since when it retires, and its quota per
    covered resource: what its Workloads hold there (the live render's reading of Kueue's
    reservation), offline the quota the previous render gave it; never more is admitted."""

    name: str
    since: datetime
    quota: dict[str, str] = field(default_factory=dict, compare=False)


@dataclass
class Retention:
    """Decides, queue by queue, which dropped flavors stay; collects what they still need."""

    carried: Carried
    now: datetime
    settings: Settings
    #: ResourceFlavor / Topology name -> spec, of retained flavors the new plan does not render
    flavor_specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    topology_specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: unused: offline, time never ends a retention (only the live render does), so the
    #: render's result does not change with time
    expiries: list[datetime] = field(default_factory=list)

    def policy(self, plan: QueuePlan) -> DropPolicy:
        return plan.drop_policy or self.settings.drop_policy or DEFAULT_DROP_POLICY

    def of(
        self, plan: QueuePlan, kept: set[str], rendered: dict[str, Any], topologies: set[str]
    ) -> list[Retained]:
        """The flavors ``plan``'s queue keeps beyond its new ones (``kept``), in the previous
        render's order. ``rendered``: the new plan's flavors by name; ``topologies``: its
        Topologies' names."""
        if self.policy(plan) != "WaitForIdle":
            return []
        since = self.carried.since.get(plan.name, {})
        idle = self.carried.idle.get(plan.name, frozenset()) if self.carried.idle is not None else frozenset()
        found: list[Retained] = []
        for name in self.carried.queues.get(plan.name, ()):
            if name in kept or name in idle:
                continue
            start = since.get(name) or _whole_second(self.now)
            end = start + self.settings.retain_for if self.settings.retain_for is not None else None
            if end is not None and self.now >= end and self.carried.usage is not None:
                continue  # waited long enough, in the scheduled live render: the gate drains it
            spec = self._flavor_spec(name, rendered)
            if spec is None or not self._topology(spec, topologies):
                continue  # the previous render does not say what it was: dropped the normal way
            found.append(Retained(name, start, self._quota(plan, name)))
            if name not in rendered:
                self.flavor_specs[name] = spec
        return found

    def _quota(self, plan: QueuePlan, name: str) -> dict[str, str]:
        """What the queue's Workloads reserve on the flavor (live), else its previous quota."""
        if self.carried.usage is not None:
            held = self.carried.usage.get(plan.name, {}).get(name, {})
        else:
            held = self.carried.quotas.get(plan.name, {}).get(name, {})
        return {r: _canonical(held.get(r, "0")) for r in plan.covered_resources}

    def _flavor_spec(self, name: str, rendered: dict[str, Any]) -> dict[str, Any] | None:
        if name in rendered:
            return {}  # rendered anyway (another queue has it)
        return self.carried.flavors.get(name)

    def _topology(self, spec: dict[str, Any], topologies: set[str]) -> bool:
        """The flavor's Topology is rendered, or the previous render had it (then kept)."""
        name = spec.get("topologyName")
        if not spec or name in topologies:
            return True
        if not isinstance(name, str) or name not in self.carried.topologies:
            return False
        self.topology_specs[name] = self.carried.topologies[name]
        return True
