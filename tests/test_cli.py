"""The command line: help, usage errors, schema, import-nodes, reporters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from tasgen.cli import cli
from tasgen.validate.schema import KINDS
from tests.conftest import NOW, REPO, tasgen

CASE = REPO / "tests" / "cases" / "invalid" / "hierarchy-ambiguous-parent"
COMMANDS = [
    "validate", "render", "check", "plan", "fit", "capacity", "doctor", "init", "fetch", "import-nodes",
    "schema", "rules", "gate", "retire",
]  # fmt: skip


def test_the_command_list_is_every_command() -> None:
    with click.Context(cli) as ctx:
        assert sorted(COMMANDS) == cli.list_commands(ctx)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_explains_itself_with_an_example(command: str) -> None:
    run = tasgen(command, "--help")
    assert run.exit_code == 0 and "Example" in run.output


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--now", "yesterday"],
        ["validate", "--format", "xml"],
        ["validate", "-i", "/does/not/exist"],
        ["schema", "Deployment"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert tasgen(*args).exit_code == 2


@pytest.mark.parametrize(
    "now",
    [
        "2026-W48-1T00:00Z",
        "2026-11-30 00:00:00Z",
        "2026-11-30T00Z",
        "2026-02-30T00:00:00Z",
        "2026-11-30T00:00:00",
    ],
)
def test_now_takes_rfc_3339_only_as_expiresat_does(now: str) -> None:
    """Python's fromisoformat also takes week dates, a space, hours alone: a snapshot's
    expiresAt in those forms is refused, so --now is too, and the message names --now."""
    run = tasgen("validate", "--now", now)
    assert run.exit_code == 2 and "Invalid value for '--now'" in run.output, run.output
    assert "is not an RFC 3339 time with an offset" in run.output
    assert tasgen("validate", "--now", "2026-11-30T00:00:00.5+01:00").exit_code == 0


@pytest.mark.parametrize("epoch", ["\u0663", "1_700_000_000", "+5", " 5", "99999999999999999999"])
def test_source_date_epoch_is_ascii_digits_in_range(epoch: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)
    run = tasgen("validate")
    assert run.exit_code == 2 and "is not a number of seconds" in run.output, run.output
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1814400000")
    assert tasgen("validate").exit_code == 0


def _examples(kind: str) -> list[object]:
    """The example inventory's documents of ``kind`` (its webhook snapshot for Snapshot)."""
    if kind == "Snapshot":
        return [json.loads(p.read_text()) for p in (REPO / "inventories" / "snapshots").glob("*.json")]
    docs = [
        d for p in sorted((REPO / "inventories").rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text())
    ]
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == kind]


