"""The scenes of a safe live change (docs/explanation/gate.md, WaitForIdle): the example fleet
under ``gate.dropPolicy: WaitForIdle`` on a control plane with the Job controllers, changed
through the real tasgen loop while a Job runs.

The loop is what a user's repository and GitOps engine do: ``tasgen render`` of the working
copy's inventory into its ``rendered/`` (the previous render read back, as the command line
does), then a sync in the engines' order (labels, kueue, gate, queues, retire; the steps'
``dependsOn`` chain in rendered/flux/), each step's objects server-side applied, the gate's and
the retire step's Jobs replaced and run to completion by the Job controller and
tests/e2e/kubelet.py, as their ServiceAccounts. The scheduled refresh is
``tasgen render --kubeconfig``. Kueue's TAS places the teams' Pods, tests/e2e/binder.py binds
them and the kubelet stand-in runs them until the scene lets their Job end.

The oracles read Kueue's objects themselves: a Workload's conditions in every version the API
server wrote (flux.History), and its ``topologyAssignment`` decoded here, never by tasgen.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.conftest import REPO, tasgen
from tests.e2e import flux, harness, kube
from tests.e2e.binder import Binder
from tests.e2e.fleet import KIND_ORDER, load_fleet
from tests.e2e.kubelet import Kubelet

GPU = "nvidia.com/gpu"
HOSTNAME = "kubernetes.io/hostname"
BLOCK = "infra.example.com/block"
RACK = "topology.gpustack.ai/rack"
GPUS_PER_NODE = 8  # every H100 node of the example
WORKLOADS = ("kueue.x-k8s.io", "v1beta2", "workloads")
RETIRING = "retiring.topology.gpustack.ai/"
MANAGED = "app.kubernetes.io/managed-by=tasgen"
TIMEOUT_S = 180
#: The teams of the example: ClusterQueue -> (namespace, LocalQueue).
TEAMS = {"training": ("ml-research", "training"), "inference": ("ml-serving", "inference")}
#: The sync's steps in the order the rendered Flux wiring chains them (and Argo CD's waves).
STEPS = ("labels", "kueue", "gate", "queues", "retire")
RACK_B_R02 = [f"h100-1b-r2-0{i}" for i in range(1, 5)]
RACK_A_R01 = [f"h100-1a-r1-0{i}" for i in range(1, 5)]
T0 = "2026-11-30T00:00:00Z"


# --- the inventory edits --------------------------------------------------------------------


def set_gate(inventory: Path, policy: str, retain_for: str | None = None) -> None:
    """GeneratorConfig gate.dropPolicy (and retainFor) for every queue of the example."""
    config = inventory / "config.yaml"
    text = config.read_text()
    gate = "    timeoutSeconds: 1800\n"
    assert gate in text
    more = f"    dropPolicy: {policy}\n" + (f"    retainFor: {retain_for}\n" if retain_for else "")
    config.write_text(text.replace(gate, gate + more))


def add_h100_toleration(inventory: Path) -> None:
    """Both queues naming the H100 identity tolerate one more taint: its flavors are renamed,
    their nodes stay."""
    line = "        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    extra = "        - {key: example.com/maintenance, operator: Exists, effect: NoSchedule}\n"
    for name in TEAMS:
        path = inventory / "queues" / f"{name}.yaml"
        text = path.read_text()
        assert text.count(line) == 1, path
        path.write_text(text.replace(line, line + extra))


def record_racks(inventory: Path, nodes: list[str], rack: str) -> None:
    """The DCIM snapshot records the rack of some of rack b-r02's nodes (unrecorded so far)."""
    path = inventory / "sources" / "h100-racks.yaml"
    text = path.read_text()
    for node in nodes:
        unrecorded = re.compile(
            rf"^(\s+{re.escape(node)}: \{{infra\.example\.com/block: blk-b)\}}$", re.MULTILINE
        )
        text, count = unrecorded.subn(rf"\1, {RACK}: {rack}}}", text)
        assert count == 1, node
    path.write_text(text)


