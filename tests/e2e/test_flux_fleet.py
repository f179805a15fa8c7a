"""Real Flux syncs a generated fleet of a few thousand nodes, sharded: one Kustomization per
labels shard, every NodeFeature lands, the queues after them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from bench.fleet import shards_for, write_fleet
from tests.conftest import NOW, tasgen
from tests.e2e import flux, harness, kube

pytestmark = pytest.mark.cluster

NODES = 3000
SYNC_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    work = tmp_path_factory.mktemp("flux-fleet")
    yield from harness.entered(flux.FluxEnv.running(work, ["topology.gpustack.ai"], "tasgen-system"))


def count(env: flux.FluxEnv, api_version: str, kind: str) -> int:
    resource = env.dyn.resources.get(api_version=api_version, kind=kind)
    return len(resource.get().to_dict()["items"])


def test_flux_syncs_a_sharded_fleet(env: flux.FluxEnv) -> None:
    inventory, rendered = env.repo.work / "inventory", env.repo.work / "rendered"
    write_fleet(inventory, NODES)
    kube.ensure_namespace(client.CoreV1Api(env.api), "node-feature-discovery")
    run = tasgen("render", "-i", str(inventory), "-o", str(rendered), "--now", NOW)
    assert run.exit_code == 0, run.output
    shards = sorted(p.name for p in (rendered / "labels").iterdir())
    assert len(shards) == shards_for(NODES) > 1
    revision = env.repo.commit(f"{NODES} nodes in {len(shards)} shards")
    env.sync("./rendered/flux")
    names = {"tasgen-wiring", "tasgen-kueue", "tasgen-gate", "tasgen-queues"}
    names |= {f"tasgen-labels-{s}" for s in shards}
    flux.wait_synced(env.dyn, revision, names, env.controllers, SYNC_TIMEOUT_S)
    # 1.7 NodeFeatures per node (an h100 or l40s node has a source's and a profile's).
    assert count(env, "nfd.k8s-sigs.io/v1alpha1", "NodeFeature") == NODES * 17 // 10
    assert count(env, kube.KUEUE_API, "ClusterQueue") == 3
