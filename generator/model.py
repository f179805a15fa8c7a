"""Domain types shared by every stage: problems, locations and the inventory objects.

Stages only exchange these types, so each stage can be read (and tested) on its own:
``load`` turns files into :class:`Document`s, ``validate`` turns documents into an
:class:`Inventory` plus :class:`Finding`s, ``compile`` turns an inventory into manifests,
``emit`` writes them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from .kube import selectors
from .sourcetypes import SourceType

#: A path inside one YAML/JSON document, e.g. ``("nodes", 3, "labels", "zone")``.
Pointer = tuple[str | int, ...]

API_GROUP = "topology.gpustack.ai"
API_VERSION = f"{API_GROUP}/v1alpha1"
HOSTNAME_KEY = "kubernetes.io/hostname"
#: The repository URL ``tasgen init`` writes without --repo-url; a warning (repo-url-placeholder)
#: while a GeneratorConfig still has it.
PLACEHOLDER_REPO_URL = "https://github.com/OWNER/REPO.git"
PROFILE_KEY = f"{API_GROUP}/profile"
#: what the profiles' NodeFeature file is named after, as a source's is after the source
#: (nodefeatures-<name>.yaml): so no TopologySource may be named so (rule source-name)
PROFILES_FEATURE_NAME = "profiles"
#: node label per flavor that selects the node, <prefix><12 hex of the flavor's name>, valued
#: with the flavor's name: a flavor's nodeLabels select it, so every flavor change is a node
#: label change (docs/explanation/gate.md, "One label per flavor")
FLAVOR_KEY_PREFIX = f"{API_GROUP}/flavor-"
#: the one label of a node released from its flavors but not yet given its new ones (a live
#: render saw it idle while a flavor it leaves could still admit onto it)
TRANSIT_KEY = f"{API_GROUP}/in-transit"


def flavor_key(flavor: str) -> str:
    """The node label that the flavor ``flavor`` selects its nodes by."""
    return FLAVOR_KEY_PREFIX + hashlib.sha256(flavor.encode()).hexdigest()[:12]


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Problem:
    """One reportable problem; line and col are 1-based (0 when a file has no position)."""

    path: str
    line: int
    col: int
    rule: str
    message: str
    level: Level = Level.ERROR


@dataclass(frozen=True)
class Where:
    """Where a value lives: a document of a file, a pointer in it and, for a snapshot that is
    embedded as text in a ConfigMap value, a pointer inside that text."""

    file: str
    doc: int = 0
    pointer: Pointer = ()
    inner: Pointer | None = None
    key: bool = False  # point at the key of the last pointer step, not at its value
    line_col: tuple[int, int] | None = None  # already known (a parse error)

    def at(self, *more: str | int) -> Where:
        """The location of a value below this one."""
        if self.inner is not None:
            return Where(self.file, self.doc, self.pointer, (*self.inner, *more))
        return Where(self.file, self.doc, (*self.pointer, *more))

    def key_of(self, *more: str | int) -> Where:
        """The location of the key of an entry below this one."""
        below = self.at(*more)
        return Where(below.file, below.doc, below.pointer, below.inner, key=True)


@dataclass(frozen=True)
class Finding:
    """A problem before its position is looked up (positions cost a parse, so they are
    resolved once, for all findings of a file together)."""

    where: Where
    rule: str
    message: str
    level: Level = Level.ERROR
    source: str | None = None  # the TopologySource it is about, for the status summary


@dataclass
class Document:
    """One YAML/JSON document of an inventory file, as plain data."""

    file: str
    index: int
    body: dict[str, Any]
    #: the file's text when it is YAML; used to find positions and embedded snapshots
    text: str = field(default="", repr=False)

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def name(self) -> str:
        meta = self.body.get("metadata")
        return str(meta.get("name", "")) if isinstance(meta, dict) else ""

    def where(self, *pointer: str | int) -> Where:
        return Where(self.file, self.index, tuple(pointer))


# --- the inventory, after schema validation -------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry of a label selector."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: frozenset[str]


@dataclass(frozen=True)
class Selector:
    """A Kubernetes LabelSelector; the empty selector selects every Node."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    def selects(self, labels: Mapping[str, str]) -> bool:
        """Whether it selects an object with these labels (every term holds)."""
        return selectors.selects(
            self.match_labels, ((r.key, r.operator, r.values) for r in self.expressions), labels
        )


