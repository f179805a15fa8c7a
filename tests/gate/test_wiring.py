"""The gate's objects: what rendered/gate/ holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tasgen.compile.gate_wiring import PLAN_HASH_ANNOTATION, PLAN_KEY, gate_manifests
from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tasgen.gate.plan import parse_plan, plan_hash, read_plan, read_texts, same_plan_texts
from tasgen.model import Manifest
from tests.gate.support import as_rendered

WAVE = "argocd.argoproj.io/sync-wave"


def cq(name: str, flavors: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "annotations": {WAVE: "4"}},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}
                        for f in flavors
                    ],
                }
            ],
            "stopPolicy": "None",
        },
    }


def render(queues: list[dict[str, Any]], **kw: Any) -> dict[tuple[str, str], Manifest]:
    found = gate_manifests(
        queues, namespace="tasgen-system", image="ghcr.io/x/tasgen:1.0", timeout_seconds=600, **kw
    )
    return {(m.kind, m.file): m for m in found}


QUEUES = [cq("team-b", ["f2"]), cq("team-a", ["f1", "f2"])]


def test_files_are_in_the_gate_folder() -> None:
    files = {m.file for m in gate_manifests(QUEUES, namespace="n", image="i", timeout_seconds=1)}
    assert files == {
        "gate/namespace.yaml",
        "gate/serviceaccount.yaml",
        "gate/clusterrole.yaml",
        "gate/clusterrolebinding.yaml",
        "gate/role-events.yaml",
        "gate/rolebinding-events.yaml",
        "gate/role-plan.yaml",
        "gate/rolebinding-plan.yaml",
        "gate/configmap-plan.yaml",
        "gate/job.yaml",
        "gate/configmap-done.yaml",
        "gate/admissionpolicy.yaml",
        "gate/admissionpolicybinding.yaml",
    }


def test_namespace_can_be_left_out() -> None:
    found = gate_manifests(
        QUEUES, namespace="kube-system", image="i", timeout_seconds=1, create_namespace=False
    )
    assert "Namespace" not in {m.kind for m in found}


def test_cluster_role_names_only_managed_queues() -> None:
    role = render(QUEUES)[("ClusterRole", "gate/clusterrole.yaml")].body
    assert role["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues"],
            "resourceNames": ["team-a", "team-b"],
            "verbs": ["get", "update"],
        },
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["clusterqueues/status"],
            "resourceNames": ["team-a", "team-b"],
            "verbs": ["get", "patch"],
        },
        # Workloads' admissions say which flavors are idle; read-only, and only listed.
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]},
    ]


def test_no_queue_grants_nothing() -> None:
    """An empty resourceNames list would grant every queue: no queue means no rule at all."""
    assert render([])[("ClusterRole", "gate/clusterrole.yaml")].body["rules"] == []


def test_plan_role_reads_only_the_plan_configmap_and_the_job_names_it() -> None:
    """A run checks, before it writes, that the cluster's plan is still its own: get of that
    one ConfigMap, in the gate's namespace, and the Job says which one."""
    found = render(QUEUES)
    role = found[("Role", "gate/role-plan.yaml")].body
    assert role["metadata"]["namespace"] == "tasgen-system"
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["tasgen-gate-plan"],
            "verbs": ["get"],
        }
    ]
    binding = found[("RoleBinding", "gate/rolebinding-plan.yaml")].body
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "tasgen-gate", "namespace": "tasgen-system"}
    ]
    args = found[("Job", "gate/job.yaml")].body["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--plan-configmap") + 1] == "tasgen-system/tasgen-gate-plan"
    configmap = found[("ConfigMap", "gate/configmap-plan.yaml")].body
    assert configmap["metadata"]["name"] == "tasgen-gate-plan"


def test_events_role_is_namespaced_create_only() -> None:
    role = render(QUEUES, event_namespace="ev")[("Role", "gate/role-events.yaml")].body
    assert role["metadata"]["namespace"] == "ev"
    assert role["rules"] == [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}]


