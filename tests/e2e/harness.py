"""Build and run the tests/cluster control plane (etcd, kube-apiserver, Kueue, nfd-master;
optionally kube-controller-manager's Job controllers).

The binaries are built from the Go modules pinned in tests/cluster/go.mod and cached in
``~/.cache/tasgen-cluster/<key>/``, where the key hashes go.mod, go.sum, the harness sources
and the Go version: an unchanged checkout starts in seconds, a changed pin rebuilds (Go's own
build cache still makes that incremental).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.e2e.fleet import load_fleet

T = TypeVar("T")

CLUSTER_MODULE = Path(__file__).resolve().parents[1] / "cluster"

# Output name -> Go package. One `go build` builds them all so that Go can share and
# parallelise the work; etcd's main package is the module root, hence the explicit names.
BINARIES = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kueue": "sigs.k8s.io/kueue/cmd/kueue",
    "nfd-master": "sigs.k8s.io/node-feature-discovery/cmd/nfd-master",
    "tasgen-cluster": "./cmd/tasgen-cluster",
}
# Module -> the variable its release build stamps with the version (None: only read).
VERSIONED = {
    "k8s.io/kubernetes": None,
    "sigs.k8s.io/kueue": "sigs.k8s.io/kueue/pkg/version.GitVersion",
    "sigs.k8s.io/node-feature-discovery": "sigs.k8s.io/node-feature-discovery/pkg/version.version",
}
KUBE_VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
MODULES = {
    "kueue": "sigs.k8s.io/kueue",
    "nfd": "sigs.k8s.io/node-feature-discovery",
    # the modules of Kueue's integrations, which building Kueue downloads: their CRDs
    "jobset": "sigs.k8s.io/jobset",
    "lws": "sigs.k8s.io/lws",
    "mpi-operator": "github.com/kubeflow/mpi-operator",
    "training-operator": "github.com/kubeflow/training-operator",
    "trainer": "github.com/kubeflow/trainer/v2",
    "kuberay": "github.com/ray-project/kuberay/ray-operator",
    "appwrapper": "github.com/project-codeflare/appwrapper",
}
#: Kueue integration (framework) -> the CRD files it needs, as (module, path in the module).
#: A CRD once: mpi-operator's MPIJob (v2beta1, Kueue's) and not training-operator's (v1).
INTEGRATIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "jobset.x-k8s.io/jobset": (("jobset", "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"),),
    "leaderworkerset.x-k8s.io/leaderworkerset": (
        ("lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"),
    ),
    "kubeflow.org/pytorchjob": (("training-operator", "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"),),
    "kubeflow.org/mpijob": (("mpi-operator", "manifests/base/kubeflow.org_mpijobs.yaml"),),
    # Kueue's RayJob reconciler watches the RayClusters its RayJobs own: without their CRD it
    # never starts, and a RayJob gets no Workload
    "ray.io/rayjob": (
        ("kuberay", "config/crd/bases/ray.io_rayjobs.yaml"),
        ("kuberay", "config/crd/bases/ray.io_rayclusters.yaml"),
    ),
    "ray.io/raycluster": (("kuberay", "config/crd/bases/ray.io_rayclusters.yaml"),),
    "workload.codeflare.dev/appwrapper": (
        ("appwrapper", "config/crd/bases/workload.codeflare.dev_appwrappers.yaml"),
    ),
    "trainer.kubeflow.org/trainjob": tuple(
        ("trainer", f"manifests/base/crds/trainer.kubeflow.org_{name}.yaml")
        for name in ("trainjobs", "trainingruntimes", "clustertrainingruntimes")
    ),
    # pod groups, and the pods of StatefulSets and Deployments (which Kueue judges from the
    # objects: no controller of theirs is needed for its decision)
    "pod": (),
    "statefulset": (),
    "deployment": (),
}
KEEP_BUILDS = 3
BUILD_TIMEOUT_S = 45 * 60
START_TIMEOUT_S = 5 * 60
STOP_TIMEOUT_S = 60


class ClusterError(RuntimeError):
    """The control plane could not be built or started; the message says why."""


def entered(running: contextlib.AbstractContextManager[T]) -> Iterator[T]:
    """A test environment for a module's fixture: entered, yielded, left. A ClusterError fails
    the tests with its message (never skips them: a skipped e2e suite looks like a green one)."""
    try:
        env = running.__enter__()
    except ClusterError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield env
    finally:
        running.__exit__(None, None, None)


@dataclass(frozen=True)
class Build:
    bin_dir: Path
    module_dirs: dict[str, Path]


@dataclass
class Cluster:
    process: subprocess.Popen[bytes]
    work_dir: Path
    kubeconfig: Path
    log: Path

    def stop(self) -> None:
        """SIGTERM the harness (it stops its components in order); SIGKILL all if stuck."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # envtest starts etcd and kube-apiserver in process groups of their own,
                # so the harness's group is not enough: find them before it goes.
                stuck = descendants(self.process.pid)
                os.killpg(self.process.pid, signal.SIGKILL)
                for pid in stuck:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                self.process.wait()
        # The harness ran in its own process group: anything left in it is an orphan.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """The PIDs below pid in the process tree (Linux /proc)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            children += [int(c) for c in (task / "children").read_text().split()]
    return children + [d for child in children for d in descendants(child)]


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise ClusterError(
            "Go is not on PATH: the cluster tests build etcd, kube-apiserver, Kueue and nfd-master "
            "from tests/cluster/go.mod and need a Go toolchain (see tests/cluster/README.md)"
        )
    return go


