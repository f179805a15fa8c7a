"""The gate's plan reader and its retry policy, without a cluster."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tasgen.gate import kube
from tasgen.gate.kube import Conflict, Deadline, with_backoff
from tasgen.gate.plan import PlanError, plan_version, read_plan
from tests.gate.support import garbage_api_server

CQ = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {}}}\nspec: {{}}\n"


def test_plan_directory_reads_yaml_files_and_skips_configmap_internals(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(CQ.format("q1") + "---\n" + CQ.format("q2"))
    (tmp_path / "b.yml").write_text(CQ.format("q3"))
    (tmp_path / "notes.txt").write_text("not a plan")
    (tmp_path / "..data").mkdir()
    (tmp_path / "..data" / "a.yaml").write_text(CQ.format("hidden"))
    (tmp_path / ".hidden.yaml").write_text(CQ.format("hidden2"))
    (tmp_path / "kustomization.yaml").write_text("kind: Kustomization\nresources: [a.yaml]\n")
    assert sorted(read_plan(tmp_path)) == ["q1", "q2", "q3"]


def test_rendered_queues_folder_is_a_plan() -> None:
    """The gate reads the queues folder of rendered/ as exactly the ClusterQueues in it."""
    rendered = Path(__file__).resolve().parents[2] / "rendered" / "queues"
    documents = [d for f in sorted(rendered.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]
    queues = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ClusterQueue"}
    assert len(queues) >= 2 and read_plan(rendered) == queues


def test_a_v1beta1_plan_is_read_and_spoken_in_v1beta1(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(CQ.format("q1").replace("v1beta2", "v1beta1"))
    plan = read_plan(path)
    assert list(plan) == ["q1"] and plan_version(plan) == "v1beta1"
    assert plan_version(read_plan(_write(tmp_path / "b.yaml", CQ.format("q2")))) == "v1beta2"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_plan_single_file_and_empty_documents(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("---\n" + CQ.format("q1") + "---\n")
    assert list(read_plan(path)) == ["q1"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (CQ.format("q1") + "---\n" + CQ.format("q1"), "appears twice"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "ClusterQueue documents only"),
        (
            "apiVersion: kueue.x-k8s.io/v1alpha1\nkind: ClusterQueue\nmetadata: {name: x}\n",
            "ClusterQueue documents only",
        ),
        (
            CQ.format("q1")
            + "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\n",
            "mixes kueue.x-k8s.io/v1beta1 and kueue.x-k8s.io/v1beta2",
        ),
        ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {}\n", "no metadata.name"),
        ("- a\n- b\n", "not a mapping"),
        ("key: [unclosed\n", re.escape("plan.yaml:1:6: invalid YAML: unclosed bracket '[' [yaml-syntax]")),
    ],
)
def test_plan_errors(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    with pytest.raises(PlanError, match=error):
        read_plan(path)


def test_plan_missing_path(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="no such file"):
        read_plan(tmp_path / "nope")


class Flaky:
    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube.time, "sleep", lambda _: None)


def test_transient_errors_are_retried() -> None:
    call = Flaky(ApiException(status=503), ApiException(status=429), ConnectionResetError())
    retried: list[Exception] = []
    assert with_backoff(call, Deadline(60), retried.append) == "ok"
    assert call.calls == 4 and len(retried) == 3


def test_conflict_is_raised_for_the_caller_to_read_again() -> None:
    with pytest.raises(Conflict):
        with_backoff(Flaky(ApiException(status=409)), Deadline(60), lambda _: None)


def test_forbidden_is_not_retried() -> None:
    call = Flaky(ApiException(status=403))
    with pytest.raises(ApiException):
        with_backoff(call, Deadline(60), lambda _: None)
    assert call.calls == 1


def test_retries_stop_at_the_deadline() -> None:
    call = Flaky(*[ApiException(status=500)] * 100)
    with pytest.raises(ApiException):
        with_backoff(call, Deadline(0.1), lambda _: None)
    assert call.calls == 1


def test_an_unexpected_error_is_one_log_line_and_exit_3(tmp_path: Path) -> None:
    """A crash (here: an answer the gate cannot read) is not one of the gate's verdicts: exit
    3, which the Job's podFailurePolicy retries, and no traceback."""
    with garbage_api_server() as url:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: t\n"
            f"clusters: [{{name: t, cluster: {{server: '{url}'}}}}]\n"
            "users: [{name: t, user: {token: x}}]\n"
            "contexts: [{name: t, context: {cluster: t, user: t}}]\n"
        )
        plan = tmp_path / "plan.yaml"
        plan.write_text(CQ.format("q1"))
        args = ["--plan", str(plan), "--kubeconfig", str(kubeconfig), "--timeout", "5"]
        proc = subprocess.run(
            [sys.executable, "-m", "tasgen.gate", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert proc.returncode == 3, proc
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [ln["event"] for ln in lines][-2:] == ["crash", "finish"]
    assert lines[-2]["error"].startswith("AttributeError")
