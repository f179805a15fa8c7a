"""The workloads of the differential test of `tasgen fit` against real Kueue
(tests/e2e/test_fit_differential.py): a generated fleet whose queues share a cohort, Jobs
generated around a fleet's own thresholds (a node's, a domain's, a flavor's, a quota's
capacity), and Kueue's decisions read into causes that fit's verdicts are compared with.

Nothing here predicts a verdict: sizes are drawn from capacities so that both answers occur,
and the two judges decide."""

from __future__ import annotations

import copy
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from kubernetes.utils import parse_quantity

from tasgen.emit import yaml
from tests.e2e.fleet import NODE_NAME_LABEL, Fleet, Obj

API = "topology.gpustack.ai/v1alpha1"
GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
PRODUCT = "nvidia.com/gpu.product"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
#: A level no Topology of any fleet here has.
MISSING_LEVEL = "topology.gpustack.ai/no-such-level"
UNKNOWN_QUEUE = "no-such-queue"
#: An extended resource no queue covers.
UNCOVERED = "example.com/fpga"

# --- the generated fleet ---------------------------------------------------------------------

GEN_POOL = "gen.example.com/pool"
GEN_BLOCK = "gen.example.com/block"
GEN_RACK = "gen.example.com/rack"
GEN_TAINT = {"key": "gen.example.com/reserved", "value": "serve", "effect": "NoSchedule"}
GEN_COHORT = "gen-cohort"
GEN_A, GEN_B = "NVIDIA-GEN-A", "NVIDIA-GEN-B"


def _gen_node(
    rng: random.Random,
    name: str,
    pool: str,
    product: str,
    gpus: int,
    levels: Mapping[str, str],
    taints: list[Obj],
) -> Obj:
    labels = {HOSTNAME: name, "kubernetes.io/os": "linux", GEN_POOL: pool, PRODUCT: product, **levels}
    allocatable = {
        "cpu": rng.choice(["32", "64", "95500m"]),
        "memory": rng.choice(["256Gi", "512Gi"]),
        GPU: str(gpus),
        "pods": rng.choice(["110", "110", "6"]),
    }
    node: Obj = {"name": name, "labels": dict(sorted(labels.items())), "allocatable": allocatable}
    if taints:
        node["taints"] = taints
    return node


def write_generated_fleet(root: Path, rng: random.Random) -> None:
    """An inventory in root: two GPU products on nodes of their own (GEN-A in blocks of racks,
    maybe with a flavor nodeTaint; GEN-B in racks, some of its nodes tainted without a flavor
    toleration) and two queues in one cohort that name both, with declared quotas, a
    lendingLimit and borrowingLimits."""
    nodes: list[Obj] = []
    for block in range(2):
        for rack in range(rng.randint(1, 2)):
            for i in range(rng.randint(2, 3)):
                levels = {GEN_BLOCK: f"blk-{block}", GEN_RACK: f"a-{block}-{rack}"}
                gpus = rng.choice([4, 8])
                nodes.append(_gen_node(rng, f"gen-a-{block}-{rack}-{i}", "a", GEN_A, gpus, levels, []))
    for rack in range(rng.randint(2, 3)):
        for i in range(rng.randint(1, 3)):
            taints = [dict(GEN_TAINT)] if rng.random() < 0.3 else []
            nodes.append(
                _gen_node(
                    rng, f"gen-b-{rack}-{i}", "b", GEN_B, rng.choice([2, 4]), {GEN_RACK: f"b-{rack}"}, taints
                )
            )
    gpus = {
        p: sum(int(n["allocatable"][GPU]) for n in nodes if n["labels"][PRODUCT] == p) for p in (GEN_A, GEN_B)
    }
    train_a = rng.choice([gpus[GEN_A], gpus[GEN_A] - 4, gpus[GEN_A] // 2])
    # Kueue refuses GEN-A's flavor to a pod that does not tolerate these (when a seed sets them)
    a_taints = {"nodeTaints": [dict(GEN_TAINT)]} if rng.random() < 0.5 else {}
    serve_b = rng.choice([2, 4])
    plans = [
        _plan(
            "gen-train",
            [
                {
                    "identity": {PRODUCT: GEN_A},
                    "nominalQuota": {GPU: str(train_a)},
                    "lendingLimit": {GPU: str(rng.randint(0, min(8, train_a)))},
                    **a_taints,
                },
                {"identity": {PRODUCT: GEN_B}},
            ],
        ),
        _plan(
            "gen-serve",
            [
                {
                    "identity": {PRODUCT: GEN_B},
                    "nominalQuota": {GPU: str(serve_b)},
                    "borrowingLimit": {GPU: str(rng.choice([2, 4, 8]))},
                },
                {
                    "identity": {PRODUCT: GEN_A},
                    "nominalQuota": {GPU: str(rng.choice([0, 4]))},
                    "borrowingLimit": {GPU: str(rng.choice([4, 16]))},
                    **a_taints,
                },
            ],
        ),
    ]
    sources = [
        _source("gen-a", "a", [GEN_BLOCK, GEN_RACK]),
        _source("gen-b", "b", [GEN_RACK]),
    ]
    config = {"apiVersion": API, "kind": "GeneratorConfig", "metadata": {"name": "gen"}, "spec": {}}
    inventory = {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "gen"}, "nodes": nodes}
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.yaml").write_text(yaml.dump(config))
    (root / "nodes.yaml").write_text(yaml.dump(inventory))
    (root / "sources.yaml").write_text("---\n".join(yaml.dump(s) for s in sources))
    (root / "queues.yaml").write_text("---\n".join(yaml.dump(p) for p in plans))


def _plan(name: str, hardware: list[Obj]) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ClusterQueuePlan",
        "metadata": {"name": name},
        "spec": {
            "coveredResources": ["cpu", "memory", GPU],
            "hardware": hardware,
            "localQueues": [{"namespace": name}],
            "clusterQueue": {"cohortName": GEN_COHORT, "namespaceSelector": {}},
        },
    }


