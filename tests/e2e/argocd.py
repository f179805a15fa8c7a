"""Real Argo CD for the end-to-end tests: application-controller, repo-server and
applicationset-controller, the one multi-call binary built from tests/cluster/argocd, its CRDs
and base configuration from the same module, Redis from the system (Debian's redis-server), and
the git server, repository and gate Job stand-in of tests/e2e/flux.py.

What an Argo CD installation runs in-cluster runs here as processes on loopback, as Argo CD's own
local development setup (its Procfile) runs them: ARGOCD_FAKE_IN_CLUSTER=true makes the in-cluster
destination, https://kubernetes.default.svc, the cluster of the KUBECONFIG file, here the test
control plane's admin kubeconfig.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.dynamic import DynamicClient

from tests import gobuild
from tests.conftest import REPO
from tests.e2e import flux, harness, kube
from tests.e2e.fleet import load_fleet
from tests.e2e.kubelet import Kubelet

ARGOCD_MODULE = gobuild.CLUSTER_DIR / "argocd"
ARGOCD = "github.com/argoproj/argo-cd/v3"
NAMESPACE = "argocd"
ARGO_API = "argoproj.io/v1alpha1"
#: How often the controllers look at git again and the ApplicationSet re-runs its generator
#: (3 min each by default): short, to keep the tests short.
RESYNC_S = 5
#: what `tasgen init` writes to deploy/argocd/argocd-cm-health.yaml (the template holds no
#: variable: tests/test_init.py checks that the scaffolded file is this text)
HEALTH_PATCH = REPO / "templates" / "init" / "argocd-cm-health.yaml.j2"


def build() -> Path:
    """The multi-call binary; each component is chosen by ARGOCD_BINARY_NAME."""
    return gobuild.build_tools(ARGOCD_MODULE, {"argocd": f"{ARGOCD}/cmd"}) / "argocd"


def manifests() -> Path:
    return gobuild.module_dir(ARGOCD_MODULE, ARGOCD) / "manifests"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def install(dyn: DynamicClient) -> None:
    """The CRDs, the base ConfigMaps and Secret of an installation, and the `default`
    AppProject that argocd-server (not run here) creates on its first start."""
    kube.ensure_namespace(client.CoreV1Api(dyn.client), NAMESPACE)
    kube.install_crds(dyn, sorted((manifests() / "crds").glob("*-crd.yaml")))
    for path in sorted((manifests() / "base" / "config").glob("argocd-*.yaml")):
        for obj in _documents(path):
            obj["metadata"]["namespace"] = NAMESPACE
            kube.apply(dyn, obj)
    kube.apply(dyn, default_project())
    # the health checks of Kueue's queues, as `tasgen init` tells a user to patch them in
    health = yaml.safe_load(HEALTH_PATCH.read_text())
    client.CoreV1Api(dyn.client).patch_namespaced_config_map("argocd-cm", NAMESPACE, health)
    # argocd-server, on its first start, also gives the installation its server key (the
    # applicationset-controller's webhook handler needs one).
    secret = {"stringData": {"server.secretkey": secrets.token_urlsafe(32)}}
    client.CoreV1Api(dyn.client).patch_namespaced_secret("argocd-secret", NAMESPACE, secret)


def default_project() -> dict[str, Any]:
    return {
        "apiVersion": ARGO_API,
        "kind": "AppProject",
        "metadata": {"name": "default", "namespace": NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }


# --- processes ----------------------------------------------------------------------------


def _spawn(controllers: flux.Controllers, argv: list[str], env: dict[str, str], log: Path) -> None:
    controllers.logs.append(log)
    with log.open("wb") as out:
        # Own session: teardown signals the whole group, never the test runner.
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    controllers.processes.append(process)


def _redis(controllers: flux.Controllers, work_dir: Path) -> str:
    redis = shutil.which("redis-server")
    if redis is None:
        raise harness.ClusterError(
            "redis-server is not on PATH (Argo CD caches in Redis): apt-get install redis-server"
        )
    port = flux.free_port()
    argv = [redis, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    _spawn(controllers, [*argv, "--dir", str(work_dir)], dict(os.environ), work_dir / "redis.log")
    return f"127.0.0.1:{port}"


def _environment(kubeconfig: Path, work_dir: Path, binary: str) -> dict[str, str]:
    """What the Procfile of Argo CD's local development setup gives every component."""
    for folder in ("tls", "ssh", "gpg-keys", "gpg-source", "tmp"):
        (work_dir / folder).mkdir(exist_ok=True)
    return dict(
        os.environ,
        ARGOCD_BINARY_NAME=binary,
        ARGOCD_FAKE_IN_CLUSTER="true",
        KUBECONFIG=str(kubeconfig),
        ARGOCD_TLS_DATA_PATH=str(work_dir / "tls"),
        ARGOCD_SSH_DATA_PATH=str(work_dir / "ssh"),
        ARGOCD_GNUPGHOME=str(work_dir / "gpg-keys"),
        ARGOCD_GPG_DATA_PATH=str(work_dir / "gpg-source"),
        ARGOCD_GPG_ENABLED="false",
        # How often the controllers compare with git, and how long the repo-server trusts its
        # resolution of a branch (both 3 min by default; argocd-cm's timeout.reconciliation).
        ARGOCD_RECONCILIATION_TIMEOUT=f"{RESYNC_S}s",
        # Else the controller's shard is read from a StatefulSet-like hostname (name-<n>).
        ARGOCD_CONTROLLER_SHARD="0",
        TMPDIR=str(work_dir / "tmp"),
    )


