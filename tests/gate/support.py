"""Helpers for the gate's end-to-end tests (tests/e2e/test_gate_*.py) on the real control plane:
Kueue objects, the gate run as a subprocess, and polling."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tasgen.emit import yaml as emit_yaml
from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.e2e import kube

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
RESOURCE = "cpu"
ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def unique(prefix: str) -> str:
    """A fresh DNS-1123 name, so that tests sharing one cluster never meet."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(
    what: str, probe: Callable[[], T | None], timeout: float = 60.0, state: Callable[[], object] | None = None
) -> T:
    """Poll probe until it returns something truthy; fail with what after timeout seconds,
    and with what state() returns then (what the cluster showed instead)."""
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            shown = f"; instead: {state()}" if state is not None else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{shown}")
        time.sleep(0.2)


class Kueue:
    """The Kueue objects of one test, created through the admin client and removed after."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self._cleanup: list[Callable[[], None]] = []

    # --- objects --------------------------------------------------------------------------

    def flavor(self, name: str, spec: dict[str, Any] | None = None) -> str:
        self.custom.create_cluster_custom_object(
            GROUP,
            VERSION,
            "resourceflavors",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
                "spec": spec or {},
            },
        )
        self.on_cleanup(
            lambda: self.custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", name)
        )
        return name

    def queue(
        self, name: str, flavors: dict[str, int], policy: str = "None", *, managed: bool = False
    ) -> dict[str, Any]:
        """A ClusterQueue; managed: labelled as tasgen's, as rendered queues are."""
        body = cluster_queue(name, flavors, policy, managed=managed)
        self.custom.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", body)
        self.on_cleanup(lambda: self._delete_queue(name))
        return body

    def _delete_queue(self, name: str) -> None:
        # A managed queue that still holds reservations may be deleted only while it drains
        # (the gate's admission policy): drain it first, as its docs tell an operator to.
        with suppress(ApiException):
            self.patch_spec(name, {"stopPolicy": "HoldAndDrain"})
        self.custom.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", name)

    def namespace(self, queue: str) -> str:
        """A namespace with a LocalQueue (of the same name) pointing at queue."""
        ns = unique("gate")
        self.core.create_namespace({"metadata": {"name": ns}})
        self.on_cleanup(lambda: self.core.delete_namespace(ns))
        self.custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            ns,
            "localqueues",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": ns},
                "spec": {"clusterQueue": queue},
            },
        )
        return ns

    def workload(self, ns: str, name: str, cpu: int = 1) -> None:
        """A Workload without an owner: Kueue evicts it, nobody releases its quota until the
        test plays the job controller (release) - which makes a drain last as long as needed."""
        self.custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            ns,
            "workloads",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "Workload",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "queueName": "lq",
                    "podSets": [
                        {
                            "name": "main",
                            "count": 1,
                            "template": {"spec": _pod_spec(cpu)},
                        }
                    ],
                },
            },
        )

    def job(self, ns: str, name: str, cpu: int = 1, also: dict[str, str] | None = None) -> None:
        """A batch Job in Kueue's batch/job integration: on eviction Kueue suspends it and,
        as it has no running pods (no kubelet here), releases its quota by itself. also:
        requests of other resources (name -> quantity)."""
        client.BatchV1Api(self.api).create_namespaced_job(
            ns,
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                "spec": {
                    "suspend": True,
                    "template": {"spec": _pod_spec(cpu, also)},
                },
            },
        )

    def release(self, ns: str, name: str) -> None:
        """What a job controller does once its pods are gone: the Workload goes away."""
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, "workloads", name)

    # --- reads ----------------------------------------------------------------------------

    def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", name)
        return obj

    def workloads(self, ns: str) -> list[dict[str, Any]]:
        found = self.custom.list_namespaced_custom_object(GROUP, VERSION, ns, "workloads")
        return list(found["items"])

    def events(self, name: str) -> list[str]:
        """Reasons of the gate's Events about a queue, oldest first."""
        found = self.custom.list_namespaced_custom_object("events.k8s.io", "v1", "default", "events")["items"]
        mine = [
            e
            for e in found
            if e["regarding"].get("name") == name and e.get("reportingController", "").endswith("tasgen-gate")
        ]
        return [e["reason"] for e in sorted(mine, key=lambda e: e["eventTime"])]

    def seen(self, queue: str, ns: str) -> str:
        """A queue's status and its namespace's Workloads' conditions, for a failure message."""
        cq = self.get(queue)
        shown = [
            (
                w["metadata"]["name"],
                [
                    (c["type"], c["status"], c.get("reason"), c.get("message"))
                    for c in w.get("status", {}).get("conditions", [])
                ],
            )
            for w in self.workloads(ns)
        ]
        generation = cq["metadata"]["generation"]
        return f"queue {queue} generation {generation} status {cq.get('status')}; workloads in {ns}: {shown}"

    def current(self, name: str) -> dict[str, Any] | None:
        """The queue once Kueue's status describes its current generation."""
        cq = self.get(name)
        active = condition(cq, "Active")
        ok = active and active.get("observedGeneration") == cq["metadata"]["generation"]
        return cq if ok else None

    def reserving(self, name: str, count: int) -> dict[str, Any] | None:
        cq = self.current(name)
        return cq if cq and cq["status"].get("reservingWorkloads", 0) == count else None

    def apply_rendered(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the GitOps engine does in the wave after the gate: server-side apply of the
        rendered queue, as another field manager."""
        name = body["metadata"]["name"]
        out: dict[str, Any] = self.custom.patch_cluster_custom_object(
            GROUP,
            VERSION,
            "clusterqueues",
            name,
            body,
            field_manager="gitops-engine",
            force=True,
            _content_type="application/apply-patch+yaml",
        )
        return out

    def patch_spec(self, name: str, spec: dict[str, Any]) -> None:
        self.custom.patch_cluster_custom_object(GROUP, VERSION, "clusterqueues", name, {"spec": spec})

    # --- cleanup --------------------------------------------------------------------------

    def on_cleanup(self, fn: Callable[[], None]) -> None:
        self._cleanup.append(fn)

    def close(self) -> None:
        for fn in reversed(self._cleanup):
            with suppress(ApiException):
                fn()


def _pod_spec(cpu: int, also: dict[str, str] | None = None) -> dict[str, Any]:
    """One container asking for ``cpu`` of the test resource (and ``also``); no image is ever
    pulled here."""
    requests = {RESOURCE: str(cpu), **(also or {})}
    return {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "registry.invalid/none", "resources": {"requests": requests}}],
    }


#: On the queues of the tests' own gate installs. The shared control plane also carries the
#: example's gate, whose policy guards every queue labelled as tasgen's (one install per
#: cluster, docs/explanation/gate.md); the e2e fixture that applies the example binds that
#: policy to queues without this label, so the two installs do not judge each other's queues.
OWN_INSTALL_LABEL = "e2e.tasgen.test/own-gate"


def cluster_queue(
    name: str, flavors: dict[str, int], policy: str = "None", *, managed: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {"namespaceSelector": {}, "stopPolicy": policy}
    if flavors:
        spec["resourceGroups"] = [
            {
                "coveredResources": [RESOURCE],
                "flavors": [
                    {"name": f, "resources": [{"name": RESOURCE, "nominalQuota": str(q)}]}
                    for f, q in flavors.items()
                ],
            }
        ]
    meta: dict[str, Any] = {"name": name}
    if managed:
        meta["labels"] = {"app.kubernetes.io/managed-by": "tasgen", OWN_INSTALL_LABEL: "true"}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": meta, "spec": spec}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    """The condition of that type, from Kueue's status or ours; None when absent."""
    return kube.condition({"status": obj.get("status") or {}}, kind)


def flavors_of(cq: dict[str, Any]) -> dict[str, str]:
    return {
        f["name"]: str(f["resources"][0]["nominalQuota"])
        for g in cq["spec"].get("resourceGroups") or []
        for f in g["flavors"]
    }


def recorded(cq: dict[str, Any]) -> str | None:
    return (cq["metadata"].get("annotations") or {}).get(PREVIOUS_POLICY_ANNOTATION)


def admitted_on(wl: dict[str, Any]) -> str | None:
    """The flavor a Workload's quota is reserved on, if any."""
    admission = (wl.get("status") or {}).get("admission")
    if not admission:
        return None
    flavors = admission["podSetAssignments"][0].get("flavors") or {}
    return str(flavors.get(RESOURCE)) if RESOURCE in flavors else None


# --- Kueue's status held back ---------------------------------------------------------------


def block_current_status(api: client.ApiClient, cq: str) -> str:
    """A ValidatingAdmissionPolicy that refuses any status write making this queue's Active
    condition current: Kueue's status then stays one generation behind, deterministically,
    while the gate's own condition (which leaves Active alone) is still accepted."""
    return _block_status(
        api,
        cq,
        "!has(object.status) || !has(object.status.conditions) || "
        "!object.status.conditions.exists(c, c.type == 'Active' && "
        "has(c.observedGeneration) && "
        "c.observedGeneration == object.metadata.generation)",
    )


def block_reserving_status(api: client.ApiClient, cq: str) -> str:
    """A ValidatingAdmissionPolicy that refuses any status write counting a reserving workload
    on this queue: Kueue's status then reports the queue idle, current, while Kueue admits
    onto it. The instant between Kueue's admission and its status write, made to last."""
    return _block_status(
        api,
        cq,
        "!has(object.status) || !has(object.status.reservingWorkloads) || "
        "object.status.reservingWorkloads == 0",
    )


def _block_status(api: client.ApiClient, cq: str, allowed: str) -> str:
    """A policy (and its binding) that refuses this queue's status writes unless allowed (CEL)."""
    name = unique("gate-stale")
    adm = client.AdmissionregistrationV1Api(api)
    adm.create_validating_admission_policy(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [GROUP],
                            "apiVersions": ["*"],
                            "operations": ["UPDATE"],
                            "resources": ["clusterqueues/status"],
                        }
                    ]
                },
                "matchConditions": [{"name": "this-queue", "expression": f"object.metadata.name == '{cq}'"}],
                "validations": [{"expression": allowed, "message": "test: Kueue status held back"}],
            },
        }
    )
    adm.create_validating_admission_policy_binding(
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        }
    )
    return name


