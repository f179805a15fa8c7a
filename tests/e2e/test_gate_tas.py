"""The gate's lifecycle (docs/explanation/gate.md) with topology-aware scheduling on: a profile
change replaces a queue's TAS flavor (new Topology, new ResourceFlavor) while a Job runs on the
old one. The gate drains the queue, switches it, and Kueue readmits the Job under the new
Topology."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e import harness
from tests.gate.support import (
    GROUP,
    RESOURCE,
    VERSION,
    Kueue,
    admitted_on,
    cluster_queue,
    flavors_of,
    run_gate,
    unique,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.cluster

HOSTNAME = "kubernetes.io/hostname"
POOL = "gate-e2e.tasgen.test/pool"
RACK = "gate-e2e.tasgen.test/rack"


@pytest.fixture
def pool(api_client: client.ApiClient) -> Iterator[str]:
    """Two Ready Nodes (4 CPUs each, one rack) with a label no other test's flavor selects."""
    core = client.CoreV1Api(api_client)
    name = unique("gate-pool")
    nodes = [f"{name}-{i}" for i in range(2)]
    for node in nodes:
        core.create_node({"metadata": {"name": node, "labels": {HOSTNAME: node, POOL: name, RACK: "r1"}}})
        core.patch_node_status(
            node,
            {
                "status": {
                    "capacity": {RESOURCE: "4", "pods": "110"},
                    "allocatable": {RESOURCE: "4", "pods": "110"},
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "test node"}
                    ],
                }
            },
        )
        # The API server taints a new Node not-ready; no node controller lifts it here.
        core.patch_node(node, {"spec": {"taints": None}})
    yield name
    for node in nodes:
        core.delete_node(node)


def _topology(kueue: Kueue, levels: list[str]) -> str:
    name = unique("gate-topo")
    kueue.custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "topologies",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": key} for key in levels]},
        },
    )
    kueue.on_cleanup(lambda: kueue.custom.delete_cluster_custom_object(GROUP, VERSION, "topologies", name))
    return name


def _tas_flavor(kueue: Kueue, pool: str, topology: str) -> str:
    return kueue.flavor(unique("gate-tas"), {"nodeLabels": {POOL: pool}, "topologyName": topology})


def _topology_assignment(wl: dict[str, Any]) -> dict[str, Any] | None:
    admission = (wl.get("status") or {}).get("admission") or {}
    sets = admission.get("podSetAssignments") or [{}]
    found: dict[str, Any] | None = sets[0].get("topologyAssignment")
    return found


def test_gate_tas_profile_change_drains_and_readmits_under_the_new_topology(
    kueue: Kueue, pool: str, cluster: harness.Cluster, tmp_path: Path
) -> None:
    old = _tas_flavor(kueue, pool, _topology(kueue, [HOSTNAME]))
    new = _tas_flavor(kueue, pool, _topology(kueue, [RACK, HOSTNAME]))
    cq = unique("gate-tas-cq")
    kueue.queue(cq, {old: 8})
    wait_for("the TAS queue to be active", lambda: kueue.current(cq))
    ns = kueue.namespace(cq)
    kueue.job(ns, "serve", cpu=2)
    wl = wait_for(
        "admission with a topology assignment on the old flavor",
        lambda: next(
            (w for w in kueue.workloads(ns) if admitted_on(w) == old and _topology_assignment(w)), None
        ),
        timeout=120,
    )
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(cq, 1))

    rendered = cluster_queue(cq, {new: 8})
    run = run_gate(cluster.kubeconfig, write_plan(tmp_path / "plan.yaml", [rendered]))

    assert run.code == 0, run
    assert run.updates() == ["Hold", "Switch", "Restore"], run
    assert flavors_of(kueue.get(cq)) == {new: "8"}
    # Restored to None: Kueue places the evicted Job again, on the new TAS flavor.
    wait_for(
        "readmission with a topology assignment on the new flavor",
        lambda: next(
            (w for w in kueue.workloads(ns) if admitted_on(w) == new and _topology_assignment(w)), None
        ),
        timeout=120,
    )
    assert wl["metadata"]["uid"] == kueue.workloads(ns)[0]["metadata"]["uid"]
