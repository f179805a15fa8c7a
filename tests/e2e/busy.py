"""A queue whose flavor a commit drops while a workload holds a reservation on it: the change,
the workload, and what Kueue reports, for the gate's tests under Flux and under Argo CD."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import yaml
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError
from kubernetes.utils import parse_quantity

from tests.e2e import flux, kube

GPU = "nvidia.com/gpu"
GROUP, VERSION = kube.KUEUE_API.split("/")
CLUSTER_QUEUES = (GROUP, VERSION, "clusterqueues")
# What the tests drop (from the example's plans)
TRAINING_DROPS_GB200 = ("training", {"nvidia.com/gpu.product": "NVIDIA-GB200"})
INFERENCE_DROPS_L40S = ("inference", {"nvidia.com/gpu.product": "NVIDIA-L40S"})


class Synced(Protocol):
    """An engine's test environment: a control plane and the working copy it syncs from."""

    dyn: DynamicClient
    repo: flux.Repo


@dataclass(frozen=True)
class Drop:
    """A queue of the example and the hardware identity a commit takes from its plan."""

    queue: str
    identity: dict[str, str]
    flavor: str  # the queue's flavor of that identity, as rendered before the commit
    flavor_spec: dict[str, Any]
    namespace: str  # of a rendered LocalQueue of the queue
    local_queue: str


def rendered_objects(env: Synced, kind: str, folder: str = "") -> list[dict[str, Any]]:
    """The objects of that kind in the working copy's rendered/ (or one folder of it)."""
    rendered = env.repo.work / "rendered" / folder
    return [
        doc
        for path in sorted(rendered.rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") == kind
    ]


def named(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["metadata"]["name"] == name]
    return found


def drop_of(env: Synced, queue: str, identity: dict[str, str]) -> Drop:
    flavors = {f["metadata"]["name"]: f["spec"] for f in rendered_objects(env, "ResourceFlavor")}
    cq = named(rendered_objects(env, "ClusterQueue"), queue)
    (flavor,) = [f for f in flavor_names(cq) if identity.items() <= flavors[f]["nodeLabels"].items()]
    lq = next(q for q in rendered_objects(env, "LocalQueue") if q["spec"]["clusterQueue"] == queue)
    meta = lq["metadata"]
    return Drop(queue, identity, flavor, flavors[flavor], meta["namespace"], meta["name"])


def commit_drop(env: Synced, drop: Drop) -> str:
    """The ClusterQueuePlan without the identity, rendered and pushed: the new revision."""
    for path in sorted((env.repo.work / "inventories").rglob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text()))
        plans = [d for d in docs if d and d.get("kind") == "ClusterQueuePlan"]
        for plan in [p for p in plans if p["metadata"]["name"] == drop.queue]:
            hardware = plan["spec"]["hardware"]
            plan["spec"]["hardware"] = [h for h in hardware if h["identity"] != drop.identity]
            assert len(plan["spec"]["hardware"]) == len(hardware) - 1, hardware
            path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
            return env.repo.render_and_commit(f"{drop.queue} drops {drop.flavor}")
    raise AssertionError(f"no ClusterQueuePlan {drop.queue} in the inventory")


# --- a workload that holds a reservation ----------------------------------------------------


class Reservations:
    """The Workloads a test made to hold reservations, deleted when the test ends, passed or
    failed (the fixture ``reservations`` of the tests that hold one): a failed test must not
    leave its Workload to the next, whose own create would then meet 409 AlreadyExists."""

    def __init__(self, env: Synced) -> None:
        self.env = env
        self.made: list[tuple[Drop, str]] = []

    def hold(self, drop: Drop) -> str:
        return hold_reservation(self.env, drop, self.made)

    def close(self) -> None:
        """Delete each (release() may have done it already) and wait until it is gone."""
        for drop, name in reversed(self.made):
            try:
                release(self.env, drop, name)
            except NotFoundError:
                continue
            kube.wait_for(f"{name} to be deleted", partial(gone, self.env, drop, name))
        self.made.clear()


