"""`tasgen fit` agrees with real Kueue: generated Jobs, each submitted alone to empty queues
of the example fleet and of a generated fleet whose queues share a cohort, get from Kueue
v0.17 the decision fit announced: admitted on fit's flavor, or pending for fit's reason.

The workloads come from a seed (TASGEN_FIT_SEED, else a fresh one, named in every failure)
through tests/e2e/fitcases.py, sized around each fleet's own capacities so that both answers
occur; the test must pass on every seed. The two fleets share no node, flavor or cohort and are
judged at the same time, each one Job after another: a Job and its Workload are deleted, and
its queue reports no reservation, before the next is created. How a pending reason is compared
is in `_disagreement`."""

from __future__ import annotations

import contextlib
import os
import random
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from kubernetes.utils import parse_quantity

from tests.conftest import NOW, tasgen
from tests.e2e import harness, kube
from tests.e2e.fitcases import (
    KINDS,
    Case,
    Cause,
    Decision,
    Lane,
    applied_kinds,
    ends_turn,
    flavors_of,
    generate,
    integrations,
    kueue_causes,
    lane_of,
    other_kinds,
    projected_labels,
    quota_swaps,
    scenarios,
    summary,
    write_generated_fleet,
)
from tests.e2e.fleet import REPO, Fleet, load_fleet

pytestmark = pytest.mark.cluster

SEED = int(os.environ.get("TASGEN_FIT_SEED") or random.SystemRandom().randrange(1 << 32))
#: Jobs per fleet (the issue asks for at least 40 in all).
PER_LANE = int(os.environ.get("TASGEN_FIT_CASES", "24"))
DECISION_TIMEOUT_S = 60.0
KUEUE_GROUP, KUEUE_VERSION = kube.KUEUE_API.split("/")


@dataclass(frozen=True)
class Judged:
    case: Case
    decision: Decision


# --- the control plane and the two fleets on it ------------------------------------------------


@pytest.fixture(scope="module")
def fit_cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[harness.Cluster]:
    """A control plane of this module's own, with the Kueue integrations of the kinds submitted:
    the queues are empty when it starts."""
    yield from harness.entered(_Started(cluster_build, tmp_path_factory.mktemp("fit-cluster"), fleet))


class _Started:
    def __init__(self, build: harness.Build, work: Path, fleet: Fleet) -> None:
        self.build, self.work, self.fleet = build, work, fleet
        self.cluster: harness.Cluster | None = None

    def __enter__(self) -> harness.Cluster:
        self.cluster = harness.start(
            self.build, self.work, self.fleet.nfd_label_namespaces, integrations=integrations()
        )
        return self.cluster

    def __exit__(self, *_: object) -> None:
        if self.cluster:
            self.cluster.stop()


