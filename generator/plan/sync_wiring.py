"""How GitOps engines sync rendered/: the Flux Kustomizations of ``rendered/flux/``.

Kept apart from the gate's own objects (gate_wiring) so that the order of the paths and the
engines' settings live in one place.
"""

from __future__ import annotations

from typing import Any

from generator.model import Manifest
from generator.plan.gate_wiring import START_GRACE_SECONDS

FLUX_API = "kustomize.toolkit.fluxcd.io/v1"
FOLDERS = ("labels", "kueue", "gate", "queues")
MANAGED_BY = {"app.kubernetes.io/managed-by": "tasgen"}


def flux_chain(repo_path: str, flux_namespace: str, flux_source: str, timeout_seconds: int) -> list[Manifest]:
    """labels -> kueue -> gate -> queues, each waiting for the one before to be Ready."""
    result: list[Manifest] = []
    for i, folder in enumerate(FOLDERS):
        spec: dict[str, Any] = {
            "interval": "10m",
            "retryInterval": "1m",
            "timeout": "5m",
            "path": f"{repo_path.rstrip('/')}/{folder}",
            "prune": True,
            "wait": True,
            "sourceRef": {"kind": "GitRepository", "name": flux_source},
        }
        if i:
            spec["dependsOn"] = [{"name": f"tasgen-{FOLDERS[i - 1]}"}]
        if folder == "gate":
            # The Job is immutable: a new plan hash in its template makes Flux recreate it.
            spec["force"] = True
            spec["timeout"] = f"{timeout_seconds + START_GRACE_SECONDS + 60}s"
        meta = {"name": f"tasgen-{folder}", "namespace": flux_namespace, "labels": dict(MANAGED_BY)}
        result.append(
            Manifest(
                f"flux/{folder}.yaml",
                {"apiVersion": FLUX_API, "kind": "Kustomization", "metadata": meta, "spec": spec},
            )
        )
    return result