@contextmanager
def holding(env: Synced) -> Iterator[Reservations]:
    held = Reservations(env)
    try:
        yield held
    finally:
        held.close()


def gone(env: Synced, drop: Drop, name: str) -> bool:
    try:
        workload(env, drop, name)
    except NotFoundError:
        return True
    return False


def hold_reservation(env: Synced, drop: Drop, made: list[tuple[Drop, str]]) -> str:
    """A Workload with no owner, admitted on the dropped flavor (its pods select that flavor's
    nodes), listed in ``made`` as soon as it exists. Kueue v0.17 evicts it from a HoldAndDrain
    queue but never releases its quota by itself: the Workload controller leaves an admitted,
    evicted Workload alone, and only the job framework's reconciler (for a Workload a Job owns)
    clears the reservation once the job has stopped. So the reservation lasts until release(),
    and the drain as long as the test needs."""
    name = f"held-on-{drop.queue}"
    pod = {
        "restartPolicy": "Never",
        "nodeSelector": drop.flavor_spec["nodeLabels"],
        "tolerations": drop.flavor_spec.get("tolerations", []),
        "containers": [
            {"name": "c", "image": "registry.invalid/none", "resources": {"requests": {GPU: "1"}}}
        ],
    }
    kube.create(
        env.dyn,
        {
            "apiVersion": kube.KUEUE_API,
            "kind": "Workload",
            "metadata": {"name": name, "namespace": drop.namespace},
            "spec": {
                "queueName": drop.local_queue,
                "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}],
            },
        },
    )
    made.append((drop, name))
    kube.wait_for(
        f"{name} admitted on {drop.flavor}", lambda: admitted_on(workload(env, drop, name)) == drop.flavor
    )
    kube.wait_for(
        f"{drop.queue} to report the reservation", lambda: load(queue(env, drop.queue), drop.flavor) or None
    )
    return name


def workload(env: Synced, drop: Drop, name: str) -> dict[str, Any]:
    return kube.get(env.dyn, kube.KUEUE_API, "Workload", name, drop.namespace)


def admitted_on(wl: dict[str, Any]) -> str | None:
    assignments = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
    flavor = (assignments[0].get("flavors") or {}).get(GPU)
    return str(flavor) if flavor else None


def evicted(wl: dict[str, Any]) -> bool | None:
    cond = kube.condition(wl, "Evicted")
    return True if cond and cond["status"] == "True" and cond["reason"] == "ClusterQueueStopped" else None


def release(env: Synced, drop: Drop, name: str) -> None:
    """What follows when the workload's job is gone: its Workload is deleted (Kueue removes
    the finalizer of a Workload without an owner) and its quota is free."""
    resource = env.dyn.resources.get(api_version=kube.KUEUE_API, kind="Workload")
    resource.delete(name=name, namespace=drop.namespace)


def queue(env: Synced, name: str) -> dict[str, Any]:
    return kube.get(env.dyn, kube.KUEUE_API, "ClusterQueue", name)


def flavor_names(cq: dict[str, Any]) -> list[str]:
    return [f["name"] for g in cq["spec"].get("resourceGroups") or [] for f in g["flavors"]]


def stop_policy(cq: dict[str, Any]) -> str:
    return str(cq["spec"].get("stopPolicy", "None"))


def load(cq: dict[str, Any], flavor: str) -> int | None:
    """How many of the flavor's reservation and usage figures Kueue reports non-zero on the
    queue (the figures the admission policy reads); None when the status does not describe
    the queue's current generation or does not list the flavor."""
    active = kube.condition(cq, "Active")
    if not active or active.get("observedGeneration") != cq["metadata"]["generation"]:
        return None
    status = cq.get("status") or {}
    entries = [
        e
        for key in ("flavorsReservation", "flavorsUsage")
        for e in status.get(key) or []
        if e["name"] == flavor
    ]
    if not entries:
        return None
    return sum(1 for e in entries for r in e["resources"] if parse_quantity(r.get("total", "0")) != 0)