def test_job_is_a_wave_3_resource_between_its_wave_2_inputs_and_a_wave_4_marker() -> None:
    """Not a hook: Argo CD's RollingSync waits for a resource's health (a Job is Progressing
    until it completes), never for a hook. Force/Replace deletes and recreates it on each sync
    (what BeforeHookCreation did for the hook); no TTL, which would leave the Application
    OutOfSync (Flux adds one: test_kustomize_build). The wave-4 ConfigMap makes Argo CD's sync
    wait for the Job's health (the last wave is not waited for)."""
    found = render(QUEUES)
    job = found[("Job", "gate/job.yaml")].body
    options = "Force=true,Replace=true"
    assert job["metadata"]["annotations"] == {WAVE: "3", "argocd.argoproj.io/sync-options": options}
    assert "ttlSecondsAfterFinished" not in job["spec"]
    waves = {k: m.body["metadata"]["annotations"][WAVE] for k, m in found.items() if k[1].startswith("gate/")}
    assert waves.pop(("Job", "gate/job.yaml")) == "3"
    assert waves.pop(("ConfigMap", "gate/configmap-done.yaml")) == "4"
    assert set(waves.values()) == {"2"}
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "tasgen-gate"
    assert pod["containers"][0]["command"] == ["python", "-m", "tasgen.gate"]
    assert pod["containers"][0]["args"][:2] == ["--plan", "/etc/tasgen/plan"]
    assert "--timeout" in pod["containers"][0]["args"]


def test_plan_hash_follows_the_spec_only() -> None:
    def digest(queues: list[dict[str, Any]]) -> str:
        job = render(queues)[("Job", "gate/job.yaml")].body
        return str(job["spec"]["template"]["metadata"]["annotations"][PLAN_HASH_ANNOTATION])

    relabelled = [cq("team-b", ["f2"]), cq("team-a", ["f1", "f2"])]
    relabelled[0]["metadata"]["annotations"]["x"] = "y"
    assert digest(QUEUES) == digest(relabelled) == digest(list(reversed(QUEUES)))
    assert digest(QUEUES) != digest([cq("team-b", ["f3"]), cq("team-a", ["f1", "f2"])])


def test_configmap_plan_reads_back_with_the_gate_reader(tmp_path: Path) -> None:
    data = as_rendered(render(QUEUES)[("ConfigMap", "gate/configmap-plan.yaml")].body)["data"]
    (tmp_path / PLAN_KEY).write_text(data[PLAN_KEY])
    (tmp_path / "..data").mkdir()  # what a ConfigMap volume also holds
    plan = read_plan(tmp_path)
    assert sorted(plan) == ["team-a", "team-b"]
    assert plan["team-a"]["spec"] == QUEUES[1]["spec"]


