"""Real Flux for the end-to-end tests: source-controller and kustomize-controller built from
tests/cluster/flux, their CRDs from the same modules, and a git repository served to them from
127.0.0.1 by git's own smart HTTP backend.

What a Flux installation would run in-cluster runs here as processes on loopback, pointed at
the test control plane with its admin kubeconfig.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests import gobuild
from tests.conftest import NOW, REPO, tasgen
from tests.e2e import harness, kube
from tests.e2e.fleet import load_fleet
from tests.e2e.kubelet import Kubelet

FLUX_MODULE = gobuild.CLUSTER_DIR / "flux"
CONTROLLERS = {
    "source-controller": "github.com/fluxcd/source-controller",
    "kustomize-controller": "github.com/fluxcd/kustomize-controller",
}
NAMESPACE = "flux-system"
ROOT = "tasgen-wiring"  # the user's own Kustomization of rendered/flux/ (root_kustomization)
SERVICE_ACCOUNT = "tasgen-flux"  # what rendered/flux/rbac.yaml grants; every Kustomization runs as it
START_TIMEOUT_S = 120


def build() -> Path:
    return gobuild.build_tools(FLUX_MODULE, CONTROLLERS)


def crd_files() -> list[Path]:
    found = []
    for module in CONTROLLERS.values():
        found += sorted((gobuild.module_dir(FLUX_MODULE, module) / "config" / "crd" / "bases").glob("*.yaml"))
    return found


def install_crds(dyn: DynamicClient) -> None:
    for path in crd_files():
        for crd in yaml.safe_load_all(path.read_text()):
            if crd:
                kube.apply(dyn, crd)
    for path in crd_files():
        name = yaml.safe_load(path.read_text())["metadata"]["name"]
        kube.wait_for(f"CRD {name} established", lambda n=name: _established(dyn, n))


def _established(dyn: DynamicClient, name: str) -> bool | None:
    crd = kube.get(dyn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    condition = kube.condition(crd, "Established")
    return True if condition and condition["status"] == "True" else None


#: every port free_port has handed out in this test run
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port nothing listens on, never one handed out before in this run: the
    socket that found it is closed before the component binds, and the kernel may offer a
    just-closed port again, so two components started together could otherwise get one."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


@dataclass
class Controllers:
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def check(self) -> None:
        for process, log in zip(self.processes, self.logs, strict=True):
            if process.poll() is not None:
                raise harness.ClusterError(
                    f"{log.stem} exited with {process.returncode}; {log}:\n{harness.tail(log)}"
                )


def start(bin_dir: Path, kubeconfig: Path, work_dir: Path) -> Controllers:
    """Both controllers on 127.0.0.1; logs in work_dir/<name>.log. Dependencies are looked at
    again every 2 s (30 s in a default installation) to keep the tests short."""
    storage = free_port()
    (work_dir / "storage").mkdir(exist_ok=True)
    common = ["--metrics-addr=0", "--log-level=info", "--requeue-dependency=2s"]
    args = {
        "source-controller": [
            f"--storage-path={work_dir / 'storage'}",
            f"--storage-addr=127.0.0.1:{storage}",
            f"--storage-adv-addr=127.0.0.1:{storage}",
        ],
        "kustomize-controller": [],
    }
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), RUNTIME_NAMESPACE=NAMESPACE)
    controllers = Controllers()
    for name, extra in args.items():
        health = f"--health-addr=127.0.0.1:{free_port()}"
        controllers.logs.append(work_dir / f"{name}.log")
        with controllers.logs[-1].open("wb") as log:
            controllers.processes.append(
                subprocess.Popen(
                    [str(bin_dir / name), *common, health, *extra],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=env,
                    start_new_session=True,
                )
            )
    time.sleep(2)
    try:
        controllers.check()
    except harness.ClusterError:
        controllers.stop()
        raise
    return controllers


# --- git over smart HTTP ------------------------------------------------------------------


class _GitHandler(BaseHTTPRequestHandler):
    """git http-backend behind a tiny CGI bridge: what a git host does for clones."""

    root: Path

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet test output

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while (size := int(self.rfile.readline().strip() or b"0", 16)) > 0:
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self) -> None:
        path, _, query = self.path.partition("?")
        body = self._body()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": "127.0.0.1",
        }
        done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
        head, payload = _split_cgi(done.stdout)
        headers = [line.split(":", 1) for line in head.decode("latin-1").splitlines() if ":" in line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        self.send_response(status)
        for key, value in headers:
            if key.lower() != "status":
                self.send_header(key, value.strip())
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _split_cgi(out: bytes) -> tuple[bytes, bytes]:
    """A CGI answer's header block and body (the blank line may be CRLF or LF)."""
    ends = [(i, len(sep)) for sep in (b"\r\n\r\n", b"\n\n") if (i := out.find(sep)) >= 0]
    if not ends:
        return out, b""
    i, width = min(ends)
    return out[:i], out[i + width :]


