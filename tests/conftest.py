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

from tasgen.cli import cli


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


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the test uses a fixture of module scope (its module's own control plane, Flux
    or Argo CD environment)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope == "module" for ds in defs for d in ds)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The order in which pytest-xdist hands the files out (``-n N``, with ``--dist loadfile
    --no-loadscope-reorder`` from pyproject.toml; CONTRIBUTING.md: CI), decided here so that
    a new test file needs nothing of its own.

    Each file runs on one worker, in its own order: a module's fixtures (its control plane,
    Flux or Argo CD) are made once, and the session's control plane starts only on workers
    that run a file that uses it. The files on a control plane (marker ``cluster``) go out
    first, those with an environment of their own before the others: they are the longest and
    mostly wait, and the short files fill the workers around them. Without xdist (no ``-n``)
    the order is the files' own."""
    if not hasattr(config, "workerinput"):  # not a pytest-xdist worker
        return
    rank: dict[Path, int] = {}
    for item in items:
        mine = 2 if item.get_closest_marker("cluster") is None else 0 if _module_scoped(item) else 1
        rank[item.path] = min(rank.get(item.path, 2), mine)
    items.sort(key=lambda item: rank[item.path])  # stable: every worker sorts alike


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
