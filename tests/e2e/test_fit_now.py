"""tasgen fit --kubeconfig on the real API server and Kueue: a Job Kueue admitted reserves quota,
and fit says which of two workloads that both fit an empty cluster fits now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.conftest import NOW, REPO, tasgen
from tests.e2e import harness
from tests.e2e.kube import KUEUE_API, condition, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]

GPU = "nvidia.com/gpu"
NAMESPACE, QUEUE = "ml-research", "training"


def _job(name: str, pods: int, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "restartPolicy": "Never",
                    "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {"limits": {GPU: "8"}},
                        }
                    ],
                },
            },
        },
    }


RACK = {"kueue.x-k8s.io/podset-required-topology": "topology.gpustack.ai/rack"}


@pytest.fixture
def admitted(api_client: client.ApiClient, dyn: DynamicClient) -> Iterator[dict[str, Any]]:
    """A Job of four 8-GPU pods in one rack, admitted by Kueue; deleted after the test."""
    batch = client.BatchV1Api(api_client)
    created = batch.create_namespaced_job(NAMESPACE, _job("fit-now-holder", 4, RACK)).to_dict()
    uid = created["metadata"]["uid"]

    def workload() -> dict[str, Any] | None:
        listed = dyn.resources.get(api_version=KUEUE_API, kind="Workload").get(namespace=NAMESPACE).to_dict()
        for w in listed["items"]:
            if any(ref["uid"] == uid for ref in w["metadata"].get("ownerReferences", [])):
                found = condition(w, "QuotaReserved")
                return w if found and found["status"] == "True" else None
        return None

    try:
        yield wait_for("the holder Job's quota reservation", workload, 120.0)
    finally:
        batch.delete_namespaced_job("fit-now-holder", NAMESPACE, propagation_policy="Foreground")


def test_fit_says_what_fits_now_and_never_fails_for_it(
    admitted: dict[str, Any], cluster: harness.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (assignment,) = admitted["status"]["admission"]["podSetAssignments"]
    flavor = assignment["flavors"][GPU]
    manifests = tmp_path / "jobs.yaml"
    # another rack-bound Job like the holder: another rack holds it, and the quota left does;
    # nine pods spread: 72 GPUs, within the flavor's maximum of 96 but not the 64 left
    manifests.write_text(yaml.safe_dump_all([_job("again", 4, RACK), _job("wide", 9, {})]))
    monkeypatch.chdir(REPO)
    offline = tasgen("fit", "--now", NOW, "--format", "json", str(manifests))
    live = tasgen(
        "fit", "--now", NOW, "--format", "json", "--kubeconfig", str(cluster.kubeconfig), str(manifests)
    )
    assert offline.exit_code == live.exit_code == 0, live.output
    for report, now in ((offline.json(), [None, None]), (live.json(), [True, False])):
        podsets = [w["podSets"][0] for w in report["workloads"]]
        assert [p["fits"] for p in podsets] == [True, True]
        assert [p["flavor"] for p in podsets] == [flavor, flavor]
        assert [p["fitsNow"] for p in podsets] == now
