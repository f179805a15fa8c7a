"""The other scenes of tests/e2e/test_safe_change.py, on a control plane of their own (the two
files run side by side): a flavor renamed while its nodes stay, half a rack recorded, a queue
dropping an identity while its cohort peer asks for its nominal quota, and gate.retainFor
passing while J1 runs. J1 is never evicted or preempted (but by the drain that ends an
expired retention), no node is booked beyond what it has, and once J1 ends the scheduled
refresh and a sync let new work onto the freed nodes (the machinery: tests/e2e/scene.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest
from kubernetes import client

from tests.e2e import harness
from tests.e2e import scene as scenes
from tests.e2e.scene import (
    RACK_B_R02,
    Job,
    Ledger,
    Scene,
    evictions,
    flavor_of,
    hosts_of,
    shown,
)

pytestmark = pytest.mark.cluster

T1, T2, T3 = "2026-11-30T01:00:00Z", "2026-11-30T02:00:00Z", "2026-11-30T03:00:00Z"
EXPIRED, EXPIRED_LATER = "2026-11-30T03:00:00Z", "2026-11-30T03:10:00Z"  # T1 + retainFor 1h passed


@pytest.fixture(scope="module")
def scene(
    job_cluster: harness.Cluster, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scene]:
    with scenes.scene(job_cluster, api, tmp_path_factory.mktemp("safe-change")) as s:
        yield s


def test_a_toleration_change(scene: Scene) -> None:
    """Both H100 flavors are renamed while their nodes stay."""
    j1 = Job("tol-j1", "training", 3, 8, tuple(RACK_B_R02))
    j2 = Job("tol-j2", "training", 3, 8, tuple(RACK_B_R02))
    scenes.changed_while_busy(scene, scenes.add_h100_toleration, j1, j2)


def test_half_a_rack_recorded(scene: Scene) -> None:
    """Two of rack b-r02's four nodes move into the other H100 profile; both flavors stay."""
    moved = RACK_B_R02[:2]
    j1 = Job("half-j1", "training", 2, 8, tuple(moved))
    j2 = Job("half-j2", "training", 2, 8, tuple(moved))
    scenes.changed_while_busy(scene, lambda inv: scenes.record_racks(inv, moved, "b-r02"), j1, j2)


def test_a_queue_drops_an_identity_while_its_cohort_peer_asks_for_its_nominal(scene: Scene) -> None:
    """inference runs J1 on H100 and drops the identity; training (reclaimWithinCohort: Any)
    then submits as many GPUs as the render gives it on J1's flavor, selecting that flavor's
    nodeLabels so that Kueue offers it no other flavor (which it would prefer, quota free, and
    then fail to place on J1's nodes, never trying a reclaim)."""
    j1 = Job("peer-j1", "inference", 1, 2, tuple(RACK_B_R02))

    def j2(s: Scene, flavor: str) -> Job:
        nominal = s.gpu_nominal("training", flavor)
        return Job("peer-j2", "training", nominal, 1, tuple(RACK_B_R02), s.flavor_labels(flavor))

    scenes.changed_while_busy(scene, lambda inv: scenes.drop_h100(inv, "inference"), j1, j2, renamed=False)


def test_retain_for_passing_while_j1_runs(scene: Scene) -> None:
    """gate.retainFor: 1h. The whole rack is recorded while J1 runs on it; two hours later the
    scheduled refresh lets the kept flavor go: the gate drains J1 (the one eviction allowed,
    by the queue's stop policy), and no node is booked twice on the way: the nodes leave the
    kept flavor only once Kueue shows nothing of J1 on them."""
    s = scene
    s.begin(retain_for="1h")
    j1 = Job("expiry-j1", "training", 3, 8, tuple(RACK_B_R02))
    j2 = Job("expiry-j2", "training", 3, 8, tuple(RACK_B_R02))
    s.submit(j1)
    before = s.admitted(j1)
    held = s.pods_on(j1)
    with ExitStack() as stack:
        ledgers = [stack.enter_context(Ledger(s.api, ns)) for ns, _ in scenes.TEAMS.values()]
        h1 = stack.enter_context(s.history(j1))
        scenes.record_racks(s.inventory, RACK_B_R02, "b-r02")
        s.render(T1)
        s.sync()
        s.submit(j2)
        s.judged(j2)
        h2 = stack.enter_context(s.history(j2))
        # retainFor has passed: the refresh drops the kept flavor, the gate drains J1.
        s.render(EXPIRED, live=True)
        s.sync()
        s.render(EXPIRED_LATER, live=True)  # Kueue shows the flavor gone: the pins go
        s.sync()
        j2_seen = h2.versions()
        j1_seen = h1.versions()
        overbooked = [o for ledger in ledgers for o in ledger.over]
    assert overbooked == [], overbooked
    # Kueue's Evicted condition goes False (reason QuotaReserved) once J1 is admitted again.
    drained = [c for wl in j1_seen for c in evictions(wl) if c["status"] == "True"]
    assert drained, "J1 was not drained"
    assert {(c["type"], c["reason"]) for c in drained} == {("Evicted", "ClusterQueueStopped")}, drained
    assert all(evictions(wl) or wl["status"]["admission"] == before["status"]["admission"] for wl in j1_seen)
    # J2 was admitted only on nodes where nothing of J1 ran any more (the ledger), and now
    # holds J1's nodes through the flavor they belong to.
    s.delete(j1)
    after = s.admitted(j2)
    assert flavor_of(after) in s.offered(j2.queue) and flavor_of(after) != flavor_of(before), shown(after)
    assert set(hosts_of(after)) == set(held), (shown(after), j2_seen[-1:])
