"""Schema messages say in words what a value must look like, never the regular expression:
every pattern of the published schemas has its words (generator/validate/patterns.py), and a
bad name is answered with them at its position."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tasgen.validate.patterns import WORDS
from tests.conftest import NOW, REPO, tasgen

SCHEMAS = sorted((REPO / "generator" / "schemas").glob("*.json"))


def patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from patterns(value)


def test_every_pattern_of_the_schemas_has_words() -> None:
    found = {p for path in SCHEMAS for p in patterns(json.loads(path.read_text()))}
    assert len(found) >= 5  # the schemas were read
    assert sorted(found - set(WORDS)) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("source.yaml", "  name: racks", "  name: Racks_A"),
            "source.yaml:4:9: error: metadata.name: 'Racks_A' is not a DNS-1123 label: lowercase "
            "letters, digits and '-', starting and ending with a letter or digit (e.g. gpu-pool-1) [schema]",
        ),
    ],
)
def test_a_bad_name_is_answered_in_words(tmp_path: Path, edit: tuple[str, str, str], expected: str) -> None:
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "tests" / "cases" / "valid" / "minimal" / "inventory", inventory)
    file, old, new = edit
    text = (inventory / file).read_text()
    assert old in text
    (inventory / file).write_text(text.replace(old, new, 1))
    run = tasgen("validate", "-i", str(inventory), "--now", NOW)
    assert run.exit_code == 1
    assert f"{inventory}/{expected}" in run.output.splitlines(), run.output
    assert "^" not in run.output and "[a-z0-9]" not in run.output
