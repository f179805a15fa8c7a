"""import-nodes refreshes quietly: tasgen's own labels and volatile ones are not imported,
several node lists make one inventory, a person's comment block survives a refresh."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tasgen.cli import cli
from tasgen.commands.import_nodes import nodes
from tests.conftest import NOW, REPO, tasgen

NODE_NAME = "nfd.node.kubernetes.io/node-name"


def kubectl_list(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """`kubectl get nodes -o json` for these NodeInventory entries, as the cluster has them."""
    items = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n["name"], "labels": dict(n["labels"]), "resourceVersion": "7"},
            "spec": {"taints": n.get("taints", []), "unschedulable": n.get("unschedulable", False)},
            "status": {"allocatable": dict(n.get("allocatable", {})), "capacity": {"cpu": "1"}},
        }
        for n in nodes
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def synced_cluster(inventory: Path, rendered: Path) -> dict[str, Any]:
    """The example fleet after Argo CD synced rendered/: NFD projected every NodeFeature's
    labels onto its node, and GPU feature discovery stamped its timestamp."""
    nodes = yaml.safe_load((inventory / "nodes.yaml").read_text())["nodes"]
    by_name = {n["name"]: n for n in nodes}
    for path in sorted((rendered / "labels").glob("nodefeatures-*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "NodeFeature":
                by_name[doc["metadata"]["labels"][NODE_NAME]]["labels"].update(doc["spec"]["labels"])
    for node in nodes:
        node["labels"]["nvidia.com/gfd.timestamp"] = "1764547200"
    return kubectl_list(nodes)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "inventories", tmp_path / "inventories")
    return tmp_path / "inventories"


def test_importing_right_after_a_sync_changes_nothing(example: Path, tmp_path: Path) -> None:
    cluster = synced_cluster(example, REPO / "rendered")
    assert any("topology.gpustack.ai/rack" in i["metadata"]["labels"] for i in cluster["items"])
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(cluster))
    before = (example / "nodes.yaml").read_bytes()
    run = tasgen(
        "import-nodes",
        str(source),
        "-i",
        str(example),
        "--name",
        "example-fleet",
        "-o",
        str(example / "nodes.yaml"),
    )
    assert run.exit_code == 0, run.output
    assert (example / "nodes.yaml").read_bytes() == before


def test_without_the_inventory_only_the_profile_key_and_the_timestamp_are_dropped(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(synced_cluster(example, REPO / "rendered")))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # no inventories/ here, and no -i: the default filter
    run = tasgen("import-nodes", str(source))
    assert run.exit_code == 0
    assert "topology.gpustack.ai/rack" in run.output  # no inventory names it as tasgen's
    assert "topology.gpustack.ai/profile" not in run.output and "gfd.timestamp" not in run.output


def test_a_written_level_is_dropped_only_on_the_nodes_its_source_selects(
    example: Path, tmp_path: Path
) -> None:
    """The H100 source writes the rack label on H100 nodes; the CPU nodes carry one set by hand,
    which a nodeLabels source reads: importing the synced cluster keeps theirs (it once
    dropped the key from every node, and the CPU hierarchy with it)."""
    hand_set = {"topology.gpustack.ai/rack": "cpu-rack-1"}
    (example / "sources" / "cpu-racks.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: TopologySource\nmetadata: {name: cpu-racks}\n"
        "spec:\n  nodeSelector: {matchLabels: {fleet.example.com/pool: cpu}}\n"
        "  levels: [topology.gpustack.ai/rack]\n  nodeLabels: {}\n"
    )
    inventory = yaml.safe_load((example / "nodes.yaml").read_text())
    for node in (n for n in inventory["nodes"] if n["name"].startswith("cpu-")):
        node["labels"] |= hand_set | {"fleet.example.com/pool": "cpu"}
    (example / "nodes.yaml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(synced_cluster(example, REPO / "rendered")))
    run = tasgen("import-nodes", str(source), "-i", str(example), "--name", "example-fleet")
    assert run.exit_code == 0, run.output
    imported = {n["name"]: n["labels"] for n in yaml.safe_load(run.output.split("\n", 2)[2])["nodes"]}
    assert all(imported[f"cpu-0{i}"].items() >= hand_set.items() for i in (1, 2, 3))
    assert not any(
        "topology.gpustack.ai/rack" in labels for name, labels in imported.items() if "h100" in name
    )


def test_a_refresh_keeps_the_file_s_name_unless_told_otherwise(tmp_path: Path) -> None:
    target, source = tmp_path / "nodes.yaml", tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([_node("n1")])))
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    assert yaml.safe_load(target.read_text())["metadata"] == {"name": "nodes"}  # a new file
    assert tasgen("import-nodes", str(source), "-o", str(target), "--name", "frankfurt").exit_code == 0
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    assert yaml.safe_load(target.read_text())["metadata"] == {"name": "frankfurt"}


def test_volatile_label_keys_are_configurable(example: Path, tmp_path: Path) -> None:
    config = example / "config.yaml"
    body = yaml.safe_load(config.read_text())
    body["spec"]["volatileLabelKeys"] = ["example.com/heartbeat-*", "example.com/seen"]
    config.write_text(yaml.safe_dump(body))
    node = {
        "name": "n1",
        "labels": {
            "kubernetes.io/hostname": "n1",
            "example.com/heartbeat-a": "1",
            "example.com/heartbeat-b": "2",
            "example.com/seen": "3",
            "example.com/seen-not": "4",
            "nvidia.com/gfd.timestamp": "5",
        },
    }
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([node])))
    run = tasgen("import-nodes", str(source), "-i", str(example))
    labels = yaml.safe_load(run.output.split("\n", 2)[2])["nodes"][0]["labels"]
    # The list replaces the default: the timestamp is kept once it is not named.
    assert labels == {
        "kubernetes.io/hostname": "n1",
        "example.com/seen-not": "4",
        "nvidia.com/gfd.timestamp": "5",
    }


def _node(name: str) -> dict[str, Any]:
    return {"name": name, "labels": {"kubernetes.io/hostname": name}, "allocatable": {"cpu": "1"}}


def test_several_node_lists_make_one_sorted_inventory(tmp_path: Path) -> None:
    first, second = tmp_path / "east.json", tmp_path / "west.yaml"
    first.write_text(json.dumps(kubectl_list([_node("n3"), _node("n1")])))
    second.write_text(yaml.safe_dump(kubectl_list([_node("n2")])))
    target = tmp_path / "inventory" / "nodes.yaml"
    target.parent.mkdir()
    run = tasgen("import-nodes", str(first), str(second), "-i", str(target.parent), "-o", str(target))
    assert run.exit_code == 0, run.output
    names = [n["name"] for n in yaml.safe_load(target.read_text())["nodes"]]
    assert names == ["n1", "n2", "n3"]


def test_a_node_in_two_lists_is_an_error_naming_both(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps(kubectl_list([_node("n1")])))
    second.write_text(json.dumps(kubectl_list([_node("n0"), _node("n1")]), indent=2))
    lines = second.read_text().splitlines()
    # at the second item: the line after the first item's closing brace at its indentation
    line = next(i for i, text in enumerate(lines, 1) if text == "    },") + 1
    target = tmp_path / "nodes.yaml"
    run = tasgen("import-nodes", str(first), str(second), "-o", str(target))
    assert run.exit_code == 1
    assert (
        f"{second}:{line}:5: error: node 'n1' is listed again; the first is in {first} [node-list]"
        in run.output
    ), run.output
    assert not target.exists()


def test_an_empty_node_list_is_a_warning(tmp_path: Path) -> None:
    source = tmp_path / "empty.json"
    source.write_text(json.dumps(kubectl_list([])))
    result = CliRunner().invoke(cli, ["import-nodes", str(source)], catch_exceptions=False)
    assert result.exit_code == 0
    assert "warning: the input lists no nodes" in result.stderr
    assert "nodes: []" in result.stdout


def test_a_refresh_keeps_the_comment_block_a_person_wrote(tmp_path: Path) -> None:
    target = tmp_path / "inventory" / "nodes.yaml"
    target.parent.mkdir()
    note = "# GPU fleet of the Frankfurt site; owner: infra-team@example.com\n# Refresh weekly.\n"
    target.write_text(note + "apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\n")
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([_node("n1")])))
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    text = target.read_text()
    assert text.startswith(note + "apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\n")
    assert "name: n1" in text
    assert tasgen("validate", "-i", str(target.parent), "--now", NOW).exit_code == 0


def test_tasgen_own_header_is_refreshed_in_its_current_wording(tmp_path: Path) -> None:
    target = tmp_path / "nodes.yaml"
    old = "# Node facts for tasgen, imported from `kubectl get nodes`: an older wording\n"
    target.write_text(old + "apiVersion: topology.gpustack.ai/v1alpha1\n")
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([_node("n1")])))
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    assert target.read_text().startswith(nodes.HEADER)


def test_lines_a_person_added_under_tasgen_header_are_kept(tmp_path: Path) -> None:
    """tasgen's header (both lines, any wording) is renewed; the lines under it are the
    person's, and a byte order mark before a person's block does not hide it."""
    target, source = tmp_path / "nodes.yaml", tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([_node("n1")])))
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    owner = "# Owner: team-infra; refreshed by the weekly job (ticket OPS-123)\n"
    target.write_text(target.read_text().replace(nodes.HEADER, nodes.HEADER + owner))
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    assert target.read_text().startswith(nodes.HEADER + owner + "apiVersion:")
    target.write_text(
        "\ufeff# Frankfurt fleet; owner infra-team\napiVersion: topology.gpustack.ai/v1alpha1\n"
    )
    assert tasgen("import-nodes", str(source), "-o", str(target)).exit_code == 0
    assert target.read_text().startswith("# Frankfurt fleet; owner infra-team\napiVersion:")


def test_a_fifo_as_output_is_not_read_for_its_header(tmp_path: Path) -> None:
    fifo = tmp_path / "nodes.yaml"
    os.mkfifo(fifo)
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(kubectl_list([_node("n1")])))
    run = tasgen("import-nodes", str(source), "-o", str(fifo))  # would hang if the FIFO were read
    assert run.exit_code == 1 and "not a regular file" in run.output
