"""The example rendered for kueueAPIVersion v1beta1 says the same as the v1beta2 render the
cluster runs: Kueue (which serves both) takes every v1beta1 object as a no-op, and the gate,
reading the live queues in v1beta1, finds every plan current."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from kubernetes.dynamic import DynamicClient

from tests.conftest import NOW, tasgen
from tests.e2e import harness
from tests.e2e.fleet import INVENTORY_DIR, Obj
from tests.e2e.kube import FIELD_MANAGER, get
from tests.gate.support import run_gate

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]


@pytest.fixture(scope="module")
def v1beta1_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("v1beta1")
    shutil.copytree(INVENTORY_DIR, work / "inventories")
    config = work / "inventories" / "config.yaml"
    text = config.read_text()
    assert "kueueAPIVersion: v1beta2" in text
    config.write_text(text.replace("kueueAPIVersion: v1beta2", "kueueAPIVersion: v1beta1"))
    out = work / "rendered"
    run = tasgen("render", "-i", str(work / "inventories"), "-o", str(out), "--now", NOW)
    assert run.exit_code == 0, run.output
    return out


def _kueue_objects(out: Path) -> list[Obj]:
    found = []
    for path in sorted(out.rglob("*.yaml")):
        if path.name != "kustomization.yaml" and "flux" not in path.parts:
            found += [
                d for d in yaml.safe_load_all(path.read_text()) if d and d["apiVersion"].startswith("kueue")
            ]
    return found


def test_every_v1beta1_object_is_a_no_op_on_the_running_fleet(
    dyn: DynamicClient, v1beta1_render: Path
) -> None:
    objects = _kueue_objects(v1beta1_render)
    assert {o["kind"] for o in objects} == {"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"}
    assert {o["apiVersion"] for o in objects} == {"kueue.x-k8s.io/v1beta1"}
    for obj in objects:
        meta = obj["metadata"]
        live = get(dyn, "kueue.x-k8s.io/v1beta2", obj["kind"], meta["name"], meta.get("namespace"))
        resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        answer = resource.server_side_apply(body=obj, field_manager=FIELD_MANAGER, dry_run="All").to_dict()
        assert answer["metadata"]["generation"] == live["metadata"]["generation"], meta["name"]


def test_the_gate_reads_a_v1beta1_plan_in_v1beta1_and_finds_it_current(
    cluster: harness.Cluster, v1beta1_render: Path
) -> None:
    run = run_gate(cluster.kubeconfig, v1beta1_render / "queues", "--dry-run")
    assert run.code == 0, run
    queues = sorted(
        q["metadata"]["name"] for q in _kueue_objects(v1beta1_render) if q["kind"] == "ClusterQueue"
    )
    decisions = {ln["queue"]: ln["action"] for ln in run.lines if ln["event"] == "decision"}
    assert decisions == dict.fromkeys(queues, "Done"), run