def _source(name: str, pool: str, levels: list[str]) -> Obj:
    return {
        "apiVersion": API,
        "kind": "TopologySource",
        "metadata": {"name": name},
        "spec": {"nodeSelector": {"matchLabels": {GEN_POOL: pool}}, "levels": levels, "nodeLabels": {}},
    }


# --- a fleet as the generator sees it --------------------------------------------------------


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str]
    topology: str
    levels: tuple[str, ...]
    tolerations: tuple[Obj, ...] = ()


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]  # the inventory's and the NodeFeatures' labels
    allocatable: dict[str, Decimal]
    taints: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class Lane:
    """One fleet on the control plane: its flavors, queues and nodes. Lanes share no node,
    flavor or cohort, so the workloads of two lanes can be judged at the same time."""

    name: str
    fleet: Fleet
    inventory: Path
    flavors: dict[str, Flavor]
    queues: dict[str, tuple[str, ...]]  # ClusterQueue -> its flavors, in order
    nominal: dict[tuple[str, str], dict[str, Decimal]]  # (queue, flavor) -> resource -> nominalQuota
    local_queues: dict[tuple[str, str], str]  # (namespace, name) -> ClusterQueue
    nodes: list[Node] = field(default_factory=list)
    covered: dict[str, frozenset[str]] = field(default_factory=dict)  # ClusterQueue -> resources

    def nodes_of(self, flavor: Flavor) -> list[Node]:
        return [n for n in self.nodes if flavor.node_labels.items() <= n.labels.items()]

    def flavors_named(self, topology: str, queue: str) -> set[str]:
        return {f for f in self.queues[queue] if self.flavors[f].topology == topology}


def lane_of(name: str, fleet: Fleet, inventory: Path) -> Lane:
    topologies = {
        t["metadata"]["name"]: tuple(lv["nodeLabel"] for lv in t["spec"]["levels"])
        for t in fleet.of_kind("Topology")
    }
    flavors = {
        f["metadata"]["name"]: Flavor(
            f["metadata"]["name"],
            dict(f["spec"].get("nodeLabels") or {}),
            f["spec"]["topologyName"],
            topologies[f["spec"]["topologyName"]],
            tuple(f["spec"].get("tolerations") or ()),
        )
        for f in fleet.of_kind("ResourceFlavor")
    }
    queues: dict[str, tuple[str, ...]] = {}
    covered: dict[str, frozenset[str]] = {}
    nominal: dict[tuple[str, str], dict[str, Decimal]] = {}
    for cq in fleet.of_kind("ClusterQueue"):
        queue = cq["metadata"]["name"]
        listed = [f for group in cq["spec"]["resourceGroups"] for f in group["flavors"]]
        queues[queue] = tuple(f["name"] for f in listed)
        covered[queue] = frozenset(
            r for group in cq["spec"]["resourceGroups"] for r in group["coveredResources"]
        )
        for f in listed:
            nominal[queue, f["name"]] = {r["name"]: parse_quantity(r["nominalQuota"]) for r in f["resources"]}
    for queue, names in queues.items():
        # Kueue's topology messages name a Topology: one per flavor tells which flavor failed
        tops = [flavors[f].topology for f in names]
        assert len(set(tops)) == len(tops), f"flavors of {queue} share a Topology: {tops}"
    local = {
        (lq["metadata"]["namespace"], lq["metadata"]["name"]): lq["spec"]["clusterQueue"]
        for lq in fleet.of_kind("LocalQueue")
    }
    projected = fleet.node_feature_labels()
    nodes = [
        Node(
            n.name,
            {**n.labels, **projected.get(n.name, {})},
            {k: parse_quantity(v) for k, v in n.allocatable.items()},
            n.taints,
        )
        for n in fleet.nodes
    ]
    return Lane(name, fleet, inventory, flavors, queues, nominal, local, nodes, covered)


