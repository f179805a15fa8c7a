"""render --kubeconfig against the real API server and Kueue: under WaitForIdle a flavor that a
rack edit drops stays in the queue at the quota Kueue reserves there while a Workload admitted
on it exists, and leaves the render once that Workload has finished and the live queue gives it
no quota, queue by queue (docs/explanation/gate.md,
WaitForIdle). What Kueue then does with the kept flavor, and the engines' end-to-end,
are tests of their own."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.conftest import REPO, tasgen, tree
from tests.e2e import harness, kube
from tests.e2e.busy import admitted_on, evicted, flavor_names, load
from tests.edits import record_rack_b_r02
from tests.test_retention import H100_5CE2, _retiring, _set_policy

pytestmark = pytest.mark.cluster

NAMESPACE, LOCAL_QUEUE = "ml-research", "training"  # a LocalQueue of training in the example
WORKLOAD = "retention-held"
T1, T2, T3 = "2026-12-01T06:00:00Z", "2026-12-01T07:00:00Z", "2026-12-01T08:00:00Z"


def _objects(out: Path, file: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((out / file).read_text()) if d]


def _sync(dyn: DynamicClient, out: Path) -> None:
    """What an engine applies, in its order: flavors and Topologies, then the queues."""
    for file in ("kueue/topologies.yaml", "kueue/resourceflavors.yaml", "queues/clusterqueues.yaml"):
        for obj in _objects(out, file):
            kube.apply(dyn, obj)


def _render(inventory: Path, out: Path, now: str, kubeconfig: Path) -> None:
    run = tasgen(
        "render", "-i", str(inventory), "-o", str(out), "--now", now, "--kubeconfig", str(kubeconfig)
    )
    assert run.exit_code == 0, run.output


def _rendered_queues(out: Path) -> dict[str, dict[str, Any]]:
    return {q["metadata"]["name"]: q for q in _objects(out, "queues/clusterqueues.yaml")}


def _live(dyn: DynamicClient, name: str) -> dict[str, Any]:
    return kube.get(dyn, kube.KUEUE_API, "ClusterQueue", name)


def _workload(dyn: DynamicClient) -> dict[str, Any]:
    return kube.get(dyn, kube.KUEUE_API, "Workload", WORKLOAD, NAMESPACE)


@pytest.fixture
def restored(dyn: DynamicClient, synced: None) -> Iterator[None]:
    """The example's queues as rendered, again after the test (the session shares them)."""
    yield
    resource = dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload")
    if any(w["metadata"]["name"] == WORKLOAD for w in resource.get(namespace=NAMESPACE).to_dict()["items"]):
        resource.delete(name=WORKLOAD, namespace=NAMESPACE)
    _sync(dyn, REPO / "rendered")


def _hold(dyn: DynamicClient, flavor: dict[str, Any]) -> None:
    """A Workload admitted to training on the flavor (its pod selects the flavor's nodes)."""
    pod = {
        "restartPolicy": "Never",
        "nodeSelector": flavor["spec"]["nodeLabels"],
        "tolerations": flavor["spec"].get("tolerations", []),
        "containers": [
            {
                "name": "c",
                "image": "registry.invalid/none",
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
            }
        ],
    }
    body = {
        "apiVersion": kube.KUEUE_API,
        "kind": "Workload",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {
            "queueName": LOCAL_QUEUE,
            "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}],
        },
    }
    kube.create(dyn, body)
    kube.wait_for(
        f"{WORKLOAD} admitted on {H100_5CE2}", lambda: admitted_on(_workload(dyn)) == H100_5CE2 or None
    )


