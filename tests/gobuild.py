"""Build upstream tools from the Go modules that pin them (tests/cluster/kustomize,
tests/cluster/flux), once per pin.

Each module's go.mod lists its binaries as ``tool`` entries and go.sum pins every byte; the
binaries land in ``~/.cache/tasgen-tools/<module>-<hash of go.mod, go.sum, go version>/``
(``TASGEN_TOOLS_CACHE`` moves the folder), so a checkout that changes no pin starts at once. Not
in the control plane's folder: the harness keeps only its three newest builds there.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from tests.e2e.harness import ClusterError, cached_build

CLUSTER_DIR = Path(__file__).resolve().parent / "cluster"
BUILD_TIMEOUT_S = 45 * 60


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("TASGEN_TOOLS_CACHE", Path(base) / "tasgen-tools"))


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise ClusterError(
            "Go is not on PATH: kustomize and Flux are built from Go modules (tests/cluster/README.md)"
        )
    return go


def run_go(module: Path, args: list[str], what: str, timeout: float = BUILD_TIMEOUT_S) -> str:
    env = dict(os.environ, GOTOOLCHAIN="local")
    try:
        done = subprocess.run(
            [_go(), *args], cwd=module, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{what} took longer than {timeout:.0f}s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
        raise ClusterError(f"{what} failed (go {' '.join(args)} in {module}):\n{tail}")
    return done.stdout


def _key(module: Path) -> str:
    digest = hashlib.sha256(run_go(module, ["version"], "go version", 60).encode())
    for name in ("go.mod", "go.sum"):
        digest.update(name.encode() + b"\0" + (module / name).read_bytes())
    return digest.hexdigest()[:16]


def build_tools(module: Path, packages: dict[str, str]) -> Path:
    """Build ``packages`` (binary name -> Go package, each a ``tool`` of the module) into a
    cached folder; return it."""
    out = cache_root() / f"{module.name}-{_key(module)}"

    def build_into(staging: Path) -> None:
        for name, package in packages.items():
            args = ["build", "-trimpath", "-ldflags=-s -w", "-o", str(staging / name), package]
            run_go(module, args, f"building {name}")

    with cached_build(out, module.name, packages, build_into):
        return out


def module_dir(module: Path, path: str) -> Path:
    """Where Go keeps a module the given module requires (its CRDs are read from there)."""
    run_go(module, ["mod", "download", path], f"go mod download {path}")
    return Path(run_go(module, ["list", "-m", "-f", "{{.Dir}}", path], "go list -m", 120).strip())


def kustomize() -> Path:
    """kustomize, built from sigs.k8s.io/kustomize/kustomize/v5 (tests/cluster/kustomize)."""
    return (
        build_tools(CLUSTER_DIR / "kustomize", {"kustomize": "sigs.k8s.io/kustomize/kustomize/v5"})
        / "kustomize"
    )