#: a Node taint or a flavor's nodeTaint: key, value (may be empty), effect
Taint = tuple[str, str, str]


@dataclass(slots=True)
class Node:
    """One node of a NodeInventory. Not frozen, unlike its neighbours, though nothing
    changes a Node: a frozen dataclass sets each field through object.__setattr__, a cost
    paid per node in every render (a named tuple is no faster)."""

    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    document: Where  # the NodeInventory document that lists it
    index: int  # its place in the document's nodes
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    @property
    def where(self) -> Where:
        """Made when asked for (by a finding): a fleet has 100k nodes and few findings."""
        return self.document.at("nodes", self.index)


KueueVersion = Literal["v1beta1", "v1beta2"]
#: what happens to a busy flavor a queue drops (docs/explanation/gate.md): the gate drains the
#: whole queue, or the flavor stays in the queue at zero quota until no Workload holds it
DropPolicy = Literal["HoldAndDrain", "WaitForIdle"]
DEFAULT_DROP_POLICY: DropPolicy = "HoldAndDrain"
#: ClusterQueue annotation per flavor it keeps at zero quota (WaitForIdle): <prefix><flavor>,
#: the RFC 3339 time the flavor went into retention
RETIRING_PREFIX = f"retiring.{API_GROUP}/"


@dataclass(frozen=True)
class Snapshot:
    """A writing source's inventory: the labels it states per node."""

    revision: str
    expires_at: datetime | None
    nodes: dict[str, dict[str, str]]
    where: Where  # of the snapshot's root (inside the ConfigMap value or the webhook file)


@dataclass
class Source:
    """A TopologySource, with its snapshot once loaded."""

    name: str
    selector: Selector
    levels: tuple[str, ...]  # normalized: coarsest first, Topograph tiers reordered
    declared_levels: tuple[str, ...]  # as written
    type: SourceType  # nodeLabels, configMap or webhook: what it is, whether it writes
    spec: dict[str, Any]
    where: Where  # of the document root
    snapshot: Snapshot | None = None

    @property
    def writes(self) -> bool:
        return self.type.writes


@dataclass(frozen=True)
class Hardware:
    identity: dict[str, str]
    nominal_quota: dict[str, str] | None
    where: Where
    borrowing_limit: dict[str, str] = field(default_factory=dict)
    lending_limit: dict[str, str] = field(default_factory=dict)
    #: as the ResourceFlavor spells them (camelCase keys), sorted: the order is not meaningful
    tolerations: tuple[dict[str, Any], ...] = ()
    node_taints: tuple[dict[str, str], ...] = ()

    @property
    def limits(self) -> tuple[tuple[str, dict[str, str]], ...]:
        """(field, resource -> quantity) of borrowingLimit and lendingLimit."""
        return (("borrowingLimit", self.borrowing_limit), ("lendingLimit", self.lending_limit))


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    where: Where


@dataclass(frozen=True)
class QueuePlan:
    """A ClusterQueuePlan: one generated ClusterQueue."""

    name: str
    covered_resources: tuple[str, ...]
    hardware: tuple[Hardware, ...]
    cluster_queue: dict[str, Any]  # pass-through fields, v1beta2 spelling
    stop_policy: str
    where: Where
    local_queues: tuple[LocalQueue, ...] = ()
    spec: dict[str, Any] = field(default_factory=dict, compare=False)  # as written
    drop_policy: DropPolicy | None = None  # None: GeneratorConfig's gate.dropPolicy


