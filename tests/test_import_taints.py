"""import-nodes keeps each Node's taints and cordon: the facts the taint-untolerated rule reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import NOW, tasgen

GPU = "nvidia.com/gpu.product"
SINCE = "2026-11-30T10:00:00Z"


def _node(name: str, spec: dict[str, object]) -> dict[str, object]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, GPU: "H100"}},
        "spec": spec,
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


TAINTED = {
    "unschedulable": True,
    "taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": SINCE},
        {"key": "example.com/maintenance", "effect": "NoExecute", "timeAdded": SINCE},
    ],
}

QUEUE = """apiVersion: topology.gpustack.ai/v1alpha1
kind: ClusterQueuePlan
metadata: {name: main}
spec:
  coveredResources: [nvidia.com/gpu]
  hardware:
    - identity: {nvidia.com/gpu.product: H100}
      tolerations: [{key: nvidia.com/gpu, operator: Exists}]
  clusterQueue: {namespaceSelector: {}}
"""


def test_taints_and_cordon_are_kept_sorted_without_their_time(tmp_path: Path) -> None:
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps({"kind": "List", "items": [_node("gpu-1", TAINTED), _node("gpu-2", {})]}))
    target = tmp_path / "inventory" / "nodes.yaml"
    target.parent.mkdir()
    assert tasgen("import-nodes", str(source), "-o", str(target), "--name", "lab").exit_code == 0
    nodes = yaml.safe_load(target.read_text())["nodes"]
    assert nodes[0]["taints"] == [
        {"key": "example.com/maintenance", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
    ]
    assert nodes[0]["unschedulable"] is True
    assert "taints" not in nodes[1] and "unschedulable" not in nodes[1]  # nothing to say: no key

    # The imported taints are what validation judges the flavor's tolerations by: the GPU taint
    # is tolerated, the cordon is the node lifecycle's, the maintenance taint is reported.
    (target.parent / "queue.yaml").write_text(QUEUE)
    run = tasgen("validate", "-i", str(target.parent), "--now", NOW, "--format", "json")
    problems = [(p["rule"], p["message"]) for p in run.json()["problems"]]
    assert [rule for rule, _ in problems] == ["taint-untolerated"]
    assert "example.com/maintenance:NoExecute" in problems[0][1] and "gpu-1" in problems[0][1]


def test_taints_that_are_not_a_list_are_refused_without_a_traceback(tmp_path: Path) -> None:
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps({"kind": "List", "items": [_node("gpu-1", {"taints": "nvidia.com/gpu"})]}))
    run = tasgen("import-nodes", str(source), "-o", str(tmp_path / "out.yaml"))
    assert run.exit_code == 1
    assert "gpu-1" in run.output and "spec.taints" in run.output
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("literal", ["9" * 5000, "true", "8", '["a"]'])
def test_a_taint_field_that_is_not_a_string_is_refused_naming_the_node(tmp_path: Path, literal: str) -> None:
    taint = {"key": "nvidia.com/gpu", "value": "PLACEHOLDER", "effect": "NoSchedule"}
    source = tmp_path / "nodes.yaml"  # YAML reads JSON; the literal goes in as YAML would read it
    source.write_text(json.dumps(_node("gpu-1", {"taints": [taint]})).replace('"PLACEHOLDER"', literal))
    run = tasgen("import-nodes", str(source), "-o", str(tmp_path / "out.yaml"))
    assert run.exit_code == 1
    assert "gpu-1" in run.output and "taint's value" in run.output and "not a string" in run.output
    assert not (tmp_path / "out.yaml").exists()
