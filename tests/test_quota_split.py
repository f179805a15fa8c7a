"""A source whose snapshot states only part of the nodes its selector takes (the tutorial's
snapshot, kept short, states 2 of them) splits the identity's quota: validate warns at the
quota with the figures of each flavor, as the tutorial's step 3 promises."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import NOW, REPO, tasgen

CASE = REPO / "tests" / "cases" / "invalid" / "quota-split-unstated" / "inventory"
#: the flavors of the case's two profiles: the stated nodes' (zone > rack > hostname) and the
#: others' (zone > hostname), as its rule reference shows them
STATED, UNSTATED = "gpustack-h100-f62470-38e06412f5a1", "gpustack-h100-f62470-7c590bcc8c85"


def _node(name: str) -> str:
    return (
        f"  - name: {name}\n"
        "    labels:\n"
        f"      kubernetes.io/hostname: {name}\n"
        "      topology.kubernetes.io/zone: z1\n"
        "      nvidia.com/gpu.product: H100\n"
        "      pool: gpu\n"
        '    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}\n'
    )


def test_two_of_eight_nodes_stated_split_the_quota_16_48_with_a_warning(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory"
    shutil.copytree(CASE, inventory)
    nodes = inventory / "nodes.yaml"
    nodes.write_text(nodes.read_text() + "".join(_node(f"gpu-c{i}") for i in range(1, 5)))
    queue = inventory / "queue.yaml"
    queue.write_text(queue.read_text().replace('nvidia.com/gpu: "16"', 'nvidia.com/gpu: "64"'))
    run = tasgen("validate", "-i", str(inventory), "--now", NOW)
    assert run.exit_code == 0, run.output
    warnings = [line for line in run.output.splitlines() if ": warning: " in line]
    assert warnings == [
        f"{queue}:8:7: warning: source 'racks' states 2 of the 8 nodes its nodeSelector selects; the "
        "other 6 get no hierarchy from it, so queue 'main' splits the quota of "
        "{'nvidia.com/gpu.product': 'H100'} across 2 flavors "
        f"({STATED}: cpu=128, memory=1Ti, nvidia.com/gpu=16; "
        f"{UNSTATED}: cpu=384, memory=3Ti, nvidia.com/gpu=48) [quota-split-unstated]"
    ]
