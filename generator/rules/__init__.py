"""The one registry of rules: every problem tasgen reports is raised through a :class:`Rule`.

A rule is declared once, in the module of the stage that checks it (:mod:`.load`,
:mod:`.schema`, :mod:`.semantic`, :mod:`.compile`, :mod:`.emit`, :mod:`.plan`,
:mod:`.import_nodes`, :mod:`.fit`), with its ID, level, the one-line summary of the catalogue and its
reference text (``why``, ``fix``). Checks never spell a rule ID or a level: they call the rule
(``rules.load.YAML_SYNTAX(where, message)``) or, for the semantic checks, yield
:class:`Hit`s that the validate engine hands to the rule the check is registered with. The
catalogue (``tasgen rules``) and each rule's entry (``tasgen rules RULE-ID``, with an example
generated from its case: :mod:`.reference`) are printed from :data:`REGISTRY`;
docs/reference/rules.md is generated from them.

This package sits just above :mod:`generator.model`, so that every stage may import it.
"""

from __future__ import annotations

from . import compile, emit, fit, import_nodes, load, plan, schema, semantic
from .base import Hit, Rule, Stage

#: every rule, in catalogue order (the order of the stages, then of declaration)
REGISTRY: tuple[Rule, ...] = (
    *load.RULES,
    *schema.RULES,
    *semantic.RULES,
    *compile.RULES,
    *emit.RULES,
    *plan.RULES,
    *import_nodes.RULES,
    *fit.RULES,
)
BY_ID: dict[str, Rule] = {rule.id: rule for rule in REGISTRY}


def catalogue() -> str:
    """The rule table, as Markdown (``tasgen rules``)."""
    lines = ["| rule | level | stage | what it requires |", "|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.level.value} | {r.stage.value} | {r.summary} |" for r in REGISTRY]
    return "\n".join(lines) + "\n"


__all__ = ["BY_ID", "REGISTRY", "Hit", "Rule", "Stage", "catalogue"]
