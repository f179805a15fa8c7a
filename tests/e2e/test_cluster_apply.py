"""Every object of rendered/ is accepted by a real API server with the upstream CRDs."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e.conftest import describe
from tests.e2e.fleet import Fleet, Obj
from tests.e2e.kube import FIELD_MANAGER, get

pytestmark = pytest.mark.cluster

Applied = list[tuple[Obj, Obj | ApiException]]


def test_server_side_apply_accepts_every_rendered_object(applied: Applied) -> None:
    rejected = {
        describe(obj): f"{answer.status} {answer.reason}: {answer.body}"
        for obj, answer in applied
        if isinstance(answer, ApiException)
    }
    assert rejected == {}
    kinds = {obj["kind"] for obj, _ in applied}
    assert {"NodeFeature", "Topology", "ResourceFlavor", "ClusterQueue"} <= kinds


def test_the_server_keeps_every_field_tasgen_wrote(applied: Applied) -> None:
    """Structural schemas prune unknown fields; what tasgen wrote must all be stored."""
    for obj, answer in applied:
        assert isinstance(answer, dict), describe(obj)
        for part in ("spec", "data", "rules", "roleRef", "subjects"):
            if part in obj:
                assert _missing(obj[part], answer[part]) == [], f"{describe(obj)}.{part}"


def test_tasgen_is_the_field_manager_of_what_it_applied(applied: Applied) -> None:
    for obj, answer in applied:
        assert isinstance(answer, dict), describe(obj)
        managers = {(m["manager"], m["operation"]) for m in answer["metadata"]["managedFields"]}
        assert (FIELD_MANAGER, "Apply") in managers, describe(obj)


def _missing(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of values that were sent but are not stored as sent (defaults may be added)."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [p for key, value in sent.items() for p in _missing(value, stored.get(key), f"{path}.{key}")]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        pairs = enumerate(zip(sent, stored, strict=True))
        return [p for i, (a, b) in pairs for p in _missing(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [path]


@pytest.mark.usefixtures("synced")
def test_kueue_converts_the_rendered_queues_for_v1beta1_readers(dyn: DynamicClient, fleet: Fleet) -> None:
    """v1beta1 is still served: reading it goes through Kueue's conversion webhook, which
    renames v1beta2's cohortName back to cohort."""
    for queue in fleet.of_kind("ClusterQueue"):
        old = get(dyn, "kueue.x-k8s.io/v1beta1", "ClusterQueue", queue["metadata"]["name"])
        assert old["apiVersion"] == "kueue.x-k8s.io/v1beta1"
        assert old["spec"].get("cohort") == queue["spec"].get("cohortName")
        assert "cohortName" not in old["spec"]