def add_shelf_level(inventory: Path) -> None:
    """A level below the rack (one shelf per rack) on every node that has a rack: the profile
    of those twelve nodes, and so their flavors and Topology, change."""
    path = inventory / "sources" / "h100-racks.yaml"
    text = path.read_text()
    rack = "    - topology.gpustack.ai/rack\n"
    assert rack in text
    text = text.replace(rack, rack + "    - topology.gpustack.ai/shelf\n", 1)
    text, count = re.subn(
        r"(topology\.gpustack\.ai/rack: ([ab]-r0\d))\}", r"\1, topology.gpustack.ai/shelf: \2-s1}", text
    )
    assert count == 12, count
    path.write_text(text)


def drop_h100(inventory: Path, queue: str) -> None:
    """The queue plan loses its H100 hardware entry (its nominalQuota, borrowingLimit and
    tolerations with it)."""
    path = inventory / "queues" / f"{queue}.yaml"
    lines = path.read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if "nvidia.com/gpu.product: NVIDIA-H100" in ln) - 1
    assert lines[start].strip() == "- identity:", lines[start]
    end = start + 2
    while end < len(lines) and lines[end].startswith("      ") and not lines[end].startswith("    - "):
        end += 1
    path.write_text("".join(lines[:start] + lines[end:]))


# --- reading Kueue --------------------------------------------------------------------------


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return kube.condition(obj, kind)


def flavor_of(wl: dict[str, Any]) -> str | None:
    assignments = ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or [{}]
    found = (assignments[0].get("flavors") or {}).get(GPU)
    return str(found) if found else None


def hosts_of(wl: dict[str, Any]) -> dict[str, int]:
    """Node -> Pods, decoded from the Workload's topology assignment (Kueue v1beta2's
    compressed form: slices of domains, each level's values given once for all of the slice's
    domains (``universal``) or one per domain (``individual``: prefix + root + suffix), and
    the Pods per domain the same way); {} while it has none."""
    admission = (wl.get("status") or {}).get("admission") or {}
    hosts: dict[str, int] = {}
    for podset in admission.get("podSetAssignments") or []:
        assignment = podset.get("topologyAssignment")
        if not assignment:
            continue
        last = len(assignment["levels"]) - 1
        assert assignment["levels"][last] == HOSTNAME, assignment["levels"]
        for piece in assignment["slices"]:
            count = piece["domainCount"]
            values = piece["valuesPerLevel"][last]
            if values.get("universal") is not None:
                names = [values["universal"]] * count
            else:
                individual = values["individual"]
                prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
                names = [prefix + root + suffix for root in individual["roots"]]
            pods = piece["podCounts"]
            per = pods["individual"] if pods.get("individual") else [pods["universal"]] * count
            for name, n in zip(names, per, strict=True):
                hosts[name] = hosts.get(name, 0) + n
    return hosts


def evictions(wl: dict[str, Any]) -> list[dict[str, Any]]:
    """The Workload's Evicted and Preempted conditions (Kueue writes neither before one)."""
    return [
        c for c in (wl.get("status") or {}).get("conditions") or [] if c["type"] in ("Evicted", "Preempted")
    ]


def finished(wl: dict[str, Any]) -> bool:
    cond = condition(wl, "Finished")
    return bool(cond and cond["status"] == "True")


def shown(wl: dict[str, Any] | None) -> str:
    """A Workload's conditions and admission, for a failure message."""
    if wl is None:
        return "no Workload"
    status = wl.get("status") or {}
    conds = [
        (c["type"], c["status"], c.get("reason"), c.get("message")) for c in status.get("conditions") or []
    ]
    return f"{wl['metadata']['name']}: conditions {conds}; flavor {flavor_of(wl)}; hosts {hosts_of(wl)}"


# --- what runs on each node ---------------------------------------------------------------


