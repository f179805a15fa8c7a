"""Real Flux syncs a generated fleet of a few thousand nodes, sharded: one Kustomization per
labels shard, every NodeFeature lands, the queues after them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from bench.fleet import shards_for, write_fleet
from tests.e2e import flux, harness, kube

pytestmark = pytest.mark.cluster

NODES = 3000
SYNC_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    work = tmp_path_factory.mktemp("flux-fleet")
    yield from harness.entered(flux.FluxEnv.running(work, ["topology.gpustack.ai"], "tasgen-system"))


def test_flux_syncs_a_sharded_fleet(env: flux.FluxEnv) -> None:
    write_fleet(env.repo.work / "inventories", NODES)
    kube.ensure_namespace(client.CoreV1Api(env.api), "node-feature-discovery")
    revision = env.repo.render_and_commit(f"{NODES} nodes")
    shards = sorted(p.name for p in (env.repo.work / "rendered" / "labels").iterdir())
    assert len(shards) == shards_for(NODES) > 1
    env.sync("./rendered/flux")
    names = {"tasgen-wiring", "tasgen-kueue", "tasgen-gate", "tasgen-queues"}
    names |= {f"tasgen-labels-{s}" for s in shards}
    flux.wait_synced(env.dyn, revision, names, env.controllers, SYNC_TIMEOUT_S)
    # 1.7 NodeFeatures per node (an h100 or l40s node has a source's and a profile's).
    assert kube.count(env.dyn, "nfd.k8s-sigs.io/v1alpha1", "NodeFeature") == NODES * 17 // 10
    assert kube.count(env.dyn, kube.KUEUE_API, "ClusterQueue") == 3
