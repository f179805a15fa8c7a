"""Real Argo CD (v3.5.3, RollingSync on) syncs a generated fleet of a few thousand nodes,
sharded: the ApplicationSet makes one Application per labels shard and per control path, every
NodeFeature lands, and the queues become Active after them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from bench.fleet import shards_for, write_fleet
from tests.e2e import argocd, harness, kube

pytestmark = pytest.mark.cluster

NODES = 3000
GATE_NAMESPACE = "tasgen-system"  # the GeneratorConfig's default, which the fleet keeps
SYNC_TIMEOUT_S = 900
NFD_API = "nfd.k8s-sigs.io/v1alpha1"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[argocd.ArgoEnv]:
    work = tmp_path_factory.mktemp("argocd-fleet")
    yield from harness.entered(argocd.ArgoEnv.running(work, ["topology.gpustack.ai"], GATE_NAMESPACE))


def rendered_names(folder: Path, kind: str) -> set[str]:
    """The names of the kind's objects in the manifests below folder."""
    return {
        doc["metadata"]["name"]
        for path in sorted(folder.rglob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader)
        if doc and doc["kind"] == kind
    }


def live(env: argocd.ArgoEnv, api_version: str, kind: str) -> list[dict[str, Any]]:
    resource = env.dyn.resources.get(api_version=api_version, kind=kind)
    items: list[dict[str, Any]] = resource.get().to_dict()["items"]
    return items


def live_names(env: argocd.ArgoEnv, api_version: str, kind: str) -> set[str]:
    return {item["metadata"]["name"] for item in live(env, api_version, kind)}


def created(item: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(item["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def test_argocd_syncs_a_sharded_fleet(env: argocd.ArgoEnv) -> None:
    write_fleet(env.repo.work / "inventories", NODES, sync={"argocd": {"repoURL": env.server.url("fleet")}})
    kube.ensure_namespace(client.CoreV1Api(env.api), "node-feature-discovery")  # NFD's installation's
    revision = env.repo.render_and_commit(f"{NODES} nodes")
    rendered = env.repo.work / "rendered"
    expected = argocd.expected_applications(rendered)
    shards = {name for name, step in expected.items() if step == "labels"}
    assert len(shards) == shards_for(NODES) > 1
    assert set(expected.values()) == {"labels", "kueue", "gate", "queues", "retire"}
    argocd.apply_wiring(env)
    synced = argocd.wait_synced(env.dyn, revision, set(expected), env.controllers, SYNC_TIMEOUT_S)
    # Exactly one Application per synced path, labelled with its step, all synced by RollingSync.
    assert set(argocd.applications(env.dyn)) == set(expected)
    for name, app in synced.items():
        assert app["metadata"]["labels"]["topology.gpustack.ai/sync-step"] == expected[name]
        assert app["status"]["operationState"]["operation"]["initiatedBy"]["username"] == (
            "applicationset-controller"
        ), name
    # Every rendered NodeFeature landed: 1.7 per node (an h100 or l40s node has a source's and a
    # profile's).
    features = rendered_names(rendered / "labels", "NodeFeature")
    assert len(features) == NODES * 17 // 10
    assert live_names(env, NFD_API, "NodeFeature") == features
    # RollingSync waited for every shard: the kueue step's objects came after the last
    # NodeFeature (the API server's creation times, to the second).
    kueue = [o for kind in ("Topology", "ResourceFlavor") for o in live(env, kube.KUEUE_API, kind)]
    assert kueue and min(map(created, kueue)) >= max(map(created, live(env, NFD_API, "NodeFeature")))
    queues = rendered_names(rendered / "queues", "ClusterQueue")
    assert queues and live_names(env, kube.KUEUE_API, "ClusterQueue") == queues
    for queue in sorted(queues):
        kube.wait_for(f"ClusterQueue {queue} Active", lambda q=queue: kube.queue_active(env.dyn, q))
    # The gate and the retire Jobs ran (Sync hooks of their steps) and succeeded.
    assert set(env.runner.names.values()) == {"tasgen-gate", "tasgen-retire"}
    assert set(env.runner.done.values()) == {0}