def start(binary: Path, kubeconfig: Path, work_dir: Path) -> flux.Controllers:
    """Redis, repo-server, application-controller and applicationset-controller (Progressive
    Syncs on) on 127.0.0.1, the repo-server's gRPC with the self-signed certificate it makes by
    default; logs in work_dir/<name>.log."""
    controllers = flux.Controllers()
    try:
        redis = _redis(controllers, work_dir)
        tools = _image_tools(work_dir)
        repo = f"127.0.0.1:{flux.free_port()}"
        components = {
            "repo-server": _repo_server_args(repo, redis),
            "application-controller": _controller_args(repo, redis),
            "applicationset-controller": _appset_args(repo),
        }
        for name, args in components.items():
            env = _environment(kubeconfig, work_dir, f"argocd-{name}")
            env["PATH"] = f"{tools}{os.pathsep}{env.get('PATH', '')}"
            env["ARGOCD_APPLICATIONSET_CONTROLLER_REQUEUE_AFTER"] = f"{RESYNC_S}s"
            argv = [str(binary), "--loglevel", "info", "--logformat", "text", *args]
            _spawn(controllers, argv, env, work_dir / f"{name}.log")
        time.sleep(3)
        controllers.check()
    except (harness.ClusterError, OSError):
        controllers.stop()
        raise
    return controllers


def _image_tools(work_dir: Path) -> Path:
    """What Argo CD's image puts on the repo-server's PATH besides git: kustomize (ours, pinned)
    and the module's two GPG wrapper scripts, which v3.5 runs for every commit it checks out
    (`git-verify-wrapper.sh`, even with GPG off: a missing one fails manifest generation with
    "permission denied")."""
    tools = work_dir / "bin"
    tools.mkdir()
    (tools / "kustomize").symlink_to(gobuild.kustomize())
    for script in ("git-verify-wrapper.sh", "gpg-wrapper.sh"):
        shutil.copyfile(manifests().parent / "hack" / script, tools / script)
        (tools / script).chmod(0o755)
    return tools


def _repo_server_args(repo: str, redis: str) -> list[str]:
    host, port = repo.split(":")
    return [
        "--address", host, "--port", port, "--redis", redis,
        "--metrics-address", "127.0.0.1", "--metrics-port", str(flux.free_port()),
    ]  # fmt: skip


def _controller_args(repo: str, redis: str) -> list[str]:
    # Its metrics server listens on 0.0.0.0:<port> (no flag binds it elsewhere): a free port.
    return [
        "--namespace", NAMESPACE, "--repo-server", repo, "--redis", redis,
        "--metrics-port", str(flux.free_port()), "--commit-server", f"127.0.0.1:{flux.free_port()}",
        "--status-processors", "2", "--operation-processors", "2",
    ]  # fmt: skip


def _appset_args(repo: str) -> list[str]:
    return [
        "--namespace", NAMESPACE, "--argocd-repo-server", repo,
        "--enable-progressive-syncs",
        "--metrics-addr", f"127.0.0.1:{flux.free_port()}", "--probe-addr", f"127.0.0.1:{flux.free_port()}",
        "--webhook-addr", f"127.0.0.1:{flux.free_port()}",
    ]  # fmt: skip


# --- reading Argo CD's objects ------------------------------------------------------------


def applications(dyn: DynamicClient) -> dict[str, dict[str, Any]]:
    resource = dyn.resources.get(api_version=ARGO_API, kind="Application")
    items: list[dict[str, Any]] = resource.get(namespace=NAMESPACE).to_dict()["items"]
    return {a["metadata"]["name"]: a for a in items}


def synced_at(app: dict[str, Any], revision: str) -> bool:
    """Synced and Healthy at the revision, no operation running, the last one succeeded. (An
    Application whose files the commit did not change is Synced at it without a new sync.)"""
    status = app.get("status", {})
    return (
        "operation" not in app
        and status.get("sync", {}).get("status") == "Synced"
        and status.get("sync", {}).get("revision") == revision
        and status.get("health", {}).get("status") == "Healthy"
        and status.get("operationState", {}).get("phase") == "Succeeded"
    )


