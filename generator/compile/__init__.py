"""The compile stage: a valid inventory -> the objects of rendered/ and the status summary."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from ..model import (
    PROFILE_KEY,
    Carried,
    Finding,
    KueueVersion,
    Level,
    Manifest,
    Source,
    Where,
    flavor_key,
)
from ..rules.compile import PATH_SIZE, PREVIOUS_RENDER_UNREAD, SHARD_SIZE
from ..rules.semantic import OWNERSHIP_CONFLICT
from ..validate.checks import Context
from ..validate.checks.hierarchy import conflicts
from . import gate_wiring, manifests, pins, sync_wiring
from .manifests import FeatureFile
from .profiles import Assignment, assign
from .queues import Flavor, Queue, QueueBuilder, QueueFlavor, Unstated, build_queues
from .retention import Retention, since_text
from .shards import Sharding, crowded, objects_per_folder, objects_per_group, oversized

DEFAULT_GATE_NAMESPACE = "tasgen-system"
DEFAULT_GATE_IMAGE = "ghcr.io/tasgen/tasgen-gate:0.1.0"
DEFAULT_GATE_TIMEOUT = 1800
#: rendered/'s path in the repository, for the engines' wiring. A constant rather than the
#: output folder's place: the same inventory renders the same bytes wherever it is written.
DEFAULT_SYNC_PATH = "rendered"


@dataclass
class SourceStatus:
    name: str
    type: str
    ready: bool
    valid: bool
    ownership_conflict: bool
    expired: bool
    revision: str | None
    nodes: int | None  # nodes whose profile it gives; None when nothing was compiled (errors)


def _camel(data: dict[str, Any]) -> dict[str, Any]:
    return {re.sub(r"_(\w)", lambda m: m[1].upper(), k): v for k, v in data.items()}


def _snake(data: dict[str, Any]) -> dict[str, Any]:
    return {re.sub(r"([A-Z])", lambda m: "_" + m[1].lower(), k): v for k, v in data.items()}


@dataclass
class Summary:
    sources: list[SourceStatus] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)  # id, levels, nodes
    queues: list[dict[str, Any]] = field(default_factory=list)  # name, stopPolicy, flavors
    mutated_nodes: int | None = None  # filled by the emit stage

    @staticmethod
    def from_data(data: dict[str, Any]) -> Summary:
        return Summary(
            sources=[SourceStatus(**_snake(s)) for s in data["sources"]],
            profiles=data["profiles"],
            queues=data["queues"],
            mutated_nodes=data["mutatedNodes"],
        )

    def as_data(self) -> dict[str, Any]:
        return {
            "sources": [_camel(vars(s)) for s in self.sources],
            "profiles": self.profiles,
            "queues": self.queues,
            "mutatedNodes": self.mutated_nodes,
        }


@dataclass
class Rendering:
    manifests: list[Manifest]
    findings: list[Finding]
    summary: Summary
    assignment: Assignment | None = None  # every node's profile (tasgen plan compares them)
    features: list[FeatureFile] = field(default_factory=list)  # the NodeFeatures
    synced: tuple[str, ...] = ()  # every folder of rendered/ an engine syncs (written even empty)
    repo_path: str = DEFAULT_SYNC_PATH  # where the engines find rendered/ in the repository
    repo_path_where: Where | None = None  # GeneratorConfig's sync.path (or the config), if any
    expiries: list[datetime] = field(default_factory=list)  # when a retained flavor's retainFor ends
    #: every node's flavor labels as written, and the nodes kept on old ones (compile/pins.py)
    pinned: pins.Pinned = field(default_factory=lambda: pins.Pinned({}))


def render_objects(
    ctx: Context,
    *,
    node_features: bool = True,
    stamp: gate_wiring.RenderStamp | None = None,
    carried: Carried | None = None,
    now: datetime | None = None,
) -> Rendering:
    """Everything render writes (the NodeFeatures as rows of ``features``, the rest as
    manifests); without the NodeFeatures when only validating (they cannot fail, and they are
    most of the work). ``stamp``: the serial and objects of the render in rendered/;
    ``carried``: what it gave the queues, which WaitForIdle queues carry on (with ``now``,
    when a retention starts and whether retainFor passed)."""
    inventory = ctx.inventory
    assignment = assign(ctx)
    version = inventory.settings.kueue_api_version
    retention = None
    if carried is not None and now is not None:
        retention = Retention(carried, now, inventory.settings)
    queues, builder, findings, written = build_queues(
        inventory.plans.values(),
        ctx.ordered_nodes,
        assignment,
        version,
        retention,
        _unstated(ctx),
        partial(_pins, ctx, assignment, carried=carried),
    )
    flavors = builder.flavors
    assert written is not None
    pinned = written
    if carried is not None and carried.unread and retention is not None:
        findings += _unread(ctx, retention, carried.unread)
    kept_flavors = retention.flavor_specs if retention else {}
    kept_topologies = retention.topology_specs if retention else {}
    ready = [s for s in ctx.writing_sources() if not ctx.expired(s)]
    sharding = Sharding.of(inventory.settings.output)
    folder_of = sharding.folders_of(inventory.nodes, assignment.domain_of)
    groups = partial(objects_per_group, inventory.nodes, assignment.domain_of, ready)
    counts = objects_per_folder(folder_of, ready)
    findings += [SHARD_SIZE.of(h) for h in oversized(sharding, counts, inventory, groups)]
    features = []
    if node_features:
        features = manifests.feature_files(inventory, ready, pinned.rows, folder_of)
    queue_objects = manifests.cluster_queues(queues, version)
    kueue = [
        *manifests.topologies(assignment, version, kept_topologies),
        *manifests.resource_flavors(flavors, version, kept_flavors, _legacy(flavors, carried)),
    ]
    serial = gate_wiring.render_serial(stamp, frozenset(m.name for m in kueue))
    for m in kueue:
        m.body["metadata"]["annotations"][gate_wiring.RENDER_ANNOTATION] = str(serial)
    local_queues = manifests.local_queues(queues, version)
    control = [
        *kueue,
        *_gate(ctx, [m.body for m in queue_objects]),
        *_retire(ctx, [m.body for m in kueue], serial),
        *queue_objects,
        *local_queues,
    ]
    # the folders that grow with the inventory (the gate's and retire's hold a fixed few)
    growing = [*kueue, *queue_objects, *local_queues]
    findings += [PATH_SIZE.of(h) for h in crowded(sharding, growing, inventory)]
    objects = control
    paths = sync_wiring.Paths.of(inventory.settings.sync.get("path", DEFAULT_SYNC_PATH), folder_of.values())
    # the labels paths hold NodeFeatures (compiled as rows, not manifests; and not when validating)
    feature = {
        "apiVersion": manifests.NFD_API,
        "kind": "NodeFeature",
        "metadata": {"namespace": inventory.settings.node_feature_namespace},
    }
    synced = sync_wiring.Synced.of([feature, *(m.body for m in control)], _gate_place(ctx)[0])
    kueue_api = manifests.kueue_api(version)
    objects += sync_wiring.wiring(paths, inventory.settings.sync, _gate_timeout(ctx), synced, kueue_api)
    summary = _summary(ctx, assignment, queues)
    settings = inventory.settings
    config = (
        settings.where.at("sync", "path") if settings.where and "path" in settings.sync else settings.where
    )
    return Rendering(
        objects,
        assignment.findings + findings,
        summary,
        assignment,
        features,
        synced=paths.folders,
        repo_path=paths.repo_path,
        repo_path_where=config,
        expiries=retention.expiries if retention else [],
        pinned=pinned,
    )


def _pins(
    ctx: Context, assignment: Assignment, builder: QueueBuilder, *, carried: Carried | None
) -> pins.Pinned:
    """Every node's profile and flavor labels, the nodes whose flavors change kept on their
    previous ones until the cluster shows them idle (compile/pins.py)."""
    flavors_of: dict[str, list[str]] = {}
    for name in sorted(builder.flavors):
        for member in builder.members.get(name, ()):
            flavors_of.setdefault(member.name, []).append(name)
    made: dict[tuple[str, tuple[str, ...]], pins.Row] = {}
    rows: dict[str, pins.Row] = {}
    for node, profile in assignment.profile_of.items():
        key = (profile.id, tuple(flavors_of.get(node, ())))
        row = made.get(key)
        if row is None:
            row = made[key] = {PROFILE_KEY: profile.id, **{flavor_key(f): f for f in key[1]}}
        rows[node] = row
    if carried is None or not carried.rows:
        return pins.Pinned(rows)
    labels = {name: node.labels for name, node in ctx.inventory.nodes.items()}
    return pins.pin(rows, carried.rows, labels, carried.flavors, carried.live)


def _unread(ctx: Context, retention: Retention, unread: tuple[str, ...]) -> list[Finding]:
    """The warning previous-render-unread, at the first WaitForIdle policy (a queue's, else the
    GeneratorConfig's)."""
    waiting = [
        p
        for p in sorted(ctx.inventory.plans.values(), key=lambda p: p.name)
        if retention.policy(p) == "WaitForIdle"
    ]
    if not waiting:
        return []
    first = waiting[0]
    settings = ctx.inventory.settings
    if first.drop_policy is not None or settings.where is None:
        where = first.where.at("spec", "dropPolicy") if first.drop_policy is not None else first.where
    else:
        where = settings.where.at("gate", "dropPolicy")
    files = ", ".join(f"rendered/{f}" for f in unread)
    message = (
        f"queue {first.name!r} uses dropPolicy WaitForIdle but the previous render's {files} "
        "cannot be read (missing or not YAML): nothing this render drops is retained and no node "
        "is kept on its flavor; if the cluster runs an earlier render, the gate drains each dropped "
        "flavor and moved nodes may be double-booked"
    )
    return [PREVIOUS_RENDER_UNREAD(where, message)]


def _legacy(flavors: Mapping[str, Flavor], carried: Carried | None) -> frozenset[str]:
    """Planned flavors that the previous render wrote without their flavor label: Kueue will
    not change a topology-aware flavor's nodeLabels, so they keep selecting by identity and
    profile (their nodes get the flavor label all the same)."""
    if carried is None:
        return frozenset()
    found = set()
    for name in flavors:
        spec = carried.flavors.get(name)
        labels = spec.get("nodeLabels") if isinstance(spec, dict) else None
        if isinstance(labels, dict) and flavor_key(name) not in labels:
            found.add(name)
    return frozenset(found)


def _gate_timeout(ctx: Context) -> int:
    return int(ctx.inventory.settings.gate.get("timeoutSeconds", DEFAULT_GATE_TIMEOUT))


def _gate(ctx: Context, queues: list[dict[str, Any]]) -> list[Manifest]:
    namespace, image = _gate_place(ctx)
    return gate_wiring.gate_manifests(
        queues, namespace=namespace, image=image, timeout_seconds=_gate_timeout(ctx)
    )


def _retire(ctx: Context, kueue: list[dict[str, Any]], serial: int) -> list[Manifest]:
    namespace, image = _gate_place(ctx)
    return gate_wiring.retire_manifests(kueue, namespace=namespace, image=image, serial=serial)


def _gate_place(ctx: Context) -> tuple[str, str]:
    """The namespace and image of the gate's Jobs (the retire step's too)."""
    gate = ctx.inventory.settings.gate
    return gate.get("namespace", DEFAULT_GATE_NAMESPACE), gate.get("image", DEFAULT_GATE_IMAGE)


def _summary(ctx: Context, assignment: Assignment, queues: list[Queue]) -> Summary:
    version = ctx.inventory.settings.kueue_api_version
    counts = Counter(assignment.source_of.values())
    summary = Summary(sources=source_statuses(ctx, [], counts))
    per_profile = assignment.nodes_per_profile()
    summary.profiles = [
        {"id": p.id, "levels": list(p.keys), "nodes": per_profile[p.id]}
        for p in sorted(assignment.profiles().values(), key=lambda p: p.id)
    ]
    summary.queues = [_queue_summary(q, version) for q in queues]
    return summary


def _queue_summary(queue: Queue, version: KueueVersion) -> dict[str, Any]:
    found: dict[str, Any] = {
        "name": queue.plan.name,
        "stopPolicy": manifests.cluster_queue(queue, version)["spec"]["stopPolicy"],
        "flavors": [_flavor_summary(f) for f in queue.flavors],
    }
    if queue.retained:
        found["flavors"] += [
            {
                "name": r.name,
                "nominalQuota": {k: r.quota.get(k, "0") for k in queue.plan.covered_resources},
                "retiringSince": since_text(r.since),
            }
            for r in queue.retained
        ]
    if queue.plan.local_queues:
        found["localQueues"] = [f"{lq.namespace}/{lq.name}" for lq in queue.plan.local_queues]
    return found


def _flavor_summary(flavor: QueueFlavor) -> dict[str, Any]:
    found: dict[str, Any] = {"name": flavor.flavor.name, "nominalQuota": flavor.quota}
    if flavor.borrowing_limit:
        found["borrowingLimit"] = flavor.borrowing_limit
    if flavor.lending_limit:
        found["lendingLimit"] = flavor.lending_limit
    return found


def source_statuses(
    ctx: Context, findings: list[Finding], counts: dict[str, int] | None = None
) -> list[SourceStatus]:
    """The conditions per source (docs/reference/cli.md); also on an invalid inventory (nothing is rendered
    then, but the statuses say which sources are at fault)."""
    contended = {name for _, _, first, second in conflicts(ctx) for name in (first, second)}
    return [
        _status(ctx, ctx.inventory.sources[name], findings, name in contended, _count(counts, name))
        for name in sorted(ctx.inventory.sources)
    ]


def _count(counts: dict[str, int] | None, name: str) -> int | None:
    """How many nodes a source places; unknown (None) when the inventory was not compiled."""
    return None if counts is None else counts.get(name, 0)


def _status(
    ctx: Context, source: Source, findings: list[Finding], contended: bool, nodes: int | None
) -> SourceStatus:
    valid = source.name not in ctx.unloaded and not any(
        f.level is Level.ERROR
        and f.rule != OWNERSHIP_CONFLICT.id
        and (f.source == source.name or _belongs(f.where, source))
        for f in findings
    )
    expired = ctx.expired(source)
    return SourceStatus(
        name=source.name,
        type=source.type.key,
        ready=valid and not expired and not contended,
        valid=valid,
        ownership_conflict=contended,
        expired=expired,
        revision=source.snapshot.revision if source.snapshot else None,
        nodes=nodes,
    )


def _belongs(where: Where, source: Source) -> bool:
    def within(base: Where) -> bool:
        return (where.file, where.doc) == (base.file, base.doc) and where.pointer[
            : len(base.pointer)
        ] == base.pointer

    return within(source.where) or (source.snapshot is not None and within(source.snapshot.where))


def _unstated(ctx: Context) -> dict[str, Unstated]:
    """Node -> the writing source that selects it but does not state it (read for the
    quota-split-unstated warning)."""
    found: dict[str, Unstated] = {}
    for src in ctx.writing_sources():
        if src.snapshot is None or ctx.expired(src):
            continue
        selected = ctx.selected[src.name]
        stated = src.snapshot.nodes
        missing = [node.name for node in selected if node.name not in stated]
        if missing:
            counts = Unstated(src.name, len(selected), len(selected) - len(missing))
            found.update(dict.fromkeys(missing, counts))
    return found