def test_name_sets_every_object_and_reference() -> None:
    found = gate_manifests(QUEUES, namespace="ns", image="i", timeout_seconds=1, name="g2")
    names = {(m.kind, m.name) for m in found if m.file.startswith("gate/")}
    assert names == {
        ("Namespace", "ns"),
        ("ServiceAccount", "g2"),
        ("ClusterRole", "g2"),
        ("ClusterRoleBinding", "g2"),
        ("Role", "g2"),
        ("RoleBinding", "g2"),
        ("Role", "g2-plan"),
        ("RoleBinding", "g2-plan"),
        ("ConfigMap", "g2-plan"),
        ("ConfigMap", "g2-done"),
        ("Job", "g2"),
        ("ValidatingAdmissionPolicy", "g2"),
        ("ValidatingAdmissionPolicyBinding", "g2"),
    }
    job = next(m.body for m in found if m.kind == "Job")["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == "g2"
    assert job["volumes"][0]["configMap"]["name"] == "g2-plan"
    args = job["containers"][0]["args"]
    assert args[args.index("--plan-configmap") + 1] == "ns/g2-plan"
    binding = next(m.body for m in found if m.kind == "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "g2"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "g2", "namespace": "ns"}]


def test_job_fails_at_once_on_the_gates_own_verdicts_and_retries_crashes() -> None:
    """Finding 6: exit 1 (timeout, API error) and 2 (unusable plan) end the Job; a crash
    (exit 3, OOM kill) is retried once; an eviction does not count."""
    spec = render(QUEUES)[("Job", "gate/job.yaml")].body["spec"]
    assert spec["backoffLimit"] == 1
    assert spec["podFailurePolicy"]["rules"] == [
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "gate", "operator": "In", "values": [1, 2]},
        },
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"  # podFailurePolicy needs it


@pytest.mark.parametrize("timeout", [30, 600, 86400])
def test_job_deadline_never_cuts_a_runs_own_timeout_short(timeout: int) -> None:
    """Every pod the Job may start (1 + backoffLimit) gets its whole --timeout after a start
    of up to five minutes, before activeDeadlineSeconds ends the Job."""
    found = gate_manifests(QUEUES, namespace="n", image="i", timeout_seconds=timeout)
    spec = next(m.body for m in found if m.kind == "Job")["spec"]
    args = spec["template"]["spec"]["containers"][0]["args"]
    own = int(args[args.index("--timeout") + 1])
    assert own == timeout
    assert spec["activeDeadlineSeconds"] >= (spec["backoffLimit"] + 1) * (own + 300)


def test_admission_policy_covers_the_managed_queues_and_exempts_the_gate() -> None:
    found = gate_manifests(QUEUES, namespace="ns", image="i", timeout_seconds=60, name="g2")
    policy = next(m.body for m in found if m.kind == "ValidatingAdmissionPolicy")
    binding = next(m.body for m in found if m.kind == "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": "g2", "validationActions": ["Deny"]}
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    # by name and label in match conditions, never by an objectSelector that one write escapes
    assert "objectSelector" not in spec["matchConstraints"]
    (managed,) = spec["matchConditions"]
    assert managed["expression"].startswith("oldObject.metadata.name in ['team-a', 'team-b'] || ")
    assert managed["expression"].count("'app.kubernetes.io/managed-by'") == 4  # old and new object
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["UPDATE", "DELETE"]
    variables = {v["name"]: v["expression"] for v in spec["variables"]}
    assert variables["isGate"] == "request.userInfo.username == 'system:serviceaccount:ns:g2'"
    # the update rules hold for every queue the policy matches, named in this render or not
    assert "managed" not in variables
    # The policy and the gate name the gate's record alike (the compiler cannot import it).
    _, record, _, _ = spec["validations"]  # drop safety, the gate's record, the label, delete
    assert f"'{PREVIOUS_POLICY_ANNOTATION}' in object.metadata.annotations" in record["expression"]
    assert f"(annotation {PREVIOUS_POLICY_ANNOTATION})" in record["messageExpression"]
    assert policy["metadata"]["annotations"][WAVE] == "2"  # with the RBAC, before the Job


def test_the_gate_hashes_its_mounted_plan_as_the_job_template_does(tmp_path: Path) -> None:
    """The plan hash on each condition the gate writes is the Job's plan-hash annotation, and
    the ConfigMap's data is the plan the mounted folder holds."""
    found = render(QUEUES)
    configmap = as_rendered(found[("ConfigMap", "gate/configmap-plan.yaml")].body)
    folder = tmp_path / "plan"
    folder.mkdir()
    for key, text in configmap["data"].items():
        (folder / key).write_text(text)
    (folder / "..data").mkdir()  # the kubelet's own entries are not plan files
    texts = read_texts(folder)
    job = found[("Job", "gate/job.yaml")].body
    assert (
        plan_hash(parse_plan(texts, folder))
        == job["spec"]["template"]["metadata"]["annotations"][PLAN_HASH_ANNOTATION]
    )
    assert same_plan_texts(texts, configmap["data"])
    assert same_plan_texts(texts, {**configmap["data"], "kustomization.yaml": "x"})
    assert not same_plan_texts(texts, {PLAN_KEY: configmap["data"][PLAN_KEY] + "# changed\n"})
    assert not same_plan_texts(texts, None)  # the ConfigMap is gone
