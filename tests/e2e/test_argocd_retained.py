"""WaitForIdle end to end under real Argo CD: the generated ApplicationSet (RollingSync) syncs
the example from a git repository on 127.0.0.1; the scenario is tests/e2e/retained.py's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import argocd, flux, harness, retained

pytestmark = pytest.mark.cluster

SYNC_TIMEOUT_S = 420
APPLICATIONS = ("argoproj.io", "v1alpha1", "applications")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[argocd.ArgoEnv]:
    yield from harness.entered(argocd.example_env(tmp_path_factory.mktemp("argocd-retained")))


def failures(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The operation states of an Application's versions that report a failed sync."""
    states = [(v.get("status") or {}).get("operationState") or {} for v in versions]
    return [s for s in states if s.get("phase") in ("Failed", "Error")]


def test_argocd_wait_for_idle_retires_a_busy_flavor_without_evicting(
    env: argocd.ArgoEnv, tmp_path: Path
) -> None:
    def apps() -> set[str]:
        return set(argocd.expected_applications(env.repo.work / "rendered"))

    def wait_synced(revision: str) -> object:
        return argocd.wait_synced(env.dyn, revision, apps(), env.controllers, SYNC_TIMEOUT_S)

    def syncs() -> dict[str, flux.History]:
        return {a: flux.History(env.api, APPLICATIONS, a, argocd.NAMESPACE) for a in sorted(apps())}

    engine = retained.Engine(env, lambda: argocd.apply_wiring(env), wait_synced, syncs, failures)
    with retained.team_pods(env, tmp_path) as team:
        retained.retire_a_busy_flavor_without_evicting(engine, team)
