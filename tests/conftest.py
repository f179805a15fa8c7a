"""Shared helpers: run the real CLI in-process, read rendered trees."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import cli


def examples(n: int) -> int:
    """A property's example count: modest in CI, scaled up for a thorough local run with
    TASGEN_HYPOTHESIS_SCALE=50 (run new properties that way once before committing)."""
    return n * int(os.environ.get("TASGEN_HYPOTHESIS_SCALE", "1"))


REPO = Path(__file__).resolve().parent.parent
NOW = "2026-11-30T00:00:00Z"


@dataclass
class Run:
    exit_code: int
    output: str

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.output)
        return data


def tasgen(*args: str) -> Run:
    """The tasgen command line, in-process; an exception escaping it fails the test (a
    traceback shown to a user is a bug)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return Run(result.exit_code, result.output)


def tree(folder: Path) -> dict[str, str]:
    """Every file below a folder, by relative path (for byte-for-byte comparisons)."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own render memo folder, so no test sees another's."""
    monkeypatch.setenv("TASGEN_CACHE_DIR", str(tmp_path_factory.mktemp("memo")))


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    """A private copy of the example inventory (a test may edit it)."""
    shutil.copytree(REPO / "inventories", tmp_path / "inventory")
    return tmp_path / "inventory"


def render(inventory: Path, output: Path, *more: str) -> tuple[int, str]:
    """tasgen render of an inventory into a folder, at the fixed test time."""
    run = tasgen("render", "-i", str(inventory), "-o", str(output), "--now", NOW, *more)
    return run.exit_code, run.output
