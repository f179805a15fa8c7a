"""The new rules' messages say what the issue asks of them: both places of a conflict, the
taint and the toleration to add, the namespaceSelector that fixes an unreachable queue."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import NOW, tasgen

CASES = Path(__file__).parent / "cases"


def messages(case: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    monkeypatch.chdir(CASES / case)
    run = tasgen("validate", "-i", "inventory", "--now", NOW, "--format", "json")
    found: dict[str, list[str]] = {}
    for problem in run.json()["problems"]:
        found.setdefault(problem["rule"], []).append(problem["message"])
    return found


def test_a_conflict_names_both_places(monkeypatch: pytest.MonkeyPatch) -> None:
    [tolerations, taints] = messages("invalid/flavor-settings-conflict", monkeypatch)[
        "flavor-settings-conflict"
    ]
    assert (
        "queue 'b-serving'" in tolerations
        and "queue 'a-training' (inventory/queue.yaml, spec.hardware[0])" in tolerations
    )
    assert "[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]" in tolerations
    assert "nodeTaints [{key: example.com/reserved, effect: NoSchedule}]" in taints


def test_an_untolerated_taint_names_the_toleration_to_add(monkeypatch: pytest.MonkeyPatch) -> None:
    [message] = messages("valid/taint-untolerated-warning", monkeypatch)["taint-untolerated"]
    assert "2 node(s)" in message and "e.g. gpu-a1" in message
    assert "nvidia.com/gpu=present:NoSchedule" in message
    assert "tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]" in message


def test_a_queue_without_namespace_selector_gets_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    found = messages("valid/namespace-selector-warning", monkeypatch)["namespace-selector-missing"]
    serving, training = sorted(found)
    assert "admits workloads from no namespace" in training
    assert 'operator: In, values: ["team-a", "team-b"]' in training  # its LocalQueues' namespaces
    assert "Set namespaceSelector: {} for every namespace" in serving  # no LocalQueue to go by


def test_an_unmatched_identity_says_its_limits_apply_to_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    [message] = messages("invalid/identity-unmatched-strict", monkeypatch)["identity-unmatched"]
    assert message.endswith("matches no node: it gives no flavor, so its borrowingLimit applies to nothing")
