"""What the engine tests of deletion safety and queue health share: a watch of every Node's
labels (each version the API server wrote, so that a label lost for a moment is seen, not
sampled at the end), the objects the fleet runs on, and probe queues written into a working
copy's rendered/queues/ by hand (what a commit can make an engine apply).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e import kube
from tests.e2e.conftest import describe

#: the kinds whose objects a deletion of an engine's own object must leave in place
KEPT_KINDS = {
    "NodeFeature",
    "ClusterQueue",
    "LocalQueue",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ServiceAccount",
}


class NodeLabels(threading.Thread):
    """Every version of every Node, from a list and then a watch resumed from its
    resourceVersion: ``lost()`` names each (node, label) that some version lacked while
    ``expected`` says the node has it."""

    def __init__(self, api: client.ApiClient, expected: Mapping[str, Mapping[str, str]]) -> None:
        super().__init__(daemon=True)
        self._core = client.CoreV1Api(api)
        self._expected = expected
        self._lost: list[tuple[str, str, str | None]] = []
        self._seen = 0
        self._lock = threading.Lock()
        self.halt = threading.Event()
        self.gaps = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            version = self._relist()
            while not self.halt.is_set():
                try:
                    version = self._follow(version)
                except ApiException as exc:
                    if exc.status != 410:
                        raise
                    self.gaps += 1
                    version = self._relist()
        except BaseException as exc:  # reported by lost()
            self.error = exc

    def _relist(self) -> str:
        listed = self._core.list_node()
        for node in listed.items:
            self._check(node.metadata.name, node.metadata.labels or {})
        return str(listed.metadata.resource_version)

    def _follow(self, version: str) -> str:
        stream = watch.Watch().stream(
            self._core.list_node, resource_version=version, timeout_seconds=3, allow_watch_bookmarks=True
        )
        for event in stream:
            node = event["object"]
            if event["type"] == "BOOKMARK":  # (the client leaves a bookmark's object a dict)
                meta = node["metadata"] if isinstance(node, dict) else node.metadata.to_dict()
                version = meta.get("resourceVersion") or meta.get("resource_version") or version
                continue
            version = node.metadata.resource_version
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                labels = {} if event["type"] == "DELETED" else (node.metadata.labels or {})
                self._check(node.metadata.name, labels)
        return version

    def _check(self, name: str, labels: Mapping[str, str]) -> None:
        with self._lock:
            self._seen += 1
            for key, value in self._expected.get(name, {}).items():
                if labels.get(key) != value:
                    self._lost.append((name, key, labels.get(key)))

    def lost(self) -> list[tuple[str, str, str | None]]:
        if self.error is not None:
            raise AssertionError(f"the watch of Nodes failed: {self.error!r}")
        if not self.is_alive() and not self.halt.is_set():
            raise AssertionError("the watch of Nodes stopped; versions are missing")
        assert self.gaps == 0, "the watch of Nodes relisted: versions may be missing"
        with self._lock:
            return list(self._lost)

    def __enter__(self) -> NodeLabels:
        self.start()
        kube.wait_for("the Nodes' first list", lambda: self._seen or None)
        assert self.lost() == [], "a Node lacks its labels before the test even starts"
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join(timeout=30)


def kept_objects(rendered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in rendered if o["kind"] in KEPT_KINDS]


def missing(dyn: DynamicClient, objects: list[dict[str, Any]]) -> list[str]:
    """The objects (of the list) that do not exist, or are being deleted."""
    found = []
    for obj in objects:
        meta = obj["metadata"]
        try:
            live = kube.get(dyn, obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        except ApiException as exc:
            if exc.status != 404:
                raise
            found.append(describe(obj))
            continue
        if live["metadata"].get("deletionTimestamp"):
            found.append(describe(obj) + " (deleting)")
    return found


# --- probe queues: what a commit under rendered/queues/ can make an engine apply ------------

PROBE_FLAVOR = "tasgen-probe-missing"


def probe_queue(rendered: Path, name: str, *, stop: str | None = None, missing_flavor: bool = False) -> None:
    """Append to rendered/queues/clusterqueues.yaml a copy of its first queue under ``name``:
    no cohort, not the gate's (no managed-by label: the gate's admission policy does not look
    at it), held with ``stop``, or naming PROBE_FLAVOR, which no one created, instead of its
    flavors."""
    path = rendered / "queues" / "clusterqueues.yaml"
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    queue = copy.deepcopy(documents[0])
    queue["metadata"] = {"name": name}
    queue["spec"].pop("cohortName", None)
    queue["spec"].pop("cohort", None)
    if stop is not None:
        queue["spec"]["stopPolicy"] = stop
    if missing_flavor:
        group = queue["spec"]["resourceGroups"][0]
        group["flavors"] = [{**group["flavors"][0], "name": PROBE_FLAVOR}]
        queue["spec"]["resourceGroups"] = [group]
    for group in queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                resource.pop("borrowingLimit", None)
                resource.pop("lendingLimit", None)
    with path.open("a") as out:
        out.write("---\n" + yaml.safe_dump(queue, sort_keys=False))


def probe_flavor(kueue_api: str) -> dict[str, Any]:
    return {"apiVersion": kueue_api, "kind": "ResourceFlavor", "metadata": {"name": PROBE_FLAVOR}}


def active(dyn: DynamicClient, kueue_api: str, name: str) -> dict[str, Any] | None:
    """The queue's Active condition, once Kueue wrote one for its current generation."""
    try:
        queue = kube.get(dyn, kueue_api, "ClusterQueue", name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    found = kube.condition(queue, "Active")
    generation = queue["metadata"].get("generation")
    if found is None or found.get("observedGeneration", generation) != generation:
        return None
    return found


#: (group, version, plural) of the kinds whose deletion a deletion-safety test watches for; the
#: queues' version is the render's
def watched_kinds(kueue_api: str) -> list[tuple[str, str, str]]:
    kueue_version = kueue_api.rpartition("/")[2]
    return [
        ("nfd.k8s-sigs.io", "v1alpha1", "nodefeatures"),
        ("kueue.x-k8s.io", kueue_version, "clusterqueues"),
        ("kueue.x-k8s.io", kueue_version, "localqueues"),
        ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"),
    ]


class Deletions:
    """Every DELETED event, and every version with a deletionTimestamp, of the given kinds (all
    namespaces), from a list and then a watch per kind resumed from its resourceVersion:
    ``seen()`` names each object some engine deleted or began to delete meanwhile."""

    def __init__(self, api: client.ApiClient, kinds: list[tuple[str, str, str]]) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._kinds = kinds
        self._seen: list[str] = []
        self._listed: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(k,), daemon=True) for k in kinds]
        self.halt = threading.Event()
        self.gaps = 0
        self.errors: list[BaseException] = []

    def _run(self, kind: tuple[str, str, str]) -> None:
        try:
            listed = self._custom.list_cluster_custom_object(*kind)
            for item in listed["items"]:
                self._check(kind, "LISTED", item)
            version = str(listed["metadata"]["resourceVersion"])
            with self._lock:
                self._listed.add(kind)
            while not self.halt.is_set():
                stream = watch.Watch().stream(
                    self._custom.list_cluster_custom_object,
                    *kind,
                    resource_version=version,
                    timeout_seconds=3,
                    allow_watch_bookmarks=True,
                )
                for event in stream:
                    version = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] != "BOOKMARK":
                        self._check(kind, event["type"], event["object"])
        except BaseException as exc:  # an expired resourceVersion (410) too: events may be missing
            with self._lock:
                self.errors.append(exc)

    def _check(self, kind: tuple[str, str, str], event: str, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        if event == "DELETED" or meta.get("deletionTimestamp"):
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            with self._lock:
                self._seen.append(f"{kind[2]} {where}{meta['name']} ({event})")

    def _all_listed(self) -> bool:
        self.seen()  # (raises if a watch failed before its list)
        with self._lock:
            return len(self._listed) == len(self._kinds)

    def seen(self) -> list[str]:
        with self._lock:
            if self.errors:
                raise AssertionError(f"a watch of deletions failed: {self.errors!r}")
            if any(not t.is_alive() for t in self._threads) and not self.halt.is_set():
                raise AssertionError("a watch of deletions stopped; events may be missing")
            return list(self._seen)

    def __enter__(self) -> Deletions:
        for thread in self._threads:
            thread.start()
        kube.wait_for("the deletion watches' first lists", self._all_listed)
        assert self.seen() == [], "an object is being deleted before the test even starts"
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        for thread in self._threads:
            thread.join(timeout=30)
