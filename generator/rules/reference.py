"""A rule's reference entry, as ``tasgen rules RULE-ID`` prints it and docs/reference/rules/
holds it: what it requires, why it matters, a failing example and the fix.

The text is declared with the rule; the examples are generated from the exact-position cases
(tests/cases) into ``examples.json``, shipped with the package, by
``python -m tests.rule_reference --write``.
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import TypedDict

from .base import Rule

EXAMPLES_FILE = "examples.json"
#: where an entry lives in tasgen's repository (a user's repository has only the command)
DOCS_PATH = "docs/reference/rules/{id}.md"


class Mark(TypedDict):
    """A problem's position in an excerpt, as displayed (the column counts escapes)."""

    line: int
    col: int


class Excerpt(TypedDict):
    path: str  # as the command printed it
    first: int  # the number of the first line shown
    lines: list[str]  # as displayed: control characters escaped, long lines cut around the mark
    marks: list[Mark]
    link: str | None  # a symbolic link's target, shown instead of lines


class Example(TypedDict):
    source: str  # the case folder, or the scenario in tests/rule_reference.py
    story: str  # what was done before the command ("" for a case: its inventory is all)
    changes: str  # that change as a unified diff, or ""
    command: str
    output: list[str]  # the problem lines of this rule, as printed
    excerpt: Excerpt | None
    checkedBy: str  # the test that keeps this example true


class Unreachable(TypedDict):
    reason: str  # why no inventory gets there
    checkedBy: str  # the test that proves the rule


class Reference(TypedDict):
    example: Example | None
    unreachable: Unreachable | None


class Entry(TypedDict):
    """``tasgen rules RULE-ID --format json``."""

    id: str
    level: str
    stage: str
    summary: str
    why: str
    fix: str
    example: Example | None
    unreachable: Unreachable | None
    docs: str


@cache
def references() -> dict[str, Reference]:
    """The generated examples of every rule, by rule ID."""
    text = resources.files("tasgen.rules").joinpath(EXAMPLES_FILE).read_text(encoding="utf-8")
    data: dict[str, Reference] = json.loads(text)["rules"]
    return data


def reference_of(rule: Rule) -> Reference:
    return references().get(rule.id, Reference(example=None, unreachable=None))


def closest(wanted: str, ids: list[str]) -> list[str]:
    """Rule IDs that look like ``wanted`` (a typo, a word of the ID), best first."""
    close = difflib.get_close_matches(wanted.lower(), ids, n=3, cutoff=0.6)
    words = [i for i in ids if wanted.lower() in i and i not in close]
    return [*close, *words][:3]


def entry_data(rule: Rule) -> Entry:
    ref = reference_of(rule)
    return Entry(
        id=rule.id,
        level=rule.level.value,
        stage=rule.stage.value,
        summary=rule.summary,
        why=rule.why,
        fix=rule.fix,
        example=ref["example"],
        unreachable=ref["unreachable"],
        docs=DOCS_PATH.format(id=rule.id),
    )


def entry_markdown(rule: Rule, ref: Reference | None = None, *, in_repository: bool = False) -> str:
    """The entry as Markdown (what ``tasgen rules RULE-ID`` prints, as ``ruff rule`` does).
    Only ``in_repository`` (the rule's page in docs/) does it name the test case and the test
    that prove the rule: an installed tasgen ships no tests/."""
    parts = [
        f"# {rule.id}\n\nLevel: {rule.level.value}; stage: {rule.stage.value}.\n",
        f"## What it requires\n\n{rule.summary}\n",
        f"## Why it matters\n\n{rule.why}\n",
        "## Example\n\n" + _example(ref or reference_of(rule), in_repository),
        f"## How to fix it\n\n{rule.fix}\n",
    ]
    return "\n".join(parts)


def _example(ref: Reference, in_repository: bool) -> str:
    example, unreachable = ref["example"], ref["unreachable"]
    if example is None:
        if unreachable is None:
            return "None yet.\n"
        proof = f" `{unreachable['checkedBy']}` proves the rule." if in_repository else ""
        return f"None is shown: {unreachable['reason']}.{proof}\n"
    excerpt = example["excerpt"]
    blocks = []
    if example["story"]:
        scenario = f" (a scenario of `{example['source']}`)" if in_repository else ""
        blocks.append(f"{example['story']}{scenario}:")
        if example["changes"]:
            blocks.append(_fenced("diff", example["changes"]))
    else:
        where = f", file `{excerpt['path']}`" if excerpt else ""
        case = f"The case `{example['source']}`" if in_repository else "An example inventory"
        blocks.append(f"{case}{where}:")
    if excerpt is not None:
        if example["story"]:
            blocks.append(f"`{excerpt['path']}`:")
        blocks.append(_fenced("text", _excerpt_text(excerpt)))
    blocks.append(f"`{example['command']}` reports:")
    blocks.append(_fenced("text", "".join(f"{line}\n" for line in example["output"])))
    if in_repository and example["story"]:
        blocks.append(
            f"tests/test_rule_reference.py reruns this scenario; `{example['checkedBy']}` proves the rule."
        )
    elif in_repository:
        blocks.append(f"Checked by `{example['checkedBy']}`.")
    return "\n\n".join(blocks) + "\n"


def _excerpt_text(excerpt: Excerpt) -> str:
    if excerpt["link"] is not None:
        return f"{excerpt['path']} -> {excerpt['link']}\n"
    last = excerpt["first"] + len(excerpt["lines"]) - 1
    width = len(str(last))
    lines = []
    for number, text in enumerate(excerpt["lines"], excerpt["first"]):
        lines.append(f"{number:>{width}} | {text}".rstrip())
        cols = sorted({mark["col"] for mark in excerpt["marks"] if mark["line"] == number})
        if cols:
            carets = "".join(" " * (col - at - 1) + "^" for at, col in zip([0, *cols], cols, strict=False))
            lines.append(f"{'':>{width}} | {carets}")
    return "\n".join(lines) + "\n"


def _fenced(language: str, text: str) -> str:
    fence = "````" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


__all__ = ["DOCS_PATH", "Entry", "Example", "Excerpt", "Reference", "Unreachable", "closest", "entry_data"]