def _run_go(args: list[str], what: str, timeout: float) -> str:
    try:
        done = subprocess.run(
            [_go(), *args],
            cwd=CLUSTER_MODULE,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{what} took longer than {timeout:.0f}s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise ClusterError(f"{what} failed (go {' '.join(args)}):\n{tail}")
    return done.stdout


def cache_key() -> str:
    digest = hashlib.sha256(_run_go(["version"], "go version", 60).encode())
    sources = [CLUSTER_MODULE / "go.mod", CLUSTER_MODULE / "go.sum"]
    sources += sorted((CLUSTER_MODULE / "cmd").rglob("*.go"))
    for path in sources:
        digest.update(str(path.relative_to(CLUSTER_MODULE)).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("TASGEN_CLUSTER_CACHE", Path(base) / "tasgen-cluster"))


def module_dirs() -> dict[str, Path]:
    """Where Go keeps the Kueue and NFD modules: their CRDs and webhook manifests come from there."""
    _run_go(["mod", "download", *MODULES.values()], "go mod download", BUILD_TIMEOUT_S)
    out = _run_go(["list", "-m", "-f", "{{.Dir}}", *MODULES.values()], "go list -m", 120)
    dirs = [Path(line) for line in out.splitlines() if line]
    return dict(zip(MODULES, dirs, strict=True))


@contextlib.contextmanager
def build_lock(root: Path, name: str) -> Iterator[None]:
    """Held while one process checks for and builds a cached component: the test workers
    and CI's early build (tests/prebuild.py) share the cache, and a second process waits for
    the first one's build rather than building the same thing again beside it."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


@contextlib.contextmanager
def cached_build(
    out: Path, lock: str, names: Iterable[str], build_into: Callable[[Path], None]
) -> Iterator[Path]:
    """``out`` holding the files ``names``, built by ``build_into`` (given a fresh folder) when
    one is missing; the build lock ``lock`` of ``out``'s folder is held until the block ends."""
    with build_lock(out.parent, lock):
        if not all((out / name).is_file() for name in names):
            # Built into a fresh folder and renamed: a killed build never leaves a half cache.
            staging = Path(tempfile.mkdtemp(prefix=f".{lock}-", dir=out.parent))
            try:
                build_into(staging)
                staging.rename(out)
            except OSError:
                if not out.is_dir():  # a build without the lock that won the rename is fine
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        yield out


def build() -> Build:
    """Build the binaries once per cache key; later calls reuse them."""
    with cached_build(cache_root() / cache_key(), "build", BINARIES, _build_into) as bin_dir:
        os.utime(bin_dir)  # marks it used, for _prune
        _prune(bin_dir.parent)
    return Build(bin_dir=bin_dir, module_dirs=module_dirs())


def _prune(root: Path) -> None:
    """Each pin's binaries take ~300 MB: keep only the most recently used few."""
    builds = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    builds.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in builds[KEEP_BUILDS:]:
        shutil.rmtree(stale, ignore_errors=True)


def _version_ldflags() -> str:
    """The -X flags that the upstream release builds set: without them kube-apiserver says
    it is v0.0.0-master, which Kueue's server-version check refuses to parse."""
    out = _run_go(["list", "-m", "-f", "{{.Path}} {{.Version}}", *VERSIONED], "go list -m", 120)
    versions = dict(line.split() for line in out.splitlines())
    kube = versions["k8s.io/kubernetes"]
    major, minor = kube.removeprefix("v").split(".")[:2]
    flags = [
        f"-X {pkg}.{k}={v}"
        for pkg in KUBE_VERSION_PACKAGES
        for k, v in (("gitVersion", kube), ("gitMajor", major), ("gitMinor", minor))
    ]
    flags += [f"-X {var}={versions[module]}" for module, var in VERSIONED.items() if var]
    return " ".join(flags)


def _build_into(out: Path) -> None:
    _run_go(
        ["build", "-trimpath", f"-ldflags=-s -w {_version_ldflags()}", "-o", f"{out}/", *BINARIES.values()],
        "building the control plane",
        BUILD_TIMEOUT_S,
    )
    # `go build -o dir/` names a binary after its package's last path element
    # (etcd's is "server", the "v3" suffix being a major version).
    for name, package in BINARIES.items():
        built = out / _default_binary_name(package)
        if built != out / name:
            built.rename(out / name)


def _default_binary_name(package: str) -> str:
    parts = package.rstrip("/").split("/")
    last = parts[-1]
    if len(parts) > 1 and last.startswith("v") and last[1:].isdigit():
        last = parts[-2]
    return last


def start(
    b: Build,
    work_dir: Path,
    extra_label_ns: list[str],
    controllers: Sequence[str] = (),
    integrations: Sequence[str] = (),
    fair_sharing: bool = False,
) -> Cluster:
    """Start the harness and wait until it writes its kubeconfig (it does so once ready).

    ``fair_sharing``: Kueue runs with its Configuration's fairSharing (off by default).

    ``integrations``: Kueue integrations of INTEGRATIONS to enable besides batch/job, with the
    CRDs they need (each once; TrainJob's needs JobSet's too). None by default.

    ``controllers``: kube-controller-manager controllers to run as well; ``"job"`` is the Job,
    TTL-after-finished and garbage collector controllers (tests/cluster/cmd/tasgen-cluster/
    jobs.go). None by default: then a Job is never run, which Kueue's batch/job integration
    tests/e2e/kubelet.py plays the kubelet.
    None by default, so that the session cluster stays what its tests were written for: Jobs
    are objects only (Kueue's batch/job integration suspends and admits them; no Pod appears)."""
    kubeconfig = work_dir / "kubeconfig"
    log = work_dir / "harness.log"
    args = [
        str(b.bin_dir / "tasgen-cluster"),
        f"-bin-dir={b.bin_dir}",
        f"-kueue-dir={b.module_dirs['kueue']}",
        f"-nfd-dir={b.module_dirs['nfd']}",
        f"-work-dir={work_dir}",
        f"-kubeconfig={kubeconfig}",
        f"-nfd-extra-label-ns={','.join(extra_label_ns)}",
        *([f"-controllers={','.join(controllers)}"] if controllers else []),
        *([f"-integrations={','.join(integrations)}"] if integrations else []),
        *(f"-crd={path}" for path in integration_crds(b, integrations)),
        *(["-kueue-fair-sharing"] if fair_sharing else []),
    ]
    with log.open("wb") as out:
        # Own session: teardown can signal the whole group, never the test runner.
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    cluster = Cluster(process=process, work_dir=work_dir, kubeconfig=kubeconfig, log=log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not kubeconfig.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            cluster.stop()
            reason = f"exited with {process.returncode}" if process.returncode else "timed out"
            raise ClusterError(f"the control plane did not start ({reason}); {log}:\n{tail(log)}")
        time.sleep(0.5)
    return cluster


def integration_crds(b: Build, integrations: Sequence[str]) -> list[Path]:
    """The CRD files the integrations need, each once, in the order of INTEGRATIONS."""
    unknown = sorted(set(integrations) - INTEGRATIONS.keys())
    if unknown:
        raise ClusterError(f"unknown Kueue integrations {unknown} (known: {sorted(INTEGRATIONS)})")
    wanted = set(integrations)
    if "trainer.kubeflow.org/trainjob" in wanted:
        wanted.add("jobset.x-k8s.io/jobset")  # a TrainJob runs as a JobSet
    files = dict.fromkeys(
        b.module_dirs[module] / path
        for name in INTEGRATIONS
        if name in wanted
        for module, path in INTEGRATIONS[name]
    )
    return list(files)


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def main() -> None:
    """`python -m tests.e2e.harness`: build (cached), start, print the kubeconfig, wait for ^C."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--work-dir", type=Path, help="data and logs (default: a new temp dir)")
    parser.add_argument("--controllers", default="", help='e.g. "job" (see start)')
    parser.add_argument(
        "--integrations", default="", help='Kueue integrations besides batch/job, or "all" (see INTEGRATIONS)'
    )
    args = parser.parse_args()
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="tasgen-cluster-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    controllers = [c for c in args.controllers.split(",") if c]
    integrations = (
        list(INTEGRATIONS) if args.integrations == "all" else [i for i in args.integrations.split(",") if i]
    )
    cluster = start(build(), work_dir, load_fleet().nfd_label_namespaces, controllers, integrations)
    print(f"export KUBECONFIG={cluster.kubeconfig}  # logs in {work_dir}; ^C stops", flush=True)
    try:
        cluster.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
