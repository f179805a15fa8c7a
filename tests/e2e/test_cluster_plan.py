"""tasgen plan --kubeconfig on the real API server and Kueue: what a drain would evict, read-only.

The live queue is made as the base revision renders it (its name and flavor names; the flavors
here carry no topology, which the plan does not read), a Job is admitted on the flavor the change
drops, and the plan reports the gate's decision and the reservation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import NOW, tasgen
from tests.e2e import harness
from tests.gate.support import Kueue, admitted_on, unique, wait_for
from tests.plan.fleet import Fleet, Repo

pytestmark = pytest.mark.cluster


def _rendered_flavors(queue: str, output: Path) -> list[str]:
    assert tasgen("render", "-i", "inventories", "-o", str(output), "--now", NOW).exit_code == 0
    queues = yaml.safe_load_all((output / "queues" / "clusterqueues.yaml").read_text())
    body = next(q for q in queues if q and q["metadata"]["name"] == queue)
    return [f["name"] for f in body["spec"]["resourceGroups"][0]["flavors"]]


def _plan(kubeconfig: Path) -> dict[str, Any]:
    run = tasgen("plan", "--base", "main", "--now", NOW, "--format", "json", "--kubeconfig", str(kubeconfig))
    assert run.exit_code == 0, run.output
    return run.json()


def _drain(report: dict[str, Any], name: str) -> dict[str, Any]:
    drain: dict[str, Any] = next(q for q in report["queues"] if q["name"] == name)["drain"]
    return drain


def test_plan_reports_what_the_drain_would_evict(
    kueue: Kueue, cluster: harness.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = Fleet(prefix=unique("plan") + "-")
    repo = Repo(tmp_path / "repo")
    repo.commit(base, "base")
    monkeypatch.chdir(repo.root)
    training = f"{base.prefix}training"
    h100, l40s = _rendered_flavors(training, tmp_path / "rendered")
    for flavor in (h100, l40s):
        kueue.flavor(flavor)
    kueue.queue(training, {h100: 0, l40s: 4})  # no H100 quota: Kueue must admit on L40S
    wait_for("Kueue's status for the queue", lambda: kueue.current(training))
    repo.write(base.but(training=("H100",)))  # the change drops the L40S flavor

    idle = _drain(_plan(cluster.kubeconfig), training)
    assert idle["action"] == "in-place"
    assert idle["live"] == {
        "reservingWorkloads": 0,
        "flavors": [{"name": l40s, "workloads": 0, "reservation": {"cpu": "0"}}],
    }

    ns = kueue.namespace(training)
    kueue.job(ns, "train")
    wait_for("the Job admitted on L40S", lambda: any(admitted_on(w) == l40s for w in kueue.workloads(ns)))
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(training, 1))
    before = kueue.get(training)["metadata"]["resourceVersion"]

    report = _plan(cluster.kubeconfig)
    busy = _drain(report, training)
    assert busy["action"] == "hold-and-drain"
    assert busy["live"] == {
        "reservingWorkloads": 1,
        "flavors": [{"name": l40s, "workloads": 1, "reservation": {"cpu": "1"}}],
    }
    assert _drain(report, f"{base.prefix}inference")["action"] == "created"  # not in the cluster
    assert kueue.get(training)["metadata"]["resourceVersion"] == before  # read-only

    markdown = tasgen(
        "plan",
        "--base",
        "main",
        "--now",
        NOW,
        "--format",
        "markdown",
        "--kubeconfig",
        str(cluster.kubeconfig),
    )
    assert "1 workload(s) reserve the dropped flavors" in markdown.output

    # A new stopPolicy HoldAndDrain evicts every workload whatever the gate decides: the
    # engine applies it after the gate.
    repo.write(base.but(training=("H100",), stop_policy="HoldAndDrain"))
    stopped = _drain(_plan(cluster.kubeconfig), training)
    assert stopped["action"] == "stopped" and stopped["live"]["reservingWorkloads"] == 1
