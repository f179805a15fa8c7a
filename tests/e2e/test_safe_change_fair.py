"""The cohort-peer scene of tests/e2e/test_safe_change_more.py with Kueue's fair sharing on:
inference runs J1 on H100 and drops the identity, so the render keeps J1's flavor in inference
at the quota J1 holds; training (``reclaimWithinCohort: Any``) then asks for its nominal quota
on that flavor, or for that and J1's GPUs too (to borrow them). Fair sharing preempts only
Workloads of queues that borrow a contested flavor's resource, and a queue's share counts only
what it uses beyond its quota (Kueue v0.17.0, pkg/scheduler/preemption/preemption.go
``findCandidates``, pkg/cache/scheduler/fair_sharing.go ``dominantResourceShare``), so J1 is
never Evicted or Preempted (docs/explanation/gate.md). The scenes' machinery:
tests/e2e/scene.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e import harness, kube
from tests.e2e import scene as scenes
from tests.e2e.conftest import _running
from tests.e2e.fleet import Fleet
from tests.e2e.scene import RACK_B_R02, Job, Scene

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def job_cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[harness.Cluster]:
    """The module's control plane with the Job controllers, Kueue with fair sharing (this
    overrides conftest's ``job_cluster``, so ``api`` is a client of this one)."""
    work = tmp_path_factory.mktemp("fair-job-cluster")
    yield from _running(
        cluster_build, work, fleet.nfd_label_namespaces, controllers=["job"], fair_sharing=True
    )


@pytest.fixture(scope="module")
def scene(
    job_cluster: harness.Cluster, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scene]:
    with scenes.scene(job_cluster, api, tmp_path_factory.mktemp("safe-change-fair")) as s:
        yield s


def _fair_sharing_on(s: Scene) -> None:
    """Kueue reports a queue's share only with fair sharing on: the scene runs under it."""

    def reported() -> bool:
        cq = kube.get(s.dyn, kube.KUEUE_API, "ClusterQueue", "training")
        return "fairSharing" in (cq.get("status") or {})

    kube.wait_for("training's status.fairSharing (Kueue's fair sharing on)", reported)


def test_the_peer_asks_for_its_nominal_under_fair_sharing(scene: Scene) -> None:
    j1 = Job("fair-j1", "inference", 1, 2, tuple(RACK_B_R02))

    def j2(s: Scene, flavor: str) -> Job:
        _fair_sharing_on(s)
        nominal = s.gpu_nominal("training", flavor)
        return Job("fair-j2", "training", nominal, 1, tuple(RACK_B_R02), s.flavor_labels(flavor))

    scenes.changed_while_busy(scene, lambda inv: scenes.drop_h100(inv, "inference"), j1, j2, renamed=False)


def test_the_peer_asks_to_borrow_the_kept_quota_under_fair_sharing(scene: Scene) -> None:
    """training asks for its nominal plus J1's GPUs: all the flavor's nodes can give besides
    J1, so only J1's preemption would let it in. (J2 selects J1's flavor's nodeLabels in both,
    as in the scene without fair sharing.)"""
    j1 = Job("fairb-j1", "inference", 1, 2, tuple(RACK_B_R02))

    def j2(s: Scene, flavor: str) -> Job:
        _fair_sharing_on(s)
        pods = s.gpu_nominal("training", flavor) + j1.pods * j1.gpus
        return Job("fairb-j2", "training", pods, 1, tuple(RACK_B_R02), s.flavor_labels(flavor))

    scenes.changed_while_busy(scene, lambda inv: scenes.drop_h100(inv, "inference"), j1, j2, renamed=False)