class Ledger(threading.Thread):
    """The GPUs that Pods hold on each node, replayed in the order the API server wrote the
    Pods of the teams' namespaces (one watch each): a Pod holds its GPUs from its binding until
    it ends or is deleted. A node ever held beyond its allocatable was double-booked; Kueue
    ungates a Pod only where its TAS placed it and tests/e2e/binder.py binds it there whatever
    the node holds."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(daemon=True, name=f"ledger-{namespace}")
        self.core, self.namespace = client.CoreV1Api(api), namespace
        self.holding: dict[str, tuple[str, int, str]] = {}  # Pod uid -> (node, GPUs, name)
        self.over: list[tuple[str, int, list[str]]] = []  # (node, GPUs held, the Pods) each time
        self.halt = threading.Event()
        self.listed = threading.Event()
        self.gaps = 0  # relists after the watch's version expired

    def run(self) -> None:
        version = self._relist()
        self.listed.set()
        while not self.halt.is_set():
            try:
                version = self._follow(version)
            except ApiException as exc:
                if exc.status != 410:
                    raise
                # The version left the API server's watch window (a loaded server compacts
                # quickly): list again; a Pod bound and gone in the gap is counted in gaps.
                self.gaps += 1
                version = self._relist()

    def _relist(self) -> str:
        listed = self.core.list_namespaced_pod(self.namespace)
        self.holding.clear()
        for pod in listed.items:
            self._see("ADDED", pod)
        return str(listed.metadata.resource_version)

    def _follow(self, version: str) -> str:
        stream = watch.Watch().stream(
            self.core.list_namespaced_pod,
            self.namespace,
            resource_version=version,
            timeout_seconds=3,
            allow_watch_bookmarks=True,
        )
        for event in stream:
            pod = event["object"]
            if event["type"] == "BOOKMARK":  # (the client leaves a bookmark's object a dict)
                meta = pod["metadata"] if isinstance(pod, dict) else pod.metadata.to_dict()
                version = meta.get("resourceVersion") or meta.get("resource_version") or version
                continue
            self._see(event["type"], pod)
            version = pod.metadata.resource_version
        return version

    def _see(self, kind: str, pod: client.V1Pod) -> None:
        uid = pod.metadata.uid
        ended = kind == "DELETED" or pod.status.phase in ("Succeeded", "Failed")
        if ended or not pod.spec.node_name:
            self.holding.pop(uid, None)
            return
        gpus = sum(int((c.resources.requests or {}).get(GPU, 0)) for c in pod.spec.containers)
        node = pod.spec.node_name
        self.holding[uid] = (node, gpus, pod.metadata.name)
        held = [(g, name) for n, g, name in self.holding.values() if n == node]
        if sum(g for g, _ in held) > GPUS_PER_NODE:
            self.over.append((node, sum(g for g, _ in held), sorted(name for _, name in held)))

    def __enter__(self) -> Ledger:
        self.start()
        kube.wait_for(f"the ledger's first list of {self.namespace}", self.listed.is_set)
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join(timeout=30)


# --- Jobs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A Job of ``pods`` Pods of ``gpus`` GPUs each, in one block (required topology), sent to
    a queue's LocalQueue; ``hosts``: the nodes its Pods may use (required node affinity);
    ``selector``: the Pods' nodeSelector. Kueue matches a flavor against the nodeSelector's
    keys that the flavor's nodeLabels use, not against hostnames: a Job limited by ``hosts``
    alone is offered every flavor of its queue."""

    name: str
    queue: str
    pods: int
    gpus: int
    hosts: tuple[str, ...] = ()
    selector: tuple[tuple[str, str], ...] = ()

    @property
    def namespace(self) -> str:
        return TEAMS[self.queue][0]


