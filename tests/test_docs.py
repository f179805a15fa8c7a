"""The README is part of the product: its catalogue lists every rule, its quick start is the
one CI runs."""

from __future__ import annotations

import re

from generator.validate.rules import OTHER_RULES, RULES
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_the_catalogue_lists_every_rule() -> None:
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", README, re.MULTILINE))
    assert listed == {r.id for r in RULES} | set(OTHER_RULES)


def test_the_quick_start_is_what_ci_runs() -> None:
    quick_start = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line for line in quick_start.splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (REPO / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest" in commands[1] and ".venv/bin/python -m pytest" in ci
    assert "tasgen render" in commands[0] and ".venv/bin/tasgen render" in ci
