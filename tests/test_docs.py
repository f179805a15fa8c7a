"""The docs are part of the product: the quick start is the one CI runs, `tasgen rules` prints
the registry's catalogue, and what `tasgen init` scaffolds points at a page that exists."""

from __future__ import annotations

from generator.commands import init
from generator.rules import catalogue
from tests.conftest import REPO, tasgen

README = (REPO / "README.md").read_text()


def test_tasgen_rules_prints_the_catalogue() -> None:
    run = tasgen("rules")
    assert run.exit_code == 0 and run.output == catalogue()


def test_the_quick_start_is_what_ci_runs() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in quick_start.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest" in commands[1] and ".venv/bin/python -m pytest" in ci
    assert "tasgen render" in commands[0] and ".venv/bin/tasgen render" in ci


def test_the_scaffolded_config_points_at_a_page_of_this_repository() -> None:
    prefix = f"{init.HOOKS_REPO}/blob/main/"
    assert init.DOCS.startswith(prefix)
    assert (REPO / init.DOCS.removeprefix(prefix)).is_file()