def unblock(api: client.ApiClient, name: str) -> None:
    adm = client.AdmissionregistrationV1Api(api)
    adm.delete_validating_admission_policy_binding(name)
    adm.delete_validating_admission_policy(name)


# --- the gate as a subprocess ---------------------------------------------------------------


def as_rendered(body: dict[str, Any]) -> dict[str, Any]:
    """An object as rendered/ holds it: values of YAML documents (a ConfigMap's plan or keep
    list) written as the text the emit stage writes, ready for the API server."""
    loaded: dict[str, Any] = yaml.safe_load(emit_yaml.dump(body))
    return loaded


def kubeconfig_for(api: client.ApiClient, path: Path, token: str | None = None) -> Path:
    """A kubeconfig file for the same server as api (client certificate, or a bearer token)."""
    cfg = api.configuration
    user: dict[str, Any] = {"token": token} if token else {}
    if not token and cfg.cert_file:
        user = {"client-certificate": cfg.cert_file, "client-key": cfg.key_file}
    if not token and not user and cfg.api_key.get("authorization"):
        user = {"token": cfg.api_key["authorization"].removeprefix("Bearer ")}
    cluster: dict[str, Any] = {"server": cfg.host}
    if cfg.ssl_ca_cert:
        cluster["certificate-authority"] = cfg.ssl_ca_cert
    else:
        cluster["insecure-skip-tls-verify"] = True
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": cluster}],
                "users": [{"name": "t", "user": user}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
            }
        )
    )
    return path