def wait_synced(
    dyn: DynamicClient, revision: str, names: set[str], controllers: flux.Controllers, timeout: float
) -> dict[str, dict[str, Any]]:
    """Until every named Application is synced and Healthy at the revision; their state then."""

    def probe() -> dict[str, dict[str, Any]] | None:
        controllers.check()
        found = applications(dyn)
        if names <= set(found) and all(synced_at(found[n], revision) for n in names):
            return {n: found[n] for n in sorted(names)}
        return None

    return kube.wait_for(f"Argo CD Applications {sorted(names)} synced at {revision[:8]}", probe, timeout)


WIRING_KINDS = ("AppProject", "ApplicationSet")


def apply_wiring(env: ArgoEnv, kinds: tuple[str, ...] = WIRING_KINDS) -> list[dict[str, Any]]:
    """`kubectl apply -k rendered/argocd/` of the working copy, as docs/reference/rendered.md tells a user:
    kustomize builds it; the objects of the kinds applied (the ApplicationSet alone: what the
    user's Application of rendered/argocd/ syncs, the AppProject being an administrator's)."""
    built = subprocess.run(
        [str(gobuild.kustomize()), "build", str(env.repo.work / "rendered" / "argocd")],
        capture_output=True,
        text=True,
        check=True,
    )
    objects = [d for d in yaml.safe_load_all(built.stdout) if d and d["kind"] in kinds]
    for obj in objects:
        kube.apply(env.dyn, obj)
    return objects


def expected_applications(rendered: Path, prefix: str = "tasgen") -> dict[str, str]:
    """Application name -> sync step, one per path of rendered/ an engine syncs (a folder with a
    kustomization.yaml, not the engines' wiring), named as the ApplicationSet's template names
    them (the prefix, then the folder's name): read from the tree, so that a test counts what
    the render wrote."""
    found: dict[str, str] = {}
    for kustomization in sorted(rendered.rglob("kustomization.yaml")):
        step = kustomization.parent.relative_to(rendered).parts[0]
        if step not in ("flux", "argocd"):
            found[f"{prefix}-{kustomization.parent.name}"] = step
    return found


# --- everything together ------------------------------------------------------------------


@dataclass
class ArgoEnv:
    """A control plane of its own, Argo CD on it, a git server, and the Jobs' stand-in."""

    cluster: harness.Cluster
    api: client.ApiClient
    dyn: DynamicClient
    controllers: flux.Controllers
    server: flux.GitServer
    runner: Kubelet
    repo: flux.Repo

    @staticmethod
    @contextlib.contextmanager
    def running(work: Path, label_namespaces: list[str], gate_namespace: str) -> Iterator[ArgoEnv]:
        control_plane, binary = harness.build(), build()
        (work / "cluster").mkdir()
        # The real Job controllers (a hook Job deleted in the foreground needs the garbage
        # collector); only the kubelet is played.
        cluster = harness.start(control_plane, work / "cluster", label_namespaces, controllers=["job"])
        stack = contextlib.ExitStack()
        stack.callback(cluster.stop)
        try:
            api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
            stack.callback(api.close)
            dyn = DynamicClient(api)
            install(dyn)
            (work / "argocd").mkdir()
            controllers = start(binary, cluster.kubeconfig, work / "argocd")
            stack.callback(controllers.stop)
            (work / "git").mkdir()
            server = flux.GitServer(work / "git").start()
            stack.callback(server.stop)
            (work / "jobs").mkdir()
            runner = Kubelet(api, gate_namespace, work / "jobs")
            runner.start()
            stack.callback(runner.stop)
            repo = flux.Repo.create(work / "git", work / "repo")
            yield ArgoEnv(cluster, api, dyn, controllers, server, runner, repo)
        finally:
            stack.close()


#: the git host the example's GeneratorConfig names; the tests serve the repository on 127.0.0.1
EXAMPLE_REPO_URL = "https://git.example.com/platform/gpu-fleet.git"


@contextlib.contextmanager
def example_env(work: Path) -> Iterator[ArgoEnv]:
    """An ArgoEnv with what exists before a first sync of the example (flux.prepare_example)
    and a working copy holding its inventories/, the GeneratorConfig's repository URL that of
    the test's git server; not rendered, not committed."""
    fleet = load_fleet()
    (jobs,) = {job["metadata"]["namespace"] for job in fleet.of_kind("Job")}  # the gate's, retire's
    with ArgoEnv.running(work, fleet.nfd_label_namespaces, jobs) as env:
        flux.prepare_example(env.api, env.repo.work)
        settings = env.repo.work / "inventories" / "config.yaml"
        text = settings.read_text()
        assert EXAMPLE_REPO_URL in text
        settings.write_text(text.replace(EXAMPLE_REPO_URL, env.server.url("fleet")))
        yield env
