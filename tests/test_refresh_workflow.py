"""The scheduled refresh workflow that docs/ ships only runs tasgen commands and options that
exist (tasgen plan only where it is guarded by a --help probe)."""

from __future__ import annotations

import shlex

import yaml

from tests.conftest import REPO, tasgen

WORKFLOW = REPO / "docs" / "workflows" / "tasgen-refresh.yml"


def _tasgen_calls() -> list[list[str]]:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["refresh"]["steps"]
    script = "\n".join(step.get("run", "") for step in steps).replace("\\\n", " ")
    calls = []
    for line in script.splitlines():
        for part in line.split("|"):
            words = shlex.split(part.replace(";", " ; "), comments=True)
            if "tasgen" in words:
                calls.append(words[words.index("tasgen") + 1 :])
    return calls


def test_the_workflow_runs_fetch_import_nodes_and_render() -> None:
    commands = [call[0] for call in _tasgen_calls()]
    assert {"fetch", "import-nodes", "render"} <= set(commands)
    assert commands.index("fetch") < commands.index("render")


def test_every_option_it_passes_exists() -> None:
    for call in _tasgen_calls():
        command = call[0]
        if command == "plan":
            continue  # guarded: used only when `tasgen plan --help` succeeds
        help_text = tasgen(command, "--help").output
        for word in call[1:]:
            if word.startswith("-") and word != "-":
                assert word in help_text, (command, word)


def test_it_never_pushes_to_the_main_branch() -> None:
    text = WORKFLOW.read_text()
    assert 'git push -f origin "$BRANCH"' in text and "BRANCH: tasgen/refresh" in text
    assert "push origin main" not in text
    assert yaml.safe_load(text)[True].keys() == {
        "schedule",
        "workflow_dispatch",
    }  # 'on', as YAML 1.1 reads it
