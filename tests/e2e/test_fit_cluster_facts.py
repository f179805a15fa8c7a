"""tasgen fit --kubeconfig reads what the real API server holds beside the inventory: a
namespace's LimitRange container defaults and a RuntimeClass's overhead change what a pod asks
for, and so the verdict."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.conftest import NOW, REPO, tasgen
from tests.e2e import harness

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]

NAMESPACE, QUEUE = "ml-research", "training"


def _job(name: str, runtime_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
        "spec": {"template": {"spec": spec}},
    }


@pytest.fixture
def defaults(api_client: client.ApiClient) -> Iterator[None]:
    """A LimitRange giving every container 4 GPUs by default, and a RuntimeClass whose pods
    carry 1,000 CPUs of overhead (more than any node of the example has)."""
    core, node = client.CoreV1Api(api_client), client.NodeV1Api(api_client)
    limit_range = {
        "metadata": {"name": "fit-defaults"},
        "spec": {"limits": [{"type": "Container", "default": {"nvidia.com/gpu": "4"}}]},
    }
    core.create_namespaced_limit_range(NAMESPACE, limit_range)
    node.create_runtime_class(
        {"metadata": {"name": "fit-heavy"}, "handler": "runc", "overhead": {"podFixed": {"cpu": "1000"}}}
    )
    try:
        yield
    finally:
        core.delete_namespaced_limit_range("fit-defaults", NAMESPACE)
        node.delete_runtime_class("fit-heavy")


def test_limit_range_defaults_and_runtime_class_overhead_change_the_verdict(
    defaults: None, cluster: harness.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifests = tmp_path / "jobs.yaml"
    manifests.write_text(yaml.safe_dump_all([_job("plain", None), _job("heavy", "fit-heavy")]))
    monkeypatch.chdir(REPO)
    offline = tasgen("fit", "--now", NOW, "--format", "json", str(manifests))
    live = tasgen(
        "fit", "--now", NOW, "--format", "json", "--kubeconfig", str(cluster.kubeconfig), str(manifests)
    )
    assert offline.exit_code == 0, offline.output
    assert [w["podSets"][0]["fits"] for w in offline.json()["workloads"]] == [True, True]
    plain, heavy = (w["podSets"][0] for w in live.json()["workloads"])
    # the LimitRange's 4 GPUs make the plain Job a GPU Job: it lands on a GPU flavor
    assert plain["fits"] is True and plain["flavor"] != offline.json()["workloads"][0]["podSets"][0]["flavor"]
    # 1,000 CPUs of overhead: no node holds the pod
    assert heavy["fits"] is False, live.output
