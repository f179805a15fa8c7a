"""Build every Go component the suite runs, ahead of the tests: `python -m tests.prebuild`.

.ci/test (the suite as the Quick start and CI run it) starts it in the background first, so
that on a fresh machine the module downloads and builds overlap with the tests that need none of
them. It builds into the same caches as the tests' own fixtures (tests/e2e/harness.py,
tests/gobuild.py), under the same locks: a test that needs a component still being built waits
for it, and nothing is built twice. With warm caches it only checks them. Figures:
CONTRIBUTING.md, section CI.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests import gobuild
from tests.e2e import argocd, flux, harness

# Every module's dependencies, downloaded at once (the network, not the CPU, is what a first
# download waits on), while the builds take the CPU one at a time: the control plane first
# (every end-to-end test needs it), then what the first tests to run need.
MODULES = [
    harness.CLUSTER_MODULE,
    gobuild.CLUSTER_DIR / "kustomize",
    argocd.ARGOCD_MODULE,
    flux.FLUX_MODULE,
]
BUILDS: list[tuple[str, Callable[[], object]]] = [
    ("the control plane", harness.build),
    ("kustomize", gobuild.kustomize),
    ("Argo CD", lambda: (argocd.build(), argocd.manifests())),
    ("Flux", lambda: (flux.build(), flux.crd_files())),
]


def _timed(what: str, step: Callable[[], object]) -> bool:
    started = time.monotonic()
    try:
        step()
    except harness.ClusterError as exc:
        # Not fatal here: the tests that need it build it again and fail with this message.
        print(f"prebuild: {what} failed after {time.monotonic() - started:.0f}s: {exc}", flush=True)
        return False
    print(f"prebuild: {what} ready in {time.monotonic() - started:.0f}s", flush=True)
    return True


def _download(module: Path) -> bool:
    return _timed(
        f"go mod download in {module.name}",
        lambda: gobuild.run_go(module, ["mod", "download"], "go mod download"),
    )


def main() -> int:
    with ThreadPoolExecutor(len(MODULES)) as pool:
        downloads = [pool.submit(_download, module) for module in MODULES]
        built = [_timed(what, step) for what, step in BUILDS]
        fetched = [d.result() for d in downloads]
    return 0 if all(built + fetched) else 1


if __name__ == "__main__":
    sys.exit(main())
