"""The workload globs (generator/load/globs.py) match what git's own glob pathspecs match, on a
real repository; and what they refuse is refused with the reason."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasgen.load.globs import glob_problem, matches, roots

FILES = (
    "a.yaml", "b.yml", "x.json", "jobs/a.yaml", "jobs/b1.yaml", "jobs/c].yaml", "jobs/team/a.yaml",
    "jobs/team/deep/z.yaml", "jobs/team/deep/z.yml", "other/jobs/a.yaml", "workloads/x/y/z/w.yaml",
    "workloads/w.yaml", "workloadsx/w.yaml", "w/.hidden.yaml", "jobs/?.yaml",
)  # fmt: skip

SEGMENTS = st.sampled_from(
    ["jobs", "team", "deep", "workloads", "other", "x", "*", "?", "**", "*.yaml", "*.y?ml", "[ab]*",
     "[!a]*.yaml", "a.yaml", "z.*", "[]]*", "b?.yaml", ".*", "w*"]
)  # fmt: skip
GLOBS = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join).filter(lambda g: glob_problem(g) is None)


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("globs")
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    return root


def _git(root: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(glob=GLOBS)
def test_a_glob_matches_what_git_s_glob_pathspec_matches(repository: Path, glob: str) -> None:
    by_git = set(_git(repository, "ls-files", "-z", "--", f":(glob){glob}").split("\0")) - {""}
    assert {f for f in FILES if matches([glob], f)} == by_git, glob


@pytest.mark.parametrize(
    ("glob", "path", "matched"),
    [
        ("workloads/**/*.yaml", "workloads/w.yaml", True),  # ** spans no folder too
        ("workloads/**/*.yaml", "workloads/x/y/z/w.yaml", True),
        ("workloads/**/*.yaml", "workloadsx/w.yaml", False),
        ("*.yaml", "jobs/a.yaml", False),  # * stays in its folder
        ("jobs/**", "jobs/team/deep/z.yml", True),
        ("**/a.yaml", "a.yaml", True),
        ("jobs/[!a]*.yaml", "jobs/a.yaml", False),
        ("jobs/[]]*.yaml", "jobs/].yaml", True),  # a ']' first is a member
        ("jobs", "jobs/team/a.yaml", True),  # a folder named: the files below it
        ("jobs", "jobs/README.md", False),  # ... that can hold workloads, as fit FOLDER reads
        ("jobs/README.md", "jobs/README.md", True),  # a file named is read whatever its name
    ],
)
def test_examples(glob: str, path: str, matched: bool) -> None:
    assert matches([glob], path) is matched


@pytest.mark.parametrize(
    ("glob", "reason"),
    [
        ("/abs/*.yaml", "absolute"),
        ("jobs/../x.yaml", "leaves the repository"),
        ("jobs\\x.yaml", "backslash"),
        ("jobs/[ab.yaml", "does not close"),
        ("jobs/[a/b].yaml", "does not close"),
        ("jobs/a**/x.yaml", "whole segment"),
    ],
)
def test_a_glob_that_cannot_name_a_repository_file_is_refused(glob: str, reason: str) -> None:
    problem = glob_problem(glob)
    assert problem is not None and reason in problem


def test_the_listing_covers_each_glob_s_fixed_folders() -> None:
    assert roots(["jobs/team/*.yaml", "jobs/*.yaml", "workloads/**/x.yaml"]) == (
        "jobs",
        "jobs/team",
        "workloads",
    )
    assert roots(["*.yaml", "jobs/*.yaml"]) == ("", "jobs")
