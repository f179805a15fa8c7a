"""Quota follows the nodes each flavor selects as the render writes them: a node kept on its
previous flavor (compile/pins.py) counts for that flavor, a node in transit for none, and each
identity's quota stays what its plans declare (docs/explanation/gate.md, "Quota follows the
nodes"). The oracle reads the rendered tree: which flavor's nodeLabels each node's labels match,
and the nodes' allocatable from the inventory, never the compiler's own membership."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.emit.tree import render_tree
from tasgen.load.files import read_inventory
from tasgen.load.previous import carried_of
from tasgen.model import Carried, LiveNodes
from tasgen.pipeline import compile_inventory
from tests.conftest import NOW
from tests.e2e.scene import RACK_B_R02, add_h100_toleration, record_racks, set_gate

ROOT = Path(__file__).resolve().parents[1]
GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"
H100 = "NVIDIA-H100-80GB-HBM3"
#: what each queue's plan declares for the H100 identity (inventories/queues/)
DECLARED = {
    "training": {"cpu": 3000, "memory": 31 * 2**40, GPU: 120},
    "inference": {"cpu": 200, "memory": 2000 * 2**30, GPU: 8},
}
MOVED = RACK_B_R02[:2]  # half of rack b-r02: they move into the other H100 profile


def _render(inventory: Path, carried: Carried | None) -> dict[str, str]:
    compiled = compile_inventory(read_inventory(inventory), datetime.fromisoformat(NOW), carried=carried)
    assert not compiled.failed, compiled.problems()
    assert compiled.rendering is not None
    planned = compiled.rendering
    return render_tree(planned.manifests, planned.features, planned.synced).files


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _nodes(inventory: Path) -> dict[str, dict[str, Any]]:
    (found,) = [d for d in _docs((inventory / "nodes.yaml").read_text()) if d["kind"] == "NodeInventory"]
    return {n["name"]: n for n in found["nodes"]}


def _quantity(text: str) -> Fraction:
    """A Kubernetes quantity of the forms the example uses (m, Ki..Ti, plain)."""
    units = {"m": Fraction(1, 1000), "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return Fraction(text[: -len(suffix)]) * factor
    return Fraction(text)


def _selected(texts: dict[str, str], nodes: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Flavor -> the nodes whose labels (the inventory's, then every NodeFeature's of the tree)
    its nodeLabels match."""
    labels = {name: dict(node.get("labels") or {}) for name, node in nodes.items()}
    for path, text in texts.items():
        if path.startswith("labels/") and "nodefeatures" in path:
            for doc in _docs(text):
                labels[doc["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]].update(
                    doc["spec"]["labels"]
                )
    flavors = _docs(texts["kueue/resourceflavors.yaml"])
    return {
        f["metadata"]["name"]: {
            n
            for n, mine in labels.items()
            if all(mine.get(k) == v for k, v in f["spec"]["nodeLabels"].items())
        }
        for f in flavors
    }


def _h100_quotas(texts: dict[str, str], queue: str) -> tuple[dict[str, dict[str, Fraction]], set[str]]:
    """The queue's H100 flavors -> resource -> nominalQuota, and which of them it retains."""
    flavors = {f["metadata"]["name"]: f for f in _docs(texts["kueue/resourceflavors.yaml"])}
    (body,) = [q for q in _docs(texts["queues/clusterqueues.yaml"]) if q["metadata"]["name"] == queue]
    retained = {
        k.split("/", 1)[1] for k in body["metadata"].get("annotations", {}) if k.startswith("retiring.")
    }
    found = {}
    for entry in body["spec"]["resourceGroups"][0]["flavors"]:
        if flavors[entry["name"]]["spec"]["nodeLabels"].get(PRODUCT) == H100:
            found[entry["name"]] = {r["name"]: _quantity(str(r["nominalQuota"])) for r in entry["resources"]}
    return found, retained


def _assert_follows_membership(texts: dict[str, str], inventory: Path) -> dict[str, dict[str, Fraction]]:
    """Every queue's H100 quota: the declared total over all its flavors (conserved); what
    its retained flavors do not hold, shared by the others within one unit of their nodes'
    share of GPUs as the tree selects them. Returns training's quotas."""
    nodes = _nodes(inventory)
    selected = _selected(texts, nodes)
    result = {}
    for queue, declared in DECLARED.items():
        quotas, retained = _h100_quotas(texts, queue)
        for resource, total in declared.items():
            assert sum(q[resource] for q in quotas.values()) == total, (queue, resource, quotas)
        sharing = [f for f in quotas if f not in retained]
        weights = {
            f: sum(
                Fraction(nodes[n]["allocatable"][GPU]) for n in selected[f] if GPU in nodes[n]["allocatable"]
            )
            for f in sharing
        }
        left = declared[GPU] - sum(quotas[f][GPU] for f in retained)
        if sum(weights.values()):
            for f in sharing:
                expected = left * weights[f] / sum(weights.values())
                assert abs(quotas[f][GPU] - expected) < 1, (queue, f, quotas[f][GPU], expected, weights)
        if queue == "training":
            result = quotas
    return result


@pytest.fixture
def example(tmp_path: Path) -> Path:
    inventory = tmp_path / "inventory"
    shutil.copytree(ROOT / "inventories", inventory)
    return inventory


@pytest.mark.parametrize("policy", ["WaitForIdle", "HoldAndDrain"])
def test_half_a_rack_recorded_keeps_the_quota_of_the_nodes_kept_on_their_flavor(
    example: Path, policy: str
) -> None:
    """Offline the two moved nodes stay on their flavor: it keeps the quota of its four nodes
    (it halved before, which turned its running usage into borrowing a peer could reclaim)."""
    set_gate(example, policy)
    before = _render(example, None)
    quotas_before = _assert_follows_membership(before, example)
    record_racks(example, MOVED, "b-r02")
    after = _render(example, carried_of(before))
    quotas_after = _assert_follows_membership(after, example)
    assert quotas_after == quotas_before
    # the oracle's own reading: two of the old flavor's four nodes are planned elsewhere
    planned = _render(example, None)
    assert _assert_follows_membership(planned, example) != quotas_before


def _live(before: dict[str, str], **live: frozenset[str]) -> Carried:
    """The previous render as a live render reads it, with what the cluster shows of nodes."""
    carried = carried_of(before)
    return dataclasses.replace(carried, idle={}, usage={}, live=LiveNodes(**live))


def test_a_released_node_moves_its_quota_and_a_busy_one_keeps_it(example: Path) -> None:
    set_gate(example, "HoldAndDrain")
    before = _render(example, None)
    record_racks(example, MOVED, "b-r02")
    after = _render(example, _live(before, busy=frozenset({MOVED[0]})))
    selected = _selected(after, _nodes(example))
    old = next(f for f, n in selected.items() if MOVED[0] in n)
    assert MOVED[1] not in selected[old]  # released: the oracle sees it on the new flavor
    quotas = _assert_follows_membership(after, example)
    assert quotas[old][GPU] in (22, 23)  # 3 of the 16 nodes: 120 x 3/16, neither 30 (4) nor 15 (2)


def test_a_node_in_transit_counts_for_no_flavor(example: Path) -> None:
    set_gate(example, "HoldAndDrain")
    before = _render(example, None)
    old = next(f for f, n in _selected(before, _nodes(example)).items() if MOVED[1] in n)
    record_racks(example, MOVED, "b-r02")
    after = _render(example, _live(before, busy=frozenset({MOVED[0]}), admitting=frozenset({old})))
    selected = _selected(after, _nodes(example))
    assert not any(MOVED[1] in n for n in selected.values())  # in transit: no flavor selects it
    quotas = _assert_follows_membership(after, example)
    assert quotas[old][GPU] == 24  # 3 of the 15 selected nodes' GPUs: 120 x 24/120


def test_a_flavor_renamed_on_every_node_takes_the_quota_by_the_planned_nodes(example: Path) -> None:
    """A toleration renames both H100 flavors: every node stays on the old ones, so the new
    ones select none yet; under HoldAndDrain they take the whole quota, split as planned."""
    set_gate(example, "HoldAndDrain")
    before = _render(example, None)
    add_h100_toleration(example)
    after = _render(example, carried_of(before))
    quotas, retained = _h100_quotas(after, "training")
    assert not retained and not (quotas.keys() & _h100_quotas(before, "training")[0].keys())
    selected = _selected(after, _nodes(example))
    assert all(not selected[f] for f in quotas)  # the oracle: no node yet
    assert sorted(q[GPU] for q in quotas.values()) == [30, 90]  # 4 and 12 of the 16 planned nodes
    assert sum(q[GPU] for q in quotas.values()) == 120
