"""What a cluster adds to a workload's PodSets (tasgen fit --kubeconfig): LimitRange container
defaults and RuntimeClass overhead as Kueue's AdjustResources applies them, and training
runtimes for TrainJobs. The expected requests are worked out by hand in each test."""

from __future__ import annotations

from typing import Any

from tasgen.fit.kinds import ClusterFacts, workloads
from tasgen.load.files import InputFile, load_file

JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: ml, labels: {kueue.x-k8s.io/queue-name: training}}
spec:
  template:
    spec:
      runtimeClassName: kata
      containers:
        - name: bare
        - name: own
          resources: {requests: {cpu: "3"}, limits: {nvidia.com/gpu: "2"}}
"""


def _limit_range(name: str, default: dict[str, str], request: dict[str, str]) -> dict[str, Any]:
    item = {"type": "Container", "default": default, "defaultRequest": request}
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": {"limits": [{"type": "Pod"}, item]}}


def _requests(text: str, facts: ClusterFacts | None) -> list[dict[str, int]]:
    loaded = load_file(InputFile("w.yaml", "w.yaml", text.encode()))
    found, problems = workloads(loaded.documents, facts)
    assert not problems, problems
    return [dict(ps.requests) for w in found for ps in w.podsets]


def test_limit_range_defaults_and_runtime_class_overhead_count_as_kueue_counts_them() -> None:
    facts = ClusterFacts(
        limit_ranges={
            "ml": (
                _limit_range("a", {"nvidia.com/gpu": "1"}, {"cpu": "500m"}),
                _limit_range("b", {"nvidia.com/gpu": "4", "memory": "1Gi"}, {"cpu": "2"}),
            ),
            "other": (_limit_range("c", {"nvidia.com/gpu": "8"}, {}),),
        },
        runtime_classes={"kata": {"metadata": {"name": "kata"}, "overhead": {"podFixed": {"cpu": "250m"}}}},
    )
    # bare: gpu limit 1 (range a first), memory limit 1Gi (b), cpu request 500m (a); limits
    # count as the missing requests. own: cpu 3 and gpu 2 as given, memory 1Gi from b.
    # The pod: the two containers' sums plus the RuntimeClass's 250m.
    expected = {"cpu": 500 + 3000 + 250, "nvidia.com/gpu": 1 + 2, "memory": 2 * 2**30}
    assert _requests(JOB, facts) == [expected]
    assert _requests(JOB, None) == [{"cpu": 3000, "nvidia.com/gpu": 2}]


def test_a_pod_that_states_its_overhead_keeps_it() -> None:
    text = JOB.replace("runtimeClassName: kata", "runtimeClassName: kata\n      overhead: {cpu: 1}")
    facts = ClusterFacts(runtime_classes={"kata": {"overhead": {"podFixed": {"cpu": "250m"}}}})
    assert _requests(text, facts) == [{"cpu": 3000 + 1000, "nvidia.com/gpu": 2}]


def test_a_trainjob_finds_its_runtime_on_the_cluster() -> None:
    trainjob = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: t, namespace: ml, labels: {kueue.x-k8s.io/queue-name: training}}
spec:
  runtimeRef: {name: r, kind: TrainingRuntime}
  trainer: {numNodes: 2}
"""
    node = {
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": "node", "resources": {"limits": {"cpu": "1"}}}]}
                }
            },
        },
    }
    runtime = {
        "kind": "TrainingRuntime",
        "metadata": {"name": "r", "namespace": "ml"},
        "spec": {"template": {"spec": {"replicatedJobs": [node]}}},
    }
    elsewhere = {**runtime, "metadata": {"name": "r", "namespace": "other"}}
    loaded = load_file(InputFile("w.yaml", "w.yaml", trainjob.encode()))
    found, problems = workloads(loaded.documents, ClusterFacts(runtimes=(elsewhere,)))
    assert (
        not found and "TrainingRuntime r is neither among the paths nor on the cluster" in problems[0].message
    )
    found, problems = workloads(loaded.documents, ClusterFacts(runtimes=(runtime,)))
    assert not problems
    assert [(ps.name, ps.count, dict(ps.requests)) for ps in found[0].podsets] == [("node", 2, {"cpu": 1000})]
