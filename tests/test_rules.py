"""The rule registry: one place declares every rule, and every problem goes through it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import tasgen
import tasgen.rules
from tasgen.model import Level
from tasgen.rules import BY_ID, REGISTRY, Rule, Stage
from tasgen.validate.checks import CHECKS, typos
from tests.conftest import REPO


def test_ids_are_unique_and_every_declared_rule_is_registered() -> None:
    assert len(BY_ID) == len(REGISTRY)
    declared = set()
    for module in pkgutil.iter_modules(tasgen.rules.__path__):
        loaded = importlib.import_module(f"tasgen.rules.{module.name}")
        declared |= {v for v in vars(loaded).values() if isinstance(v, Rule)}
    assert declared == set(REGISTRY)


def test_catalogue_order_follows_the_stages() -> None:
    stages = [rule.stage for rule in REGISTRY]
    assert stages == sorted(stages, key=list(Stage).index)


def test_every_semantic_check_is_registered_with_a_rules_stage_rule() -> None:
    assert {rule.stage for rule, _ in CHECKS} == {Stage.VALIDATE}
    raised = {rule for rule, _ in CHECKS} | set(typos.RAISES)
    assert raised == {r for r in REGISTRY if r.stage is Stage.VALIDATE}


def test_a_rule_stamps_its_id_and_level() -> None:
    warning = BY_ID["queue-empty"]
    finding = warning(tasgen.model.Where("f.yaml"), "m")
    assert (finding.rule, finding.level) == ("queue-empty", Level.WARNING)
    assert BY_ID["yaml-syntax"].problem("f.yaml", 2, 3, "m").level is Level.ERROR


def _calls(name: str) -> list[str]:
    """Where generator/ (outside generator/rules) calls ``name`` with a string literal or at all."""
    found = []
    for path in sorted((REPO / "generator").rglob("*.py")):
        if "rules" in path.relative_to(REPO / "generator").parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_stage_builds_a_finding_or_spells_a_rule_id() -> None:
    """Findings come from rules only: no stage writes Finding(...) with a rule string."""
    assert _calls("Finding") == []
    ids = {rule.id for rule in REGISTRY}
    spelled = []
    for path in sorted((REPO / "generator").rglob("*.py")):
        if path.parent.name == "rules" and path.parent.parent.name == "generator":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ids - {"schema", "quantity"}:
                spelled.append(f"{Path(path).relative_to(REPO)}:{node.lineno}: {node.value}")
    assert spelled == []


def test_messages_are_bounded() -> None:
    """A message quoting a 10 MB value is cut in the middle, keeping both ends."""
    finding = BY_ID["schema"](
        tasgen.model.Where("f.yaml"), "revision: '" + "r" * 10_000_000 + "' is too long"
    )
    assert len(finding.message) <= 500
    assert finding.message.startswith("revision: 'rrr") and finding.message.endswith("' is too long")
