"""Which flavors Workloads hold, read from their status.admission as Kueue writes it."""

from __future__ import annotations

from typing import Any

from tasgen.gate.admissions import any_holder, flavors_of, held_flavors, held_resources, holders


def _workload(name: str, queue: str, *assignments: dict[str, str], finished: bool = False) -> dict[str, Any]:
    status: dict[str, Any] = {
        "admission": {
            "clusterQueue": queue,
            "podSetAssignments": [
                {"name": f"ps{i}", "flavors": flavors, "count": 1} for i, flavors in enumerate(assignments)
            ],
        },
        "conditions": [{"type": "QuotaReserved", "status": "True"}],
    }
    if finished:
        status["conditions"].append({"type": "Finished", "status": "True"})
    return {"metadata": {"name": name, "namespace": "team"}, "status": status}


PENDING = {"metadata": {"name": "pending", "namespace": "team"}, "status": {"conditions": []}}


def test_every_podset_assignment_counts() -> None:
    w = _workload("w", "training", {"nvidia.com/gpu": "a", "cpu": "b"}, {"nvidia.com/gpu": "c"})
    assert flavors_of(w) == {"a", "b", "c"}


def test_a_finished_or_unadmitted_workload_holds_nothing() -> None:
    done = _workload("done", "training", {"nvidia.com/gpu": "a"}, finished=True)
    assert flavors_of(done) == frozenset()
    assert flavors_of(PENDING) == frozenset()
    assert held_flavors([done, PENDING]) == {}


def test_held_flavors_are_per_queue() -> None:
    workloads = [
        _workload("w1", "training", {"nvidia.com/gpu": "a"}),
        _workload("w2", "inference", {"nvidia.com/gpu": "b"}),
        _workload("w3", "training", {"nvidia.com/gpu": "c"}),
    ]
    assert held_flavors(workloads) == {"training": {"a", "c"}, "inference": {"b"}}
    assert [w["metadata"]["name"] for w in holders(workloads, "training", "a")] == ["w1"]
    assert holders(workloads, "inference", "a") == []
    assert any_holder(workloads) == {"a", "b", "c"}


def test_held_resources_pair_each_resource_with_its_flavor_for_one_queue() -> None:
    workloads = [
        _workload("w1", "training", {"nvidia.com/gpu": "a", "cpu": "b"}),
        _workload("w2", "inference", {"nvidia.com/gpu": "c"}),
        _workload("w3", "training", {"memory": "a"}, finished=True),
        PENDING,
    ]
    assert held_resources(workloads, "training") == {("a", "nvidia.com/gpu"), ("b", "cpu")}
    assert held_resources(workloads, "inference") == {("c", "nvidia.com/gpu")}
    assert held_resources(workloads, "other") == frozenset()
    assert held_resources(iter(workloads), "training") == held_resources(workloads, "training")
