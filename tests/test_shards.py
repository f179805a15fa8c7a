"""Labels shards on a generated fleet: every rack in one shard, every shard within its bound,
a node's shard independent of the other nodes, and a one-rack change touching only its shards."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.fleet import write_fleet
from tasgen.compile.shards import Sharding, objects_per_folder, objects_per_group, oversized
from tasgen.emit import yaml as tasgen_yaml
from tasgen.model import Inventory, Settings, Where
from tests.conftest import NOW, examples, tasgen

NODES = 1200
SHARDS = 8
NODE_LABEL = "nfd.node.kubernetes.io/node-name"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root / "inventory", NODES, SHARDS)
    return root


def render(inventory: Path, out: Path) -> list[str]:
    run = tasgen(
        "render", "-i", str(inventory), "-o", str(out), "--now", NOW, "--no-cache", "--format", "json"
    )
    assert run.exit_code == 0, run.output
    written: list[str] = run.json()["written"]
    return written


def features_by_folder(out: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted((out / "labels").rglob("nodefeatures-*.yaml")):
        folder = path.parent.relative_to(out).as_posix()
        found[folder] += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return found


def rack_of(inventory: Path) -> dict[str, str]:
    """Node -> its rack path, from the h100 snapshot (the configMap source)."""
    documents = list(yaml.safe_load_all((inventory / "sources.yaml").read_text()))
    configmap = next(d for d in documents if d["kind"] == "ConfigMap")
    snapshot = yaml.safe_load(configmap["data"]["snapshot.yaml"])
    return {
        node: f"{v['topology.gpustack.ai/block']}/{v['topology.gpustack.ai/rack']}"
        for node, v in snapshot["nodes"].items()
    }


def test_each_rack_is_in_one_shard_and_shards_are_kustomizations(fleet: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(fleet / "inventory", out)
    by_folder = features_by_folder(out)
    assert len(by_folder) > 1 and all(f.startswith("labels/shard-") for f in by_folder)
    folder_of_node = {d["metadata"]["labels"][NODE_LABEL]: f for f, docs in by_folder.items() for d in docs}
    shards_of_rack: dict[str, set[str]] = defaultdict(set)
    for node, rack in rack_of(fleet / "inventory").items():
        shards_of_rack[rack].add(folder_of_node[node])
    assert shards_of_rack and all(len(s) == 1 for s in shards_of_rack.values())
    # Every node's NodeFeatures (source and profile) share its folder.
    for folder, docs in by_folder.items():
        assert all(folder_of_node[d["metadata"]["labels"][NODE_LABEL]] == folder for d in docs)
        kustomization = yaml.safe_load((out / folder / "kustomization.yaml").read_text())
        assert sorted(kustomization["resources"]) == sorted(
            p.name for p in (out / folder).glob("nodefeatures-*")
        )
    assert not (out / "kustomization.yaml").exists()  # no path holds the whole fleet


def test_a_node_keeps_its_shard_whatever_other_nodes_exist() -> None:
    sharding = Sharding(count=16)
    domains = {f"node-{i}": f"zone=z{i % 3}\nrack=r{i // 4}\n" for i in range(400)}
    whole = sharding.folders_of(domains, domains)
    some = Sharding(count=16).folders_of(list(domains)[::7], domains)
    assert all(whole[node] == folder for node, folder in some.items())
    assert len(set(whole.values())) == 16  # and the buckets are used


@settings(max_examples=examples(200), deadline=None)
@given(
    st.dictionaries(st.from_regex(r"n[0-9]{1,3}", fullmatch=True), st.sampled_from(["", "r=a\n", "r=b\n"])),
    st.integers(1, 8),
)
def test_folders_of_is_each_nodes_folder_of_its_rack_path_or_name(
    domains: dict[str, str], count: int
) -> None:
    sharding = Sharding(count=count)
    nodes = [*domains, "n-no-domain"]
    expected = {node: Sharding(count=count).folder(domains.get(node) or node) for node in nodes}
    assert sharding.folders_of(nodes, domains) == expected


def test_oversized_shard_names_a_count_that_fits() -> None:
    sharding = Sharding(count=2, max_objects=100)
    inventory = Inventory(Settings(where=Where("config.yaml", 0, ("spec",))), {}, {}, {})
    folder_of = {f"n{i}": f"labels/shard-{i % 2}" for i in range(300)}
    (hit,) = oversized(sharding, objects_per_folder(folder_of, []), inventory) or [None]
    assert hit is not None and hit.where == Where("config.yaml", 0, ("spec",))
    assert "labels/shard-0/ would hold 150 NodeFeatures" in hit.message
    assert "nodeFeatureShards to 8 or more" in hit.message
    assert oversized(Sharding(count=2, max_objects=150), objects_per_folder(folder_of, []), inventory) == []


def test_of_two_fullest_shards_the_first_by_name_is_named_in_any_node_order() -> None:
    inventory = Inventory(Settings(where=Where("config.yaml", 0, ("spec",))), {}, {}, {})
    folder_of = {f"n{i}": f"labels/shard-{i % 2}" for i in range(300)}
    for order in (sorted(folder_of), sorted(folder_of, reverse=True)):
        counts = objects_per_folder({node: folder_of[node] for node in order}, [])
        (hit,) = oversized(Sharding(count=2, max_objects=100), counts, inventory)
        assert hit.message.startswith("labels/shard-0/ would hold 150 NodeFeatures")


def move_rack(inventory: Path, rack: str) -> set[str]:
    """Re-cable one h100 rack into a new block; return its nodes."""
    path = inventory / "sources.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    configmap = next(d for d in documents if d["kind"] == "ConfigMap")
    snapshot = yaml.safe_load(configmap["data"]["snapshot.yaml"])
    moved = {n for n, v in snapshot["nodes"].items() if v["topology.gpustack.ai/rack"] == rack}
    for node in moved:
        snapshot["nodes"][node]["topology.gpustack.ai/block"] = "blk-moved"
    configmap["data"]["snapshot.yaml"] = tasgen_yaml.dump(snapshot)
    path.write_text("---\n".join(tasgen_yaml.dump(d) for d in documents))
    return moved


def test_one_rack_change_rewrites_only_the_shards_holding_it(fleet: Path, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory"
    write_fleet(inventory, NODES, SHARDS)
    out = tmp_path / "rendered"
    render(inventory, out)
    before = features_by_folder(out)
    moved = move_rack(inventory, "rack-3")
    written = render(inventory, out)
    after = features_by_folder(out)
    folders = {
        f
        for tree in (before, after)
        for f, docs in tree.items()
        for d in docs
        if d["metadata"]["labels"][NODE_LABEL] in moved
    }
    assert 1 <= len(folders) <= 2  # where the rack was, where it is now
    assert written and all(p.rpartition("/")[0] in folders for p in written)


def test_mutated_nodes_counts_changed_documents_not_moved_ones(tmp_path: Path) -> None:
    inventory, out = tmp_path / "inventory", tmp_path / "rendered"
    write_fleet(inventory, NODES, SHARDS)
    render(inventory, out)
    write_fleet(inventory, NODES, SHARDS // 2)  # every file changes, no NodeFeature does
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW, "--format", "json")
    assert run.exit_code == 0 and run.json()["written"]
    assert run.json()["summary"]["mutatedNodes"] == 0
    moved = move_rack(inventory, "rack-5")
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW, "--format", "json")
    assert run.json()["summary"]["mutatedNodes"] == len(moved) == 16


def test_a_rack_path_over_the_bound_is_named_instead_of_more_shards() -> None:
    """One zone of many nodes: more shards cannot split it (its nodes always share one), so
    the advice names it rather than asking for ever more shards."""
    sharding = Sharding(count=1000, max_objects=2000)
    inventory = Inventory(Settings(where=Where("config.yaml", 0, ("spec",))), {}, {}, {})
    nodes = [f"n{i}" for i in range(6667)]
    domain_of = dict.fromkeys(nodes, "topology.kubernetes.io/zone=z1\n")
    folder_of = sharding.folders_of(nodes, domain_of)
    (hit,) = oversized(
        sharding,
        objects_per_folder(folder_of, []),
        inventory,
        lambda: objects_per_group(nodes, domain_of, []),
    )
    (folder,) = set(folder_of.values())
    assert hit.message == (
        f"{folder}/ would hold 6667 NodeFeatures, over maxObjectsPerShard 2000, and the nodes of one "
        "rack path, topology.kubernetes.io/zone=z1, alone have 6667: a rack path's NodeFeatures always "
        "share a shard, so more shards cannot split it; state a finer level below it in its source, or "
        "raise spec.output.maxObjectsPerShard to 6667 or more"
    )


def test_hostname_only_nodes_are_groups_of_their_own() -> None:
    nodes = ["a", "b"]
    assert objects_per_group(nodes, {}, []) == {
        "kubernetes.io/hostname=a\n": 1,
        "kubernetes.io/hostname=b\n": 1,
    }