def applied_kinds(fleet: Fleet) -> list[Obj]:
    """What a sync of the lane's fleet puts into the cluster that Kueue and nfd-master read
    (the gate's objects of two fleets would collide, and no drain happens here)."""
    kinds = {"NodeFeature", "Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
    return [obj for obj in fleet.rendered if obj["kind"] in kinds]


def projected_labels(fleet: Fleet) -> dict[str, dict[str, str]]:
    """Node -> the labels nfd-master must have put on it before Kueue can judge."""
    features: dict[str, dict[str, str]] = defaultdict(dict)
    for feature in fleet.of_kind("NodeFeature"):
        features[feature["metadata"]["labels"][NODE_NAME_LABEL]].update(feature["spec"].get("labels") or {})
    return dict(features)


# --- the workloads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One Job: `count` pods of `requests` each, in one LocalQueue, maybe with a topology
    request (annotation, level) on its pod template."""

    name: str
    namespace: str
    local_queue: str
    count: int
    requests: dict[str, str]
    topology: tuple[str, str] | None = None
    tolerations: tuple[Obj, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    kind: str = "Job"
    #: a scenario's own objects (its PodSets are theirs; count and requests then describe its
    #: largest PodSet), else the case's one PodSet written as its kind
    manifests: tuple[Obj, ...] = ()
    scenario: str = ""

    def job(self) -> Obj:
        template: Obj = {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {
                            "requests": dict(self.requests),
                            # extended resources need limits equal to their requests
                            **(
                                {"limits": {k: v for k, v in self.requests.items() if "/" in k}}
                                if any("/" in k for k in self.requests)
                                else {}
                            ),
                        },
                    }
                ],
                **({"tolerations": [dict(t) for t in self.tolerations]} if self.tolerations else {}),
                **({"nodeSelector": dict(self.node_selector)} if self.node_selector else {}),
            }
        }
        if self.topology:
            template["metadata"] = {"annotations": {self.topology[0]: self.topology[1]}}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {QUEUE_NAME: self.local_queue},
            },
            "spec": {
                "parallelism": self.count,
                "completions": self.count,
                "suspend": True,
                "template": template,
            },
        }

    def describe(self) -> str:
        topo = f" {self.topology[0].rsplit('-', 2)[-2]}={self.topology[1]}" if self.topology else ""
        tol = " +tolerations" if self.tolerations else ""
        sel = f" nodeSelector={dict(self.node_selector)}" if self.node_selector else ""
        if self.scenario:
            return f"{self.kind} {self.namespace}/{self.local_queue} {self.scenario}"
        return f"{self.kind} {self.namespace}/{self.local_queue} {self.count}x{self.requests}{topo}{tol}{sel}"

    @property
    def submitted_name(self) -> str:
        """The name of what is submitted (of a pod group: the group's), which fit reports."""
        if self.manifests:
            meta = next(m for m in self.manifests if m["kind"] == self.kind)["metadata"]
            return str(meta["labels"][POD_GROUP] if self.kind == "Pod" else meta["name"])
        return self.name if self.kind == "Job" else f"{self.name}-{self.kind.lower()}"

    def objects(self) -> list[Obj]:
        """What is submitted: the scenario's objects, else the case as its kind."""
        if self.manifests:
            return copy.deepcopy(list(self.manifests))
        return as_kind(self, self.kind)


def _capacity(node: Node, requests: Mapping[str, Decimal]) -> int:
    """Pods of `requests` one empty node holds (one pod slot each)."""
    fits = [int(node.allocatable.get("pods", Decimal(0)))]
    fits += [int(node.allocatable.get(r, Decimal(0)) // q) for r, q in requests.items() if q > 0]
    return max(0, min(fits))


def _holds_none(lane: Lane, flavor: Flavor, level: str, requests: Mapping[str, Decimal]) -> bool:
    """Whether a node of the flavor's topology at `level` takes none of these pods (which
    tolerate nothing): too small, or (its topology ending at nodes) tainted against them."""
    by_node = flavor.levels[-1] == HOSTNAME
    return any(
        level in n.labels and (_capacity(n, requests) == 0 or (by_node and _repels(n, flavor)))
        for n in lane.nodes_of(flavor)
    )


def _repels(node: Node, flavor: Flavor) -> bool:
    """Whether a scheduling taint of the node is tolerated by none of the flavor's tolerations."""
    scheduling = [t for t in node.taints if t.get("effect") in ("NoSchedule", "NoExecute")]
    return any(not any(_tolerates(o, t) for o in flavor.tolerations) for t in scheduling)


def _tolerates(toleration: Obj, taint: Mapping[str, str]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get("value", "")


def _sizes(
    rng: random.Random, lane: Lane, queue: str, flavor: Flavor, level: str, requests: Mapping[str, Decimal]
) -> list[int]:
    """The counts around the flavor's thresholds for these requests: what its largest node,
    its largest domain at the level, all its nodes and the queue's quota hold, and one more."""
    per_node = {n.name: _capacity(n, requests) for n in lane.nodes_of(flavor)}
    domains: dict[str, int] = defaultdict(int)
    for node in lane.nodes_of(flavor):
        domains[node.labels.get(level, "")] += per_node[node.name]
    total = sum(per_node.values())
    sizes = {1, max(per_node.values(), default=0), max(domains.values(), default=0), total}
    gpu = requests.get(GPU, Decimal(0))
    if gpu > 0:
        sizes.add(int(lane.nominal[queue, flavor.name].get(GPU, Decimal(0)) // gpu))
    sizes |= {s + 1 for s in sizes}
    sizes.add(rng.randint(1, total + 2))
    return sorted(s for s in sizes if s >= 1)


def generate(rng: random.Random, lane: Lane, n: int, prefix: str) -> list[Case]:
    """n Jobs for the lane's LocalQueues. Each third asks for a required level, each third a
    preferred one, each third none; every seventh asks for MISSING_LEVEL; every fifth requests
    no GPU; some select a product by nodeSelector (one of the queue's, or none); the first names
    an unknown LocalQueue, the second an uncovered resource."""
    cases = []
    local_queues = sorted(lane.local_queues)
    for i in range(n):
        namespace, local = rng.choice(local_queues)
        queue = lane.local_queues[namespace, local]
        flavor = lane.flavors[rng.choice(lane.queues[queue])]
        requests: dict[str, str]
        if i % 5 == 4:
            requests = {
                "cpu": rng.choice(["1", "8", "24", "100", "200"]),
                "memory": rng.choice(["2Gi", "100Gi", "600Gi"]),
            }
        else:
            requests = {GPU: str(rng.choice([1, 2, 4, 8]))}
            if rng.random() < 0.5:
                requests["cpu"] = rng.choice(["500m", "4", "16", "48"])
            if rng.random() < 0.3:
                requests["memory"] = rng.choice(["1Gi", "64Gi", "300Gi"])
        if i == 1:
            requests[UNCOVERED] = "1"
        mode = (REQUIRED, PREFERRED, None)[i % 3]
        level = MISSING_LEVEL if i % 7 == 3 else rng.choice(flavor.levels)
        if mode is None or level == MISSING_LEVEL:
            size_level = level if level != MISSING_LEVEL else HOSTNAME
        else:
            size_level = level
        parsed = {k: parse_quantity(v) for k, v in requests.items()}
        count = rng.choice(_sizes(rng, lane, queue, flavor, size_level, parsed))
        tolerations: tuple[Obj, ...] = ()
        if rng.random() < 0.3:
            tolerations = ({"key": GEN_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"},)
        # the pod's own nodeSelector: a product of one of the queue's flavors, or of none
        selector: tuple[tuple[str, str], ...] = ()
        if rng.random() < 0.15:
            products = sorted({lane.flavors[f].node_labels.get(PRODUCT, "") for f in lane.queues[queue]})
            selector = ((PRODUCT, rng.choice([*products, "NVIDIA-NONE"])),)
        cases.append(
            Case(
                name=f"{prefix}-{i:02d}",
                namespace=namespace,
                local_queue=UNKNOWN_QUEUE if i == 0 else local,
                count=count,
                requests=requests,
                topology=(mode, level) if mode else None,
                tolerations=tolerations,
                node_selector=selector,
                kind=kind_of(i),
            )
        )
    return cases


# --- Kueue's decisions and their causes ------------------------------------------------------


@dataclass(frozen=True, order=True)
class Cause:
    """Why one flavor (or the queue) refuses a PodSet, as Kueue words it: `kind` is level
    (the flavor's Topology lacks the requested level), quota, taint (a flavor's nodeTaints),
    affinity, uncovered (no resource group covers the resource), topology (no domain holds the
    PodSet: `fit` of `total` pods fit) or local-queue; `subject` the resource, taint or queue,
    and for topology which nodes were excluded for what (untolerated taints, resources)."""

    kind: str
    flavors: frozenset[str] = frozenset()
    subject: str = ""
    fit: int | None = None
    total: int | None = None


_KUEUE_CAUSES = [
    ("level", re.compile(r'Flavor "(?P<flavor>[^"]+)" does not contain the requested level')),
    (
        "quota",
        re.compile(
            r"insufficient quota for (?P<subject>\S+) in flavor (?P<flavor>\S+), previously "
            r"considered podsets requests \([^)]*\) \+ current podset request \((?P<total>[^)]*)\) "
            r"> maximum capacity \((?P<fit>[^)]*)\)"
        ),
    ),
    ("taint", re.compile(r"untolerated taint (?P<subject>.+?) in flavor (?P<flavor>[^\s,;]+)")),
    ("affinity", re.compile(r"flavor (?P<flavor>\S+) doesn't match node affinity")),
    ("uncovered", re.compile(r"resource (?P<subject>\S+) unavailable in ClusterQueue")),
    (
        "topology",
        re.compile(
            r'topology "(?P<topology>[^"]+)" (?:doesn\'t allow to fit any of (?P<none>\d+)'
            r"|allows to fit only (?P<fit>\d+) out of (?P<total>\d+)) (?:pod|slice)\(s\)"
            r"(?:\. Total nodes: (?P<nodes>\d+); excluded: (?P<excluded>[^;]*))?"
        ),
    ),
    ("local-queue", re.compile(r"LocalQueue (?P<subject>\S+) doesn't exist")),
]


def kueue_causes(message: str, lane: Lane, queue: str | None) -> set[Cause]:
    """Every cause one of Kueue's messages (a Workload condition or a Pending event) states."""
    found: set[Cause] = set()
    for kind, pattern in _KUEUE_CAUSES:
        for m in pattern.finditer(message):
            groups = m.groupdict()
            if kind == "topology":
                flavors = frozenset(lane.flavors_named(groups["topology"], queue)) if queue else frozenset()
                # which nodes were left out, and why: "5 nodes: resource "cpu": 5"
                excluded = f"{groups['nodes']} nodes: {groups['excluded']}" if groups["nodes"] else ""
                fit, total = (
                    (0, groups["none"]) if groups["none"] is not None else (groups["fit"], groups["total"])
                )
                found.add(Cause(kind, flavors, excluded, fit=int(fit), total=int(total)))
            elif kind == "quota":
                found.add(
                    Cause(
                        kind,
                        frozenset({groups["flavor"]}),
                        groups["subject"],
                        fit=_whole(groups["fit"]),
                        total=_whole(groups["total"]),
                    )
                )
            else:
                flavor = groups.get("flavor")
                found.add(
                    Cause(kind, frozenset({flavor}) if flavor else frozenset(), groups.get("subject") or "")
                )
    return found


def _whole(quantity: str) -> int | None:
    """A quantity as an integer number of thousandths of its unit: one scale for every value,
    so that a fractional quota (319.5 cpu) and a whole one (639) compare as they should."""
    return _thousandths(parse_quantity(quantity))


def _thousandths(value: Decimal) -> int:
    return int(value * 1000)


def quota_swaps(
    attempts: list[set[Cause]], stated: set[Cause], lane: Lane, queue: str, case: Case
) -> list[set[Cause]]:
    """Kueue's attempts with a quota cause on a flavor swapped for fit's quota cause on another
    resource of that flavor, where that resource is over quota too. Kueue checks a flavor's
    resources in Go's map order and names the first one over: with two over, either is Kueue's
    answer, on each flavor apart. fit's cause counts only when its numbers hold: the PodSet's request of that
    resource, over a maximum no smaller than the queue's nominal quota and no larger than the
    cohort's (the lane's queues share one)."""
    swapped: list[set[Cause]] = []
    valid: list[Cause] = []
    for ours in (c for c in stated if c.kind == "quota" and c.subject in case.requests):
        [flavor] = ours.flavors
        own = lane.nominal.get((queue, flavor), {}).get(ours.subject, Decimal(0))
        cohort = sum(
            (lane.nominal.get((q, flavor), {}).get(ours.subject, Decimal(0)) for q in lane.queues), Decimal(0)
        )
        request = _thousandths(case.count * parse_quantity(case.requests[ours.subject]))
        if ours.total != request or ours.fit is None or not _thousandths(own) <= ours.fit < request:
            continue
        if ours.fit > _thousandths(cohort):
            continue
        valid.append(ours)
    for attempt in attempts:
        # each flavor's order is its own: fit's resource may be the other on several at once
        together = set(attempt)
        for ours in valid:
            theirs = [
                c
                for c in attempt
                if c.kind == "quota" and c.flavors == ours.flavors and c.subject != ours.subject
            ]
            swapped += [(attempt - {c}) | {ours} for c in theirs]
            together = (together - set(theirs)) | ({ours} if theirs else set())
        if together != attempt:
            swapped.append(together)
    return swapped


@dataclass(frozen=True)
class Decision:
    """What Kueue did with a Workload alone in its queue: admitted on `flavors` (PodSet ->
    flavor), or pending with the QuotaReserved message that decided it and each attempt's
    message before, in order."""

    admitted: bool
    flavors: dict[str, str | None]
    message: str = ""
    attempts: tuple[str, ...] = ()
    name: str = ""  # the Workload's


def ends_turn(message: str, lane: Lane, queue: str | None) -> bool:
    """Whether one of Kueue's attempts for a pending Workload is the last of a turn through
    its queue's flavors, after which, the cluster being empty, no attempt admits it.

    Kueue tries the flavors in order and picks the first whose quota fits: when topology-aware
    scheduling then fails on it, the Workload is requeued at once to try from the next flavor.
    A turn ends with topology failing on the queue's last flavor, or with no flavor fitting
    from where the turn stood (the message then names each with its cause, no topology), or
    with a cause no flavor changes (an unknown LocalQueue, an uncovered resource). Kueue then
    starts again: each attempt rewrites the QuotaReserved message, which requeues the Workload
    (from the first flavor, when that update wins the race with the requeue for the next one),
    so the condition at one moment shows any attempt, and the Pending events stop at 25 per
    Workload (client-go's spam filter); a watch of the Workload sees every attempt.
    An attempt that starts at a flavor follows one whose topology failed on the flavor
    before, back to an attempt from the first: so an attempt that ends a turn follows a
    refusal of every flavor."""
    causes = kueue_causes(message, lane, queue)
    if queue is None or any(c.kind in ("uncovered", "local-queue") for c in causes):
        return bool(causes)
    topology = [c for c in causes if c.kind == "topology"]
    if not topology:
        return bool(causes)
    return any(lane.queues[queue][-1] in c.flavors for c in topology)


def flavors_of(workload: Obj) -> dict[str, str | None]:
    """PodSet -> the flavor of its assignment (one resource group: one flavor per PodSet);
    None for a PodSet that requests nothing, which Kueue admits on no flavor."""
    out: dict[str, str | None] = {}
    for assignment in workload["status"]["admission"]["podSetAssignments"]:
        names = set((assignment.get("flavors") or {}).values())
        out[assignment["name"]] = ",".join(sorted(names)) or None
    return out


def summary(causes: Iterable[Cause]) -> str:
    return "; ".join(
        f"{c.kind}[{','.join(sorted(c.flavors))}]{' ' + c.subject if c.subject else ''}"
        + (f" {c.fit}/{c.total}" if c.total is not None else "")
        for c in sorted(causes)
    )


#: The kinds a generated case is submitted as, in turn: each through its real Kueue integration
#: (tests/e2e/harness.py INTEGRATIONS), all of them on every seed with enough cases per lane.
KINDS = ("Job", "JobSet", "StatefulSet", "LeaderWorkerSet", "PyTorchJob", "MPIJob", "AppWrapper", "Pod")
#: kind -> its Kueue integration (tests/e2e/harness.py INTEGRATIONS)
FRAMEWORKS = {
    "JobSet": "jobset.x-k8s.io/jobset",
    "StatefulSet": "statefulset",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/leaderworkerset",
    "PyTorchJob": "kubeflow.org/pytorchjob",
    "MPIJob": "kubeflow.org/mpijob",
    "RayJob": "ray.io/rayjob",
    "RayCluster": "ray.io/raycluster",
    "TrainJob": "trainer.kubeflow.org/trainjob",
    "AppWrapper": "workload.codeflare.dev/appwrapper",
    "Pod": "pod",
}
#: the kinds of the scenarios besides KINDS
SCENARIO_KINDS = ("RayJob", "RayCluster", "TrainJob")
POD_GROUP = "kueue.x-k8s.io/pod-group-name"
#: What LeaderWorkerSet's own defaulting webhook writes (it runs in LWS's controller, which
#: the harness does not run): the CRD requires a rollout strategy.
LWS_DEFAULTS: Obj = {
    "rolloutStrategy": {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0, "partition": 0},
    },
    "networkConfig": {"subdomainPolicy": "Shared"},
}
POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"


#: the kinds written as workers only: apiVersion and the field of their replica specs
WORKERS_ONLY = {
    "PyTorchJob": ("kubeflow.org/v1", "pytorchReplicaSpecs"),
    "MPIJob": ("kubeflow.org/v2beta1", "mpiReplicaSpecs"),
}


def _object(api_version: str, kind: str, name: str, meta: Obj, spec: Obj) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **meta}, "spec": spec}


def as_kind(case: Case, kind: str) -> list[Obj]:
    """The case's one PodSet written as `kind`: the objects to create (a pod group is its
    pods). Kueue makes a Workload of one PodSet of `case.count` pods of each: a JobSet of one
    replicatedJob, a StatefulSet, a LeaderWorkerSet of one group without a leader, a
    PyTorchJob or MPIJob of workers only, an AppWrapper of the Job, `count` Pods of one
    group."""
    job = case.job()
    template = job["spec"]["template"]
    meta = {"namespace": case.namespace, "labels": {QUEUE_NAME: case.local_queue}}
    count = case.count
    job_spec = {"parallelism": count, "completions": count, "template": template}
    name = case.name if kind == "Job" else f"{case.name}-{kind.lower()}"
    if kind == "Job":
        return [job]
    if kind == "JobSet":
        replicated = [{"name": "main", "replicas": 1, "template": {"spec": job_spec}}]
        return [_object("jobset.x-k8s.io/v1alpha2", kind, name, meta, {"replicatedJobs": replicated})]
    if kind == "StatefulSet":
        selector = {"app.kubernetes.io/name": name}
        spec = {
            "replicas": count,
            "serviceName": name,
            "selector": {"matchLabels": selector},
            "template": _labelled(_always(template), selector),
        }
        return [_object("apps/v1", kind, name, meta, spec)]
    if kind == "LeaderWorkerSet":
        group = {
            "size": count,
            "workerTemplate": _always(template),
            "restartPolicy": "RecreateGroupOnPodRestart",
        }
        spec = {"replicas": 1, "leaderWorkerTemplate": group, **LWS_DEFAULTS}
        return [_object("leaderworkerset.x-k8s.io/v1", kind, name, meta, spec)]
    if kind in WORKERS_ONLY:
        api_version, specs = WORKERS_ONLY[kind]
        workers = {"Worker": {"replicas": count, "template": template}}
        return [_object(api_version, kind, name, meta, {specs: workers})]
    if kind == "AppWrapper":
        component = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": job_spec}
        spec = {"components": [{"template": component}]}
        return [_object("workload.codeflare.dev/v1beta2", kind, name, meta, spec)]
    if kind == "Pod":
        labels = {QUEUE_NAME: case.local_queue, POD_GROUP: name}
        annotations = (template.get("metadata") or {}).get("annotations", {})
        return [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{i}",
                    "namespace": case.namespace,
                    "labels": labels,
                    "annotations": {**annotations, POD_GROUP_TOTAL: str(count)},
                },
                "spec": template["spec"],
            }
            for i in range(count)
        ]
    raise ValueError(f"no such kind: {kind}")


def integrations() -> list[str]:
    """The Kueue integrations the test submits through (batch/job is always on): only those,
    since each kind's CRD costs the API server seconds to install."""
    return [FRAMEWORKS[k] for k in (*KINDS, *SCENARIO_KINDS) if k in FRAMEWORKS]


def kind_of(index: int) -> str:
    """The kind the index-th case of a lane is submitted as."""
    return KINDS[index % len(KINDS)]


def other_kinds(case: Case) -> list[Obj]:
    """The case's one PodSet written as the single-object kinds it is not submitted as: fit
    must judge each as it judges the kind Kueue judged."""
    return [obj for kind in KINDS if kind not in (case.kind, "Pod") for obj in as_kind(case, kind)]


def _labelled(template: Obj, labels: dict[str, str]) -> Obj:
    meta = dict(template.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    return {**template, "metadata": meta}


def _always(template: Obj) -> Obj:
    """A pod template as a controller of long-running pods requires it."""
    spec = dict(template["spec"], restartPolicy="Always")
    return {**template, "spec": spec}


# --- the scenarios of Kueue's own TAS tests --------------------------------------------------

SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"


def _ray_workers(count: int, template: Obj) -> Obj:
    """A Ray cluster's one worker group of ``count`` pods, as RayJob and RayCluster write it."""
    return {
        "groupName": "workers",
        "replicas": count,
        "minReplicas": count,
        "maxReplicas": count,
        "rayStartParams": {},
        "template": template,
    }


def _pod_template(
    requests: Mapping[str, str],
    annotations: Mapping[str, str],
    restart: str = "Never",
    container_name: str = "main",
) -> Obj:
    limits = {k: v for k, v in requests.items() if "/" in k}
    resources: Obj = {"requests": dict(requests), **({"limits": limits} if limits else {})}
    container = {"name": container_name, "image": "registry.k8s.io/pause:3.10", "resources": resources}
    template: Obj = {"spec": {"restartPolicy": restart, "containers": [container]}}
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    return template


def scenarios(rng: random.Random, lane: Lane, prefix: str) -> list[Case]:
    """The workloads of Kueue v0.17's TAS end-to-end tests (test/e2e/tas: JobSet ranks and
    slices, LeaderWorkerSet groups, PyTorchJob, RayJob, StatefulSet, pod groups), on one of
    the lane's queues: its first flavor's top level stands for their block, the next for their
    rack, one GPU per pod for their extra resource. Sizes come from the seed around the
    flavor's thresholds, as the generated cases'."""
    namespace, local = rng.choice(sorted(lane.local_queues))
    queue = lane.local_queues[namespace, local]
    flavor = lane.flavors[lane.queues[queue][0]]
    block = flavor.levels[0]
    rack = flavor.levels[1] if len(flavor.levels) > 2 else block
    one = {GPU: "1"}
    per_pod = {GPU: Decimal(1)}

    def size(level: str) -> int:
        return rng.choice(_sizes(rng, lane, queue, flavor, level, per_pod))

    meta = {"namespace": namespace, "labels": {QUEUE_NAME: local}}
    total = sum(_capacity(n, per_pod) for n in lane.nodes_of(flavor))
    found: list[Case] = []

    def add(label: str, kind: str, name: str, count: int, objects: list[Obj]) -> None:
        found.append(
            Case(
                name=name,
                namespace=namespace,
                local_queue=local,
                count=count,
                requests=dict(one),
                kind=kind,
                manifests=tuple(objects),
                scenario=label,
            )
        )

    _jobset_scenarios(rng, lane, flavor, prefix, meta, size, add)
    # LeaderWorkerSet: workers only, leader and workers, leader grouped with its workers
    for mode in ("workers", "leader", "group"):
        # with a leader, a group of one has a worker PodSet of no pods, whose empty topology
        # assignment Kueue v0.17 writes and the API server refuses, again and again: never
        # admitted, never pending (so not a case to compare)
        group = size(block) if mode == "workers" else max(2, size(block))
        if mode == "group" and _holds_none(lane, flavor, block, per_pod):
            # the same endless refusal: Kueue v0.17's TASFlavorSnapshot.fillInCountsHelper
            # (pkg/cache/scheduler/tas_flavor_snapshot.go) counts a node that holds no pod as
            # one where the leader costs the workers nothing, so a domain over such a node can
            # be taken for one pod larger than it is; updateCountsToMinimumGeneric then runs
            # out of nodes ("unexpected remainingCount") and both PodSets get empty assignments
            # (fixed after v0.17.0 by kubernetes-sigs/kueue#10783)
            continue
        name = f"{prefix}-lws-{mode}"
        annotations = {REQUIRED: block}
        if mode == "group":
            annotations[GROUP_NAME] = "same-group"
        lwt: Obj = {"size": group, "restartPolicy": "RecreateGroupOnPodRestart"}
        lwt["workerTemplate"] = _pod_template(one, annotations, "Always")
        if mode != "workers":
            lwt["leaderTemplate"] = _pod_template(one, annotations, "Always")
        add(
            f"LeaderWorkerSet {mode} size {group} required {block}",
            "LeaderWorkerSet",
            name,
            group,
            [
                {
                    "apiVersion": "leaderworkerset.x-k8s.io/v1",
                    "kind": "LeaderWorkerSet",
                    "metadata": {"name": name, **meta},
                    "spec": {"replicas": 1, "leaderWorkerTemplate": lwt, **LWS_DEFAULTS},
                }
            ],
        )
    # PyTorchJob: a master (cpu, preferred rack) and GPU workers (preferred block)
    workers = size(block)
    name = f"{prefix}-pytorch"
    add(
        f"PyTorchJob master + {workers} workers",
        "PyTorchJob",
        name,
        workers + 1,
        [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {"name": name, **meta},
                "spec": {
                    "pytorchReplicaSpecs": {
                        "Master": {
                            "replicas": 1,
                            "template": _pod_template({"cpu": "200m"}, {PREFERRED: rack}),
                        },
                        "Worker": {"replicas": workers, "template": _pod_template(one, {PREFERRED: block})},
                    }
                },
            }
        ],
    )
    # RayJob: head (preferred rack), GPU workers (preferred block), submitter (required block)
    workers = size(block)
    name = f"{prefix}-rayjob"
    add(
        f"RayJob head + {workers} workers + submitter",
        "RayJob",
        name,
        workers + 2,
        [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "metadata": {"name": name, **meta},
                "spec": {
                    "entrypoint": "python main.py",
                    "shutdownAfterJobFinishes": True,
                    "rayClusterSpec": {
                        "headGroupSpec": {
                            "rayStartParams": {},
                            "template": _pod_template({"cpu": "200m"}, {PREFERRED: rack}, "Always"),
                        },
                        "workerGroupSpecs": [
                            _ray_workers(workers, _pod_template(one, {PREFERRED: block}, "Always"))
                        ],
                    },
                    "submitterPodTemplate": _pod_template({"cpu": "200m"}, {REQUIRED: block}),
                },
            }
        ],
    )
    # RayCluster: head and GPU workers (preferred block)
    workers = size(block)
    name = f"{prefix}-raycluster"
    add(
        f"RayCluster head + {workers} workers",
        "RayCluster",
        name,
        workers + 1,
        [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": {"name": name, **meta},
                "spec": {
                    "headGroupSpec": {
                        "rayStartParams": {},
                        "template": _pod_template({"cpu": "200m"}, {}, "Always"),
                    },
                    "workerGroupSpecs": [
                        _ray_workers(workers, _pod_template(one, {PREFERRED: block}, "Always"))
                    ],
                },
            }
        ],
    )
    # TrainJob: its ClusterTrainingRuntime's JobSet (a cpu initializer; the trainer's nodes,
    # preferred block), GPUs per node from the TrainJob
    nodes = size(block)
    name = f"{prefix}-trainjob"
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": f"{name}-runtime"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": step,
                            "template": {
                                "metadata": {
                                    "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}
                                },
                                "spec": {"template": template},
                            },
                        }
                        for step, ancestor, template in (
                            (
                                "dataset-initializer",
                                "dataset-initializer",
                                _pod_template({"cpu": "200m"}, {}),
                            ),
                            ("node", "trainer", _pod_template({}, {PREFERRED: block})),
                        )
                    ]
                }
            },
        },
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, **meta},
        "spec": {
            "runtimeRef": {"name": f"{name}-runtime"},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"limits": {GPU: "1"}}},
        },
    }
    add(f"TrainJob of {nodes} nodes", "TrainJob", name, nodes + 1, [runtime, trainjob])
    _trainjob_mpi_scenario(block, prefix, meta, size(block) + 1, add)
    # a Job whose pods request nothing (Kueue admits it on no flavor, whatever its size)
    pods = size(block) + rng.choice([0, total])
    name = f"{prefix}-norequests"
    nothing = Case(name, namespace, local, pods, {}, topology=(REQUIRED, block))
    add(f"Job of {pods} pods requesting nothing, required {block}", "Job", name, pods, [nothing.job()])
    # StatefulSet and a pod group, required block
    for kind in ("StatefulSet", "Pod"):
        pods = size(block)
        case = Case(
            name=f"{prefix}-{'sts' if kind == 'StatefulSet' else 'pg'}",
            namespace=namespace,
            local_queue=local,
            count=pods,
            requests=dict(one),
            topology=(REQUIRED, block),
            kind=kind,
        )
        add(f"{kind} {pods} pods required {block}", kind, case.name, pods, as_kind(case, kind))
    return found


