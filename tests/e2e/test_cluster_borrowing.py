"""A rendered borrowingLimit lets a queue borrow from its cohort up to the limit and no further,
on the real Kueue: a Job of nominalQuota + borrowingLimit GPUs is admitted, borrowing exactly the
limit; one GPU more is refused for exceeding the queue's maximum capacity, though the cohort
has GPUs to spare."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.e2e.fleet import Fleet, Obj
from tests.e2e.kube import KUEUE_API, condition, get, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]

GPU = "nvidia.com/gpu"
QUEUE_NAME = "kueue.x-k8s.io/queue-name"
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Borrower:
    queue: str
    cohort: str
    flavor: str
    nominal: int
    limit: int
    namespace: str
    local_queue: str


def _gpu(flavor: Obj) -> Obj:
    return next(r for r in flavor["resources"] if r["name"] == GPU)


@pytest.fixture(scope="module")
def borrower(fleet: Fleet) -> Borrower:
    """The rendered queue flavor with the largest GPU borrowingLimit, and its LocalQueue."""
    offers = [
        (cq, f)
        for cq in fleet.of_kind("ClusterQueue")
        for group in cq["spec"].get("resourceGroups", [])
        for f in group["flavors"]
        if "borrowingLimit" in _gpu(f)
    ]
    assert offers, "the example renders no GPU borrowingLimit"
    cq, flavor = max(offers, key=lambda offer: int(_gpu(offer[1])["borrowingLimit"]))
    name, cohort = cq["metadata"]["name"], cq["spec"]["cohortName"]
    limit = int(_gpu(flavor)["borrowingLimit"])
    # The cohort can lend at least the limit on this flavor: the limit, not the lenders, binds.
    lendable = sum(
        int(_gpu(f).get("lendingLimit", _gpu(f)["nominalQuota"]))
        for other in fleet.of_kind("ClusterQueue")
        if other["metadata"]["name"] != name and other["spec"].get("cohortName") == cohort
        for group in other["spec"].get("resourceGroups", [])
        for f in group["flavors"]
        if f["name"] == flavor["name"]
    )
    assert lendable > limit, (lendable, limit)
    [local] = [lq["metadata"] for lq in fleet.of_kind("LocalQueue") if lq["spec"]["clusterQueue"] == name]
    nominal = int(_gpu(flavor)["nominalQuota"])
    return Borrower(name, cohort, flavor["name"], nominal, limit, local["namespace"], local["name"])


def _submit(api_client: client.ApiClient, b: Borrower, name: str, pods: int) -> str:
    container = client.V1Container(
        name="main",
        image="registry.k8s.io/pause:3.10",
        resources=client.V1ResourceRequirements(requests={GPU: "1"}, limits={GPU: "1"}),
    )
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name=name, namespace=b.namespace, labels={QUEUE_NAME: b.local_queue}),
        spec=client.V1JobSpec(
            parallelism=pods,
            completions=pods,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(restart_policy="Never", containers=[container])
            ),
        ),
    )
    return str(client.BatchV1Api(api_client).create_namespaced_job(b.namespace, job).metadata.uid)


def _workload(dyn: DynamicClient, namespace: str, uid: str) -> Obj | None:
    items = (
        dyn.resources.get(api_version=KUEUE_API, kind="Workload").get(namespace=namespace).to_dict()["items"]
    )
    return next(
        (w for w in items if any(r["uid"] == uid for r in w["metadata"].get("ownerReferences", []))), None
    )


def _reserved(dyn: DynamicClient, b: Borrower) -> tuple[str, str]:
    """(total, borrowed) GPUs the queue reserves on the flavor, as Kueue reports them."""
    status = get(dyn, KUEUE_API, "ClusterQueue", b.queue).get("status") or {}
    for entry in status.get("flavorsReservation") or []:
        if entry["name"] == b.flavor:
            gpu = next(r for r in entry["resources"] if r["name"] == GPU)
            return str(gpu.get("total", "0")), str(gpu.get("borrowed", "0"))
    return "0", "0"


def test_a_queue_borrows_up_to_its_limit_and_no_further(
    api_client: client.ApiClient, dyn: DynamicClient, borrower: Borrower
) -> None:
    b = borrower
    most = b.nominal + b.limit
    uid = _submit(api_client, b, "borrows-the-limit", most)

    def admitted() -> Obj | None:
        workload = _workload(dyn, b.namespace, uid)
        cond = condition(workload, "Admitted") if workload else None
        return workload if cond and cond["status"] == "True" else None

    workload = wait_for("the Job of nominal + borrowingLimit GPUs to be admitted", admitted, TIMEOUT_S)
    (podset,) = workload["status"]["admission"]["podSetAssignments"]
    assert podset["flavors"][GPU] == b.flavor
    assert wait_for("Kueue to report the borrowing", lambda: _reserved(dyn, b) == (str(most), str(b.limit)))

    # One GPU more: refused for the maximum capacity nominal + limit, which does not depend on
    # the Job above (Kueue: "the largest workload this ClusterQueue could possibly admit").
    uid_more = _submit(api_client, b, "borrows-one-more", most + 1)
    refusal = re.compile(
        rf"insufficient quota for {re.escape(GPU)} in flavor {re.escape(b.flavor)}, previously considered "
        rf"podsets requests \(0\) \+ current podset request \({most + 1}\) > maximum capacity \({most}\)"
    )

    def refused() -> Obj | None:
        workload = _workload(dyn, b.namespace, uid_more)
        cond = condition(workload, "QuotaReserved") if workload else None
        return cond if cond and cond["status"] == "False" and refusal.search(cond["message"]) else None

    try:
        wait_for("Kueue to refuse one GPU beyond the borrowing limit", refused, TIMEOUT_S)
        assert _reserved(dyn, b) == (str(most), str(b.limit))
    finally:
        _remove(api_client, dyn, b, {"borrows-the-limit": uid, "borrows-one-more": uid_more})


def _remove(api_client: client.ApiClient, dyn: DynamicClient, b: Borrower, jobs: dict[str, str]) -> None:
    """Delete the Jobs and their Workloads: without kube-controller-manager no garbage
    collector removes the Workloads of a deleted Job, and their quota would stay reserved."""
    workloads = dyn.resources.get(api_version=KUEUE_API, kind="Workload")
    for name, uid in jobs.items():
        client.BatchV1Api(api_client).delete_namespaced_job(
            name, b.namespace, propagation_policy="Background"
        )
        workload = _workload(dyn, b.namespace, uid)
        if workload is not None:
            workloads.delete(name=workload["metadata"]["name"], namespace=b.namespace)
