"""tasgen capacity --kubeconfig agrees with real Kueue v0.17: on the example fleet and on a
generated fleet whose queues share a cohort, with a Job already admitted (so that its quota and
its nodes are taken and the figures "now" differ from an empty cluster's), a Job asking for the
largest free slot capacity reports at a level is admitted, and one asking for one pod more at
that level stays pending.

capacity's pods ask for GPUs alone and tolerate their flavor's nodeTaints; a Job has one set of
tolerations for every flavor of its queue, so the generated fleet here is written without
flavor nodeTaints (the generated nodes' own taints stay: the flavors do not tolerate them)."""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.conftest import NOW, tasgen
from tests.e2e import harness, kube
from tests.e2e.fitcases import (
    GPU,
    REQUIRED,
    Case,
    Lane,
    applied_kinds,
    ends_turn,
    flavors_of,
    lane_of,
    projected_labels,
    write_generated_fleet,
)
from tests.e2e.fleet import REPO, Fleet, load_fleet

pytestmark = pytest.mark.cluster

#: the generated fleet's seed: a fresh one each run unless TASGEN_CAPACITY_SEED repeats one (the
#: test asks capacity, then Kueue, whatever the fleet; a failure names the seed)
SEED = int(os.environ.get("TASGEN_CAPACITY_SEED") or random.SystemRandom().randrange(1 << 32))
DECISION_TIMEOUT_S = 90.0
KUEUE_GROUP, KUEUE_VERSION = kube.KUEUE_API.split("/")
#: GPUs per pod asked in each fleet: the example's H100 nodes have 8, the generated 2 to 8
GPUS = {"example": 8, "generated": 2}
#: the queue of each fleet whose Job is admitted first and stays: in the example, training,
#: whose reclaimWithinCohort would otherwise preempt a holder that borrows from the cohort
#: (capacity says what is free without preempting anything; the test checks it stays admitted)
HOLDER = {"example": "training", "generated": "gen-train"}


class _Started:
    def __init__(self, build: harness.Build, work: Path, fleet: Fleet) -> None:
        self.build, self.work, self.fleet = build, work, fleet
        self.cluster: harness.Cluster | None = None

    def __enter__(self) -> harness.Cluster:
        self.cluster = harness.start(self.build, self.work, self.fleet.nfd_label_namespaces)
        return self.cluster

    def __exit__(self, *_: object) -> None:
        if self.cluster:
            self.cluster.stop()


@pytest.fixture(scope="module")
def capacity_cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[harness.Cluster]:
    """A control plane of this module's own: nothing is admitted but what the test admits."""
    yield from harness.entered(_Started(cluster_build, tmp_path_factory.mktemp("capacity-cluster"), fleet))


@pytest.fixture(scope="module")
def api(capacity_cluster: harness.Cluster) -> Iterator[client.ApiClient]:
    found = config.new_client_from_config(config_file=str(capacity_cluster.kubeconfig))
    yield found
    found.close()


@pytest.fixture(scope="module")
def lanes(api: client.ApiClient, fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> list[Lane]:
    """The example and the generated fleet, synced: Nodes, NodeFeatures, Topologies, flavors
    and queues; ready once nfd-master labelled every Node and every ClusterQueue is Active."""
    root = tmp_path_factory.mktemp("generated")
    write_generated_fleet(root / "inventories", random.Random(SEED))
    _without_flavor_taints(root / "inventories" / "queues.yaml")
    render = tasgen("render", "-i", str(root / "inventories"), "-o", str(root / "rendered"), "--now", NOW)
    assert render.exit_code == 0, render.output
    generated = load_fleet(root / "inventories", root / "rendered")
    found = [
        lane_of("example", fleet, REPO / "inventories"),
        lane_of("generated", generated, root / "inventories"),
    ]
    core, dyn = client.CoreV1Api(api), DynamicClient(api)
    for lane in found:
        kube.ensure_namespace(core, lane.fleet.node_feature_namespace)
        for namespace, labels in sorted(lane.fleet.local_queue_namespaces().items()):
            kube.ensure_namespace(core, namespace, labels=labels or None)
        for node in lane.fleet.nodes:
            kube.create_ready_node(core, node)
        for obj in applied_kinds(lane.fleet):
            kube.apply(dyn, obj)
    for lane in found:
        for node, labels in projected_labels(lane.fleet).items():

            def labelled(node: str = node, labels: dict[str, str] = labels) -> bool:
                return labels.items() <= (core.read_node(node).metadata.labels or {}).items()

            kube.wait_for(f"nfd-master to label Node {node}", labelled)
        for queue in lane.queues:
            kube.wait_for(f"ClusterQueue {queue} Active", lambda q=queue: kube.queue_active(dyn, q))
    return found


def _without_flavor_taints(path: Path) -> None:
    plans = list(yaml.safe_load_all(path.read_text()))
    for plan in plans:
        for hardware in plan["spec"]["hardware"]:
            hardware.pop("nodeTaints", None)
    path.write_text(yaml.safe_dump_all(plans, sort_keys=False))


# --- tasgen capacity's figures ------------------------------------------------------------------


def _capacity(lane: Lane, gpus: int, kubeconfig: Path | None = None) -> dict[str, Any]:
    args = ["capacity", "-i", str(lane.inventory), "--size", str(gpus), "--format", "json", "--now", NOW]
    run = tasgen(*args, *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []))
    assert run.exit_code == 0, run.output
    report: dict[str, Any] = run.json()
    return report


