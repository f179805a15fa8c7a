"""One side of a plan (the base revision or the working tree) reduced to the facts it compares:
queues and their flavors, every node's profile, domains and tasgen-written labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import chain
from typing import Any

from ...model import (
    DEFAULT_DROP_POLICY,
    FLAVOR_KEY_PREFIX,
    HOSTNAME_KEY,
    PROFILE_KEY,
    RETIRING_PREFIX,
    DropPolicy,
    Node,
    Where,
)
from ...pipeline import Compilation
from .shape import QuotaField


@dataclass(frozen=True)
class FlavorFacts:
    name: str
    identity: tuple[tuple[str, str], ...]
    profile: str
    resources: dict[str, dict[QuotaField, str]]  # resource -> nominalQuota / borrowingLimit / lendingLimit
    spec: dict[str, Any] = field(default_factory=dict)  # the ResourceFlavor's, as rendered
    #: kept at zero quota until idle (dropPolicy WaitForIdle): since when, as annotated
    retiring_since: str | None = None


@dataclass
class QueueFacts:
    name: str
    stop_policy: str
    flavors: dict[str, FlavorFacts]  # by flavor name, in the queue's order
    covered: tuple[str, ...]
    body: dict[str, Any]  # the rendered ClusterQueue (what the gate compares with the live one)
    local_queues: tuple[str, ...] = ()  # namespace/name of each LocalQueue pointing at it
    drop_policy: DropPolicy = DEFAULT_DROP_POLICY  # the queue's, else GeneratorConfig's
    retain_for: timedelta | None = None  # GeneratorConfig gate.retainFor

    @property
    def retained(self) -> tuple[str, ...]:
        """The flavors kept at zero quota until idle (WaitForIdle), in the queue's order."""
        return tuple(f.name for f in self.flavors.values() if f.retiring_since is not None)

    @property
    def settings(self) -> dict[str, Any]:
        """The ClusterQueue's spec but its flavors and stop policy (compared on their own)."""
        return {k: v for k, v in self.body["spec"].items() if k not in ("resourceGroups", "stopPolicy")}


@dataclass
class Side:
    """What one revision compiles to; empty when it has no inventory or does not compile."""

    compiled: bool = False
    queues: dict[str, QueueFacts] = field(default_factory=dict)
    profiles: dict[str, tuple[str, ...]] = field(default_factory=dict)  # id -> level keys
    nodes: dict[str, Node] = field(default_factory=dict)
    profile_of: dict[str, str] = field(default_factory=dict)  # node -> profile id
    #: node -> the profile and flavor labels its NodeFeature is written with (pins included)
    rows: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: node -> the flavors it is kept on while the plan gives it another row (compile/pins.py)
    kept: Mapping[str, frozenset[str]] = field(default_factory=dict)
    transit: frozenset[str] = frozenset()  # nodes written with the transit row
    domain_of: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node -> values of its levels
    members: dict[str, list[str]] = field(default_factory=dict)  # profile id -> its nodes
    #: Ready writing source -> node -> the labels it states (read-only parents included: the
    #: snapshot's own dicts, shared, never copied)
    stated: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    source_levels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source_of: dict[str, str] = field(default_factory=dict)  # node -> the source of its profile
    source_where: dict[str, Where] = field(default_factory=dict)  # source -> its document
    source_declared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # levels as written
    selected: dict[str, int] = field(default_factory=dict)  # source -> nodes it selects
    carried: dict[str, Counter[str]] = field(default_factory=dict)  # source -> level -> nodes with it


def side_of(compiled: Compilation | None) -> Side:
    if compiled is None or compiled.failed or compiled.rendering is None or compiled.context is None:
        return Side()
    ctx, planned = compiled.context, compiled.rendering
    assert planned.assignment is not None
    side = Side(compiled=True, nodes=ctx.inventory.nodes)
    side.source_levels = {name: s.levels for name, s in ctx.inventory.sources.items()}
    side.source_where = {name: s.where for name, s in ctx.inventory.sources.items()}
    side.source_declared = {name: s.declared_levels for name, s in ctx.inventory.sources.items()}
    side.source_of = dict(planned.assignment.source_of)
    _profiles(side, planned.assignment.profile_of)
    side.rows = planned.pinned.rows
    side.kept, side.transit = planned.pinned.kept, frozenset(planned.pinned.transit)
    _domains_and_labels(side, compiled)
    _queues(side, [m.body for m in planned.manifests])
    settings = ctx.inventory.settings
    for name, queue in side.queues.items():
        plan = ctx.inventory.plans.get(name)
        queue.drop_policy = (plan.drop_policy if plan else None) or settings.drop_policy
        queue.retain_for = settings.retain_for
    return side


def _profiles(side: Side, profile_of: dict[str, Any]) -> None:
    for node, profile in profile_of.items():
        side.profile_of[node] = profile.id
        side.profiles.setdefault(profile.id, profile.keys)
        side.members.setdefault(profile.id, []).append(node)


def _domains_and_labels(side: Side, compiled: Compilation) -> None:
    """Each node's values for its profile's levels, and what the Ready writing sources state."""
    ctx = compiled.context
    assert ctx is not None
    values: dict[str, dict[str, str]] = {}
    for source in ctx.loaded_sources():
        if ctx.expired(source):
            continue
        stated_by = ctx.hierarchy_values(source)
        side.selected[source.name] = len(stated_by)
        side.carried[source.name] = Counter(chain.from_iterable(stated for _, stated in stated_by))
        values.update(
            (n.name, stated) for n, stated in stated_by if side.source_of.get(n.name) == source.name
        )
        if source.writes and source.snapshot is not None:
            side.stated[source.name] = source.snapshot.nodes
    for profile, names in side.members.items():
        keys = side.profiles[profile]
        for name in names:
            mine, host = values.get(name, {}), side.nodes[name].labels.get(HOSTNAME_KEY, name)
            side.domain_of[name] = tuple([mine.get(k, host) for k in keys])


def _queues(side: Side, bodies: list[dict[str, Any]]) -> None:
    flavors = {b["metadata"]["name"]: b["spec"] for b in bodies if b["kind"] == "ResourceFlavor"}
    for body in (b for b in bodies if b["kind"] == "ClusterQueue"):
        spec = body["spec"]
        groups = spec.get("resourceGroups") or [{}]
        queue = QueueFacts(body["metadata"]["name"], spec["stopPolicy"], {}, (), body)
        queue.covered = tuple(groups[0].get("coveredResources", ()))
        retiring = body["metadata"].get("annotations", {})
        for entry in groups[0].get("flavors", ()):
            since = retiring.get(f"{RETIRING_PREFIX}{entry['name']}")
            queue.flavors[entry["name"]] = _flavor(entry, flavors[entry["name"]], since)
        side.queues[queue.name] = queue
    for body in (b for b in bodies if b["kind"] == "LocalQueue"):
        meta, queue_name = body["metadata"], body["spec"]["clusterQueue"]
        if queue_name in side.queues:
            found = side.queues[queue_name]
            found.local_queues = (*found.local_queues, f"{meta['namespace']}/{meta['name']}")


def _flavor(entry: dict[str, Any], spec: dict[str, Any], since: str | None = None) -> FlavorFacts:
    labels = {k: v for k, v in spec["nodeLabels"].items() if not k.startswith(FLAVOR_KEY_PREFIX)}
    profile = labels.pop(PROFILE_KEY)
    resources = {
        r["name"]: {k: str(v) for k, v in r.items() if k != "name"} for r in entry.get("resources", ())
    }
    return FlavorFacts(entry["name"], tuple(sorted(labels.items())), profile, resources, spec, since)