def write_plan(path: Path, queues: Sequence[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(list(queues)))
    return path


def gate_command(kubeconfig: Path, plan: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tasgen.gate",
        "--plan",
        str(plan),
        "--kubeconfig",
        str(kubeconfig),
        "--poll-interval",
        "0.3",
        *args,
    ]


class GateRun:
    """A finished gate run: exit code and its JSON log lines."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err
        self.lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]

    def actions(self) -> list[str]:
        return [ln["action"] for ln in self.lines if ln["event"] == "decision"]

    def updates(self) -> list[str]:
        return [ln["action"] for ln in self.lines if ln["event"] == "updated"]

    def __repr__(self) -> str:
        return f"GateRun(code={self.code}, out={self.out[-3000:]!r}, err={self.err[-3000:]!r})"


def run_gate(kubeconfig: Path, plan: Path, *args: str, limit: float = 120.0) -> GateRun:
    proc = subprocess.run(
        gate_command(kubeconfig, plan, *args),
        capture_output=True,
        text=True,
        timeout=limit,
        cwd=ROOT,
        env=_env(),
        check=False,
    )
    return GateRun(proc.returncode, proc.stdout, proc.stderr)


@contextmanager
def gate_process(kubeconfig: Path, plan: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """The gate running in the background; killed (if still running) on exit."""
    proc = subprocess.Popen(
        gate_command(kubeconfig, plan, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KUBERNETES_SERVICE_HOST", None)  # never mistake the test runner for a Pod
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class _Garbage(http.server.BaseHTTPRequestHandler):
    """An API server that answers every request with something that is not an object."""

    def do_GET(self) -> None:
        body = b"[1, 2, 3]"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet


@contextmanager
def garbage_api_server() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 whose answers the gate cannot read (a crash, exit 3):
    its URL while it runs."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
