"""Nodes keep their previous profile label while a queue retains that profile's flavor
(generator/compile/pins.py; Kueue's side: tests/e2e/test_retained_flavor.py)."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings

from generator.compile.manifests import PROFILE_FEATURES, feature_files
from generator.compile.pins import held_profiles, pins
from generator.compile.profiles import Assignment, Profile
from generator.emit.tree import render_tree
from generator.load.previous import carried_of
from generator.load.previous_profiles import PreviousProfiles, profiles_of
from generator.model import PROFILE_KEY, RETIRING_PREFIX, Inventory, Settings
from generator.pipeline import Compilation, compile_inventory
from tests.conftest import NOW, examples, tasgen, tree
from tests.edits import record_rack_b_r02
from tests.plan.fleet import Fleet
from tests.test_retention_properties import _files as retention_files
from tests.test_retention_properties import _idle as shown_idle
from tests.test_retention_properties import histories

ROOT = Path(__file__).resolve().parents[1]
RACK = "topology.gpustack.ai/rack"
HOST = "kubernetes.io/hostname"
OLD = Profile("5ce26b67c9cf", ("block", HOST))
NEW = Profile("7de0bea5615a", ("block", "rack", HOST))
OTHER = Profile("3218df278c5e", (HOST,))


def test_held_profiles_are_the_profile_labels_the_flavors_select() -> None:
    specs = [
        {"nodeLabels": {"nvidia.com/gpu.product": "H100", PROFILE_KEY: OLD.id}, "topologyName": "t"},
        {"nodeLabels": {"nvidia.com/gpu.product": "L40S"}},  # a flavor tasgen did not make
        {},
    ]
    assert held_profiles(specs) == {OLD.id}


def test_a_node_moved_out_of_a_held_profile_keeps_it() -> None:
    previous = {"moved": OLD.id, "stays": OLD.id, "was-other": OTHER.id, "gone": OLD.id}
    profile_of = {"moved": NEW, "stays": OLD, "was-other": NEW, "new-node": NEW}
    assert pins(previous, profile_of, frozenset({OLD.id})) == {"moved": OLD.id}


def test_nothing_is_pinned_when_no_flavor_is_retained() -> None:
    assert pins({"moved": OLD.id}, {"moved": NEW}, frozenset()) == {}
    assert pins({"moved": OLD.id}, {"moved": NEW}, frozenset({OTHER.id})) == {}


def test_a_pinned_node_is_written_with_its_previous_profile_label() -> None:
    inventory = Inventory(Settings(), {}, {}, {})
    assignment = Assignment(profile_of={"moved": NEW, "kept": NEW})
    folders = {"moved": "labels", "kept": "labels"}

    def labels(pinned: dict[str, str] | None) -> dict[str, dict[str, str]]:
        (profiles,) = [
            f for f in feature_files(inventory, [], assignment, folders, pinned) if f.source is None
        ]
        assert profiles.file == f"labels/{PROFILE_FEATURES}"
        return {node: dict(found) for node, found in profiles.rows}

    assert labels(None) == {"kept": {PROFILE_KEY: NEW.id}, "moved": {PROFILE_KEY: NEW.id}}
    assert labels({"moved": OLD.id}) == {"kept": {PROFILE_KEY: NEW.id}, "moved": {PROFILE_KEY: OLD.id}}


def test_previous_profiles_are_read_from_every_labels_folder_at_the_first_read() -> None:
    rendered = ROOT / "rendered"
    texts = {p.relative_to(rendered).as_posix(): p.read_text() for p in rendered.rglob("*.yaml")}
    sharded = texts["labels/nodefeatures-profiles.yaml"].replace("cpu-01", "cpu-99")
    texts["labels/shard-007/nodefeatures-profiles.yaml"] = sharded
    texts["labels/shard-008/nodefeatures-profiles.yaml"] = "{ not: yaml"  # skipped
    found = profiles_of(texts)
    nodes = {n["name"] for n in _inventory_nodes(ROOT / "inventories" / "nodes.yaml")}
    assert set(found) == nodes | {"cpu-99"}
    assert {found[f"h100-1b-r2-0{i}"] for i in range(1, 5)} == {"5ce26b67c9cf"}
    assert found["cpu-99"] == found["cpu-01"]

    lazy = PreviousProfiles(texts)
    assert lazy._found is None  # nothing parsed until read
    assert dict(lazy) == found


def _inventory_nodes(path: Path) -> list[dict[str, Any]]:
    (inventory,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "NodeInventory"]
    found: list[dict[str, Any]] = inventory["nodes"]
    return found


# --- the render: what the pins do to rendered/ ----------------------------------------------

RACK_B_R02 = [f"h100-1b-r2-0{i}" for i in range(1, 5)]
OLD_PROFILE, NEW_PROFILE = "5ce26b67c9cf", "7de0bea5615a"  # b-r02's before and after the rack edit
SIX_HOURS_LATER = "2026-11-30T06:00:00Z"


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
    found: dict[str, dict[str, str]] = {}
    for path in sorted((out / "labels").rglob("nodefeatures-*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                node = doc["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
                found.setdefault(node, {}).update(doc["spec"]["labels"])
    return found


def _b_r02(out: Path) -> set[tuple[str | None, str | None]]:
    labels = _labels(out)
    return {(labels[n].get(PROFILE_KEY), labels[n].get(RACK)) for n in RACK_B_R02}


def test_under_wait_for_idle_moved_nodes_keep_the_retained_profile(tmp_path: Path) -> None:
    inventory, out = _example(tmp_path, "    dropPolicy: WaitForIdle\n")
    before = _labels(out)
    record_rack_b_r02(inventory)
    _render(inventory, out)
    # The rack is written at once; the profile stays the retained flavor's.
    assert _b_r02(out) == {(OLD_PROFILE, "b-r02")}
    after = _labels(out)
    assert {n: after[n] for n in after if n not in RACK_B_R02} == {
        n: before[n] for n in before if n not in RACK_B_R02
    }
    # A later render keeps them there (the previous label is the retained one), check agrees.
    assert tree(out) == _rendered_again(inventory, out, tmp_path)
    check = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert check.exit_code == 0, check.output


def _rendered_again(inventory: Path, out: Path, tmp_path: Path) -> dict[str, str]:
    again = tmp_path / "again"
    shutil.copytree(out, again)
    _render(inventory, again, NOW, "--no-cache")
    return tree(again)


def test_under_hold_and_drain_moved_nodes_move_at_once(tmp_path: Path) -> None:
    inventory, out = _example(tmp_path, "")
    record_rack_b_r02(inventory)
    _render(inventory, out)
    assert _b_r02(out) == {(NEW_PROFILE, "b-r02")}


def test_moved_nodes_move_once_the_flavor_leaves_the_queues(tmp_path: Path) -> None:
    inventory, out = _example(tmp_path, "    dropPolicy: WaitForIdle\n    retainFor: 1h\n")
    record_rack_b_r02(inventory)
    _render(inventory, out)
    assert _b_r02(out) == {(OLD_PROFILE, "b-r02")}
    _render(inventory, out, SIX_HOURS_LATER)  # retainFor has passed: the flavor leaves
    assert _b_r02(out) == {(NEW_PROFILE, "b-r02")}


# --- over random sequences of fleet changes ----------------------------------------------------


def _tree(result: Compilation) -> dict[str, str]:
    assert not result.failed, result.problems()
    assert result.planned is not None
    return render_tree(result.planned.manifests, result.planned.features, result.planned.synced).files


def _held(texts: dict[str, str]) -> frozenset[str]:
    """The profiles of the flavors the render's queues keep at zero quota (retiring)."""
    queues = [d for d in yaml.safe_load_all(texts["queues/clusterqueues.yaml"]) if d]
    kept = {
        k[len(RETIRING_PREFIX) :]
        for q in queues
        for k in (q["metadata"].get("annotations") or {})
        if k.startswith(RETIRING_PREFIX)
    }
    flavors = [d for d in yaml.safe_load_all(texts["kueue/resourceflavors.yaml"]) if d]
    return held_profiles(f["spec"] for f in flavors if f["metadata"]["name"] in kept)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_a_node_leaves_a_kept_flavors_profile_only_with_the_flavor(
    history: tuple[str | None, list[tuple[Fleet, int, int]]],
) -> None:
    """Every render: a node whose previous profile label is that of a flavor some queue keeps
    keeps that label; every other node has the profile of the new inventory."""
    retain_for, steps = history
    now, texts = datetime.fromisoformat(NOW), {}
    for fleet, hours, seed in steps:
        now += timedelta(hours=hours)
        files = retention_files(fleet, retain_for)
        carried = shown_idle(carried_of(texts), seed)
        new = _tree(compile_inventory(files, now, carried=carried))
        fresh = profiles_of(_tree(compile_inventory(files, now)))  # the inventory's own profiles
        before, after, held = profiles_of(texts), profiles_of(new), _held(new)
        expected = {n: before[n] if before.get(n) in held else p for n, p in fresh.items()}
        assert after == expected
        texts = new
