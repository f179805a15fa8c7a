"""The gate's rendered objects installed on the real API server for a test, and the users who
write queues there: the gate's ServiceAccount (a TokenRequest token) and "alice", another
cluster administrator (impersonation)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import gate_manifests
from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    as_rendered,
    cluster_queue,
    kubeconfig_for,
    unique,
    wait_for,
)

PLURAL = "clusterqueues"


class GateInstall:
    """The gate's rendered objects for some queues, created on the server; a client per user."""

    def __init__(self, admin: client.ApiClient, queues: list[str], tmp_path: Path) -> None:
        self.admin = admin
        self.name, self.namespace = unique("gate-adm"), unique("gate-adm-sys")
        self.probe = unique("gate-probe")
        manifests = gate_manifests(
            [cluster_queue(q, {}) for q in [*queues, self.probe]],
            namespace=self.namespace,
            image="example.invalid/tasgen:test",
            timeout_seconds=60,
            name=self.name,
        )
        self.objects = [
            as_rendered(m.body) for m in manifests if m.file.startswith("gate/") and m.kind != "Job"
        ]
        self.policy = next(b for b in self.objects if b["kind"] == "ValidatingAdmissionPolicy")
        self._created: list[tuple[Any, dict[str, Any]]] = []
        dyn = dynamic.DynamicClient(admin)
        for body in self.objects:
            resource = dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"])
            resource.create(body=body, namespace=body["metadata"].get("namespace"))
            self._created.append((resource, body))
        self.token = self._token()
        self.kubeconfig = kubeconfig_for(admin, tmp_path / "gate.kubeconfig", token=self.token)
        self.alice = impersonating(admin, "alice")

    def _token(self) -> str:
        request = client.CoreV1Api(self.admin).create_namespaced_service_account_token(
            self.name, self.namespace, {"spec": {"expirationSeconds": 600}}
        )
        return str(request.status.token)

    def await_active(self, kueue: Kueue) -> None:
        """The policy takes a moment to reach the admission chain: until a queue held by the
        gate's record refuses alice's change of its stop policy."""
        probe = cluster_queue(self.probe, {}, "HoldAndDrain", managed=True)
        probe["metadata"]["annotations"] = {PREVIOUS_POLICY_ANNOTATION: "None"}
        kueue.custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, probe)
        kueue.on_cleanup(
            lambda: kueue.custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, self.probe)
        )
        change = {"spec": {"stopPolicy": "None"}}
        wait_for(
            "the admission policy to refuse",
            lambda: refused(lambda: patch(self.alice, self.probe, change, dry_run="All")),
        )

    def close(self) -> None:
        for resource, body in reversed(self._created):
            meta = body["metadata"]
            with suppress(ApiException):
                resource.delete(name=meta["name"], namespace=meta.get("namespace"))
        self.alice.close()


def impersonating(admin: client.ApiClient, user: str) -> client.ApiClient:
    """A client acting as another cluster administrator (RBAC lets it do anything; only the
    admission policy can stop it)."""
    api = client.ApiClient(admin.configuration)
    api.set_default_header("Impersonate-User", user)
    api.set_default_header("Impersonate-Group", "system:masters")
    return api


def apply(api: client.ApiClient, body: dict[str, Any], manager: str = "kubectl") -> dict[str, Any]:
    """What `kubectl apply --server-side` (or a GitOps engine) sends."""
    out: dict[str, Any] = client.CustomObjectsApi(api).patch_cluster_custom_object(
        GROUP,
        VERSION,
        PLURAL,
        body["metadata"]["name"],
        body,
        field_manager=manager,
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    return out


def patch(api: client.ApiClient, name: str, body: dict[str, Any], **kw: Any) -> None:
    client.CustomObjectsApi(api).patch_cluster_custom_object(GROUP, VERSION, PLURAL, name, body, **kw)


def refused(call: Callable[[], Any]) -> str | None:
    """The admission policy's message when the call is refused, None when it went through."""
    try:
        call()
    except ApiException as err:
        if err.status == 403 and "ValidatingAdmissionPolicy" in str(err.body):
            return str(err.body)
        raise
    return None


def portable_kubeconfig(admin: client.ApiClient, token: str, path: Path) -> Path:
    """A kubeconfig with the CA inline and a bearer token, readable by any user (for the gate
    run inside its image, as uid 65532, with nothing else of this machine mounted)."""
    cfg = admin.configuration
    ca = base64.b64encode(Path(cfg.ssl_ca_cert).read_bytes()).decode()
    cluster = {"server": cfg.host, "certificate-authority-data": ca}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": cluster}],
                "users": [{"name": "t", "user": {"token": token}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
            }
        )
    )
    path.chmod(0o644)
    return path
