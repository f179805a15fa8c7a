"""A node whose flavors change keeps its previous flavor labels until the cluster shows it idle
(generator/compile/pins.py; Kueue's side: tests/e2e/test_retained_flavor.py)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from tasgen.commands.fit import command as fit_command
from tasgen.compile.manifests import PROFILE_FEATURES, feature_files
from tasgen.compile.pins import TRANSIT_ROW, flavors_in, pin
from tasgen.emit.tree import render_tree
from tasgen.fit.inventory import cluster_of
from tasgen.gate.admissions import placed_nodes
from tasgen.load.files import read_inventory
from tasgen.load.previous import carried_of
from tasgen.load.previous_profiles import PreviousRows, rows_of
from tasgen.model import PROFILE_KEY, TRANSIT_KEY, Inventory, LiveNodes, Settings, flavor_key
from tasgen.pipeline import Compilation, compile_inventory
from tests.conftest import NOW, examples, tasgen, tree
from tests.edits import record_rack_b_r02
from tests.plan.fleet import Fleet
from tests.test_retention_properties import _files as retention_files
from tests.test_retention_properties import histories

ROOT = Path(__file__).resolve().parents[1]
RACK = "topology.gpustack.ai/rack"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu.product"


def _row(profile: str, *flavors: str) -> dict[str, str]:
    return {PROFILE_KEY: profile, **{flavor_key(f): f for f in flavors}}


OLD, NEW = _row("p1", "f-old"), _row("p2", "f-new")


def test_a_first_render_pins_nothing() -> None:
    assert pin({"n": NEW}, {}, {}, {}, None).rows == {"n": NEW}


def test_offline_a_node_whose_flavors_change_keeps_its_previous_row() -> None:
    rows = {"moved": NEW, "stays": OLD, "new-node": NEW, "unflavored": _row("p2")}
    previous = {"moved": OLD, "stays": OLD, "unflavored": _row("p1"), "gone": OLD}
    found = pin(rows, previous, {}, {}, None)
    assert found.rows == {"moved": OLD, "stays": OLD, "new-node": NEW, "unflavored": _row("p2")}
    assert found.kept == {"moved": frozenset({"f-old"})}


def test_a_toleration_change_keeps_the_profile_and_still_pins() -> None:
    before, after = _row("p1", "f-a"), _row("p1", "f-b")
    assert pin({"n": after}, {"n": before}, {}, {}, None).rows == {"n": before}


def test_live_a_busy_node_stays_and_an_idle_one_moves() -> None:
    rows, previous = {"busy": NEW, "idle": NEW}, {"busy": OLD, "idle": OLD}
    found = pin(rows, previous, {}, {}, LiveNodes(busy=frozenset({"busy"})))
    assert found.rows == {"busy": OLD, "idle": NEW}


def test_live_a_flavor_holding_an_admission_without_nodes_keeps_all_its_nodes() -> None:
    found = pin({"n": NEW}, {"n": OLD}, {}, {}, LiveNodes(unplaced=frozenset({"f-old"})))
    assert found.rows == {"n": OLD}
    other = pin({"n": NEW}, {"n": OLD}, {}, {}, LiveNodes(unplaced=frozenset({"f-x"})))
    assert other.rows == {"n": NEW}


def test_an_idle_node_whose_old_flavor_may_still_admit_goes_through_transit() -> None:
    live = LiveNodes(admitting=frozenset({"f-old"}))
    first = pin({"n": NEW}, {"n": OLD}, {}, {}, live)
    assert first.rows == {"n": TRANSIT_ROW} and first.transit == {"n"}
    assert not flavors_in(TRANSIT_ROW) and PROFILE_KEY not in TRANSIT_ROW  # no flavor selects it
    # offline it stays in transit; live and busy too; live and idle it gets its new row
    assert pin({"n": NEW}, {"n": TRANSIT_ROW}, {}, {}, None).rows == {"n": TRANSIT_ROW}
    assert pin({"n": NEW}, {"n": TRANSIT_ROW}, {}, {}, LiveNodes(busy=frozenset({"n"}))).rows == {
        "n": TRANSIT_ROW
    }
    assert pin({"n": NEW}, {"n": TRANSIT_ROW}, {}, {}, live).rows == {"n": NEW}


def test_a_row_from_before_the_flavor_labels_is_judged_by_the_flavors_that_selected_it() -> None:
    legacy = {
        "f-old": {"nodeLabels": {GPU: "H100", PROFILE_KEY: "p1"}, "topologyName": "t"},
        "f-l40s": {"nodeLabels": {GPU: "L40S", PROFILE_KEY: "p1"}, "topologyName": "t"},
    }
    labels = {"h": {GPU: "H100"}, "cpu": {}}
    # the same flavor with its label: nothing changes for the node, no pin
    assert pin({"h": OLD}, {"h": {PROFILE_KEY: "p1"}}, labels, legacy, None).rows == {"h": OLD}
    # another flavor: pinned on the old row
    assert pin({"h": NEW}, {"h": {PROFILE_KEY: "p1"}}, labels, legacy, None).rows == {
        "h": {PROFILE_KEY: "p1"}
    }
    # a node no old flavor selected moves freely
    assert pin({"cpu": NEW}, {"cpu": {PROFILE_KEY: "p1"}}, labels, legacy, None).rows == {"cpu": NEW}


# --- Kueue's topology assignment, decoded ------------------------------------------------------


def _workload(*assignments: dict[str, Any], finished: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Finished", "status": "True"}] if finished else []
    return {
        "status": {
            "admission": {"clusterQueue": "q", "podSetAssignments": list(assignments)},
            "conditions": conditions,
        }
    }


def test_the_nodes_of_every_slice_form_are_read() -> None:
    levels = ["topology.gpustack.ai/rack", HOST]
    slices = [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"universal": "r1"},
                {"individual": {"prefix": "h100-", "suffix": "-x", "roots": ["a", "b"]}},
            ],
            "podCounts": {"individual": [3, 1]},
        },
        {
            "domainCount": 1,
            "valuesPerLevel": [{"universal": "r2"}, {"universal": "node-c"}],
            "podCounts": {"universal": 2},
        },
        {
            "domainCount": 1,
            "valuesPerLevel": [{"universal": "r2"}, {"individual": {"roots": ["node-d"]}}],
            "podCounts": {"universal": 1},
        },
    ]
    workload = _workload(
        {"flavors": {"nvidia.com/gpu": "f"}, "topologyAssignment": {"levels": levels, "slices": slices}}
    )
    assert placed_nodes(workload) == ({"h100-a-x", "h100-b-x", "node-c", "node-d"}, frozenset())


def test_the_v1beta1_domains_form_is_read() -> None:
    ta = {
        "levels": ["rack", HOST],
        "domains": [{"values": ["r1", "n1"], "count": 2}, {"values": ["r1", "n2"], "count": 1}],
    }
    assert placed_nodes(_workload({"flavors": {"cpu": "f"}, "topologyAssignment": ta})) == (
        {"n1", "n2"},
        frozenset(),
    )


def test_an_admission_without_nodes_names_its_flavors() -> None:
    no_ta = {"flavors": {"nvidia.com/gpu": "f1", "cpu": "f1"}}
    by_rack = {
        "flavors": {"cpu": "f2"},
        "topologyAssignment": {"levels": ["rack"], "domains": [{"values": ["r1"], "count": 1}]},
    }
    assert placed_nodes(_workload(no_ta, by_rack)) == (frozenset(), {"f1", "f2"})
    assert placed_nodes(_workload(no_ta, finished=True)) == (frozenset(), frozenset())
    assert placed_nodes({"status": {}}) == (frozenset(), frozenset())


# --- reading the previous render -----------------------------------------------------------------


def test_previous_rows_are_read_from_every_labels_folder_at_the_first_read() -> None:
    rendered = ROOT / "rendered"
    texts = {p.relative_to(rendered).as_posix(): p.read_text() for p in rendered.rglob("*.yaml")}
    sharded = texts["labels/nodefeatures-profiles.yaml"].replace("cpu-01", "cpu-99")
    texts["labels/shard-007/nodefeatures-profiles.yaml"] = sharded
    texts["labels/shard-008/nodefeatures-profiles.yaml"] = "{ not: yaml"  # skipped
    found = rows_of(texts)
    nodes = {n["name"] for n in _inventory_nodes(ROOT / "inventories" / "nodes.yaml")}
    assert set(found) == nodes | {"cpu-99"}
    assert {found[f"h100-1b-r2-0{i}"][PROFILE_KEY] for i in range(1, 5)} == {"5ce26b67c9cf"}
    assert {len(flavors_in(found[f"h100-1b-r2-0{i}"])) for i in range(1, 5)} == {1}
    assert found["cpu-99"] == found["cpu-01"]

    lazy = PreviousRows(texts)
    assert lazy._found is None  # nothing parsed until read
    assert dict(lazy) == found


def _inventory_nodes(path: Path) -> list[dict[str, Any]]:
    (inventory,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "NodeInventory"]
    found: list[dict[str, Any]] = inventory["nodes"]
    return found


def test_feature_files_write_the_rows_given() -> None:
    inventory = Inventory(Settings(), {}, {}, {})
    rows = {"a": OLD, "b": TRANSIT_ROW}
    (profiles,) = feature_files(inventory, [], rows, {"a": "labels", "b": "labels"})
    assert profiles.file == f"labels/{PROFILE_FEATURES}"
    assert {node: dict(found) for node, found in profiles.rows} == {"a": OLD, "b": {TRANSIT_KEY: "true"}}


# --- the render: what the pins do to rendered/ ----------------------------------------------

RACK_B_R02 = [f"h100-1b-r2-0{i}" for i in range(1, 5)]
OLD_PROFILE, NEW_PROFILE = "5ce26b67c9cf", "7de0bea5615a"  # b-r02's before and after the rack edit


def _example(tmp_path: Path, gate: str) -> tuple[Path, Path]:
    """The example inventory with more gate settings, rendered once (before the rack edit)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(ROOT / "inventories", inventory)
    config = inventory / "config.yaml"
    anchor = "    timeoutSeconds: 1800\n"
    config.write_text(config.read_text().replace(anchor, anchor + gate))
    out = tmp_path / "rendered"
    _render(inventory, out)
    return inventory, out


