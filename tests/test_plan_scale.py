"""The pull-request comment stays under GitHub's 65,536 characters whatever the change: on a
100k-node fleet (bench/fleet.py) and on a report far larger than any real one; tables are
summarised, never cut in the middle."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench.fleet import write_fleet
from tasgen.commands.plan.formats import COMMENT_LIMIT, MARKER, markdown
from tasgen.commands.plan.shape import Report
from tasgen.util.typed_json import from_json
from tests.conftest import NOW, tasgen
from tests.plan.fleet import Fleet, Repo


def tables(text: str) -> list[list[str]]:
    """The Markdown tables of a text: runs of lines that start with a pipe."""
    found: list[list[str]] = []
    previous = False
    for line in text.splitlines():
        row = line.startswith("|")
        if row and not previous:
            found.append([])
        if row:
            found[-1].append(line)
        previous = row
    return found


def assert_whole_tables(text: str) -> None:
    for table in tables(text):
        cells = {row.replace("\\|", "").count("|") for row in table}
        assert len(cells) == 1, table  # every row has the header's cells
        assert set(table[1]) <= {"|", "-", ":"} and len(table) >= 3, table  # separator, then rows
        assert all(row.endswith("|") for row in table), table


def test_a_100k_node_change_fits_in_one_comment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo")
    write_fleet(repo.root / "inv", 100_000)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "base")
    write_fleet(repo.root / "inv", 100_000, changed=True)
    monkeypatch.chdir(repo.root)
    run = tasgen("plan", "--base", "main", "-i", "inv", "--now", NOW, "--format", "markdown")
    assert run.exit_code == 0
    assert len(run.output) < COMMENT_LIMIT and run.output.startswith(MARKER)
    assert "50000 node(s)" in run.output  # every H100 node moves profile: counted, not listed
    assert_whole_tables(run.output)


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("plan")
    repo = Repo(root / "repo")
    repo.commit(Fleet(), "base")
    repo.write(Fleet(training=("H100",), quota="48"))
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo.root, capture_output=True, text=True, check=True
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo.root)
        run = tasgen("plan", "--base", done.stdout.strip(), "--now", NOW, "--format", "json")
    data: dict[str, Any] = json.loads(run.output)
    return data


def _huge(report: dict[str, Any], copies: int) -> dict[str, Any]:
    """The report with every list multiplied: far beyond any real change."""
    huge = copy.deepcopy(report)
    queue = huge["queues"][1]
    huge["queues"] = [{**queue, "name": f"q{i}"} for i in range(copies)]
    warning = {
        "rule": "level-removed",
        "level": "warning",
        "path": "a.yaml",
        "line": 1,
        "col": 1,
        "message": "a | pipe and a long message " * 8,
    }
    huge["warnings"] = [warning] * copies
    huge["profiles"]["moves"] = [{"from": f"p{i}", "to": f"q{i}", "nodes": i} for i in range(copies)]
    huge["fit"] = [
        {**row, "queue": f"q{i}", "changed": True} for i in range(copies) for row in huge["fit"][:1]
    ]
    huge["summary"]["drains"] = [f"q{i}" for i in range(copies)]
    profile = {"id": "0123456789ab", "levels": ["topology.gpustack.ai/rack"] * 4, "nodes": 1}
    huge["profiles"]["added"] = huge["profiles"]["removed"] = [profile] * copies
    huge["nodes"]["bySource"] = [{"source": f"s{i}", "nodes": 1, "keys": {"k": 1}} for i in range(copies)]
    huge["nodes"]["changed"] = copies
    return huge


@pytest.mark.parametrize("copies", [10, 300, 20000])
def test_any_report_is_summarised_under_the_limit(small_report: dict[str, Any], copies: int) -> None:
    text = markdown(from_json(Report, _huge(small_report, copies)))
    assert len(text) < COMMENT_LIMIT
    assert_whole_tables(text)
    if copies == 10:
        assert "more" not in text  # nothing left out when it fits
    else:
        assert "more warning(s)" in text and "more queue(s)" in text
        assert "more source and profile change(s)" in text and "more source(s)" in text
