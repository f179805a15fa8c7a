"""The scheduled refresh workflow `tasgen init` writes: it pins this release, only runs tasgen
commands and options that exist (tasgen plan behind a --help probe), opens one pull request
instead of pushing to the main branch, and is actionlint-clean."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.cli import cli
from tasgen.commands import init as scaffold
from tests.conftest import tasgen
from tests.test_init import ACTIONLINT, _tool

WORKFLOW = ".github/workflows/tasgen-refresh.yml"


@pytest.fixture
def scaffolded(tmp_path: Path) -> Path:
    run = tasgen("init", str(tmp_path / "fleet"), "--repo-url", "https://github.com/acme/fleet.git")
    assert run.exit_code == 0, run.output
    return tmp_path / "fleet"


def _steps(root: Path) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]["refresh"]["steps"]
    return steps


def _tasgen_calls(root: Path) -> list[list[str]]:
    script = "\n".join(step.get("run", "") for step in _steps(root)).replace("\\\n", " ")
    calls = []
    for line in script.splitlines():
        for part in line.split("|"):
            words = shlex.split(part.replace(";", " ; "), comments=True)
            if "tasgen" in words:
                calls.append(words[words.index("tasgen") + 1 :])
    return calls


def test_it_pins_this_release_and_runs_fetch_import_nodes_and_render(scaffolded: Path) -> None:
    runs = [step.get("run", "") for step in _steps(scaffolded)]
    assert f'python -m pip install "tasgen=={scaffold.installed_version()}"' in runs
    commands = [call[0] for call in _tasgen_calls(scaffolded)]
    assert {"fetch", "import-nodes", "render", "plan"} <= set(commands)
    assert commands.index("fetch") < commands.index("render")


def test_every_option_it_passes_exists(scaffolded: Path) -> None:
    # The options each command declares (a search of its help text would find "-o" in
    # "--output" or in an example).
    for call in _tasgen_calls(scaffolded):
        command = cli.commands[call[0]]
        declared = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        declared |= {"-h", "--help"}  # the group's help_option_names
        for word in call[1:]:
            if word.startswith("-") and word != "-":
                assert word.split("=", 1)[0] in declared, (call[0], word)


def test_it_never_pushes_to_the_main_branch(scaffolded: Path) -> None:
    text = (scaffolded / WORKFLOW).read_text()
    assert 'git push -f origin "$BRANCH"' in text and "BRANCH: tasgen/refresh" in text
    assert "push origin main" not in text
    assert yaml.safe_load(text)[True].keys() == {
        "schedule",
        "workflow_dispatch",
    }  # 'on', as YAML 1.1 reads it


def test_it_is_actionlint_clean(scaffolded: Path) -> None:
    actionlint = _tool(*ACTIONLINT)
    done = subprocess.run(
        [str(actionlint), "-no-color", WORKFLOW], cwd=scaffolded, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _step(root: Path, name: str) -> dict[str, Any]:
    (found,) = [step for step in _steps(root) if step.get("name") == name]
    return found


@pytest.mark.parametrize(
    ("live", "expected"), [("true", ["render", "--kubeconfig", "KUBECONFIG"]), ("false", ["render"])]
)
def test_it_renders_with_the_cluster_unless_told_not_to(
    scaffolded: Path, tmp_path: Path, live: str, expected: list[str]
) -> None:
    """Unless vars.TASGEN_LIVE_RENDER is 'false': `tasgen render --kubeconfig` (pinned nodes and
    WaitForIdle's retained flavors are released once idle, which only a live render does), with
    the kubeconfig still there; else the offline render. GitHub evaluates the LIVE expression
    to the string "true" or "false". The
    Render step's own script runs under bash, with a `tasgen` that records its arguments."""
    names = [step.get("name") for step in _steps(scaffolded)]
    assert names.index("The cluster's kubeconfig as a file") < names.index("Render")
    assert names.index("Render") < names.index("Forget the credentials")
    kubeconfig_step = _step(scaffolded, "The cluster's kubeconfig as a file")
    assert "vars.TASGEN_LIVE_RENDER != 'false'" in kubeconfig_step["if"]
    step = _step(scaffolded, "Render")
    assert step["env"] == {"LIVE": "${{ vars.TASGEN_LIVE_RENDER != 'false' }}"}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "tasgen"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$RUNNER_TEMP/args"\n')
    stub.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path), "LIVE": live}
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]], check=False, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert [a.replace(str(tmp_path / "kubeconfig"), "KUBECONFIG") for a in args] == expected
