"""WaitForIdle end to end under real Flux: source-controller and kustomize-controller sync the
example from a git repository on 127.0.0.1; the scenario is tests/e2e/retained.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import flux, harness, kube, retained

pytestmark = pytest.mark.cluster

SYNC_TIMEOUT_S = 300
KUSTOMIZATIONS = ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    yield from harness.entered(flux.example_env(tmp_path_factory.mktemp("flux-retained")))


def failures(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Ready conditions of a Kustomization's versions that report a failed sync (waiting
    on a dependency or in progress is not one)."""
    found = []
    for k in versions:
        ready = kube.condition(k, "Ready") or {}
        if ready.get("status") == "False" and ready.get("reason") != "DependencyNotReady":
            found.append(ready)
    return found


def test_flux_wait_for_idle_retires_a_busy_flavor_without_evicting(env: flux.FluxEnv, tmp_path: Path) -> None:
    def wait_synced(revision: str) -> object:
        return flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)

    def syncs() -> dict[str, flux.History]:
        return {k: flux.History(env.api, KUSTOMIZATIONS, k, flux.NAMESPACE) for k in flux.steps(env)}

    engine = retained.Engine(env, lambda: env.sync("./rendered/flux"), wait_synced, syncs, failures)
    with retained.team_pods(env, tmp_path) as team:
        retained.retire_a_busy_flavor_without_evicting(engine, team)