def _render(inventory: Path, out: Path, now: str = NOW, *more: str) -> None:
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", now, *more)
    assert run.exit_code == 0, run.output


def _labels(out: Path) -> dict[str, dict[str, str]]:
    """Node -> the labels every NodeFeature of rendered/ gives it."""
    return _tree_labels(tree(out))


def _tree_labels(texts: dict[str, str]) -> dict[str, dict[str, str]]:
    """Node -> the labels every NodeFeature of a rendered tree (files by relative path) gives it."""
    found: dict[str, dict[str, str]] = {}
    for path in sorted(texts):
        if (
            path.startswith("labels/")
            and Path(path).name.startswith("nodefeatures-")
            and path.endswith(".yaml")
        ):
            for doc in yaml.safe_load_all(texts[path]):
                if doc:
                    node = doc["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
                    found.setdefault(node, {}).update(doc["spec"]["labels"])
    return found


def _selecting(out: Path) -> dict[str, set[str]]:
    """Node -> the rendered flavors whose nodeLabels its labels (inventory's and rendered/'s) match."""
    nodes = {n["name"]: n.get("labels") or {} for n in _inventory_nodes(ROOT / "inventories" / "nodes.yaml")}
    return _selection(tree(out), nodes)


def _b_r02(out: Path) -> set[tuple[str | None, str | None]]:
    labels = _labels(out)
    return {(labels[n].get(PROFILE_KEY), labels[n].get(RACK)) for n in RACK_B_R02}


def test_the_rack_edit_keeps_the_moved_nodes_on_their_flavor_under_either_policy(tmp_path: Path) -> None:
    for policy in ("    dropPolicy: WaitForIdle\n", ""):
        inventory, out = _example(tmp_path / str(bool(policy)), policy)
        before, selected = _labels(out), _selecting(out)
        record_rack_b_r02(inventory)
        _render(inventory, out)
        # The rack is written at once; profile and flavor labels stay the old ones.
        assert _b_r02(out) == {(OLD_PROFILE, "b-r02")}
        after = _labels(out)
        for node in RACK_B_R02:
            assert {k: v for k, v in after[node].items() if k != RACK} == before[node]
        # no node is selected by a flavor that did not select it before
        selecting = _selecting(out)
        assert all(selecting[n] <= selected[n] for n in selected if selected[n]), (selecting, selected)
        # A later render keeps them there, and check agrees.
        assert tree(out) == _rendered_again(inventory, out, tmp_path)
        check = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
        assert check.exit_code == 0, check.output


def _rendered_again(inventory: Path, out: Path, tmp_path: Path) -> dict[str, str]:
    again = tmp_path / "again"
    shutil.rmtree(again, ignore_errors=True)
    shutil.copytree(out, again)
    _render(inventory, again, NOW, "--no-cache")
    return tree(again)


# --- over random sequences of fleet changes ----------------------------------------------------


def _tree(result: Compilation) -> dict[str, str]:
    assert not result.failed, result.problems()
    assert result.rendering is not None
    return render_tree(result.rendering.manifests, result.rendering.features, result.rendering.synced).files


def _selection(texts: dict[str, str], inventory: dict[str, dict[str, str]]) -> dict[str, set[str]]:
    """Node -> the flavors of the tree whose nodeLabels match its labels (the tree's NodeFeatures
    over the inventory's): read from the tree, not through the compiler."""
    labels = _tree_labels(texts)
    flavors = [d for d in yaml.safe_load_all(texts.get("kueue/resourceflavors.yaml", "")) if d]
    found: dict[str, set[str]] = {}
    for node, own in inventory.items():
        mine = {**own, **labels.get(node, {})}
        found[node] = {
            f["metadata"]["name"]
            for f in flavors
            if all(mine.get(k) == v for k, v in f["spec"]["nodeLabels"].items())
        }
    return found


def _inventory_labels(fleet: Fleet) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for text in fleet.files().values():
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "NodeInventory":
                found |= {n["name"]: n.get("labels") or {} for n in doc["nodes"]}
    return found


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_offline_no_node_is_offered_to_a_flavor_it_was_not_on(
    history: tuple[str | None, list[tuple[Fleet, int, int]]],
) -> None:
    """Every offline render: a node that some flavor selected in the previous render is selected
    only by flavors that selected it then (no new flavor sees a node old work may hold)."""
    retain_for, steps = history
    now, texts = datetime.fromisoformat(NOW), {}
    for fleet, hours, _ in steps:
        now += timedelta(hours=hours)
        files = retention_files(fleet, retain_for)
        new = _tree(compile_inventory(files, now, carried=carried_of(texts)))
        nodes = _inventory_labels(fleet)
        if texts:
            before, after = _selection(texts, nodes), _selection(new, nodes)
            for node, was in before.items():
                if was:
                    assert after[node] <= was, (node, was, after[node])
        texts = new


def test_fit_sees_the_nodes_as_the_render_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tasgen fit reads rendered/ as render does: after the rack edit under WaitForIdle the four
    nodes are kept on the retained flavor, which still selects them, and the new one does not."""
    inventory, _ = _example(tmp_path, "    dropPolicy: WaitForIdle\n")
    record_rack_b_r02(inventory)
    monkeypatch.chdir(tmp_path)
    now = datetime.fromisoformat(NOW)
    old, new = (f"gpustack-nvidia-h100-80gb-hbm3-b46e62-{p}" for p in (OLD_PROFILE, NEW_PROFILE))

    def selected(carried: Any) -> set[frozenset[str]]:
        compiled = compile_inventory(read_inventory(inventory), now, node_features=False, carried=carried)
        cluster = cluster_of(compiled)
        return {
            frozenset(
                f
                for f, flavor in cluster.flavors.items()
                if all(n.labels.get(k) == v for k, v in flavor.node_labels.items())
            )
            for n in cluster.nodes
            if n.name in RACK_B_R02
        }

    assert selected(fit_command._rendered()) == {frozenset({old})}
    assert selected(None) == {frozenset({new})}  # what fit judged before: a first render
