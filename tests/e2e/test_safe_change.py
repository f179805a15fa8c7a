"""Every routine topology edit under WaitForIdle, live, with a Job J1 busy before the edit and a
Job J2 submitted after it that asks for the same capacity: J1 is never evicted or preempted,
no node is booked beyond what it has (J2's topology assignment never names a node J1's Pods
fill), and once J1 ends the scheduled refresh (``tasgen render --kubeconfig``) and syncs let
new work onto the freed nodes through the flavor they now belong to
(docs/explanation/gate.md; the scenes' machinery: tests/e2e/scene.py).

One control plane of this module's own, with the Job controllers; each test starts from the
example as rendered, its Jobs of earlier tests gone.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.e2e import harness
from tests.e2e import scene as scenes
from tests.e2e.scene import RACK_A_R01, RACK_B_R02, Job, Scene

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def scene(
    job_cluster: harness.Cluster, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scene]:
    with scenes.scene(job_cluster, api, tmp_path_factory.mktemp("safe-change")) as s:
        yield s


def test_a_whole_rack_recorded(scene: Scene) -> None:
    """Rack b-r02's four nodes move into the other H100 profile; their flavor leaves both
    queues."""
    j1 = Job("rack-j1", "training", 3, 8, tuple(RACK_B_R02))
    j2 = Job("rack-j2", "training", 3, 8, tuple(RACK_B_R02))
    scenes.changed_while_busy(scene, lambda inv: scenes.record_racks(inv, RACK_B_R02, "b-r02"), j1, j2)


def test_a_level_added(scene: Scene) -> None:
    """A level below the rack: the twelve racked H100 nodes change profile, flavor and
    Topology; J1 runs on rack a-r01."""
    j1 = Job("level-j1", "training", 3, 8, tuple(RACK_A_R01))
    j2 = Job("level-j2", "training", 3, 8, tuple(RACK_A_R01))
    scenes.changed_while_busy(scene, scenes.add_shelf_level, j1, j2)
