"""The report is made, and known to be printable, before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import NOW, REPO, tree


def set_revision(inventory: Path, revision: str) -> None:
    path = inventory / "snapshots" / "l40s-inventory.json"
    snapshot = json.loads(path.read_text())
    snapshot["revision"] = revision
    path.write_text(json.dumps(snapshot))  # ensure_ascii: the surrogate is written \\ud800


def render(inventory: Path, out: Path, *more: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """In a child process: standard output is a real pipe with its own encoding."""
    argv = [sys.executable, "-m", "tasgen.cli", "render", "-i", str(inventory), "-o", str(out)]
    run = subprocess.run(
        [*argv, "--now", NOW, *more],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=REPO,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=60,
    )
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    return run.returncode, run.stdout


@pytest.mark.parametrize("format_", ["text", "json", "github"])
def test_an_unpaired_surrogate_is_a_positioned_problem_and_nothing_is_written(
    inventory: Path, tmp_path: Path, format_: str
) -> None:
    out = tmp_path / "rendered"
    assert render(inventory, out)[0] == 0
    before = tree(out)
    set_revision(inventory, "dcim-\ud800-1")
    code, output = render(inventory, out, "--format", format_)
    assert code == 1
    assert "half of a UTF-16 surrogate pair" in output
    if format_ == "text":
        line = output.splitlines()[0]
        assert line.endswith("[json-syntax]") and "l40s-inventory.json:1:" in line
        column = int(line.split("l40s-inventory.json:1:")[1].split(":")[0])
        text = (inventory / "snapshots" / "l40s-inventory.json").read_text()
        assert text[column - 1 :].startswith("\\ud800")
    assert tree(out) == before


def test_text_the_terminal_cannot_show_is_escaped(inventory: Path, tmp_path: Path) -> None:
    """Valid Unicode that standard output cannot encode (an ASCII terminal) is printed
    escaped; the render itself is fine."""
    set_revision(inventory, "révision-1")
    code, output = render(inventory, tmp_path / "rendered", env={"PYTHONIOENCODING": "ascii"})
    assert code == 0 and "revision=r\\xe9vision-1" in output
    # NodeFeatures carry no revision (a new revision would rewrite every shard): the render is
    # the one a UTF-8 terminal gets.
    assert render(inventory, tmp_path / "utf-8")[0] == 0
    assert tree(tmp_path / "rendered") == tree(tmp_path / "utf-8") != {}