@dataclass(frozen=True)
class Settings:
    """GeneratorConfig, with its defaults (docs/reference/inventory.md)."""

    hardware_identity_keys: tuple[str, ...] = ("nvidia.com/gpu.product",)
    admin_label_prefix: str | None = None
    node_feature_namespace: str = "node-feature-discovery"
    gate: dict[str, Any] = field(default_factory=dict)  # namespace, image, timeoutSeconds, ...
    drop_policy: DropPolicy = DEFAULT_DROP_POLICY  # gate.dropPolicy: each queue's unless it sets one
    retain_for: timedelta | None = None  # gate.retainFor, once valid: WaitForIdle's longest wait
    kueue_api_version: KueueVersion = "v1beta2"
    output: dict[str, Any] = field(default_factory=dict)  # nodeFeatureShards, maxObjectsPerShard
    sync: dict[str, Any] = field(default_factory=dict)  # path, flux, argocd
    expiry_warning_days: int = 14  # a snapshot expiring sooner is a warning (source-expiring)
    #: labels import-nodes drops: keys, or prefixes ending in '*' (values that change on every
    #: refresh would make every import a diff)
    volatile_label_keys: tuple[str, ...] = ("nvidia.com/gfd.timestamp",)
    #: globs of workload manifests in the repository, relative to its top folder: what
    #: ``tasgen fit`` checks without a PATH and ``tasgen plan`` compares
    workloads: tuple[str, ...] = ()
    where: Where | None = None


@dataclass
class Inventory:
    settings: Settings
    nodes: dict[str, Node]
    sources: dict[str, Source]
    plans: dict[str, QueuePlan]


@dataclass(frozen=True)
class Documents:
    """YAML documents that an object holds as one string value (a ConfigMap's file, such as the
    gate's plan): the compile stage says which, the emit stage writes them with its one YAML
    writer (generator.emit.yaml)."""

    items: tuple[dict[str, Any], ...]

    def digest(self) -> str:
        """Changes exactly when the documents do (for a Job template's plan-hash annotation)."""
        text = json.dumps(self.items, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Manifest:
    """One object of ``rendered/`` and the file (relative to ``rendered/``) it belongs in."""

    file: str
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass(frozen=True)
class Carried:
    """What the previous render wrote that the next one carries on: its queues' flavors and
    retiring times, and the ResourceFlavors and Topologies a retained flavor still needs (read
    from rendered/ at the load/emit edge, so that compile stays pure); with a live cluster
    (render --kubeconfig), which of those flavors nothing holds any more. Empty: a first render
    (docs/explanation/gate.md, WaitForIdle)."""

    queues: dict[str, tuple[str, ...]] = field(default_factory=dict)  # ClusterQueue -> flavors, in order
    since: dict[str, dict[str, datetime]] = field(default_factory=dict)  # queue -> retained flavor -> since
    flavors: dict[str, dict[str, Any]] = field(default_factory=dict)  # ResourceFlavor -> its spec
    topologies: dict[str, dict[str, Any]] = field(default_factory=dict)  # Topology -> its spec
    #: ClusterQueue -> its flavors that no unfinished Workload's admission names and that the
    #: live queue gives no quota; None without a cluster (offline: only retainFor ends a wait)
    idle: dict[str, frozenset[str]] | None = None
    #: node -> the labels its profile NodeFeature had (the profile and the flavor labels;
    #: read lazily, at the first lookup), which a node moved out of a flavor keeps until the
    #: cluster shows it idle (compile/pins.py)
    rows: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: ClusterQueue -> flavor -> resource -> the nominalQuota the previous render gave it
    quotas: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    #: with a live cluster: ClusterQueue -> flavor -> resource -> what Kueue reserves there
    #: (status.flavorsReservation), what a retained flavor's quota is lowered to
    usage: dict[str, dict[str, dict[str, str]]] | None = None
    #: the previous render's files of queues, flavors and Topologies that are missing or do not
    #: parse (what a WaitForIdle render then cannot carry on: rule previous-render-unread)
    unread: tuple[str, ...] = ()
    #: with a live cluster: the nodes that unfinished Workloads' topology assignments name,
    #: the flavors that hold an admission without one (every node of theirs counts as busy),
    #: and the flavors some live queue gives quota to (they may admit before the next sync)
    live: LiveNodes | None = None


@dataclass(frozen=True)
class LiveNodes:
    """What the cluster shows of nodes and flavors (render --kubeconfig), compile/pins.py."""

    busy: frozenset[str] = frozenset()
    unplaced: frozenset[str] = frozenset()
    admitting: frozenset[str] = frozenset()