def _finish(dyn: DynamicClient) -> None:
    """The Workload's job ended: its Finished condition, as Kueue's job framework writes it
    (server-side apply of the status subresource)."""
    condition = {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "the job finished",
        "lastTransitionTime": "2026-12-01T07:30:00Z",
    }
    body = {
        "apiVersion": kube.KUEUE_API,
        "kind": "Workload",
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "status": {"conditions": [condition]},
    }
    group, version = kube.KUEUE_API.split("/")
    client.CustomObjectsApi(dyn.client).patch_namespaced_custom_object_status(
        group,
        version,
        NAMESPACE,
        "workloads",
        WORKLOAD,
        body,
        field_manager="retention-test",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    finished = kube.condition(_workload(dyn), "Finished")
    assert finished is not None and finished["status"] == "True"


def test_render_kubeconfig_keeps_a_busy_flavor_until_its_workload_finished(
    cluster: harness.Cluster, dyn: DynamicClient, restored: None, tmp_path: Path
) -> None:
    inventory, out = tmp_path / "inventory", tmp_path / "rendered"
    shutil.copytree(REPO / "inventories", inventory)
    shutil.copytree(REPO / "rendered", out)  # what the cluster runs
    _set_policy(inventory, "WaitForIdle")
    (flavor,) = [f for f in _objects(out, "kueue/resourceflavors.yaml") if f["metadata"]["name"] == H100_5CE2]
    _hold(dyn, flavor)

    # The rack edit: both queues keep the flavor (the live queues still give it quota), each at
    # what Kueue reserves there: training the Workload's GPU, inference nothing.
    record_rack_b_r02(inventory)
    _render(inventory, out, T1, cluster.kubeconfig)
    for queue in _rendered_queues(out).values():
        assert flavor_names(queue)[-1] == H100_5CE2 and _retiring(queue) == {H100_5CE2: T1}
    _sync(dyn, out)
    held_quota = {"training": {"nvidia.com/gpu": "1"}, "inference": {}}
    for name in ("training", "inference"):
        live = _live(dyn, name)
        (entry,) = [f for f in live["spec"]["resourceGroups"][0]["flavors"] if f["name"] == H100_5CE2]
        assert {r["name"]: r["nominalQuota"] for r in entry["resources"]} == {
            r["name"]: held_quota[name].get(r["name"], "0") for r in entry["resources"]
        }, (name, entry)
        assert {r.get("borrowingLimit") for r in entry["resources"]} == {"0"}
    held = _workload(dyn)
    assert admitted_on(held) == H100_5CE2 and not evicted(held)

    # Next refresh: inference has nothing on it and no quota: it leaves; training's Workload runs.
    _render(inventory, out, T2, cluster.kubeconfig)
    queues = _rendered_queues(out)
    assert H100_5CE2 not in flavor_names(queues["inference"]) and _retiring(queues["inference"]) == {}
    assert flavor_names(queues["training"])[-1] == H100_5CE2
    assert _retiring(queues["training"]) == {H100_5CE2: T1}  # carried, not restarted
    assert H100_5CE2 in [f["metadata"]["name"] for f in _objects(out, "kueue/resourceflavors.yaml")]
    _sync(dyn, out)  # the admission policy lets the idle drop through
    assert H100_5CE2 not in flavor_names(_live(dyn, "inference"))
    assert admitted_on(_workload(dyn)) == H100_5CE2 and not evicted(_workload(dyn))

    # The job ends: the next live render lowers the flavor to zero (the live queue still gives
    # it quota, which could admit before the sync), the one after drops it, its ResourceFlavor
    # and its Topology.
    _finish(dyn)
    kube.wait_for(
        "training to release the reservation", lambda: load(_live(dyn, "training"), H100_5CE2) == 0 or None
    )
    _render(inventory, out, T3, cluster.kubeconfig)
    training = _rendered_queues(out)["training"]
    (entry,) = [f for f in training["spec"]["resourceGroups"][0]["flavors"] if f["name"] == H100_5CE2]
    assert {r["nominalQuota"] for r in entry["resources"]} == {"0"}
    _sync(dyn, out)
    _render(inventory, out, T3, cluster.kubeconfig)
    queues = _rendered_queues(out)
    assert all(H100_5CE2 not in flavor_names(q) and _retiring(q) == {} for q in queues.values())
    assert H100_5CE2 not in [f["metadata"]["name"] for f in _objects(out, "kueue/resourceflavors.yaml")]
    assert "gpustack-5ce26b67c9cf" not in [
        t["metadata"]["name"] for t in _objects(out, "kueue/topologies.yaml")
    ]
    _sync(dyn, out)
    assert H100_5CE2 not in flavor_names(_live(dyn, "training"))

    # Offline, the render is a fixed point of what the live one wrote: check agrees.
    before = tree(out)
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", T3)
    assert run.exit_code == 0, run.output
    assert tree(out) == before


def test_render_kubeconfig_of_a_cluster_without_kueue_access_fails_writing_nothing(
    cluster: harness.Cluster, tmp_path: Path
) -> None:
    """A real API server that refuses the credential: an error, exit 1, nothing written."""
    inventory, out = tmp_path / "inventory", tmp_path / "rendered"
    shutil.copytree(REPO / "inventories", inventory)
    shutil.copytree(REPO / "rendered", out)
    _set_policy(inventory, "WaitForIdle")
    record_rack_b_r02(inventory)
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-a-token"}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    before = tree(out)
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", T1, "--kubeconfig", str(kubeconfig))
    assert run.exit_code == 1, run.output
    assert "401 Unauthorized" in run.output and "[cluster-unreadable]" in run.output
    assert tree(out) == before
