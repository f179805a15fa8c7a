"""Fault injection: every way of breaking tests/faults.py's inventory is a positioned
problem with its rule, exit 1, no traceback, and rendered/ left byte for byte as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import NOW, tasgen
from tests.faults import FAULTS, Fault, write_base
from tests.privileges import file_modes_apply


def _bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def rendered_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The valid inventory and its rendered/ (rendered once, copied for each fault)."""
    base = tmp_path_factory.mktemp("base")
    write_base(base / "inventory")
    run = tasgen(
        "render", "-i", str(base / "inventory"), "-o", str(base / "rendered"), "--now", NOW, "--no-cache"
    )
    assert run.exit_code == 0, run.output
    return base


def test_the_base_inventory_is_clean(rendered_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(rendered_base)
    run = tasgen("validate", "-i", "inventory", "--now", NOW, "--strict", "--format", "json")
    assert (run.exit_code, run.json()["problems"]) == (0, [])
    assert len(_bytes(rendered_base / "rendered")) > 5


def test_the_corpus_is_large_and_names_are_unique() -> None:
    assert len(FAULTS) >= 100
    assert len({f.name for f in FAULTS}) == len(FAULTS)


def _restore_modes(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_fault_is_a_positioned_problem_and_nothing_is_written(
    fault: Fault, rendered_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = tmp_path / "case"
    shutil.copytree(rendered_base, case, symlinks=True)
    before = _bytes(case / "rendered")
    fault.apply(case / "inventory")
    monkeypatch.chdir(case)
    try:
        with file_modes_apply():
            run = tasgen("render", "-i", "inventory", "-o", "rendered", "--now", NOW, "--format", "json")
    finally:
        _restore_modes(case / "inventory")
    problems = run.json()["problems"]
    assert run.exit_code == 1
    assert all(p["line"] >= 1 and p["col"] >= 1 for p in problems), problems
    assert all(len(p["message"]) <= 500 for p in problems)  # a huge value is not echoed whole
    shown = [f"{p['path']}:{p['line']}:{p['col']} [{p['rule']}]" for p in problems]
    path = "inventory" if fault.file == "." else f"inventory/{fault.file}"
    assert f"{path}:{fault.line}:{fault.col} [{fault.rule}]" in shown
    assert _bytes(case / "rendered") == before


def test_a_link_inside_the_folder_is_followed(
    rendered_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The webhook snapshot as a link to a file kept beside it (under a name tasgen does not
    read as a document): read through the link, rendered as the base."""
    case = tmp_path / "case"
    shutil.copytree(rendered_base, case, symlinks=True)
    inventory = case / "inventory"
    (inventory / "snapshots" / "hook.json").rename(inventory / "snapshots" / "hook-2026-11-29.snapshot")
    (inventory / "snapshots" / "hook.json").symlink_to("hook-2026-11-29.snapshot")
    before = _bytes(case / "rendered")
    monkeypatch.chdir(case)
    run = tasgen(
        "render", "-i", "inventory", "-o", "rendered", "--now", NOW, "--format", "json", "--no-cache"
    )
    assert (run.exit_code, run.json()["problems"]) == (0, [])
    assert _bytes(case / "rendered") == before
