"""tasgen plan --kubeconfig on the real API server and Kueue: what a drain would evict, read-only.

The live queue is made as the base revision renders it (its name and flavor names; the flavors
here carry no topology, which the plan does not read), a Job is admitted on the flavor the change
drops, and the plan reports the gate's decision and the reservation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.conftest import NOW, tasgen
from tests.e2e import harness
from tests.gate.support import GROUP, VERSION, Kueue, admitted_on, unique, wait_for
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
        "retained": [],
        "evicted": {"workloads": 0, "resources": {}},
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
        "retained": [],
        "evicted": {"workloads": 1, "resources": {"cpu": "1"}},
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
    assert (
        "1 workload(s) evicted, holding 1 cpu; 1 workload(s) admitted on the dropped flavors"
        in markdown.output
    )

    # A new stopPolicy HoldAndDrain evicts every workload whatever the gate decides: the
    # engine applies it after the gate.
    repo.write(base.but(training=("H100",), stop_policy="HoldAndDrain"))
    stopped = _drain(_plan(cluster.kubeconfig), training)
    assert stopped["action"] == "stopped" and stopped["live"]["reservingWorkloads"] == 1
    assert stopped["live"]["evicted"] == {"workloads": 1, "resources": {"cpu": "1"}}


def test_plan_counts_what_keeps_running_on_a_retained_flavor(
    kueue: Kueue, cluster: harness.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under WaitForIdle the dropped flavor stays in the rendered queue at zero quota: nothing is
    evicted, and the plan counts the Workloads that keep running on it until it is idle."""
    base = Fleet(prefix=unique("keep") + "-", drop_policy="WaitForIdle")
    repo = Repo(tmp_path / "repo")
    repo.write(base)
    monkeypatch.chdir(repo.root)
    training = f"{base.prefix}training"
    h100, l40s = _rendered_flavors(training, repo.root / "rendered")
    repo.commit_tree("base, with the render the cluster runs")  # the retention starts from it
    for flavor in (h100, l40s):  # the names are the other tests': their flavors may still be going
        wait_for(f"flavor {flavor} created", lambda f=flavor: _created(kueue, f))
    kueue.queue(training, {h100: 0, l40s: 4})  # no H100 quota: Kueue must admit on L40S
    wait_for("Kueue's status for the queue", lambda: kueue.current(training))
    ns = kueue.namespace(training)
    kueue.workload(ns, "train")
    wait_for("admitted on L40S", lambda: any(admitted_on(w) == l40s for w in kueue.workloads(ns)))
    wait_for("Kueue to count the reservation", lambda: kueue.reserving(training, 1))
    repo.write(base.but(training=("H100",)))  # the change drops the L40S flavor

    busy = _drain(_plan(cluster.kubeconfig), training)
    assert busy["action"] == "retain"
    assert busy["live"] == {
        "reservingWorkloads": 1,
        "flavors": [],  # kept in the queue: no drop for the gate
        "retained": [{"name": l40s, "workloads": 1, "reservation": {"cpu": "1"}}],
        "evicted": {"workloads": 0, "resources": {}},
    }
    markdown = _plan_output(cluster.kubeconfig, "markdown")
    assert f"1 workload(s) keep running on retained `{l40s}`, reserving 1 cpu" in markdown
    assert "no workload evicted; 0 workload(s) admitted on the dropped flavors; 1 workload(s)" in markdown

    kueue.release(ns, "train")  # its job is done: the Workload goes away
    wait_for("Kueue to release the reservation", lambda: kueue.reserving(training, 0))
    idle = _drain(_plan(cluster.kubeconfig), training)
    assert idle["live"]["retained"] == [{"name": l40s, "workloads": 0, "reservation": {"cpu": "0"}}]
    text = _plan_output(cluster.kubeconfig, "text")
    assert f"retained {l40s} is idle: the next `tasgen render --kubeconfig` drops it" in text