def _trainjob_mpi_scenario(
    block: str, prefix: str, meta: Obj, nodes: int, add: Callable[[str, str, str, int, list[Obj]], None]
) -> None:
    """A TrainJob of an MPI runtime whose launcher is a node: Trainer's MPI plugin gives the job
    named `node` the TrainJob's numNodes less one, the launcher (the trainer's job) keeps the
    runtime's mlPolicy.numNodes, and resourcesPerNode goes to both `node` containers."""
    name = f"{prefix}-trainjob-mpi"
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": f"{name}-runtime"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "runLauncherAsNode": True}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": step,
                            "template": {
                                "metadata": {"labels": labels},
                                "spec": {
                                    "template": _pod_template({}, {PREFERRED: block}, container_name="node")
                                },
                            },
                        }
                        for step, labels in (
                            ("launcher", {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}),
                            ("node", {}),
                        )
                    ]
                }
            },
        },
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, **meta},
        "spec": {
            "runtimeRef": {"name": f"{name}-runtime"},
            "trainer": {"numNodes": nodes, "resourcesPerNode": {"limits": {GPU: "1"}}},
        },
    }
    add(f"TrainJob of an MPI runtime, {nodes} nodes", "TrainJob", name, nodes, [runtime, trainjob])


def _jobset_scenarios(
    rng: random.Random,
    lane: Lane,
    flavor: Flavor,
    prefix: str,
    meta: Obj,
    size: Callable[[str], int],
    add: Callable[[str, str, str, int, list[Obj]], None],
) -> None:
    """JobSet ranks, slices (two-level and slice-only), and two PodSets that each fit alone."""
    block = flavor.levels[0]
    rack = flavor.levels[1] if len(flavor.levels) > 2 else block
    one = {GPU: "1"}
    per_pod = {GPU: Decimal(1)}

    def jobset(name: str, jobs: list[tuple[str, int, int, Obj]]) -> Obj:
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": name, **meta},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": job,
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "parallelism": parallelism,
                                "completions": parallelism,
                                "template": template,
                            }
                        },
                    }
                    for job, replicas, parallelism, template in jobs
                ]
            },
        }

    # JobSet ranks: replicas x parallelism pods, a preferred block
    pods = size(block)
    replicas = rng.choice([d for d in (1, 2, 3) if pods % d == 0] or [1])
    name = f"{prefix}-js-ranks"
    template = _pod_template(one, {PREFERRED: block})
    add(
        f"JobSet ranks {replicas}x{pods // replicas} preferred {block}",
        "JobSet",
        name,
        pods,
        [jobset(name, [("rj", replicas, pods // replicas, template)])],
    )
    # JobSet slices: two-level (preferred block, slices required in a block) and slice-only
    for two_level in (True, False):
        slice_size = rng.choice([2, 3, 4])
        replicas = rng.choice([1, 2])
        slices = max(1, size(block) // (slice_size * replicas))
        annotations = {SLICE_REQUIRED: rng.choice([block, rack]), SLICE_SIZE: str(slice_size)}
        if two_level:
            annotations[PREFERRED] = block
        name = f"{prefix}-js-slice{'2' if two_level else '1'}"
        parallelism = slices * slice_size
        add(
            f"JobSet slices {replicas}x{parallelism} {annotations}",
            "JobSet",
            name,
            replicas * parallelism,
            [jobset(name, [("rj", replicas, parallelism, _pod_template(one, annotations))])],
        )
    # JobSet of two PodSets that each fit alone, maybe not together
    total = sum(_capacity(n, per_pod) for n in lane.nodes_of(flavor))
    half = max(1, total // 2 + rng.choice([-1, 0, 1]))
    name = f"{prefix}-js-two"
    add(
        f"JobSet two PodSets of {half} pods, preferred {block}",
        "JobSet",
        name,
        2 * half,
        [jobset(name, [(job, 1, half, _pod_template(one, {PREFERRED: block})) for job in ("a", "b")])],
    )
