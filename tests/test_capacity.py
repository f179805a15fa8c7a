"""tasgen capacity: the slots per flavor, level and size agree with a plain walk over every node
and domain (written here, never calling the engine), the quota bounds them as Kueue's does, and
the formats print exactly what the report holds."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.commands.capacity import command
from tasgen.commands.capacity.formats import FORMATS
from tasgen.commands.capacity.report import CapacityReport
from tasgen.fit.capacity import Size, flavor_slots
from tasgen.fit.cluster import Cluster, ClusterQueue, Flavor, Group, NodeFacts, Quota
from tasgen.fit.engine import Engine
from tasgen.fit.usage import cluster_in_use
from tasgen.util.typed_json import to_json
from tests.conftest import NOW, REPO, examples, tasgen
from tests.typed_schema import disagreements

SCHEMA = json.loads(resources.files("tasgen").joinpath("schemas", "capacity-report.schema.json").read_text())
GPU = "nvidia.com/gpu"
HOST = "kubernetes.io/hostname"
LEVELS = ("zone", "block", "rack")
TAINT = ("maintenance", "true", "NoSchedule")


def test_the_typed_report_is_the_published_schema() -> None:
    assert disagreements(CapacityReport, SCHEMA) == []


# --- counting against a plain walk -----------------------------------------------------------


@st.composite
def fleets(draw: Any) -> tuple[tuple[str, ...], list[NodeFacts]]:
    depth = draw(st.integers(1, 3))
    levels = (*LEVELS[-depth:], HOST) if draw(st.booleans()) else LEVELS[-depth:]
    nodes = []
    for i in range(draw(st.integers(0, 20))):
        labels = {level: f"{level[0]}{draw(st.integers(0, 2))}" for level in LEVELS[-depth:]}
        labels[HOST] = f"n{i}"
        allocatable = {
            GPU: draw(st.sampled_from([0, 2, 4, 8])),
            "cpu": 64000,
            "pods": draw(st.sampled_from([110, 110, 3])),
        }
        taints = (TAINT,) if draw(st.integers(0, 3)) == 0 else ()
        nodes.append(NodeFacts(f"n{i}", labels, allocatable, taints))
    return levels, nodes


def plain(
    levels: tuple[str, ...], nodes: list[NodeFacts], size: Size, quota: int, tolerated: bool
) -> list[tuple[str, int, int, int]]:
    """Per level: (level, domains, largest, domains holding the size), node by node: a node
    takes pods of the size as its GPUs and its pods allow (none when the lowest level is the
    hostname and it has a taint the flavor does not tolerate); a leaf domain above the nodes
    adds its nodes' GPUs and pods and judges no taint; a domain holds what its leaves hold."""
    leaves: dict[tuple[str, ...], list[NodeFacts]] = {}
    for n in nodes:
        leaves.setdefault(tuple(n.labels[k] for k in levels), []).append(n)

    def pods_of(members: list[NodeFacts]) -> int:
        if levels[-1] == HOST:
            (node,) = members
            if node.taints and not tolerated:
                return 0
            return min(node.allocatable[GPU] // size.gpus, node.allocatable["pods"])
        gpus = sum(n.allocatable[GPU] for n in members)
        return min(gpus // size.gpus, sum(n.allocatable["pods"] for n in members))

    leaf_pods = {path: pods_of(members) for path, members in leaves.items()}
    most = quota // size.gpus
    out = []
    for depth, level in enumerate(levels):
        held: dict[tuple[str, ...], int] = {}
        for path, pods in leaf_pods.items():
            held[path[: depth + 1]] = held.get(path[: depth + 1], 0) + pods
        largest = min(max(held.values(), default=0), most)
        holding = sum(1 for p in held.values() if p >= size.pods) if most >= size.pods else 0
        out.append((level, len(held), largest, holding))
    return out


def _one_flavor(nodes: list[NodeFacts], levels: tuple[str, ...], quota: Quota, tolerated: bool) -> Cluster:
    tolerations = ({"key": "maintenance", "operator": "Exists"},) if tolerated else ()
    flavor = Flavor("f", {}, tolerations=tolerations, topology="t")
    queue = ClusterQueue("q", (Group((GPU, "cpu"), (("f", {GPU: quota}),)),))
    return Cluster(nodes, flavors={"f": flavor}, topologies={"t": levels}, queues={"q": queue})


@settings(max_examples=examples(300), deadline=None)
@given(
    fleets(),
    st.sampled_from([1, 2, 3, 4, 8]),
    st.integers(1, 6),
    st.integers(0, 80),
    st.booleans(),
)
def test_slots_are_a_plain_walks(
    fleet: tuple[tuple[str, ...], list[NodeFacts]], gpus: int, pods: int, quota: int, tolerated: bool
) -> None:
    levels, nodes = fleet
    cluster = _one_flavor(nodes, levels, Quota(quota), tolerated)
    size = Size(gpus, pods)
    found = flavor_slots(Engine(cluster), cluster.queues["q"], "f", [size])
    if not nodes:  # no node lists the GPU resource: levels without sizes
        assert found.resource is None and all(level.slots == () for level in found.levels)
        assert [(lv.level, lv.domains) for lv in found.levels] == [
            (level, d) for level, d, _, _ in plain(levels, nodes, size, quota, tolerated)
        ]
        return
    assert found.resource == GPU and found.quota == quota and found.nodes == len(nodes)
    got = [(lv.level, lv.domains, lv.slots[0].largest, lv.slots[0].holding) for lv in found.levels]
    assert got == plain(levels, nodes, size, quota, tolerated)


def test_many_sizes_are_each_counted_as_alone() -> None:
    """Sizes sharing GPUs per pod share a count; each keeps its own pods and quota bound."""
    nodes = [
        NodeFacts(f"n{i}", {"rack": f"r{i // 2}", HOST: f"n{i}"}, {GPU: 8, "pods": 110}) for i in range(6)
    ]
    cluster = _one_flavor(nodes, ("rack", HOST), Quota(40), False)
    sizes = [Size(8), Size(8, 2), Size(8, 3), Size(4, 5), Size(1)]
    together = flavor_slots(Engine(cluster), cluster.queues["q"], "f", sizes)
    for k, size in enumerate(sizes):
        alone = flavor_slots(Engine(cluster), cluster.queues["q"], "f", [size])
        assert [lv.slots[k] for lv in together.levels] == [lv.slots[0] for lv in alone.levels]
    rack = together.levels[0].slots
    # a rack holds 16 GPUs: 2 8-GPU pods, 4 (not 5) 4-GPU pods, 16 1-GPU pods
    assert [(s.largest, s.holding) for s in rack] == [(2, 3), (2, 3), (2, 0), (4, 0), (16, 3)]


# --- quota: nominal, the cohort's lending, borrowingLimit, and what is reserved now ----------


def _cohort(usage: dict[tuple[str, str, str], int]) -> Cluster:
    nodes = [
        NodeFacts(f"n{i}", {"rack": f"r{i // 4}", HOST: f"n{i}"}, {GPU: 8, "pods": 110}) for i in range(8)
    ]
    flavor = Flavor("f", {}, topology="t")

    def queue(name: str, quota: Quota) -> ClusterQueue:
        return ClusterQueue(name, (Group((GPU,), (("f", {GPU: quota}),)),), cohort="c")

    queues = {
        "lender": queue("lender", Quota(32, lending=8)),  # keeps 24, lends 8
        "small": queue("small", Quota(8, borrowing=16)),
        "big": queue("big", Quota(16)),  # no borrowingLimit: borrows all the cohort lends
    }
    return Cluster(nodes, flavors={"f": flavor}, topologies={"t": ("rack", HOST)}, queues=queues, usage=usage)


def test_quota_is_nominal_plus_what_the_cohort_lends_within_the_borrowing_limit() -> None:
    cluster = _cohort({})
    engine = Engine(cluster)
    quota = {name: flavor_slots(engine, q, "f", [Size(8)]).quota for name, q in cluster.queues.items()}
    # the cohort's pool: lender 8 + small 8 + big 16 = 32; small within 8 + 16
    assert quota == {"lender": 56, "small": 24, "big": 32}
    big = flavor_slots(engine, cluster.queues["big"], "f", [Size(8)])
    # a rack holds 4 8-GPU pods, and the 32 GPUs big can use hold 4
    assert [(lv.level, lv.domains, lv.slots[0].largest) for lv in big.levels] == [
        ("rack", 2, 4),
        (HOST, 8, 1),
    ]


def test_now_takes_what_admitted_workloads_reserve_and_run() -> None:
    cluster = _cohort({})
    # big runs 3 pods of 8 GPUs on n0..n2 of rack r0 (its topology assignment), 24 GPUs reserved
    assignment = {
        "name": "main",
        "count": 3,
        "flavors": {GPU: "f"},
        "resourceUsage": {GPU: "24"},
        "topologyAssignment": {
            "levels": [HOST],
            "slices": [
                {
                    "domainCount": 3,
                    "valuesPerLevel": [{"individual": {"prefix": "n", "roots": ["0", "1", "2"]}}],
                    "podCounts": {"universal": 1},
                }
            ],
        },
    }
    workload = {"status": {"admission": {"clusterQueue": "big", "podSetAssignments": [assignment]}}}
    live = cluster_in_use(cluster, [workload], [], {})
    engine = Engine(live, with_usage=True)
    # lender keeps 24 and the pool has 32 - 24 = 8 left: 32 GPUs, 4 pods of 8
    lender = flavor_slots(engine, live.queues["lender"], "f", [Size(8), Size(8, 2)])
    assert lender.quota == 32
    rack = lender.levels[0]
    # r0 has one free node left, r1 four: only r1 holds 2 pods together now
    assert [(s.largest, s.holding) for s in rack.slots] == [(4, 2), (4, 1)]
    # small borrows only from the pool: 8 GPUs, one 8-GPU pod; 9 1-GPU pods no longer fit
    small = flavor_slots(engine, live.queues["small"], "f", [Size(8), Size(1, 9)])
    assert small.quota == 8
    assert [(s.largest, s.holding) for s in small.levels[0].slots] == [(1, 2), (8, 0)]
    report = command.report_of(cluster, live, [Size(8, 2)])
    (flavor,) = next(q for q in report.queues if q.name == "small").flavors
    assert flavor.quota is not None and (flavor.quota.empty, flavor.quota.now) == (24, 8)
    figures = flavor.levels[0].sizes[0]
    assert figures.now is not None
    assert (figures.empty.largest, figures.empty.largest_gpus, figures.empty.domains) == (3, 24, 2)
    assert (figures.now.largest, figures.now.largest_gpus, figures.now.domains) == (1, 8, 0)


# --- the formats, exactly --------------------------------------------------------------------


def _small() -> tuple[Cluster, Cluster]:
    """Two racks of 8-GPU nodes (two in r0, one in r1), a CPU node, a flavor without a
    Topology; and the same with a pod of 4 GPUs running on a0."""
    gpu, cpu = {"pool": "gpu"}, {"pool": "cpu"}
    nodes = [
        NodeFacts("a0", {**gpu, "rack": "r0", HOST: "a0"}, {GPU: 8, "cpu": 64000, "pods": 110}),
        NodeFacts("a1", {**gpu, "rack": "r0", HOST: "a1"}, {GPU: 8, "cpu": 64000, "pods": 110}),
        NodeFacts("a2", {**gpu, "rack": "r1", HOST: "a2"}, {GPU: 8, "cpu": 64000, "pods": 110}),
        NodeFacts("c0", {**cpu, "rack": "r2", HOST: "c0"}, {"cpu": 64000, "pods": 110}),
    ]
    flavors = {
        "gpu": Flavor("gpu", gpu, topology="t"),
        "cpu": Flavor("cpu", cpu, topology="t"),
        "plain": Flavor("plain", {}),
    }
    quotas = (("gpu", {GPU: Quota(16)}), ("cpu", {"cpu": Quota(64000)}), ("plain", {GPU: Quota(0)}))
    queue = ClusterQueue("train", (Group((GPU, "cpu"), quotas),))
    cluster = Cluster(nodes, flavors=flavors, topologies={"t": ("rack", HOST)}, queues={"train": queue})
    pod = {"spec": {"nodeName": "a0", "containers": [{"resources": {"limits": {GPU: "4"}}}]}}
    return cluster, cluster_in_use(cluster, [], [pod], {})


TEXT = """\
ClusterQueue train
  flavor gpu: Topology t, 3 node(s), quota 16 nvidia.com/gpu (16 now)
    rack: 2 domain(s)
      1-GPU pods: largest 16 pod(s) (16 GPUs), 2 domain(s) hold 1
        now: largest 12 pod(s) (12 GPUs), 2 domain(s) hold 1
      8-GPU pods: largest 2 pod(s) (16 GPUs), 2 domain(s) hold 1
        now: largest 1 pod(s) (8 GPUs), 2 domain(s) hold 1
    kubernetes.io/hostname: 3 domain(s)
      1-GPU pods: largest 8 pod(s) (8 GPUs), 3 domain(s) hold 1
        now: largest 8 pod(s) (8 GPUs), 3 domain(s) hold 1
      8-GPU pods: largest 1 pod(s) (8 GPUs), 3 domain(s) hold 1
        now: largest 1 pod(s) (8 GPUs), 2 domain(s) hold 1
  flavor cpu: Topology t, 1 node(s), no GPUs
    rack: 1 domain(s)
    kubernetes.io/hostname: 1 domain(s)
  flavor plain: not topology-aware: no levels
1 ClusterQueue(s), 3 flavor(s), empty and now
"""

MARKDOWN = """\
## Capacity

### ClusterQueue `train`

- `cpu`: Topology t, 1 node(s), no GPUs
- `plain`: not topology-aware: no levels

| flavor | level | domains | size | largest | domains holding it | largest now | domains now |
|---|---|---|---|---|---|---|---|
| `gpu` | `rack` | 2 | 1-GPU pods | 16 pod(s), 16 GPUs | 2 | 12 pod(s), 12 GPUs | 2 |
| `gpu` | `rack` | 2 | 8-GPU pods | 2 pod(s), 16 GPUs | 2 | 1 pod(s), 8 GPUs | 2 |
| `gpu` | `kubernetes.io/hostname` | 3 | 1-GPU pods | 8 pod(s), 8 GPUs | 3 | 8 pod(s), 8 GPUs | 3 |
| `gpu` | `kubernetes.io/hostname` | 3 | 8-GPU pods | 1 pod(s), 8 GPUs | 3 | 1 pod(s), 8 GPUs | 2 |

1 ClusterQueue(s), 3 flavor(s), empty and now
"""


def test_text_and_markdown_say_what_the_report_holds() -> None:
    cluster, live = _small()
    report = command.report_of(cluster, live, None)
    assert FORMATS["text"](report, []) == TEXT
    assert FORMATS["markdown"](report, []) == MARKDOWN


def test_json_is_the_report_and_valid_against_the_schema() -> None:
    cluster, live = _small()
    for report in (command.report_of(cluster, None, [Size(8, 2)]), command.report_of(cluster, live, None)):
        document = json.loads(FORMATS["json"](report, []))
        jsonschema.validate(document, SCHEMA)
        assert document == to_json(report)
    (gpu, cpu, plain) = document["queues"][0]["flavors"]
    assert gpu["quota"] == {"empty": 16, "now": 16} and cpu["quota"] is None and plain["levels"] == []
    assert gpu["levels"][0]["sizes"][1] == {
        "gpusPerPod": 8,
        "pods": 1,
        "empty": {"largest": 2, "largestGpus": 16, "domains": 2},
        "now": {"largest": 1, "largestGpus": 8, "domains": 2},
    }


# --- the command line -------------------------------------------------------------------------


def test_sizes_parse_or_are_a_usage_error() -> None:
    assert command.parse_sizes("8, 1,8x4,8") == (Size(1), Size(8), Size(8, 4))
    for bad in ("", "0", "8x0", "x4", "8y", "-8", "8.5", "1234567"):
        with pytest.raises(command.UsageProblem, match="is not a size"):
            command.parse_sizes(bad)
    run = tasgen("capacity", "-i", str(REPO / "inventories"), "--size", "8x", "--now", NOW)
    assert run.exit_code == 2 and "'8x' is not a size" in run.output


def test_the_example_json_is_valid_and_defaults_to_1_8_and_a_whole_node() -> None:
    run = tasgen("capacity", "-i", str(REPO / "inventories"), "--format", "json", "--now", NOW)
    assert run.exit_code == 0, run.output
    document = run.json()
    jsonschema.validate(document, SCHEMA)
    sizes = {
        (f["name"], tuple(s["gpusPerPod"] for s in f["levels"][0]["sizes"]))
        for q in document["queues"]
        for f in q["flavors"]
    }
    # the example's L40S and GB200 nodes have 4 GPUs, its H100 nodes 8
    assert {s for _, s in sizes} == {(1, 4, 8), (1, 8)}
    assert all((s == (1, 8)) == ("h100" in name) for name, s in sizes)


def test_an_invalid_inventory_is_reported_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("apiVersion: topology.gpustack.ai/v1alpha1\nkind: Nope\n")
    run = tasgen("capacity", "-i", str(tmp_path), "--format", "json", "--now", NOW)
    assert run.exit_code == 1
    document = run.json()
    jsonschema.validate(document, SCHEMA)
    assert document["queues"] == [] and document["problems"][0]["path"].endswith("config.yaml")


def _job(name: str, pods: int, gpus: str) -> dict[str, Any]:
    container = {"name": "main", "image": "pause", "resources": {"limits": {GPU: gpus}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ml-research",
            "labels": {"kueue.x-k8s.io/queue-name": "training"},
        },
        "spec": {"parallelism": pods, "template": {"spec": {"containers": [container]}}},
    }


def test_sizes_default_to_the_configured_workloads(tmp_path: Path) -> None:
    """Each GPU PodSet's GPUs per pod and pods; a PodSet without GPUs gives none."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copytree(REPO / "inventories", tmp_path / "inventories")
    config = tmp_path / "inventories" / "config.yaml"
    config.write_text(config.read_text().replace("\nspec:\n", '\nspec:\n  workloads: ["jobs/*.yaml"]\n', 1))
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "a.yaml").write_text(
        yaml.safe_dump_all([_job("wide", 4, "8"), _job("one", 1, "2"), _job("cpu", 3, "0")])
    )
    (jobs / "b.yaml").write_text(yaml.safe_dump(_job("again", 4, "8")))
    run = tasgen("capacity", "-i", str(tmp_path / "inventories"), "--format", "json", "--now", NOW)
    assert run.exit_code == 0, run.output
    sizes = {
        (s["gpusPerPod"], s["pods"])
        for q in run.json()["queues"]
        for f in q["flavors"]
        for level in f["levels"]
        for s in level["sizes"]
    }
    assert sizes == {(2, 1), (8, 4)}


def test_pods_tolerate_the_flavors_node_taints_and_the_flavor_tolerates_more() -> None:
    """A node tainted as the flavor's nodeTaints counts; one tainted otherwise counts only
    when the flavor tolerates it (Kueue's TAS checks node taints against both)."""
    other = ("other", "x", "NoExecute")
    nodes = [
        NodeFacts("n0", {"rack": "r0", HOST: "n0"}, {GPU: 8, "pods": 110}, (TAINT,)),
        NodeFacts("n1", {"rack": "r0", HOST: "n1"}, {GPU: 8, "pods": 110}, (other,)),
        NodeFacts("n2", {"rack": "r0", HOST: "n2"}, {GPU: 8, "pods": 110}),
    ]
    cluster = _one_flavor(nodes, ("rack", HOST), Quota(64), False)
    largest = {}
    for name, flavor in {
        "plain": Flavor("f", {}, topology="t"),
        "nodeTaints": Flavor("f", {}, node_taints=(TAINT,), topology="t"),
        "both": Flavor(
            "f", {}, node_taints=(TAINT,), tolerations=({"key": "other", "operator": "Exists"},), topology="t"
        ),
    }.items():
        cluster.flavors["f"] = flavor
        found = flavor_slots(Engine(cluster), cluster.queues["q"], "f", [Size(8)])
        largest[name] = (found.levels[0].slots[0].largest, found.levels[1].slots[0].holding)
    assert largest == {"plain": (1, 1), "nodeTaints": (2, 2), "both": (3, 3)}


@pytest.mark.parametrize("levels", [("rack", HOST), ("rack",)])
def test_the_default_sizes_are_1_8_and_what_most_nodes_have(levels: tuple[str, ...]) -> None:
    gpus = [4, 4, 2, 2, 0, 0, 0]  # ties between 4 and 2: the larger; nodes without GPUs do not count
    nodes = [
        NodeFacts(f"n{i}", {"rack": f"r{i % 2}", HOST: f"n{i}"}, {GPU: g, "pods": 110})
        for i, g in enumerate(gpus)
    ]
    report = command.report_of(_one_flavor(nodes, levels, Quota(8), False), None, None)
    (flavor,) = report.queues[0].flavors
    assert [(s.gpus_per_pod, s.pods) for s in flavor.levels[0].sizes] == [(1, 1), (4, 1), (8, 1)]


def test_help_usage_errors_and_an_unreachable_cluster_exit_2(tmp_path: Path) -> None:
    assert "Example" in tasgen("capacity", "--help").output
    assert tasgen("capacity", "-i", str(tmp_path / "none")).exit_code == 2
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    args = ("-i", str(REPO / "inventories"), "--now", NOW, "--kubeconfig", str(kubeconfig))
    run = tasgen("capacity", *args)
    assert run.exit_code == 2 and f"cannot reach the cluster of {kubeconfig}:" in run.output, run.output


def test_a_flavor_whose_gpus_are_all_in_use_has_no_slot_now() -> None:
    cluster, _ = _small()
    pods = [
        {"spec": {"nodeName": n, "containers": [{"resources": {"limits": {GPU: "8"}}}]}}
        for n in ("a0", "a1", "a2")
    ]
    report = command.report_of(cluster, cluster_in_use(cluster, [], pods, {}), [Size(1)])
    gpu = report.queues[0].flavors[0]
    assert gpu.name == "gpu" and gpu.resource == GPU
    for level in gpu.levels:
        (size,) = level.sizes
        assert size.empty.largest > 0 and size.now is not None
        assert (size.now.largest, size.now.domains) == (0, 0)