@pytest.mark.parametrize("kind", [*KINDS, "Snapshot"])
def test_schema_prints_the_json_schema_of_the_kind(kind: str) -> None:
    run = tasgen("schema", kind)
    assert run.exit_code == 0
    schema = json.loads(run.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    examples = _examples(kind)
    assert examples, f"the example inventory has no {kind}"
    for example in examples:
        assert not list(validator.iter_errors(example)), kind  # the example fits it
    assert list(validator.iter_errors({"kind": kind, "spec": 1})), kind  # and it refuses


@pytest.mark.parametrize("format_", ["text", "json", "github"])
def test_reporters_on_an_invalid_inventory(
    format_: str, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CASE)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run = tasgen("validate", "-i", "inventory", "--now", NOW, "--format", format_)
    assert run.exit_code == 1
    assert run.output == snapshot


@pytest.mark.parametrize("format_", ["text", "json", "github"])
def test_reporters_on_the_example(
    format_: str, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run = tasgen("check", "--now", NOW, "--format", format_)
    assert run.exit_code == 0
    assert run.output == snapshot


def test_github_reporter_writes_the_step_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.chdir(REPO)
    tasgen("validate", "--now", NOW, "--format", "github")
    assert (
        "### tasgen validate" in summary.read_text()
        and "h100-racks (configMap): Ready" in summary.read_text()
    )


@pytest.mark.parametrize("format_", ["text", "github"])
def test_a_revision_with_a_line_break_stays_on_its_line(
    format_: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot's revision comes from an endpoint: a line break in it must not start a line
    of its own, which GitHub would read as a workflow command (an annotation, a stop)."""
    inventory = tmp_path / "inventories"
    shutil.copytree(REPO / "inventories", inventory)
    snapshot = inventory / "snapshots" / "l40s-inventory.json"
    data = json.loads(snapshot.read_text())
    data["revision"] = "x\n::error file=README.md::injected"
    snapshot.write_text(json.dumps(data))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run = tasgen("validate", "-i", str(inventory), "--now", NOW, "--format", format_)
    assert run.exit_code == 0
    assert "revision=x\\n::error file=README.md::injected nodes=4" in run.output
    lines = run.output.splitlines() + (summary.read_text().splitlines() if format_ == "github" else [])
    assert not any(line.startswith("::error") for line in lines)


def _kubectl_nodes() -> dict[str, object]:
    def node(name: str, zone: str) -> dict[str, object]:
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": "u",
                "resourceVersion": "9",
                "creationTimestamp": "t",
                "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
                "annotations": {"volatile": "yes"},
            },
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {
                "allocatable": {"pods": "110", "cpu": "8"},
                "capacity": {"cpu": "8"},
                "conditions": [{"type": "Ready", "lastHeartbeatTime": "now"}],
            },
        }

    return {"apiVersion": "v1", "kind": "List", "items": [node("b-2", "z2"), node("a-1", "z1")]}


def test_import_nodes_keeps_facts_sorted(tmp_path: Path) -> None:
    source = tmp_path / "nodes.json"
    source.write_text(json.dumps(_kubectl_nodes()))
    target = tmp_path / "inventory" / "nodes.yaml"
    target.parent.mkdir()
    assert tasgen("import-nodes", str(source), "-o", str(target), "--name", "lab").exit_code == 0
    text = target.read_text()
    assert text.index("name: a-1") < text.index("name: b-2")
    assert "volatile" not in text and "uid" not in text and "capacity" not in text
    assert 'cpu: "8"\n      pods: "110"' in text  # allocatable, sorted
    run = tasgen("validate", "-i", str(target.parent), "--now", NOW)
    assert run.exit_code == 0, run.output


def _process(command: list[str], **how: Any) -> subprocess.CompletedProcess[str]:
    """``command`` run from the repository, its output captured as text, any exit allowed."""
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False, **how)


def test_import_nodes_reads_yaml_from_stdin() -> None:
    result = _process(
        [sys.executable, "-m", "tasgen.cli", "import-nodes", "-"], input=yaml.safe_dump(_kubectl_nodes())
    )
    assert result.returncode == 0, result.stderr
    assert "kind: NodeInventory" in result.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "<stdin>:1:"),
        ('{"kind": "Pod"}', "expected a List of Nodes"),
        ('{"kind": "List", "items": [{"kind": "Node", "metadata": {}}]}', "without metadata.name"),
    ],
)
def test_import_nodes_rejects_bad_input_without_a_traceback(text: str, message: str) -> None:
    result = _process([sys.executable, "-m", "tasgen.cli", "import-nodes", "-"], input=text)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["validate", "--now", NOW], ["--version"]])
def test_a_report_that_cannot_be_written_is_said_so_not_called_a_bug(args: list[str]) -> None:
    with open("/dev/full", "w") as full:  # every write fails: No space left on device
        done = subprocess.run(
            [sys.executable, "-m", "tasgen.cli", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr == "tasgen: standard output: No space left on device\n"


@pytest.mark.parametrize(("closed", "said"), [("1", "output"), ("2", "error")])
def test_a_closed_standard_stream_is_refused_before_anything_is_written(
    tmp_path: Path, closed: str, said: str
) -> None:
    """`tasgen render >&-`: Python makes sys.stdout None; the render wrote rendered/ and then
    failed on the report with an internal error (a closed stderr gave exit 1 for usage errors)."""
    command = [sys.executable, "-m", "tasgen.cli", "render", "-o", str(tmp_path / "out"), "--now", NOW]
    done = _process(["bash", "-c", f'exec "$@" {closed}>&-', "tasgen", *command])
    assert done.returncode == 2
    shown = done.stdout + done.stderr
    assert shown == f"tasgen: standard {said} is closed; nothing was done\n", shown
    assert not (tmp_path / "out").exists()


def test_import_nodes_from_a_closed_standard_input_reads_nothing_and_says_so() -> None:
    done = _process(
        ["bash", "-c", 'exec "$@" <&-', "tasgen", sys.executable, "-m", "tasgen.cli", "import-nodes", "-"]
    )
    assert done.returncode == 1 and "internal error" not in done.stderr, done.stderr
    said = "<stdin>:1:1: error: expected the output of `kubectl get nodes"
    assert done.stderr.startswith(said), done.stderr


def test_a_summary_without_sources_says_none(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("a: [\n")  # nothing loads: no source to list
    run = tasgen("validate", "-i", str(tmp_path), "--now", NOW)
    assert run.exit_code == 1 and "\nsources: none\n1 error(s)" in run.output, run.output


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["validate"], "'-i' / '--inventory'"),
        (["render"], "'-i' / '--inventory'"),
        (["check"], "'-i' / '--inventory'"),
        (["fetch"], "'-i' / '--inventory'"),
        (["plan", "--base", "HEAD"], "'-i' / '--inventory'"),
        (["fit"], "'-i' / '--inventory'"),
        (["capacity"], "'-i' / '--inventory'"),
        (["doctor"], "'-i' / '--inventory'"),
    ],
)
def test_a_missing_inventory_folder_is_said_not_to_exist(args: list[str], hint: str, tmp_path: Path) -> None:
    missing = tmp_path / "inventorie"
    run = tasgen(*args, "-i", str(missing))
    assert run.exit_code == 2, run.output
    assert run.output.splitlines()[-1] == f"Error: Invalid value for {hint}: {missing} does not exist"


def test_import_nodes_names_a_missing_inventory_folder(tmp_path: Path) -> None:
    missing = tmp_path / "inventorie"
    nodes = tmp_path / "nodes.json"
    nodes.write_text('{"apiVersion": "v1", "kind": "List", "items": []}')
    run = tasgen("import-nodes", str(nodes), "-i", str(missing))
    assert run.exit_code == 2, run.output
    assert run.output.splitlines()[-1] == (
        f"Error: Invalid value for '-i' / '--inventory': {missing} does not exist"
    )


@pytest.mark.parametrize("spelled", ["clusterqueueplan", "CLUSTERQUEUEPLAN", "ClusterQueuePlan"])
def test_schema_takes_a_kind_in_any_case(spelled: str) -> None:
    run = tasgen("schema", spelled)
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["$id"].endswith("/ClusterQueuePlan.json")


TASGEN = Path(sys.executable).parent / "tasgen"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_is_as_documented(shell: str) -> None:
    """The start-up line docs/reference/cli.md gives for each shell prints a completion script
    that completes tasgen's commands (the installed command: the shell completes its name)."""
    page = (REPO / "docs" / "reference" / "cli.md").read_text()
    assert f"_TASGEN_COMPLETE={shell}_source tasgen" in page
    script = _completion(_TASGEN_COMPLETE=f"{shell}_source")
    assert "_TASGEN_COMPLETE" in script and "tasgen" in script, script
    if shell == "bash":
        answer = _completion(_TASGEN_COMPLETE="bash_complete", COMP_WORDS="tasgen va", COMP_CWORD="1")
        assert answer.split() == ["plain,validate"]


def _completion(**env: str) -> str:
    """What the installed command prints with the shell's completion variables set."""
    done = _process([str(TASGEN)], env={**os.environ, **env}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout
