"""Small helpers over the `kubernetes` client for the end-to-end tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e.fleet import Node, Obj

FIELD_MANAGER = "tasgen"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
T = TypeVar("T")


def apply(dyn: DynamicClient, obj: Obj) -> Obj:
    """Server-side apply as a GitOps engine does it, with tasgen's field manager."""
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    applied = resource.server_side_apply(body=obj, field_manager=FIELD_MANAGER)
    result: Obj = applied.to_dict()
    return result


def get(dyn: DynamicClient, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj:
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    found: Obj = resource.get(name=name, namespace=namespace).to_dict()
    return found


def create(dyn: DynamicClient, obj: Obj) -> Obj:
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = obj["metadata"].get("namespace")
    created: Obj = resource.create(body=obj, namespace=namespace).to_dict()
    return created


def ensure_namespace(core: client.CoreV1Api, name: str, labels: dict[str, str] | None = None) -> None:
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=labels))
    try:
        core.create_namespace(body)
    except ApiException as exc:
        if exc.status != 409:  # already there is fine
            raise


# A kubelet registers its Node with these annotations. nfd-master adds its own with JSON
# patches below /metadata/annotations, which fail on a Node that has none at all.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
KUBELET_ANNOTATIONS = {
    "node.alpha.kubernetes.io/ttl": "0",
    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
}


def create_ready_node(core: client.CoreV1Api, node: Node) -> None:
    """Register a Node with its inventory labels, then report it Ready with its allocatable,
    as a kubelet does: the status is a subresource, so it takes a second call."""
    meta = client.V1ObjectMeta(name=node.name, labels=node.labels, annotations=KUBELET_ANNOTATIONS)
    # A kubelet registers its Node with the taints it is configured with (--register-with-taints).
    taints = [client.V1Taint(key=t["key"], value=t.get("value"), effect=t["effect"]) for t in node.taints]
    core.create_node(client.V1Node(metadata=meta, spec=client.V1NodeSpec(taints=taints or None)))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "reported by the tasgen e2e tests",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    status = {"capacity": node.allocatable, "allocatable": node.allocatable, "conditions": [ready]}
    core.patch_node_status(node.name, {"status": status})
    # The API server taints every new Node not-ready; kube-controller-manager's node
    # lifecycle controller, which is not running here, lifts the taint once the Node is Ready.
    taints = core.read_node(node.name).to_dict()["spec"].get("taints") or []
    remove = [
        op
        for i, taint in reversed(list(enumerate(taints)))
        if taint["key"] == NOT_READY_TAINT
        for op in (
            {"op": "test", "path": f"/spec/taints/{i}/key", "value": NOT_READY_TAINT},
            {"op": "remove", "path": f"/spec/taints/{i}"},
        )
    ]
    if remove:
        core.patch_node(node.name, remove)  # a list body is sent as a JSON patch


def queue_flavors(dyn: DynamicClient, queue: str) -> list[str]:
    """The flavors a live ClusterQueue names, in order."""
    cq = get(dyn, KUEUE_API, "ClusterQueue", queue)
    return [f["name"] for group in cq["spec"].get("resourceGroups", []) for f in group["flavors"]]


def gone(dyn: DynamicClient, api_version: str, kind: str, name: str) -> bool | None:
    """True once the object is not found (for wait_for); None while it is there."""
    try:
        get(dyn, api_version, kind, name)
    except ApiException as exc:
        return True if exc.status == 404 else None
    return None


def count(dyn: DynamicClient, api_version: str, kind: str) -> int:
    """How many objects of the kind exist, in every namespace."""
    resource = dyn.resources.get(api_version=api_version, kind=kind)
    return len(resource.get().to_dict()["items"])


def created(dyn: DynamicClient, obj: Obj) -> datetime:
    """When the live object of a rendered one was created."""
    meta = obj["metadata"]
    live = get(dyn, obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    return datetime.fromisoformat(live["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def queue_active(dyn: DynamicClient, name: str) -> bool | None:
    """True once Kueue reports the ClusterQueue Active (for wait_for)."""
    cond = condition(get(dyn, KUEUE_API, "ClusterQueue", name), "Active")
    return True if cond and cond["status"] == "True" else None


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 90.0) -> T:
    """Poll probe until it returns something other than None or False; fail with `what`."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.5)


def condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    for cond in obj.get("status", {}).get("conditions", []) or []:
        if cond.get("type") == kind:
            found: dict[str, Any] = cond
            return found
    return None


def install_crds(dyn: DynamicClient, files: list[Path]) -> None:
    """Apply every CRD in the files, then wait until the API server serves each."""
    names = []
    for path in files:
        for crd in yaml.safe_load_all(path.read_text()):
            if crd:
                apply(dyn, crd)
                names.append(crd["metadata"]["name"])
    for name in names:
        wait_for(f"CRD {name} established", lambda n=name: _established(dyn, n))


def _established(dyn: DynamicClient, name: str) -> bool | None:
    found = condition(get(dyn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name), "Established")
    return True if found and found["status"] == "True" else None