@dataclass
class Scene:
    """One control plane with the example's Nodes, the teams' Pods run, and a working copy."""

    cluster: harness.Cluster
    api: client.ApiClient
    root: Path
    work: Path = field(init=False)
    dyn: DynamicClient = field(init=False)
    flags: Path = field(init=False)  # a Job's Pods end once a file named after it is here
    synced_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> labels last synced
    runners: dict[str, Kubelet] = field(default_factory=dict)  # namespace -> its kubelet stand-in
    count: int = 0

    def __post_init__(self) -> None:
        self.dyn = DynamicClient(self.api)
        self.work = self.root / "none"
        self.flags = self.root / "flags"
        self.flags.mkdir(exist_ok=True)

    @property
    def inventory(self) -> Path:
        return self.work / "inventories"

    @property
    def rendered(self) -> Path:
        return self.work / "rendered"

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    # --- the loop ---------------------------------------------------------------------------

    def begin(self, retain_for: str | None = None) -> None:
        """A fresh working copy of the example under WaitForIdle, rendered and synced, on a
        cluster where no team Job is left."""
        self.clear_jobs()
        self.count += 1
        self.work = self.root / f"scene-{self.count}"
        shutil.copytree(REPO / "inventories", self.inventory)
        shutil.copytree(REPO / "rendered", self.rendered)
        set_gate(self.inventory, "WaitForIdle", retain_for)
        self.render(T0)
        self.sync()
        for name in TEAMS:
            kube.wait_for(f"ClusterQueue {name} Active", lambda n=name: kube.queue_active(self.dyn, n))

    def render(self, now: str, live: bool = False) -> str:
        """``tasgen render`` into the working copy's rendered/ (its previous render read
        back); ``live``: the scheduled refresh's ``--kubeconfig``."""
        more = ["--kubeconfig", str(self.cluster.kubeconfig)] if live else []
        run = tasgen("render", "-i", str(self.inventory), "-o", str(self.rendered), "--now", now, *more)
        assert run.exit_code == 0, run.output
        return run.output

    def objects(self, folder: str) -> list[dict[str, Any]]:
        found = [
            doc
            for path in sorted((self.rendered / folder).glob("*.yaml"))
            if path.name != "kustomization.yaml"
            for doc in yaml.safe_load_all(path.read_text())
            if isinstance(doc, dict) and "kind" in doc
        ]
        return sorted(
            found, key=lambda o: KIND_ORDER.index(o["kind"]) if o["kind"] in KIND_ORDER else len(KIND_ORDER)
        )

    def sync(self) -> None:
        """Every step of rendered/ in order, each done before the next starts."""
        for step in STEPS:
            objects = self.objects(step)
            if step == "labels":
                self._sync_labels(objects)
                continue
            jobs = [o for o in objects if o["kind"] == "Job"]
            for obj in objects:
                if obj["kind"] != "Job":
                    kube.apply(self.dyn, obj)
            for job in jobs:
                self._run_job(job)

    def _sync_labels(self, features: list[dict[str, Any]]) -> None:
        """Apply the NodeFeatures, prune the ones no longer rendered (the engines prune this
        step), and wait until nfd-master has projected them onto the Nodes."""
        namespace = load_fleet(self.inventory, self.rendered).node_feature_namespace
        for obj in features:
            kube.apply(self.dyn, obj)
        resource = self.dyn.resources.get(api_version="nfd.k8s-sigs.io/v1alpha1", kind="NodeFeature")
        rendered = {o["metadata"]["name"] for o in features}
        for live in resource.get(namespace=namespace, label_selector=MANAGED).to_dict()["items"]:
            if live["metadata"]["name"] not in rendered:
                resource.delete(name=live["metadata"]["name"], namespace=namespace)
        want: dict[str, dict[str, str]] = {}
        for obj in features:
            node = obj["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
            want.setdefault(node, {}).update(obj["spec"].get("labels") or {})
        gone = {n: set(old) - set(want.get(n, {})) for n, old in self.synced_labels.items()}

        def projected() -> bool:
            for node in set(want) | set(gone):
                labels = self.core.read_node(node).metadata.labels or {}
                if any(labels.get(k) != v for k, v in want.get(node, {}).items()):
                    return False
                if any(k in labels for k in gone.get(node, ())):
                    return False
            return True

        kube.wait_for("nfd-master to project the rendered labels", projected, TIMEOUT_S)
        self.synced_labels = want

    def _run_job(self, job: dict[str, Any]) -> None:
        """What the engines do with the gate's and the retire step's Job: replace it, then
        wait until it completes (a failed one fails the scene, with its Pods' logs)."""
        batch = client.BatchV1Api(self.api)
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        with contextlib.suppress(ApiException):
            batch.delete_namespaced_job(name, namespace, propagation_policy="Background")

        def replaced() -> bool:
            try:
                batch.read_namespaced_job(name, namespace)
            except ApiException as exc:
                return exc.status == 404
            return False

        kube.wait_for(f"Job {name} replaced", replaced)
        kube.apply(self.dyn, job)

        def done() -> bool | None:
            status = batch.read_namespaced_job(name, namespace).status
            for cond in status.conditions or []:
                if cond.status == "True" and cond.type == "Complete":
                    return True
                if cond.status == "True" and cond.type == "Failed":
                    raise AssertionError(
                        f"Job {namespace}/{name} failed: {cond.message}\n{self._logs(namespace)}"
                    )
            return None

        kube.wait_for(f"Job {namespace}/{name} complete", done, TIMEOUT_S)

    def _logs(self, namespace: str) -> str:
        runner = self.runners[namespace]
        return "\n".join(runner.log(uid)[-4000:] for uid in list(runner.done))

    # --- the teams' Jobs --------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        flag = str(self.flags / job.name)
        script = f"import os, time\nwhile not os.path.exists({flag!r}):\n    time.sleep(0.2)\n"
        container = {
            "name": "main",
            "image": "registry.invalid/none",
            "command": ["python", "-c", script],
            "resources": {"requests": {GPU: str(job.gpus)}, "limits": {GPU: str(job.gpus)}},
        }
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "serviceAccountName": "default",
            "containers": [container],
            # The flavors' toleration lets Kueue's TAS place the Pods; Kueue v0.17.0's node
            # controller judges NoSchedule taints by the Pod's own (see tests/e2e/retained.py).
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
        }
        if job.selector:
            spec["nodeSelector"] = dict(job.selector)
        if job.hosts:
            term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": list(job.hosts)}]}
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            }
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": job.name,
                "namespace": job.namespace,
                "labels": {"kueue.x-k8s.io/queue-name": TEAMS[job.queue][1]},
            },
            "spec": {
                "parallelism": job.pods,
                "completions": job.pods,
                "template": {
                    "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": BLOCK}},
                    "spec": spec,
                },
            },
        }
        client.BatchV1Api(self.api).create_namespaced_job(job.namespace, body)

    def finish(self, job: Job) -> None:
        (self.flags / job.name).write_text("")
        kube.wait_for(
            f"{job.name}'s Workload Finished", lambda: finished(self.workload(job) or {}), TIMEOUT_S
        )

    def delete(self, job: Job) -> None:
        client.BatchV1Api(self.api).delete_namespaced_job(
            job.name, job.namespace, propagation_policy="Background"
        )

        def gone() -> bool:
            pods = self.core.list_namespaced_pod(
                job.namespace, label_selector=f"batch.kubernetes.io/job-name={job.name}"
            )
            self._forget_ended(pods.items)
            return self.workload(job) is None and not pods.items

        kube.wait_for(f"{job.name}'s Workload and Pods gone", gone, TIMEOUT_S)

    def _forget_ended(self, pods: list[client.V1Pod]) -> None:
        """What a kubelet does last with a bound Pod being deleted once its containers have
        stopped: delete it for good (grace period 0); the stand-in leaves that to us."""
        for pod in pods:
            if pod.metadata.deletion_timestamp and pod.status.phase in ("Succeeded", "Failed"):
                with contextlib.suppress(ApiException):
                    self.core.delete_namespaced_pod(
                        pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0
                    )

    def workload(self, job: Job) -> dict[str, Any] | None:
        found = self.custom.list_namespaced_custom_object(*WORKLOADS[:2], job.namespace, WORKLOADS[2])
        return next(
            (
                w
                for w in found["items"]
                if any(r["name"] == job.name for r in w["metadata"].get("ownerReferences") or [])
            ),
            None,
        )

    def admitted(self, job: Job) -> dict[str, Any]:
        def probe() -> dict[str, Any] | None:
            wl = self.workload(job)
            cond = condition(wl, "Admitted") if wl else None
            return wl if wl and cond and cond["status"] == "True" else None

        try:
            return kube.wait_for(f"{job.name} admitted", probe, TIMEOUT_S)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {shown(self.workload(job))}") from None

    def judged(self, job: Job) -> dict[str, Any]:
        """The Job's Workload once Kueue has decided on it: admitted, or pending with its
        reason."""

        def probe() -> dict[str, Any] | None:
            wl = self.workload(job)
            cond = condition(wl, "QuotaReserved") if wl else None
            if cond and (cond["status"] == "True" or cond.get("message")):
                return wl
            return None

        return kube.wait_for(f"Kueue's decision on {job.name}", probe, TIMEOUT_S)

    def pods_on(self, job: Job) -> dict[str, int]:
        """Node -> GPUs of the Job's running Pods, once all of them run."""

        def probe() -> dict[str, int] | None:
            found = self.core.list_namespaced_pod(
                job.namespace, label_selector=f"batch.kubernetes.io/job-name={job.name}"
            )
            running = [p for p in found.items if p.status.phase == "Running" and p.spec.node_name]
            if len(running) != job.pods:
                return None
            nodes: dict[str, int] = {}
            for p in running:
                nodes[p.spec.node_name] = nodes.get(p.spec.node_name, 0) + job.gpus
            return nodes

        return kube.wait_for(f"the {job.pods} Pods of {job.name} running", probe, TIMEOUT_S)

    def history(self, job: Job) -> flux.History:
        wl = self.workload(job)
        assert wl is not None, job.name
        return flux.History(self.api, WORKLOADS, wl["metadata"]["name"], job.namespace)

    def clear_jobs(self) -> None:
        """No team Job, Pod or Workload left from an earlier scene."""
        batch = client.BatchV1Api(self.api)
        for namespace, _ in TEAMS.values():
            for job in batch.list_namespaced_job(namespace).items:
                (self.flags / job.metadata.name).write_text("")
                batch.delete_namespaced_job(job.metadata.name, namespace, propagation_policy="Background")
        for namespace, _ in TEAMS.values():

            def empty(ns: str = namespace) -> bool:
                wls = self.custom.list_namespaced_custom_object(*WORKLOADS[:2], ns, WORKLOADS[2])["items"]
                pods = self.core.list_namespaced_pod(ns).items
                self._forget_ended(pods)
                return not wls and not pods

            try:
                kube.wait_for(f"no Workload or Pod left in {namespace}", empty, TIMEOUT_S)
            except AssertionError as exc:
                wls = self.custom.list_namespaced_custom_object(*WORKLOADS[:2], namespace, WORKLOADS[2])[
                    "items"
                ]
                pods = self.core.list_namespaced_pod(namespace).items
                left = [
                    (
                        w["metadata"]["name"],
                        w["metadata"].get("finalizers"),
                        w["metadata"].get("ownerReferences"),
                        w["metadata"].get("deletionTimestamp"),
                    )
                    for w in wls
                ]
                left += [
                    (p.metadata.name, p.metadata.finalizers, p.status.phase, p.metadata.deletion_timestamp)
                    for p in pods
                ]
                raise AssertionError(f"{exc}: {left}") from None
        for path in self.flags.iterdir():
            path.unlink()

    def explain(self, nodes: list[str], queue: str) -> str:
        """The live queue's flavors and quotas, the flavors' node selectors and the nodes'
        labels of tasgen's namespace, for a failure message."""
        cq = kube.get(self.dyn, kube.KUEUE_API, "ClusterQueue", queue)
        flavors = [
            (f["name"], {r["name"]: (r["nominalQuota"], r.get("borrowingLimit")) for r in f["resources"]})
            for g in cq["spec"]["resourceGroups"]
            for f in g["flavors"]
        ]
        selectors = {
            name: kube.get(self.dyn, kube.KUEUE_API, "ResourceFlavor", name)["spec"].get("nodeLabels")
            for name, _ in flavors
        }
        labels = {
            n: {k: v for k, v in (self.core.read_node(n).metadata.labels or {}).items() if "gpustack" in k}
            for n in nodes
        }
        return f"live {queue}: {flavors}\nselectors: {selectors}\nnodes: {labels}"

    # --- what the render says ---------------------------------------------------------------

    def rendered_queue(self, name: str) -> dict[str, Any]:
        (found,) = [
            q for q in self.objects("queues") if q["kind"] == "ClusterQueue" and q["metadata"]["name"] == name
        ]
        return found

    def offered(self, queue: str) -> set[str]:
        """The flavors the rendered queue offers for new work (not kept for running work)."""
        cq = self.rendered_queue(queue)
        kept = {k[len(RETIRING) :] for k in cq["metadata"].get("annotations") or {} if k.startswith(RETIRING)}
        names = {f["name"] for g in cq["spec"].get("resourceGroups") or [] for f in g["flavors"]}
        return names - kept

    def flavor_labels(self, flavor: str) -> tuple[tuple[str, str], ...]:
        """The live ResourceFlavor's nodeLabels: what selects its nodes and no other flavor's."""
        labels = kube.get(self.dyn, kube.KUEUE_API, "ResourceFlavor", flavor)["spec"]["nodeLabels"]
        return tuple(sorted(labels.items()))

    def gpu_nominal(self, queue: str, flavor: str) -> int:
        cq = self.rendered_queue(queue)
        for group in cq["spec"]["resourceGroups"]:
            for f in group["flavors"]:
                if f["name"] == flavor:
                    return int(next(r["nominalQuota"] for r in f["resources"] if r["name"] == GPU))
        raise AssertionError(f"{flavor} not in the rendered {queue}")