def _plan_output(kubeconfig: Path, form: str) -> str:
    run = tasgen("plan", "--base", "main", "--now", NOW, "--format", form, "--kubeconfig", str(kubeconfig))
    assert run.exit_code == 0, run.output
    return run.output


GPU = "nvidia.com/gpu"


def _gpu_job(kueue: Kueue, ns: str, name: str, gpus: int) -> None:
    requests = {"cpu": "1", GPU: str(gpus)}
    pod = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "c",
                "image": "registry.invalid/none",
                "resources": {"requests": requests, "limits": {GPU: str(gpus)}},
            }
        ],
    }
    client.BatchV1Api(kueue.api).create_namespaced_job(
        ns,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"suspend": True, "template": {"spec": pod}},
        },
    )


def _gpu_queue(name: str, gpus: dict[str, int]) -> dict[str, Any]:
    flavors = [
        {
            "name": f,
            "resources": [{"name": "cpu", "nominalQuota": "8"}, {"name": GPU, "nominalQuota": str(n)}],
        }
        for f, n in gpus.items()
    ]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "stopPolicy": "None",
            "resourceGroups": [{"coveredResources": ["cpu", GPU], "flavors": flavors}],
        },
    }


def _created(kueue: Kueue, flavor: str) -> bool | None:
    try:
        kueue.flavor(flavor)
    except ApiException as e:
        if e.status != 409:
            raise
        return None
    return True


def test_plan_counts_every_workload_a_hold_and_drain_evicts_and_the_gpus_they_hold(
    kueue: Kueue, cluster: harness.Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue's HoldAndDrain evicts every Workload admitted to the queue, on every flavor: the
    plan counts the one on the flavor it keeps too, with the GPUs each admission holds."""
    base = Fleet(prefix=unique("evict") + "-")
    repo = Repo(tmp_path / "repo")
    repo.commit(base, "base")
    monkeypatch.chdir(repo.root)
    training = f"{base.prefix}training"
    h100, l40s = _rendered_flavors(training, tmp_path / "rendered")
    for flavor in (h100, l40s):  # the names are the other test's: its flavors may still be going
        wait_for(f"flavor {flavor} created", lambda f=flavor: _created(kueue, f))
    kueue.custom.create_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", _gpu_queue(training, {h100: 4, l40s: 4})
    )
    kueue.on_cleanup(
        lambda: kueue.custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", training)
    )
    wait_for("Kueue's status for the queue", lambda: kueue.current(training))
    ns = kueue.namespace(training)
    _gpu_job(kueue, ns, "big", 3)  # on H100, the first flavor
    wait_for("the first Job admitted", lambda: kueue.reserving(training, 1))
    _gpu_job(kueue, ns, "small", 2)  # one H100 GPU left: on L40S
    wait_for("both Jobs admitted", lambda: kueue.reserving(training, 2))
    on = {str(w["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU]) for w in kueue.workloads(ns)}
    assert on == {h100, l40s}
    repo.write(base.but(training=("H100",)))  # the change drops the L40S flavor

    busy = _drain(_plan(cluster.kubeconfig), training)
    assert busy["action"] == "hold-and-drain"
    assert (
        f"every workload admitted to {training} is evicted, not only those on the dropped flavors"
        in busy["reason"]
    )
    assert busy["live"]["flavors"] == [{"name": l40s, "workloads": 1, "reservation": {"cpu": "1", GPU: "2"}}]
    assert busy["live"]["evicted"] == {"workloads": 2, "resources": {"cpu": "2", GPU: "5"}}
    text = tasgen("plan", "--base", "main", "--now", NOW, "--kubeconfig", str(cluster.kubeconfig)).output
    evicted = "live: 2 workload(s) evicted, holding 5 nvidia.com/gpu, 2 cpu"
    assert f"{evicted}; 1 workload(s) admitted on the dropped flavors" in text
