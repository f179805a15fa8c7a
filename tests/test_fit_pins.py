"""tasgen fit judges against the state render writes, pins included: a flavor that selects no
node yet (every node kept on the flavor it replaces) gives no fit, whatever nodes the inventory
plans for it (docs/explanation/fit.md; the pins: docs/explanation/gate.md, "One label per
flavor")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import NOW, REPO, tasgen
from tests.e2e.scene import add_h100_toleration, set_gate

#: two pods of 4 H100 GPUs, each on one node: any H100 flavor with nodes holds it
JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: h100
  namespace: ml-research
  labels: {kueue.x-k8s.io/queue-name: training}
spec:
  parallelism: 2
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: kubernetes.io/hostname
    spec:
      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
      containers:
        - name: main
          resources: {limits: {nvidia.com/gpu: "4"}}
"""
H100 = "gpustack-nvidia-h100-80gb-hbm3-"


def _fit(root: Path) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        run = tasgen("fit", "--now", NOW, "job.yaml")
    return run.exit_code, run.output


def test_a_renamed_flavor_whose_nodes_are_all_kept_elsewhere_gives_no_fit(tmp_path: Path) -> None:
    shutil.copytree(REPO / "inventories", tmp_path / "inventories")
    (tmp_path / "job.yaml").write_text(JOB)
    set_gate(tmp_path / "inventories", "HoldAndDrain")
    render = ("render", "-i", str(tmp_path / "inventories"), "-o", str(tmp_path / "rendered"), "--now", NOW)
    assert tasgen(*render).exit_code == 0
    code, before = _fit(tmp_path)
    assert code == 0 and f"fits: flavor {H100}" in before, before
    # A toleration renames both H100 flavors; offline every H100 node keeps the old ones, which
    # leave the queues (HoldAndDrain): the new flavors select no node yet.
    add_h100_toleration(tmp_path / "inventories")
    assert tasgen(*render).exit_code == 0
    code, after = _fit(tmp_path)
    assert code == 1 and "never fits" in after and f"fits: flavor {H100}" not in after, after
    # judged on the inventory alone (no rendered/: a first render) it fits on a new flavor
    shutil.rmtree(tmp_path / "rendered")
    code, planned = _fit(tmp_path)
    assert code == 0 and f"fits: flavor {H100}" in planned, planned