def _api(cluster: harness.Cluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


@pytest.fixture(scope="module")
def lanes(fit_cluster: harness.Cluster, fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> list[Lane]:
    """The example (inventories/ as rendered/ has it) and a generated fleet rendered by tasgen,
    both synced: Nodes created from the NodeInventory with their labels, then the rendered
    NodeFeatures, Topologies, ResourceFlavors and queues; ready once nfd-master has labelled
    every Node and every ClusterQueue is Active."""
    root = tmp_path_factory.mktemp("generated")
    write_generated_fleet(root / "inventories", random.Random(SEED))
    render = tasgen("render", "-i", str(root / "inventories"), "-o", str(root / "rendered"), "--now", NOW)
    assert render.exit_code == 0, render.output
    generated = load_fleet(root / "inventories", root / "rendered")
    found = [
        lane_of("example", fleet, REPO / "inventories"),
        lane_of("generated", generated, root / "inventories"),
    ]
    api = _api(fit_cluster)
    try:
        core, dyn = client.CoreV1Api(api), DynamicClient(api)
        for lane in found:
            _sync(core, dyn, lane.fleet)
        for lane in found:
            _wait_ready(core, dyn, lane.fleet)
    finally:
        api.close()
    return found


def _sync(core: client.CoreV1Api, dyn: DynamicClient, fleet: Fleet) -> None:
    kube.ensure_namespace(core, fleet.node_feature_namespace)
    for namespace, labels in sorted(fleet.local_queue_namespaces().items()):
        kube.ensure_namespace(core, namespace, labels=labels or None)
    for node in fleet.nodes:
        kube.create_ready_node(core, node)
    for obj in applied_kinds(fleet):
        kube.apply(dyn, obj)


def _wait_ready(core: client.CoreV1Api, dyn: DynamicClient, fleet: Fleet) -> None:
    for node, labels in projected_labels(fleet).items():

        def labelled(node: str = node, labels: dict[str, str] = labels) -> bool:
            have = core.read_node(node).metadata.labels or {}
            return labels.items() <= have.items()

        kube.wait_for(f"nfd-master to label Node {node}", labelled)
    for cq in fleet.of_kind("ClusterQueue"):
        kube.wait_for(
            f"ClusterQueue {cq['metadata']['name']} Active",
            lambda n=cq["metadata"]["name"]: kube.queue_active(dyn, n),
        )


# --- Kueue's side ------------------------------------------------------------------------------


def _owned(workload: dict[str, Any], uids: set[str]) -> bool:
    return any(r["uid"] in uids for r in workload["metadata"].get("ownerReferences") or [])


def _workloads_of(dyn: DynamicClient, namespace: str, uids: set[str]) -> list[dict[str, Any]]:
    """The Workloads of the objects `uids` (a pod group's is owned by each of its pods)."""
    items = (
        dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload")
        .get(namespace=namespace)
        .to_dict()["items"]
    )
    return [w for w in items if _owned(w, uids)]


def _watch_decision(
    custom: client.CustomObjectsApi, lane: Lane, case: Case, uids: set[str], since: str
) -> Decision:
    """Kueue's decision on the Workload of the objects `uids`, from every change of the namespace's
    Workloads since resourceVersion `since` (before the Job was created): admitted once its
    quota is reserved, pending once an attempt ended a turn through the queue's flavors
    (ends_turn). Each attempt rewrites the QuotaReserved message; a watch sees each rewrite,
    where polling would miss most of a Workload going round quickly."""
    queue = lane.local_queues.get((case.namespace, case.local_queue))
    messages: list[str] = []
    watching = watch.Watch()
    stream = watching.stream(
        custom.list_namespaced_custom_object,
        KUEUE_GROUP,
        KUEUE_VERSION,
        case.namespace,
        "workloads",
        resource_version=since,
        timeout_seconds=int(DECISION_TIMEOUT_S),
    )
    try:
        for event in stream:
            workload = event["object"]
            if not _owned(workload, uids):
                continue
            reserved = kube.condition(workload, "QuotaReserved")
            if reserved is None:
                continue
            if reserved["status"] == "True":
                return Decision(
                    admitted=True, flavors=flavors_of(workload), name=workload["metadata"]["name"]
                )
            message = reserved.get("message") or ""
            if not messages or messages[-1] != message:
                messages.append(message)
            if ends_turn(message, lane, queue):
                return Decision(False, {}, message, tuple(messages), workload["metadata"]["name"])
    finally:
        watching.stop()
    raise AssertionError(
        f"seed {SEED}: no decision of Kueue on {case.name} within {DECISION_TIMEOUT_S:.0f}s; "
        f"its attempts: {messages}"
    )


def _reservation_free(dyn: DynamicClient, queue: str) -> bool:
    status = kube.get(dyn, kube.KUEUE_API, "ClusterQueue", queue).get("status") or {}
    totals = [
        parse_quantity(r.get("total", "0"))
        for key in ("flavorsReservation", "flavorsUsage")
        for entry in status.get(key) or []
        for r in entry["resources"]
    ]
    return all(t == 0 for t in totals) and not status.get("reservingWorkloads")


def _judge(api: client.ApiClient, lane: Lane, case: Case) -> Decision:
    """Kueue's decision on the case submitted as its kind, through Kueue's real integration of
    that kind (its webhooks suspend or gate it; its reconciler makes the Workload)."""
    dyn, custom = DynamicClient(api), client.CustomObjectsApi(api)
    since = custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, case.namespace, "workloads")
    objects = case.objects()
    created: list[dict[str, Any]] = []
    try:
        for obj in objects:
            created.append(kube.create(dyn, obj))
        uids = {c["metadata"]["uid"] for c in created}
        return _watch_decision(custom, lane, case, uids, since["metadata"]["resourceVersion"])
    finally:
        _delete(dyn, lane, case, created)


def _delete(dyn: DynamicClient, lane: Lane, case: Case, created: list[dict[str, Any]]) -> None:
    """The case's objects and its Workload gone, and its queue free again. Without
    kube-controller-manager's garbage collector nothing deletes an owner's Workload, and its
    reservation would stay; a pod of a group keeps Kueue's finalizer until Kueue has seen its
    Workload go, and a Pod nothing runs would wait for it: the test lifts it, as Kueue would."""
    uids = {c["metadata"]["uid"] for c in created}
    for obj in created:
        resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        with contextlib.suppress(NotFoundError):
            resource.delete(
                name=obj["metadata"]["name"],
                namespace=obj["metadata"].get("namespace"),
                propagation_policy="Background",
            )
    workloads = dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload")
    for workload in _workloads_of(dyn, case.namespace, uids):
        with contextlib.suppress(NotFoundError):
            workloads.delete(name=workload["metadata"]["name"], namespace=case.namespace)
    kube.wait_for(f"the Workload of {case.name} gone", lambda: not _workloads_of(dyn, case.namespace, uids))
    for obj in created:
        if obj["kind"] == "Pod":
            with contextlib.suppress(NotFoundError):
                dyn.resources.get(api_version="v1", kind="Pod").patch(
                    name=obj["metadata"]["name"],
                    namespace=case.namespace,
                    body={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json",
                )
    for obj in created:
        kube.wait_for(
            f"{obj['kind']} {obj['metadata']['name']} gone",
            lambda obj=obj: _absent(dyn, obj),
        )
    queue = lane.local_queues.get((case.namespace, case.local_queue))
    if queue is not None:
        kube.wait_for(f"ClusterQueue {queue} free after {case.name}", lambda: _reservation_free(dyn, queue))


def _absent(dyn: DynamicClient, obj: dict[str, Any]) -> bool:
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    try:
        resource.get(name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
    except NotFoundError:
        return True
    return False


def _judge_lane(
    cluster: harness.Cluster,
    lane: Lane,
    cases: list[Case],
    out: dict[str, Judged],
    errors: list[BaseException],
) -> None:
    api = _api(cluster)
    try:
        for case in cases:
            out[case.name] = Judged(case, _judge(api, lane, case))
    except BaseException as exc:  # reported by the test's thread
        errors.append(exc)
    finally:
        api.close()


# --- tasgen's side -----------------------------------------------------------------------------


Verdicts = dict[tuple[str, str], dict[str, Any]]


def _fit(lane: Lane, folder: Path) -> Verdicts:
    """(namespace, name) -> the workload's entry in `tasgen fit --format json`."""
    run = tasgen("fit", "--format", "json", "-i", str(lane.inventory), str(folder))
    assert run.exit_code in (0, 1), run.output
    report = run.json()
    return {(w["namespace"], w["name"]): w for w in report["workloads"]}


# --- the comparison ----------------------------------------------------------------------------


def _disagreement(lane: Lane, judged: Judged, verdict: dict[str, Any] | None) -> str | None:
    """None when fit's verdict is Kueue's decision, else what differs.

    Admitted: fit says every PodSet fits, on the flavor Kueue assigned it. Pending: fit says
    the PodSet never fits, for the reason one of Kueue's attempts gave (the Workload's final
    QuotaReserved message or a Pending event of an attempt before), compared cause by cause
    as both are worded in Kueue's terms (kueue_causes): the same causes, each of the same kind
    (level missing from a flavor's Topology, quota, taint, affinity, uncovered resource,
    topology, LocalQueue), on the same flavors, resource or taint, with the same numbers
    (request and maximum capacity; pods that fit and pods asked for; nodes excluded and why).
    Which attempt does not matter: Kueue words its first from where its turn through the
    queue's flavors starts, the later ones from where the previous stopped. A PodSet asking for
    a resource no group covers may get that cause whatever the attempts said (see below); one
    over quota on two resources of a flavor may get either (quota_swaps). Of several PodSets,
    Kueue's flavor assignment stops at the first it cannot place and names it: fit must refuse
    that one for Kueue's reason, and calls those after it not tried."""
    case, decision = judged.case, judged.decision
    if verdict is None:
        return "fit reported no such workload"
    podsets = _matched(decision, verdict)
    if decision.admitted:
        wrong = {
            name: (podsets.get(name, {}).get("fits"), podsets.get(name, {}).get("flavor"), flavor)
            for name, flavor in decision.flavors.items()
            if not podsets.get(name, {}).get("fits") or podsets[name].get("flavor") != flavor
        }
        return f"Kueue admitted it; fit (fits, flavor) vs Kueue's flavor: {wrong}" if wrong else None
    refused = [p for p in verdict["podSets"] if not p["fits"]]
    if not refused:
        return f"Kueue left it pending ({decision.message!r}); fit says it fits: {verdict['podSets']}"
    queue = lane.local_queues.get((case.namespace, case.local_queue))
    attempts = [kueue_causes(message, lane, queue) for message in (decision.message, *decision.attempts)]
    if queue is not None:
        # Kueue visits a PodSet's resources in Go's map order, which is random: a PodSet that
        # asks for a resource no group covers gets that cause, or its group's refusal when the
        # group is visited first and refuses it: that cause is Kueue's whatever they showed.
        uncovered = {Cause("uncovered", subject=r) for r in case.requests if r not in lane.covered[queue]}
        attempts += [{c} for c in uncovered]
    named = {m for message in (decision.message, *decision.attempts) for m in _NAMED_PODSET.findall(message)}
    judged = [p for p in refused if not _NOT_TRIED.match(p.get("reason") or "")]
    if not judged:
        return f"fit tried no PodSet of those it refuses: {refused}"
    if named and case.kind != "Pod" and not {p["name"] for p in judged} & named:
        # a pod group's PodSets Kueue names by a hash of their pods' shape
        return (
            f"fit refuses {[(p['name'], p.get('reason')) for p in judged]}, Kueue named the PodSets "
            f"{sorted(named)}: {decision.message!r}; fit on every PodSet: {verdict['podSets']}"
        )
    for podset in judged:
        stated = kueue_causes(podset.get("reason") or "", lane, queue)
        answers = attempts + (quota_swaps(attempts, stated, lane, queue, case) if queue is not None else [])
        if not stated or stated not in answers:
            return (
                f"fit's reason {podset.get('reason')!r} ({summary(stated) or 'no cause'}) is none of "
                f"Kueue's: {' | '.join(summary(a) for a in attempts)}; Kueue's last: {decision.message!r}"
            )
    return None


#: the PodSet a message of Kueue's is about ("couldn't assign flavors to pod set NAME: ...")
_NAMED_PODSET = re.compile(r"pod set (\S+?):")
#: fit's word for the PodSets after the one Kueue's flavor assignment stops at
_NOT_TRIED = re.compile(r"not tried: Kueue stops at PodSet ")


def _matched(decision: Decision, verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Kueue's PodSet name -> fit's verdict on that PodSet: by name, else (a pod group's
    PodSets Kueue names by a hash of their pods' shape) by order, when both count as many."""
    by_name = {p["name"]: p for p in verdict["podSets"]}
    names = list(decision.flavors) if decision.admitted else []
    if set(names) <= by_name.keys() or len(names) != len(verdict["podSets"]):
        return by_name
    return dict(zip(names, verdict["podSets"], strict=True))


def _judged_alike(verdict: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What fit says of a workload's PodSets, whatever they are named."""
    keys = ("count", "fits", "flavor", "level", "domains", "reason")
    return [tuple(p.get(k) for k in keys) for p in verdict["podSets"]]


def _fit_lane(lane: Lane, cases: list[Case], folder: Path) -> tuple[Verdicts, list[str]]:
    """fit's verdicts on the lane's cases as submitted, and how its verdicts on the same
    PodSets written as the other kinds differ from them."""
    submitted, kinds = folder / "submitted", folder / "kinds"
    submitted.mkdir(parents=True)
    kinds.mkdir()
    for case in cases:
        (submitted / f"{case.name}.yaml").write_text(yaml.safe_dump_all(case.objects(), sort_keys=False))
        if not case.scenario:
            (kinds / f"{case.name}.yaml").write_text(yaml.safe_dump_all(other_kinds(case), sort_keys=False))
    verdicts, others = _fit(lane, submitted), _fit(lane, kinds)
    differences = []
    for case in cases:
        job = verdicts.get((case.namespace, case.submitted_name))
        for other in [] if case.scenario else other_kinds(case):
            verdict = others.get((case.namespace, other["metadata"]["name"]))
            if job is None or verdict is None or _judged_alike(verdict) != _judged_alike(job):
                differences.append(
                    f"{other['kind']} {other['metadata']['name']} ({case.describe()}): fit says "
                    f"{verdict and _judged_alike(verdict)}, of the {case.kind} {job and _judged_alike(job)}"
                )
    return verdicts, differences


def _judge_all(
    cluster: harness.Cluster, lanes: list[Lane], cases: dict[str, list[Case]]
) -> dict[str, Judged]:
    """Kueue's decisions, the lanes side by side, one Job at a time in each."""
    judged: dict[str, Judged] = {}
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_judge_lane, args=(cluster, lane, cases[lane.name], judged, errors))
        for lane in lanes
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return judged


def test_fit_verdicts_are_kueues_decisions(
    fit_cluster: harness.Cluster, lanes: list[Lane], tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    cases = {
        lane.name: generate(rng, lane, PER_LANE, lane.name[:3]) + scenarios(rng, lane, lane.name[:3])
        for lane in lanes
    }
    verdicts: dict[str, Verdicts] = {}
    differences = []
    for lane in lanes:
        verdicts[lane.name], unlike = _fit_lane(lane, cases[lane.name], tmp_path / lane.name)
        differences += unlike
    judged = _judge_all(fit_cluster, lanes, cases)
    for lane in lanes:
        for case in cases[lane.name]:
            problem = _disagreement(
                lane, judged[case.name], verdicts[lane.name].get((case.namespace, case.submitted_name))
            )
            if problem:
                differences.append(f"{case.name} ({case.describe()}): {problem}")
    total = sum(len(c) for c in cases.values())
    assert total >= 40
    for lane in lanes:
        kinds = {c.kind for c in cases[lane.name] if not c.scenario}
        assert kinds == set(KINDS), f"{lane.name}: not every kind submitted"
    admitted = sum(j.decision.admitted for j in judged.values())
    assert 0 < admitted < total, f"seed {SEED}: Kueue admitted {admitted} of {total}: no contrast"
    assert not differences, f"seed {SEED}: {len(differences)} differ:\n" + "\n".join(differences)