def _largest(report: dict[str, Any], queue: str, level: str, when: str) -> tuple[int, set[str]]:
    """The most pods one domain of the level holds over the queue's flavors, and the flavors
    that hold that many."""
    (found,) = [q for q in report["queues"] if q["name"] == queue]
    per_flavor = {
        f["name"]: lv["sizes"][0][when]["largest"]
        for f in found["flavors"]
        for lv in f["levels"]
        if lv["level"] == level and lv["sizes"]
    }
    best = max(per_flavor.values(), default=0)
    return best, {f for f, n in per_flavor.items() if n == best}


def _levels(report: dict[str, Any], queue: str) -> list[str]:
    """The queue's levels, coarsest first (each flavor's order, flavors in the queue's)."""
    (found,) = [q for q in report["queues"] if q["name"] == queue]
    return list(dict.fromkeys(lv["level"] for f in found["flavors"] for lv in f["levels"]))


# --- Kueue's side -------------------------------------------------------------------------------


def _local_queue(lane: Lane, queue: str) -> tuple[str, str]:
    return min(key for key, cq in lane.local_queues.items() if cq == queue)


_NAMES = itertools.count()


def _case(lane: Lane, name: str, queue: str, pods: int, level: str) -> Case:
    """A Job of ``pods`` pods of the lane's GPUs in one domain of ``level`` (a name of its own:
    a deleted Job's name may still be taken)."""
    namespace, local_queue = _local_queue(lane, queue)
    named = f"{lane.name[:3]}-{name}-{next(_NAMES)}"
    return Case(named, namespace, local_queue, pods, {GPU: str(GPUS[lane.name])}, (REQUIRED, level))


def _decide(api: client.ApiClient, lane: Lane, case: Case, queue: str) -> tuple[bool, str]:
    """Submit the Job and watch its Workload: (True, flavor) once Kueue reserves its quota,
    (False, message) once an attempt ends a turn through the queue's flavors (fitcases)."""
    dyn, custom = DynamicClient(api), client.CustomObjectsApi(api)
    since = custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads")
    uid = kube.create(dyn, case.job())["metadata"]["uid"]
    watching = watch.Watch()
    stream = watching.stream(
        custom.list_namespaced_custom_object,
        KUEUE_GROUP,
        KUEUE_VERSION,
        case.namespace,
        "workloads",
        resource_version=since["metadata"]["resourceVersion"],
        timeout_seconds=int(DECISION_TIMEOUT_S),
    )
    messages = []
    try:
        for event in stream:
            workload = event["object"]
            if not any(r["uid"] == uid for r in workload["metadata"].get("ownerReferences") or []):
                continue
            reserved = kube.condition(workload, "QuotaReserved")
            if reserved is None:
                continue
            if reserved["status"] == "True":
                return True, flavors_of(workload)["main"]
            messages.append(reserved.get("message") or "")
            if ends_turn(messages[-1], lane, queue):
                return False, messages[-1]
    finally:
        watching.stop()
    raise AssertionError(
        f"seed {SEED}: no decision of Kueue on {case.describe()} in {DECISION_TIMEOUT_S:.0f}s: {messages}"
    )


def _workload_of(dyn: DynamicClient, case: Case) -> dict[str, Any] | None:
    items = dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload").get(namespace=case.namespace)
    owned = [
        w
        for w in items.to_dict()["items"]
        if any(r["name"] == case.name for r in w["metadata"].get("ownerReferences") or [])
    ]
    return owned[0] if owned else None