@contextlib.contextmanager
def scene(cluster: harness.Cluster, api: client.ApiClient, root: Path) -> Iterator[Scene]:
    """The example's Nodes and namespaces, the teams' and the gate's Pods run."""
    fleet, core = load_fleet(), client.CoreV1Api(api)
    for node in fleet.nodes:
        kube.create_ready_node(core, node)
    kube.ensure_namespace(core, fleet.node_feature_namespace)
    for namespace, labels in sorted(fleet.local_queue_namespaces().items()):
        kube.ensure_namespace(core, namespace, labels=labels or None)
    (jobs,) = {job["metadata"]["namespace"] for job in fleet.of_kind("Job")}  # the gate's, retire's
    s = Scene(cluster, api, root)
    with contextlib.ExitStack() as stack:
        runner = Kubelet(api, jobs, root / "jobs")
        runner.start()
        stack.callback(runner.stop)
        s.runners[jobs] = runner
        for namespace, _ in TEAMS.values():
            # The Pods' ServiceAccount (no ServiceAccount controller runs here to create it).
            core.create_namespaced_service_account(namespace, {"metadata": {"name": "default"}})
            kubelet, binder = (
                Kubelet(api, namespace, root / f"kubelet-{namespace}", bound_only=True),
                Binder(api, namespace),
            )
            kubelet.start()
            binder.start()
            stack.callback(kubelet.stop)
            stack.callback(binder.stop)
        yield s


