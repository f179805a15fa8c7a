"""Two gate runs at once on the real API server and Kueue (docs/explanation/gate.md, "Two runs
at once"): a run of an older plan must not undo what a run of the newer one did.

Each run reads its plan from a folder, as the Job reads its mounted ConfigMap, and is told
which ConfigMap on the API server holds the cluster's plan (``--plan-configmap``), as the
rendered Job is.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.e2e import harness
from tests.gate.support import (
    Kueue,
    cluster_queue,
    flavors_of,
    gate_process,
    recorded,
    run_gate,
    unique,
    wait_for,
)

pytestmark = pytest.mark.cluster

PLAN_KEY = "clusterqueues.yaml"


@pytest.fixture
def kubeconfig(cluster: harness.Cluster) -> Path:
    return cluster.kubeconfig


def _mounted(folder: Path, queues: list[dict[str, Any]]) -> tuple[Path, str]:
    """A plan folder as the Job mounts its ConfigMap: the folder and the key's text."""
    folder.mkdir()
    text = yaml.safe_dump_all(queues)
    (folder / PLAN_KEY).write_text(text)
    return folder, text


def test_a_run_of_the_older_plan_does_not_hold_the_queue_a_newer_run_restored(
    kueue: Kueue, api_client: client.ApiClient, kubeconfig: Path, tmp_path: Path
) -> None:
    """A revert during a drain, with the dropping commit's gate still running: run A (the
    plan drops b, where a Workload holds quota that nobody releases) holds the queue; the
    plan ConfigMap is reverted and run B (the old plan) restores the queue. A must then stop
    instead of holding the queue again (which, B being done, nobody would undo), and it says
    why."""
    a, b = kueue.flavor(unique("conc-a")), kueue.flavor(unique("conc-b"))
    cq = unique("conc-cq")
    kueue.queue(cq, {a: 0, b: 4})
    ns = kueue.namespace(cq)
    kueue.workload(ns, "serve")  # no owner: its quota stays reserved on b
    wait_for("the Workload reserving on b", lambda: kueue.reserving(cq, 1))

    core = client.CoreV1Api(api_client)
    plan_ns = kueue.namespace(cq)  # any namespace of the test's, for the plan ConfigMap
    configmap = unique("conc-plan")
    dropping, dropping_text = _mounted(tmp_path / "dropping", [cluster_queue(cq, {a: 4})])
    reverted, reverted_text = _mounted(tmp_path / "reverted", [cluster_queue(cq, {a: 0, b: 4})])
    core.create_namespaced_config_map(
        plan_ns, {"metadata": {"name": configmap}, "data": {PLAN_KEY: dropping_text}}
    )
    source = ("--plan-configmap", f"{plan_ns}/{configmap}")

    with gate_process(kubeconfig, dropping, *source, "--timeout", "120") as older:
        wait_for("run A to hold the queue", lambda: kueue.get(cq)["spec"].get("stopPolicy") == "HoldAndDrain")
        assert recorded(kueue.get(cq)) == "None"

        core.patch_namespaced_config_map(configmap, plan_ns, {"data": {PLAN_KEY: reverted_text}})
        newer = run_gate(kubeconfig, reverted, *source, "--timeout", "60")
        assert newer.code == 0, newer
        assert newer.updates() == ["Restore"], newer

        code = older.wait(timeout=60)  # A stops by itself, long before its timeout
        out = older.stdout.read() if older.stdout else ""
    assert code == 1, out
    assert '"event": "superseded"' in out, out
    assert out.count('"event": "updated"') == 1, out  # its hold, nothing after

    # ... and the queue stays as B left it.
    end = time.monotonic() + 3
    while time.monotonic() < end:
        live = kueue.get(cq)
        assert live["spec"]["stopPolicy"] == "None" and recorded(live) is None, live
        assert flavors_of(live) == {a: "0", b: "4"}
        time.sleep(0.2)
    assert "GateSuperseded" in kueue.events(cq)