@dataclass
class GitServer:
    """Bare repositories under root, served at http://127.0.0.1:<port>/<name>.git."""

    root: Path
    server: ThreadingHTTPServer | None = None

    def start(self) -> GitServer:
        handler = type("Handler", (_GitHandler,), {"root": self.root})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def url(self, name: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}.git"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def git(cwd: Path, *args: str) -> str:
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="tasgen tests",
        GIT_AUTHOR_EMAIL="tests@tasgen.invalid",
        GIT_COMMITTER_NAME="tasgen tests",
        GIT_COMMITTER_EMAIL="tests@tasgen.invalid",
    )
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@dataclass
class Repo:
    """A working copy whose commits are pushed to a bare repository the server serves."""

    work: Path
    bare: Path

    @staticmethod
    def create(server_root: Path, work: Path, name: str = "fleet") -> Repo:
        bare = server_root / f"{name}.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
        work.mkdir(parents=True, exist_ok=True)
        git(work, "init", "-q", "-b", "main")
        git(work, "remote", "add", "origin", str(bare))
        return Repo(work, bare)

    def commit(self, message: str) -> str:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", "origin", "main")
        return git(self.work, "rev-parse", "HEAD")

    def render_and_commit(self, message: str) -> str:
        """`tasgen render` of the working copy's inventories/ into its rendered/, committed and
        pushed: the revision."""
        inventory, rendered = self.work / "inventories", self.work / "rendered"
        run = tasgen("render", "-i", str(inventory), "-o", str(rendered), "--now", NOW)
        assert run.exit_code == 0, run.output
        return self.commit(message)

    def drop_hardware(self, queue: str, product: str) -> None:
        """Remove one hardware entry (by GPU product) from a queue plan of the example."""
        plan = self.work / "inventories" / "queues" / f"{queue}.yaml"
        text = plan.read_text()
        entry = f"    - identity:\n        nvidia.com/gpu.product: {product}\n"
        assert entry in text
        plan.write_text(text.replace(entry, ""))


def git_repository(url: str, name: str = "flux-system") -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"interval": "5s", "url": url, "ref": {"branch": "main"}},
    }


def root_kustomization(path: str, source: str = "flux-system") -> dict[str, Any]:
    """What a user adds to their Flux bootstrap (deploy/flux/kustomization.yaml of `tasgen
    init`): a Kustomization of rendered/flux/, running as the rendered ServiceAccount."""
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "tasgen-wiring", "namespace": NAMESPACE},
        "spec": {
            "interval": "10s",
            "path": path,
            "prune": True,
            "sourceRef": {"kind": "GitRepository", "name": source},
            "serviceAccountName": SERVICE_ACCOUNT,
        },
    }


def rbac(wiring: Path) -> list[dict[str, Any]]:
    """rendered/flux/rbac.yaml: what an administrator applies before the first sync."""
    return [d for d in yaml.safe_load_all((wiring / "rbac.yaml").read_text()) if d]


def apply_rbac(dyn: DynamicClient, wiring: Path) -> None:
    """As an administrator does (kubectl apply, in file order: the namespace its RoleBinding
    goes to first), and once the admission policy in it is in force."""
    kube.ensure_namespace(client.CoreV1Api(dyn.client), NAMESPACE)
    for obj in rbac(wiring):
        kube.apply(dyn, obj)
    kube.wait_for("Flux's wiring policy to be in force", lambda: wiring_policy_enforced(dyn))


def wiring_policy_enforced(dyn: DynamicClient) -> bool:
    """The API server refuses, as the rendered ServiceAccount, a Kustomization that would run
    as another account (a dry run: nothing is written)."""
    probe = root_kustomization("./nowhere")
    probe["metadata"]["name"] = "tasgen-policy-probe"
    probe["spec"]["serviceAccountName"] = "kustomize-controller"
    resource = dyn.resources.get(api_version=probe["apiVersion"], kind=probe["kind"])
    user = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
    try:
        resource.create(
            body=probe,
            namespace=NAMESPACE,
            query_params=[("dryRun", "All")],
            header_params={"Impersonate-User": user},
        )
    except ApiException as exc:
        return exc.status == 422  # refused by the policy (403, RBAC's refusal, is not that)
    return False


def setup(dyn: DynamicClient, url: str, wiring_path: str, wiring: Path) -> None:
    apply_rbac(dyn, wiring)
    kube.apply(dyn, git_repository(url))
    kube.apply(dyn, root_kustomization(wiring_path))


def ready_at(obj: dict[str, Any], revision: str) -> bool:
    ready = kube.condition(obj, "Ready")
    applied = str(obj.get("status", {}).get("lastAppliedRevision", ""))
    return bool(ready and ready["status"] == "True" and applied.endswith(revision))