def _remove(api: client.ApiClient, case: Case, queue: str, reserving: int) -> None:
    """The Job and its Workload gone (nothing else deletes a deleted Job's Workload here), and
    the queue reporting ``reserving`` Workloads again."""
    dyn = DynamicClient(api)
    client.BatchV1Api(api).delete_namespaced_job(case.name, case.namespace, propagation_policy="Background")
    workload = _workload_of(dyn, case)
    if workload is not None:
        try:
            dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload").delete(
                name=workload["metadata"]["name"], namespace=case.namespace
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
    kube.wait_for(f"the Workload of {case.name} gone", lambda: _workload_of(dyn, case) is None)

    def settled() -> bool:
        status = kube.get(dyn, kube.KUEUE_API, "ClusterQueue", queue).get("status") or {}
        return int(status.get("reservingWorkloads") or 0) == reserving

    kube.wait_for(f"ClusterQueue {queue} reserving {reserving}", settled)


def _still_admitted(api: client.ApiClient, holder: Case) -> None:
    workload = _workload_of(DynamicClient(api), holder)
    assert workload is not None, f"seed {SEED}: the holder {holder.name}'s Workload is gone"
    reserved, evicted = kube.condition(workload, "QuotaReserved"), kube.condition(workload, "Evicted")
    assert reserved and reserved["status"] == "True", f"seed {SEED}: the holder lost its quota: {reserved}"
    assert not (evicted and evicted["status"] == "True"), f"seed {SEED}: the holder was evicted: {evicted}"


# --- the test -------------------------------------------------------------------------------------


def _check_lane(api: client.ApiClient, kubeconfig: Path, lane: Lane) -> tuple[list[str], list[str]]:
    """What differs between capacity's figures now and Kueue's decisions in the lane, and the
    slots (queue, level, pods) both bounds were tried at."""
    gpus = GPUS[lane.name]
    empty = _capacity(lane, gpus)
    # the holder: just over half the largest slot of its queue's coarsest level that has two,
    # so that the domains Kueue can put it in are the largest ones, which it splits
    first = HOLDER[lane.name]
    level = next(lv for lv in _levels(empty, first) if _largest(empty, first, lv, "empty")[0] >= 2)
    holder = _case(lane, "holder", first, _largest(empty, first, level, "empty")[0] // 2 + 1, level)
    admitted, flavor = _decide(api, lane, holder, first)
    assert admitted, f"seed {SEED}: the holder {holder.describe()} was not admitted: {flavor}"
    differences, tried = [], []
    try:
        now = _capacity(lane, gpus, kubeconfig)
        assert now["live"] is True
        held = _largest(now, first, level, "now")[0], _largest(empty, first, level, "empty")[0]
        seen = [(q["name"], f["quota"]) for q in now["queues"] for f in q["flavors"]]
        assert held[0] < held[1] or any(quota and quota["now"] < quota["empty"] for _, quota in seen), (
            f"seed {SEED}: the holder left no trace in capacity's figures: {held}, {seen}"
        )
        for queue in sorted(lane.queues):
            reserving = 1 if queue == first else 0
            for at in _levels(now, queue):
                largest, flavors = _largest(now, queue, at, "now")
                more = _case(lane, "more", queue, largest + 1, at)
                admitted, said = _decide(api, lane, more, queue)
                _still_admitted(api, holder)
                _remove(api, more, queue, reserving)
                if admitted:
                    differences.append(
                        f"{more.describe()}: capacity's largest now is {largest}; "
                        f"Kueue admitted {largest + 1} on {said}"
                    )
                if largest == 0:
                    continue
                slot = _case(lane, "slot", queue, largest, at)
                admitted, said = _decide(api, lane, slot, queue)
                _still_admitted(api, holder)
                _remove(api, slot, queue, reserving)
                if not admitted:
                    differences.append(
                        f"{slot.describe()}: capacity's largest now; Kueue left it pending: {said}"
                    )
                elif said not in flavors:
                    differences.append(
                        f"{slot.describe()}: Kueue admitted it on {said}, capacity's largest is on {flavors}"
                    )
                tried.append(f"{queue} {at} {largest}")
                break  # a level of each queue: the coarsest where a slot is free
    finally:
        _remove(api, holder, first, 0)
    return differences, tried


def test_capacity_now_is_what_kueue_admits(
    capacity_cluster: harness.Cluster, api: client.ApiClient, lanes: list[Lane]
) -> None:
    differences = []
    for lane in lanes:
        unlike, tried = _check_lane(api, capacity_cluster.kubeconfig, lane)
        differences += unlike
        # every queue of the lane was tried at a slot and at one pod more
        assert len(tried) == len(lane.queues), (SEED, lane.name, tried)
    assert not differences, f"seed {SEED}:\n" + "\n".join(differences)
