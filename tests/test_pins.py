"""Nodes keep their previous profile label while a queue retains that profile's flavor
(generator/compile/pins.py; Kueue's side: tests/e2e/test_retained_flavor.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator.compile.manifests import PROFILE_FEATURES, feature_files
from generator.compile.pins import held_profiles, pins
from generator.compile.profiles import Assignment, Profile
from generator.load.previous_profiles import PreviousProfiles, profiles_of
from generator.model import PROFILE_KEY, Inventory, Settings

ROOT = Path(__file__).resolve().parents[1]
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
