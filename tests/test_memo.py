"""The render memo: a record of any other shape is ignored (never trusted, never a crash),
and a render with an unreadable inventory file is a positioned problem."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tasgen import memo
from tests.conftest import NOW, REPO, tasgen, tree

Edit = Callable[[dict[str, Any]], Any]


def without(key: str) -> Edit:
    return lambda record: {k: v for k, v in record.items() if k != key}


def with_window(start: object) -> Edit:
    return lambda record: record | {"window": {"start": start, "until": None}}


def with_summary(**fields: object) -> Edit:
    return lambda record: record | {"summary": record["summary"] | fields}


RECORDS: dict[str, Edit | bytes] = {
    "a JSON list": lambda record: [record],
    "a JSON string": lambda record: "render",
    "an empty object": lambda record: {},
    "no summary": without("summary"),
    "no files": without("files"),
    "another version": lambda record: record | {"version": 1},
    "a bad date": with_window("yesterday"),
    "a date without an offset": with_window("2026-01-01T00:00:00"),
    "a date that is a number": with_window(20260101),
    "profiles that are a string": with_summary(profiles="e0d45ebe4c49"),
    "a problem without a rule": lambda record: (
        record | {"problems": [{"path": "x", "line": 1, "col": 1, "message": "m", "level": "error"}]}
    ),
    "a level that is no level": lambda record: (
        record
        | {"problems": [{"path": "x", "line": 1, "col": 1, "rule": "r", "message": "m", "level": "fatal"}]}
    ),
    "garbage": b"\x00\xff\xfe garbage {",
    "truncated": b'{"version": 2, "digest": "',
    "nested too deeply": b"[" * 100_000,
    "empty": b"",
}


def memo_file() -> Path:
    [path] = Path(os.environ["TASGEN_CACHE_DIR"]).glob("render-*.json")
    return path


def steady(record: bytes) -> dict[str, Any]:
    """A record without what depends on the tree before (how many nodes changed)."""
    data: dict[str, Any] = json.loads(record)
    del data["summary"]["mutatedNodes"]
    return data


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_memo_of_any_other_shape_is_ignored(inventory: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / "rendered"
    args = ("render", "-i", str(inventory), "-o", str(out), "--now", NOW)
    first = tasgen(*args)
    assert first.exit_code == 0
    honest = memo_file().read_bytes()
    edit = RECORDS[name]
    bad = edit if isinstance(edit, bytes) else json.dumps(edit(json.loads(honest))).encode()
    memo_file().write_bytes(bad)
    (out / "kueue" / "topologies.yaml").unlink()  # only a full render brings it back
    again = tasgen(*args)
    assert again.exit_code == 0, again.output
    assert "1 file(s) written" in again.output and tree(out) == tree(REPO / "rendered")
    assert steady(memo_file().read_bytes()) == steady(honest)  # recorded anew, as at first


def marked_render(inventory: Path, tmp_path: Path) -> tuple[str, ...]:
    """A render's arguments, after a first render whose recorded report was edited to say
    4242 nodes: a render that recalls the record shows it."""
    args = ("render", "-i", str(inventory), "-o", str(tmp_path / "rendered"), "--now", NOW)
    assert tasgen(*args).exit_code == 0
    record = json.loads(memo_file().read_bytes())
    record["summary"]["profiles"][0]["nodes"] = 4242
    memo_file().write_text(json.dumps(record))
    return args


def test_a_valid_memo_is_used(inventory: Path, tmp_path: Path) -> None:
    """The counterpart of the test above: the honest record does skip the work (an edited
    report in it shows), so the ignored ones above were really ignored."""
    assert "(4242 nodes)" in tasgen(*marked_render(inventory, tmp_path)).output


def test_an_unreadable_inventory_file_is_a_positioned_problem(inventory: Path, tmp_path: Path) -> None:
    """Really unreadable: root reads any file, so as root the render runs without the
    capabilities that bypass file permissions."""
    (inventory / "queues" / "training.yaml").chmod(0)
    drop = "-dac_override,-dac_read_search"
    without_override = ["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"]
    run = subprocess.run(
        [
            *(without_override if os.geteuid() == 0 else []),
            *(sys.executable, "-m", "tasgen.cli", "render", "-i", "inventory", "-o", "rendered"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
        timeout=60,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "inventory/queues/training.yaml:1:1: error: cannot read the file" in run.stdout
    assert "[file-unreadable]" in run.stdout and "Traceback" not in run.stderr
    assert not (tmp_path / "rendered").exists()


@pytest.mark.parametrize("case", sorted(p.name for p in (REPO / "tests" / "cases" / "valid").iterdir()))
def test_every_valid_case_is_recalled_from_its_memo(case: str, tmp_path: Path) -> None:
    """The memo schema follows the summary: a field it does not know would make every memo
    ignored, and every no-change re-render a full one."""
    inventory, out = REPO / "tests" / "cases" / "valid" / case / "inventory", tmp_path / "rendered"
    args = ("render", "-i", str(inventory), "-o", str(out), "--now", NOW)
    first = tasgen(*args)
    assert first.exit_code == 0, first.output
    record = json.loads(memo_file().read_bytes())
    record["summary"]["profiles"][0]["nodes"] = 4242  # visible only if the record is used
    memo_file().write_text(json.dumps(record))
    assert "(4242 nodes)" in tasgen(*args).output


def test_another_version_of_a_library_it_renders_with_renders_again(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded render is of this tasgen with these libraries: with another yaml-rs (or
    schema checker, quantity parser, ...) the same inventory is rendered again."""
    args = marked_render(inventory, tmp_path)
    assert "(4242 nodes)" in tasgen(*args).output  # recalled with the same libraries
    real = memo.metadata.version
    monkeypatch.setattr(memo.metadata, "version", lambda name: "9.9" if name == "yaml-rs" else real(name))
    assert "(4242 nodes)" not in tasgen(*args).output