# --- the scene -----------------------------------------------------------------------------

T1, T2, T3, T4 = (
    "2026-11-30T01:00:00Z",
    "2026-11-30T02:00:00Z",
    "2026-11-30T03:00:00Z",
    "2026-11-30T04:00:00Z",
)


def _never_double_booked(j2_versions: list[dict[str, Any]], held: dict[str, int], j2: Job) -> None:
    """No version of J2's Workload places on a node more GPUs than J1's Pods leave there."""
    for wl in j2_versions:
        for node, pods in hosts_of(wl).items():
            assert held.get(node, 0) + pods * j2.gpus <= GPUS_PER_NODE, (
                f"{j2.name} placed {pods} Pod(s) of {j2.gpus} GPU(s) on {node}, where J1 holds "
                f"{held[node]}: {shown(wl)}"
            )


def _untouched(versions: list[dict[str, Any]], before: dict[str, Any]) -> None:
    """J1's Workload in every version the API server wrote: never evicted or preempted, its
    admission as it was."""
    assert versions, "no version of J1's Workload seen"
    for wl in versions:
        assert evictions(wl) == [], shown(wl)
        assert wl["status"]["admission"] == before["status"]["admission"], shown(wl)


def changed_while_busy(
    s: Scene,
    edit: Callable[[Path], None],
    j1: Job,
    j2: Job | Callable[[Scene, str], Job],
    *,
    renamed: bool = True,
) -> None:
    """The scene: J1 runs; the edit is rendered (with the previous render) and synced; J2 asks
    for J1's capacity; the scheduled refresh runs while J1 still does; J1 ends, J2 is
    withdrawn, the refresh and a sync; J3, J1's shape on J1's nodes, gets them through a flavor
    its queue offers (another one than J1's when the edit moved the nodes, ``renamed``)."""
    s.begin()
    s.submit(j1)
    before = s.admitted(j1)
    held = s.pods_on(j1)
    with ExitStack() as stack:
        ledgers = [stack.enter_context(Ledger(s.api, ns)) for ns, _ in TEAMS.values()]
        h1 = stack.enter_context(s.history(j1))
        edit(s.inventory)
        s.render(T1)
        s.sync()
        if not isinstance(j2, Job):
            j2 = j2(s, str(flavor_of(before)))
        s.submit(j2)
        s.judged(j2)
        h2 = stack.enter_context(s.history(j2))
        # The scheduled refresh while J1 runs: what it releases, Kueue may give J2.
        s.render(T2, live=True)
        s.sync()
        s.judged(j2)
        j2_seen = [*h2.versions(), s.workload(j2) or {}]
        s.delete(j2)
        # Judged before J1 is let end: an evicted J1 never finishes, and the failure should
        # name the eviction rather than a wait for its end.
        _untouched(h1.versions(), before)
        s.finish(j1)
        j1_seen = h1.versions()
        overbooked = [o for ledger in ledgers for o in ledger.over]
    _untouched(j1_seen, before)
    _never_double_booked(j2_seen, held, j2)
    assert overbooked == [], overbooked

    s.render(T3, live=True)
    s.sync()
    # The first refresh after J1 ends moves J1's nodes into transit (no flavor selects them)
    # while the kept flavor's live quota could still admit; the next one gives them to the
    # new flavor (docs/explanation/gate.md).
    s.render(T4, live=True)
    s.sync()
    j3 = Job(f"{j1.name}-after", j1.queue if renamed else j2.queue, j1.pods, j1.gpus, tuple(sorted(held)))
    s.submit(j3)
    try:
        after = s.admitted(j3)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{s.explain(sorted(held), j3.queue)}") from None
    assert flavor_of(after) in s.offered(j3.queue), shown(after)
    if renamed:
        assert flavor_of(after) != flavor_of(before), shown(after)
    assert set(hosts_of(after)) == set(held), shown(after)
    s.pods_on(j3)
