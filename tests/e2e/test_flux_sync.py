"""Real Flux (source-controller and kustomize-controller v1.9) syncs the example's rendered/ from
a git repository on 127.0.0.1: the first sync lands every object step by step and the queues
become Active; a commit that moves a rack and one that drops a flavor sync to completion."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from generator.compile.gate_wiring import JOB_TTL_SECONDS
from generator.compile.gate_wiring import NAME as GATE_JOB
from tests.e2e import flux, harness, kube
from tests.e2e.conftest import describe
from tests.e2e.fleet import Fleet, load_fleet

pytestmark = pytest.mark.cluster

STEPS = ("tasgen-labels", "tasgen-kueue", "tasgen-gate", "tasgen-queues", "tasgen-retire")
ALL = {"tasgen-wiring", *STEPS}
SYNC_TIMEOUT_S = 300
MOVED_NODE = "h100-1a-r2-04"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    yield from harness.entered(flux.example_env(tmp_path_factory.mktemp("flux")))


@pytest.fixture(scope="module")
def first(env: flux.FluxEnv) -> tuple[str, list[dict[str, Any]]]:
    """The example committed and synced once: its revision and the Kustomizations then."""
    revision = env.repo.commit("the example fleet")
    env.sync("./rendered/flux")
    return revision, flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def ready_since(kustomization: dict[str, Any]) -> datetime:
    ready = kube.condition(kustomization, "Ready")
    assert ready is not None
    return stamp(ready["lastTransitionTime"])


def test_flux_first_sync_lands_every_object_in_order(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    fleet: Fleet = load_fleet()
    by_name = {k["metadata"]["name"]: k for k in first[1]}
    missing = []
    for obj in fleet.rendered:
        try:
            kube.created(env.dyn, obj)
        except ApiException:
            missing.append(describe(obj))
    assert missing == []
    # Each step's objects were created only once the step before was Ready.
    step_of = {"Topology": 1, "ResourceFlavor": 1, "Job": 2, "ClusterQueue": 3, "retire Job": 4}
    for obj in fleet.rendered:
        retire = obj["kind"] == "Job" and obj["metadata"]["name"] == "tasgen-retire"
        step = step_of.get("retire Job" if retire else obj["kind"])
        if step is not None:
            assert kube.created(env.dyn, obj) >= ready_since(by_name[STEPS[step - 1]]), describe(obj)
    # The gate's and the retire step's Kustomizations were Ready only after their Job's run
    # (each waits for its Job); on a first sync the retire step had nothing to delete.
    assert list(env.runner.done.values()) == [0, 0]
    # rendered/gate/job.yaml has no TTL (Argo CD keeps its gate Job); Flux's gate Kustomization
    # patches one on, so that a finished Job is deleted and Flux recreates it.
    (gate,) = [o for o in fleet.of_kind("Job") if o["metadata"]["name"] == GATE_JOB]
    assert "ttlSecondsAfterFinished" not in gate["spec"]
    live = kube.get(env.dyn, "batch/v1", "Job", GATE_JOB, gate["metadata"]["namespace"])
    assert live["spec"]["ttlSecondsAfterFinished"] == JOB_TTL_SECONDS
    flux.assert_example_landed(env.api)


def node_label(env: flux.FluxEnv, node: str, key: str) -> str | None:
    labels = client.CoreV1Api(env.api).read_node(node).metadata.labels or {}
    return labels.get(key)


def test_flux_syncs_a_commit_that_moves_a_rack(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    snapshot = env.repo.work / "inventories" / "sources" / "h100-racks.yaml"
    text = snapshot.read_text()
    before = f"{MOVED_NODE}: {{infra.example.com/block: blk-a, topology.gpustack.ai/rack: a-r02}}"
    assert before in text
    snapshot.write_text(text.replace(before, before.replace("a-r02", "a-r01")))
    revision = env.repo.render_and_commit(f"move {MOVED_NODE} to rack a-r01")
    flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)
    kube.wait_for(
        f"{MOVED_NODE} labelled with its new rack",
        lambda: node_label(env, MOVED_NODE, "topology.gpustack.ai/rack") == "a-r01" or None,
    )


def test_flux_syncs_a_commit_that_drops_a_flavor(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    gb200 = [f for f in kube.queue_flavors(env.dyn, "training") if "gb200" in f]
    assert len(gb200) == 1
    env.repo.drop_hardware("training", "NVIDIA-GB200")
    runs = len(env.runner.done)
    revision = env.repo.render_and_commit("training drops GB200")
    flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)
    assert kube.queue_flavors(env.dyn, "training") and gb200[0] not in kube.queue_flavors(env.dyn, "training")
    # The gate ran for the new plan, and the retired flavor went once no queue used it.
    assert len(env.runner.done) > runs and all(code == 0 for code in env.runner.done.values())
    kube.wait_for(
        f"ResourceFlavor {gb200[0]} deleted",
        lambda: kube.gone(env.dyn, kube.KUEUE_API, "ResourceFlavor", gb200[0]),
    )
    kube.wait_for("training Active", lambda: kube.queue_active(env.dyn, "training"))