def kustomizations(dyn: DynamicClient) -> list[dict[str, Any]]:
    resource = dyn.resources.get(api_version="kustomize.toolkit.fluxcd.io/v1", kind="Kustomization")
    found: list[dict[str, Any]] = resource.get(namespace=NAMESPACE).to_dict()["items"]
    return found


def wait_synced(
    dyn: DynamicClient, revision: str, names: set[str], controllers: Controllers, timeout: float
) -> list[dict[str, Any]]:
    """Until every named Kustomization is Ready at the revision; their final state."""

    def probe() -> list[dict[str, Any]] | None:
        controllers.check()
        found = {k["metadata"]["name"]: k for k in kustomizations(dyn)}
        if names <= set(found) and all(ready_at(found[n], revision) for n in names):
            return [found[n] for n in sorted(names)]
        return None

    return kube.wait_for(f"Flux Kustomizations {sorted(names)} Ready at {revision[:8]}", probe, timeout)


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True)


# --- what the API server wrote, in its order ----------------------------------------------


class History(threading.Thread):
    """Every version of one object, in the order the API server wrote them: a list, then a
    watch resumed from the last resourceVersion seen. Tests assert the order of what happened
    on the versions themselves, not on when they polled."""

    def __init__(
        self, api: client.ApiClient, resource: tuple[str, str, str], name: str, namespace: str = ""
    ) -> None:
        super().__init__(daemon=True)
        custom = client.CustomObjectsApi(api)
        self._list, self._args = (
            (custom.list_namespaced_custom_object, (resource[0], resource[1], namespace, resource[2]))
            if namespace
            else (custom.list_cluster_custom_object, resource)
        )
        self._selector = f"metadata.name={name}"
        self._versions: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.gaps = 0  # relists after an expired resourceVersion: versions may be missing
        self.halt = threading.Event()
        self.listed = threading.Event()  # the first list is done: from then on, nothing is missed

    def run(self) -> None:
        version = self._relist()
        self.listed.set()
        while not self.halt.is_set():
            try:
                version = self._follow(version)
            except client.exceptions.ApiException as exc:
                if exc.status != 410:
                    raise
                self.gaps += 1
                version = self._relist()

    def _relist(self) -> str:
        listed = self._list(*self._args, field_selector=self._selector)
        for item in listed["items"]:
            self._keep(item)
        return str(listed["metadata"]["resourceVersion"])

    def _follow(self, version: str) -> str:
        """One watch request (it ends after a few seconds, so that halt is seen)."""
        stream = watch.Watch().stream(
            self._list,
            *self._args,
            field_selector=self._selector,
            resource_version=version,
            timeout_seconds=3,
            allow_watch_bookmarks=True,
        )
        for event in stream:
            obj = event["object"]
            version = obj["metadata"]["resourceVersion"]
            if event["type"] in ("ADDED", "MODIFIED"):
                self._keep(obj)
        return version

    def _keep(self, obj: dict[str, Any]) -> None:
        with self._lock:
            if (
                not self._versions
                or self._versions[-1]["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]
            ):
                self._versions.append(obj)

    def versions(self) -> list[dict[str, Any]]:
        if not self.is_alive() and not self.halt.is_set():
            raise AssertionError(f"the watch of {self._selector} stopped; versions are missing")
        with self._lock:
            return list(self._versions)

    def __enter__(self) -> History:
        self.start()
        kube.wait_for("the watch's first list", lambda: self.versions() or None)
        return self

    def __exit__(self, *exc: object) -> None:
        self.halt.set()
        self.join(timeout=30)


KUSTOMIZATIONS = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")


def kustomization_history(api: client.ApiClient, name: str) -> History:
    return History(api, KUSTOMIZATIONS, name, NAMESPACE)


# --- the wiring tasgen renders --------------------------------------------------------------


def wiring(rendered: Path) -> list[dict[str, Any]]:
    """The Kustomizations of rendered/flux/, in the order their dependsOn chains them."""
    found = [
        doc
        for path in sorted((rendered / "flux").glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "Kustomization"
    ]
    return sorted(found, key=lambda k: _depth(k, {d["metadata"]["name"]: d for d in found}))


def _depth(kustomization: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> int:
    needs = [by_name[d["name"]] for d in kustomization["spec"].get("dependsOn", []) if d["name"] in by_name]
    return 1 + max((_depth(d, by_name) for d in needs), default=0)


def step_of(rendered: Path, folder: str) -> str:
    """The name of the Kustomization that syncs rendered/<folder>."""
    (name,) = [k["metadata"]["name"] for k in wiring(rendered) if Path(k["spec"]["path"]).name == folder]
    return str(name)


def request_reconcile(dyn: DynamicClient, name: str) -> str:
    """What `flux reconcile kustomization NAME` does: a requestedAt annotation; its value,
    which the Kustomization's status.lastHandledReconcileAt echoes once handled."""
    token = datetime.now(UTC).isoformat(timespec="microseconds")
    resource = dyn.resources.get(api_version="kustomize.toolkit.fluxcd.io/v1", kind="Kustomization")
    body = {"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": token}}}
    resource.patch(name=name, namespace=NAMESPACE, body=body, content_type="application/merge-patch+json")
    return token


# --- everything together ------------------------------------------------------------------


@dataclass
class FluxEnv:
    """A control plane of its own (the tests' syncs would collide with the session cluster's
    objects) with the Job controllers, Flux on it, a git server, and a kubelet stand-in that
    runs the gate's and the retire step's Pods."""

    cluster: harness.Cluster
    api: client.ApiClient
    dyn: DynamicClient
    controllers: Controllers
    server: GitServer
    runner: Kubelet
    repo: Repo

    @staticmethod
    @contextlib.contextmanager
    def running(work: Path, label_namespaces: list[str], gate_namespace: str) -> Iterator[FluxEnv]:
        control_plane, controllers_bin = harness.build(), build()
        (work / "cluster").mkdir()
        # The real Job controller, TTL controller and garbage collector: Flux waits on Job
        # status that kube-controller-manager's code writes; only the kubelet is played.
        cluster = harness.start(control_plane, work / "cluster", label_namespaces, controllers=["job"])
        stack = contextlib.ExitStack()
        stack.callback(cluster.stop)
        try:
            api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
            stack.callback(api.close)
            dyn = DynamicClient(api)
            install_crds(dyn)
            controllers = start(controllers_bin, cluster.kubeconfig, work)
            stack.callback(controllers.stop)
            (work / "git").mkdir()
            server = GitServer(work / "git").start()
            stack.callback(server.stop)
            (work / "jobs").mkdir()
            runner = Kubelet(api, gate_namespace, work / "jobs")
            runner.start()
            stack.callback(runner.stop)
            repo = Repo.create(work / "git", work / "repo")
            yield FluxEnv(cluster, api, dyn, controllers, server, runner, repo)
        finally:
            stack.close()

    def sync(self, wiring_path: str) -> None:
        """Point Flux at the repository and at rendered/flux/, as a user's bootstrap does."""
        setup(self.dyn, self.server.url("fleet"), wiring_path, self.repo.work / wiring_path)


@contextlib.contextmanager
def example_env(work: Path) -> Iterator[FluxEnv]:
    """A FluxEnv with the example fleet's Nodes and the namespaces that exist before a sync
    (NFD's, the teams' of the LocalQueues), and a working copy holding the example's
    inventories/ and rendered/, not yet committed."""
    fleet = load_fleet()
    (jobs,) = {job["metadata"]["namespace"] for job in fleet.of_kind("Job")}  # the gate's, retire's
    with FluxEnv.running(work, fleet.nfd_label_namespaces, jobs) as env:
        prepare_example(env.api, env.repo.work)
        copy_tree(REPO / "rendered", env.repo.work / "rendered")
        yield env


def prepare_example(api: client.ApiClient, work: Path) -> None:
    """What exists before a first sync of the example: its Nodes, NFD's namespace and the
    teams' namespaces of its LocalQueues; and its inventories/ in the working copy."""
    fleet, core = load_fleet(), client.CoreV1Api(api)
    for node in fleet.nodes:
        kube.create_ready_node(core, node)
    kube.ensure_namespace(core, fleet.node_feature_namespace)  # NFD's installation owns it
    for namespace, labels in sorted(fleet.local_queue_namespaces().items()):
        kube.ensure_namespace(core, namespace, labels=labels or None)  # the teams' own
    copy_tree(REPO / "inventories", work / "inventories")


def assert_example_landed(api: client.ApiClient) -> None:
    """After a first sync of the example: every ClusterQueue Active, and nfd-master projected
    the NodeFeatures' labels onto the Nodes."""
    fleet, dyn, core = load_fleet(), DynamicClient(api), client.CoreV1Api(api)
    for queue in fleet.of_kind("ClusterQueue"):
        name = queue["metadata"]["name"]
        kube.wait_for(f"ClusterQueue {name} Active", lambda n=name: kube.queue_active(dyn, n))
    for node, labels in fleet.node_feature_labels().items():
        got = core.read_node(node).metadata.labels
        assert {k: got.get(k) for k in labels} == labels, node


def steps(env: FluxEnv) -> set[str]:
    """Every Kustomization of a sync of the working copy's rendered/: the root and the chain."""
    return {ROOT, *(k["metadata"]["name"] for k in wiring(env.repo.work / "rendered"))}
