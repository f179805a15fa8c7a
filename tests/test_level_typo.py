"""One root cause, one error: a misspelt level of a source is answered once, at the level,
with the key its snapshot states, and the errors that follow from it are folded into it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import NOW, REPO, tasgen

CASE = REPO / "tests" / "cases" / "invalid" / "source-level-typo" / "inventory"


def test_a_misspelt_level_is_one_error_at_the_level() -> None:
    run = tasgen("validate", "-i", str(CASE), "--now", NOW)
    assert run.exit_code == 1
    problems = [line for line in run.output.splitlines() if "[" in line and ": error: " in line]
    assert problems == [
        f"{CASE.relative_to(Path.cwd())}/source.yaml:8:41: error: level 'topology.gpustack.ai/rak' of "
        "source 'racks' is stated by no node of its snapshot, which states 'topology.gpustack.ai/rack' on 4 "
        "node(s) instead: did you mean 'topology.gpustack.ai/rack'? (4 error(s) at the snapshot's lines "
        "follow from it, not shown) [source-level-typo]"
    ]


def test_the_example_s_block_typo_gives_one_error_not_28(tmp_path: Path) -> None:
    """The example fleet's h100 source with its block level misspelt (the first level of two
    below it): 16 undeclared labels and 12 missing parents, all from the one typo."""
    inventory = tmp_path / "inventories"
    shutil.copytree(REPO / "inventories", inventory)
    source = inventory / "sources" / "h100-racks.yaml"
    lines = source.read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, 1) if text.strip().startswith("- infra.example.com/block")]
    lines[line - 1] = lines[line - 1].replace("infra.example.com/block", "infra.example.com/blok")
    source.write_text("\n".join(lines) + "\n")
    run = tasgen("validate", "-i", str(inventory), "--now", NOW)
    assert run.exit_code == 1
    problems = [text for text in run.output.splitlines() if ": error: " in text or ": warning: " in text]
    column = lines[line - 1].index("infra") + 1
    assert problems == [
        f"{source}:{line}:{column}: error: level 'infra.example.com/blok' of source 'h100-racks' is "
        "stated by no node of its snapshot, which states 'infra.example.com/block' on 16 node(s) "
        "instead: did you mean 'infra.example.com/block'? (28 error(s) at the snapshot's lines "
        "follow from it, not shown) [source-level-typo]"
    ]
