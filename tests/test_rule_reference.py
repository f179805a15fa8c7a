"""Every rule's reference entry: its text declared with the rule, its example generated from
its exact-position case (or a scenario), `tasgen rules RULE-ID` printing it, and the generated
pages under docs/reference/ current."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from typing import get_type_hints

import pytest

from tasgen.rules import BY_ID, REGISTRY, Rule, Stage
from tasgen.rules.reference import DOCS_PATH, Entry, entry_markdown, references
from tests import rule_reference
from tests.conftest import NOW, REPO, tasgen
from tests.test_cases import CASES, ELSEWHERE


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    """What `python -m tests.rule_reference --write` would write now (runs every case once)."""
    return rule_reference.files(rule_reference.references())


def test_the_examples_and_pages_are_current(generated: dict[Path, str]) -> None:
    """A changed rule, message or case changes its entry: regenerate with
    `python -m tests.rule_reference --write` and commit the result."""
    assert rule_reference.stale(generated) == []


def test_the_shipped_examples_are_the_generated_ones(generated: dict[Path, str]) -> None:
    data = json.loads(generated[rule_reference.EXAMPLES])
    assert data["rules"] == references()
    assert set(references()) == set(BY_ID)


def test_every_rule_has_its_reference_text() -> None:
    assert rule_reference.missing_text() == []


def test_a_rule_without_reference_text_fails_the_generation_loudly() -> None:
    bare = Rule("brand-new", Stage.VALIDATE, "Something holds.")
    [line] = rule_reference.missing_text([bare, *REGISTRY])
    assert line.startswith("brand-new (generator/rules/) has no reference text: give it why=")
    assert rule_reference.missing_text([Rule("x", Stage.LOAD, "s", why="w", fix="f")]) == []


def test_a_rule_without_a_case_fails_the_generation_loudly() -> None:
    new = Rule("brand-new", Stage.VALIDATE, "Something holds.", why="w", fix="f")
    with pytest.raises(
        rule_reference.ReferenceError_, match=r"add an exact-position case tests/cases/invalid/brand-new/"
    ):
        rule_reference.reference(new)


def test_the_generator_refuses_a_case_whose_positions_moved(tmp_path: Path) -> None:
    """The example's positions are the ones expected.txt promises (tests/test_cases.py checks
    the same case; the generator does not trust an example it did not check)."""
    case = tmp_path / "invalid" / "api-version"
    (tmp_path / "valid").mkdir()
    shutil.copytree(CASES / "invalid" / "api-version", case)
    (case / "expected.txt").write_text("inventory/queue.yaml:2:13: error [api-version]\n")
    with pytest.raises(rule_reference.ReferenceError_, match=r"its expected\.txt says"):
        rule_reference.case_example(BY_ID["api-version"], case)


@pytest.mark.parametrize("rule", REGISTRY, ids=lambda r: r.id)
def test_rules_rule_id_prints_the_entry(rule: Rule) -> None:
    run = tasgen("rules", rule.id)
    assert run.exit_code == 0
    assert run.output == entry_markdown(rule)
    assert run.output.startswith(f"# {rule.id}\n\nLevel: {rule.level.value}; stage: {rule.stage.value}.\n")
    for heading, text in (
        ("What it requires", rule.summary),
        ("Why it matters", rule.why),
        ("How to fix it", rule.fix),
    ):
        assert f"## {heading}\n\n{text}\n" in run.output
    example = references()[rule.id]["example"]
    if example is not None:
        assert example["output"] and all(f"[{rule.id}]" in line for line in example["output"])
        assert all(f"{line}\n" in run.output for line in example["output"])
        assert f"`{example['command']}` reports:" in run.output
    else:
        unreachable = references()[rule.id]["unreachable"]
        assert unreachable is not None and f"None is shown: {unreachable['reason']}." in run.output
    # An installed tasgen ships no tests/: the entry it prints names none (the page does).
    assert "tests/" not in run.output
    page = (REPO / DOCS_PATH.format(id=rule.id)).read_text()
    assert entry_markdown(rule, in_repository=True) in page
    proof = example["checkedBy"] if example is not None else unreachable["checkedBy"]
    assert f"`{proof}`" in page


def test_an_unknown_rule_id_is_a_usage_error_naming_the_closest() -> None:
    run = tasgen("rules", "flavour-limit")
    assert run.exit_code == 2
    assert "no rule 'flavour-limit'; did you mean flavor-limit" in run.output
    words = tasgen("rules", "snapshot")
    assert words.exit_code == 2 and "did you mean snapshot-" in words.output
    nothing = tasgen("rules", "zzzz")
    assert nothing.exit_code == 2 and "no rule 'zzzz' ('tasgen rules' lists them all)" in nothing.output


def test_the_catalogue_is_unchanged_by_the_entries() -> None:
    run = tasgen("rules")
    assert run.exit_code == 0 and run.output.startswith("| rule | level | stage | what it requires |\n")
    assert len(run.output.splitlines()) == len(REGISTRY) + 2


def test_json_is_the_entry_s_fields() -> None:
    run = tasgen("rules", "flavor-limit", "--format", "json")
    assert run.exit_code == 0
    entry = json.loads(run.output)
    assert set(entry) == set(get_type_hints(Entry))
    assert entry["id"] == "flavor-limit" and entry["docs"] == "docs/reference/rules/flavor-limit.md"
    assert (
        entry["why"] == BY_ID["flavor-limit"].why
        and entry["example"] == references()["flavor-limit"]["example"]
    )
    every = json.loads(tasgen("rules", "--format", "json").output)
    assert [e["id"] for e in every] == [r.id for r in REGISTRY]


def test_the_catalogue_page_links_every_entry_and_every_link_resolves() -> None:
    page = rule_reference.CATALOGUE.read_text()
    linked = re.findall(r"\| \[`([a-z0-9-]+)`\]\(rules/\1\.md\) \|", page)
    assert linked == [r.id for r in REGISTRY]
    for path in [rule_reference.CATALOGUE, *sorted(rule_reference.PAGES.glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#]+)\)", path.read_text()):
            assert (path.parent / target).is_file(), f"{path.name}: {target}"


def test_every_rule_proven_elsewhere_names_a_test_that_exists() -> None:
    for rule, proof in ELSEWHERE.items():
        assert rule in BY_ID, rule
        file, _, name = proof.partition("::")
        tree = ast.parse((REPO / file).read_text())
        tests = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in tests, proof
        assert rule in rule_reference.SCENARIOS or rule in rule_reference.UNREACHABLE, rule


def test_a_github_annotation_names_its_rule_s_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's repository has no tasgen docs: the annotation names the command that prints
    the entry, and that command knows the rule."""
    monkeypatch.chdir(CASES / "invalid" / "lending-limit")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    run = tasgen("validate", "-i", "inventory", "--now", NOW, "--format", "github")
    annotations = [line for line in run.output.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 4
    for line in annotations:
        rule = line.split(",title=", 1)[1].split("::", 1)[0]
        assert line.endswith(f" (tasgen rules {rule})")
        assert tasgen("rules", rule).exit_code == 0


def test_an_excerpt_marks_the_reported_character(tmp_path: Path) -> None:
    """Marks stay on their character when the line is escaped and cut; marks too far apart to
    be shown together keep the first."""
    line = "x: \x1b" + "a" * 150 + "TARGET" + "b" * 150
    (tmp_path / "f.yaml").write_text(f"first\n{line}\nlast\n")
    target = line.index("TARGET") + 1
    for reported, shown_at in (
        ([target], ["TARGET"]),
        ([4], ["\\x1b"]),
        ([4, 8], ["\\x1b", "aaaa"]),
        ([4, target], ["\\x1b"]),
    ):
        found = rule_reference.excerpt(tmp_path, [("f.yaml", 2, col) for col in reported])
        assert found is not None and found["first"] == 1 and found["lines"][::2] == ["first", "last"]
        shown, marks = found["lines"][1], [m["col"] for m in found["marks"]]
        assert len(shown) <= rule_reference.WIDTH + 6 and (shown.startswith("...") or shown.startswith("x: "))
        texts = [shown[col - 1 : col - 1 + len(text)] for col, text in zip(marks, shown_at, strict=False)]
        assert (len(marks), texts) == (len(shown_at), shown_at), (reported, shown)
