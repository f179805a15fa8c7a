"""tasgen plan with GeneratorConfig spec.workloads, on real git repositories: each workload
manifest judged by tasgen fit at the base and at the head, and the plan listing the new and
changed manifests and the verdicts the inventory change turns, in every format."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NOW, tasgen
from tests.plan.fleet import RACK, ZONE, Fleet, Repo
from tests.test_plan import report

GLOBS = ("workloads/**/*.yaml",)
FLEET = Fleet(local_queues=("team",), workloads=GLOBS)


def job(name: str, pods: int = 2, level: str = ZONE, queue: str = "training") -> str:
    """pods x 8 GPUs in one domain of ``level``: a zone of the fleet holds four such pods, a
    rack two."""
    return (
        "apiVersion: batch/v1\nkind: Job\n"
        f"metadata:\n  name: {name}\n  namespace: team\n  labels: {{kueue.x-k8s.io/queue-name: {queue}}}\n"
        f"spec:\n  parallelism: {pods}\n  completions: {pods}\n  template:\n"
        f"    metadata:\n      annotations: {{kueue.x-k8s.io/podset-required-topology: {level}}}\n"
        "    spec:\n      restartPolicy: Never\n      containers:\n        - name: main\n          image: x\n"
        '          resources: {requests: {nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}\n'
    )


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    made = Repo(tmp_path / "repo")
    write(made, "workloads/llama.yaml", job("llama-70b"))
    write(made, "workloads/team/small.yaml", job("small", pods=1, level=RACK))
    made.commit(FLEET, "base")
    made.git("checkout", "-q", "-b", "change")
    monkeypatch.chdir(made.root)
    return made


def write(repo: Repo, path: str, text: str) -> None:
    target = repo.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def change(repo: Repo, fleet: Fleet = FLEET) -> dict[str, Any]:
    """The fleet and the workloads the test wrote, committed on the change branch."""
    repo.commit(fleet, "change")
    data = report(repo, fleet)
    return data


def rows(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in data["workloads"]}


def test_unchanged_manifests_whose_verdict_stays_are_not_listed(repo: Repo) -> None:
    data = change(repo, FLEET.but(quota="72"))
    assert data["workloads"] == []
    assert (data["summary"]["workloadsChanged"], data["summary"]["neverFit"]) == (0, [])


def test_a_level_removed_turns_the_verdict_of_a_workload_that_requires_it(repo: Repo) -> None:
    data = change(repo, FLEET.but(levels=(RACK,)))
    llama = rows(data)["llama-70b"]
    assert llama["change"] == "verdict"
    assert (llama["file"], llama["line"], llama["column"]) == ("workloads/llama.yaml", 1, 1)
    assert (llama["kind"], llama["namespace"], llama["clusterQueue"]) == ("Job", "team", "training")
    before, after = llama["before"], llama["after"]
    assert before["fits"] and before["podSets"][0]["level"] == ZONE
    assert not after["fits"]
    assert "does not contain the requested level" in after["podSets"][0]["reason"], after
    assert data["summary"]["neverFit"] == ["Job team/llama-70b"]
    assert data["summary"]["workloadsChanged"] == 1  # small, at a rack, still fits


def test_a_new_and_a_changed_manifest_get_their_verdicts(repo: Repo) -> None:
    write(repo, "workloads/new.yaml", job("fresh", pods=1))
    write(repo, "workloads/llama.yaml", job("llama-70b", pods=5))  # more than a zone holds
    found = rows(change(repo))
    assert set(found) == {"fresh", "llama-70b"}
    assert found["fresh"]["change"] == "added" and found["fresh"]["before"] is None
    assert found["fresh"]["after"]["fits"]
    llama = found["llama-70b"]
    assert llama["change"] == "changed"
    assert llama["before"]["fits"] and not llama["after"]["fits"]
    assert llama["after"]["podSets"][0]["count"] == 5


def test_a_comment_is_no_change_of_the_manifest(repo: Repo) -> None:
    write(repo, "workloads/llama.yaml", "# the 70B run\n" + job("llama-70b"))
    assert change(repo)["workloads"] == []


def test_those_that_never_fit_come_first(repo: Repo) -> None:
    write(repo, "workloads/a.yaml", job("a-fits", pods=1))
    write(repo, "workloads/z.yaml", job("z-never", pods=5))
    assert [w["name"] for w in change(repo)["workloads"]] == ["z-never", "a-fits"]


def test_the_globs_choose_the_files_git_would_commit(repo: Repo) -> None:
    write(repo, "workloads/ignored/x.yaml", job("ignored", pods=1))
    write(repo, ".gitignore", "workloads/ignored/\n")
    write(repo, "elsewhere/x.yaml", job("elsewhere", pods=1))
    write(repo, "workloads/notes.txt", job("notes", pods=1))
    os.symlink("llama.yaml", repo.root / "workloads" / "link.yaml")  # a link is not read
    write(repo, "workloads/deep/er/x.yaml", job("deep", pods=1))
    assert set(rows(change(repo))) == {"deep"}


def test_the_working_tree_is_read_uncommitted(repo: Repo) -> None:
    repo.commit(FLEET, "change")
    write(repo, "workloads/draft.yaml", job("draft", pods=1))  # not committed, not ignored
    run = tasgen("plan", "--base", "main", "--now", NOW, "--format", "json")
    assert run.exit_code == 0, run.output
    assert [w["name"] for w in run.json()["workloads"]] == ["draft"]


def test_a_bad_manifest_is_a_located_warning_of_the_plan(repo: Repo) -> None:
    write(
        repo,
        "workloads/bad.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: b, namespace: team}\nspec: [1]\n",
    )
    data = change(repo)
    assert [(w["path"], w["line"], w["rule"]) for w in data["warnings"]] == [
        ("workloads/bad.yaml", 4, "fit-manifest")
    ]


def test_without_the_setting_no_workload_is_read(repo: Repo) -> None:
    write(repo, "workloads/new.yaml", job("fresh", pods=1))
    assert change(repo, FLEET.but(workloads=()))["workloads"] == []


def test_the_formats_name_the_turned_verdict(repo: Repo) -> None:
    repo.commit(FLEET.but(levels=(RACK,)), "change")
    text = tasgen("plan", "--base", "main", "--now", NOW).output
    assert "1 workload verdict(s) new or changed" in text.splitlines()[0]
    line = next(x for x in text.splitlines() if x.startswith("workload Job team/llama-70b"))
    assert line.startswith("workload Job team/llama-70b (verdict) workloads/llama.yaml:1:1: fits on ")
    assert f" at {ZONE} -> never fits: PodSet main: " in line
    markdown = tasgen("plan", "--base", "main", "--now", NOW, "--format", "markdown").output
    assert "1 workload(s) will never be admitted after the merge: `Job team/llama-70b` (see" in markdown
    table = markdown[markdown.index("### Workloads") :]
    row = next(x for x in table.splitlines() if x.startswith("| `Job team/llama-70b`"))
    assert "| `workloads/llama.yaml:1:1` | verdict | fits on " in row
    assert "| **never fits: PodSet main: " in row


def test_a_first_adoption_judges_the_base_as_a_cluster_without_queues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = Repo(tmp_path / "first")
    write(made, "workloads/llama.yaml", job("llama-70b"))
    made.commit_tree("workloads before tasgen")
    made.git("checkout", "-q", "-b", "adopt")
    monkeypatch.chdir(made.root)
    llama = rows(change(made))["llama-70b"]
    assert llama["change"] == "verdict"
    assert llama["before"]["podSets"][0]["reason"] == "LocalQueue training doesn't exist"
    assert llama["after"]["fits"]
