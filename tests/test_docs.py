"""The docs are part of the product: every relative link and anchor resolves, the README stays
short, the quick start is the one CI runs, `tasgen rules` prints the registry's catalogue, and
what `tasgen init` scaffolds points at a page that exists."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

from tasgen.commands import init
from tasgen.rules import catalogue
from tests.conftest import REPO, tasgen

README = (REPO / "README.md").read_text()


def test_tasgen_rules_prints_the_catalogue() -> None:
    run = tasgen("rules")
    assert run.exit_code == 0 and run.output == catalogue()


def _quick_start() -> list[str]:
    block = README.split("## Quick start", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def _commands(script: str) -> list[str]:
    """A shell script's lines that are not comments or blank."""
    lines = [line.strip() for line in script.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_quick_start_is_what_ci_runs() -> None:
    setup, suite = _quick_start()  # exactly two commands
    ci = _commands((REPO / ".ci" / "run").read_text())
    # CI runs both, verbatim and in order, and no other command runs tasgen or the suite.
    assert setup in ci and suite in ci and ci.index(setup) < ci.index(suite)
    assert "tasgen render" in setup
    others = [line for line in ci if line not in (setup, suite)]
    assert not [line for line in others if "pytest" in line or "pip install" in line or ".ci/" in line]
    assert ci[-1] == suite  # the suite's status is CI's


def test_the_quick_start_test_command_sets_up_what_the_suite_needs() -> None:
    """The second command is a script that installs the Debian packages the suite needs when
    missing, then runs the whole suite on three workers."""
    suite = _quick_start()[1]
    script = REPO / suite
    assert script.is_file() and os.access(script, os.X_OK)
    lines = _commands(script.read_text())
    packages = next(line for line in lines if line.startswith("packages=("))
    assert packages.removeprefix("packages=(").removesuffix(")").split() == [
        "buildah",
        "mmdebstrap",
        "strace",
        "redis-server",
    ]
    assert any(line.endswith('apt-get install -y -qq "${packages[@]}" >/dev/null') for line in lines)
    assert '.venv/bin/python -m pytest -n 3 "$@" || status=$?' in lines


def test_the_scaffolded_config_points_at_a_page_of_this_repository() -> None:
    prefix = f"{init.HOOKS_REPO}/blob/main/"
    assert init.DOCS.startswith(prefix)
    assert (REPO / init.DOCS.removeprefix(prefix)).is_file()


# Links: every relative link and #anchor in the docs resolves, as GitHub renders them.

README_MAX_LINES = 200

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")


def slug(text: str) -> str:
    """GitHub's anchor of a heading's text: lowercase, every character but letters, digits,
    marks, ``_``, ``-`` and spaces dropped, spaces made ``-``."""
    kept = (c for c in text.lower() if c in " -_" or unicodedata.category(c)[0] in "LMN")
    return "".join(kept).replace(" ", "-")


def _heading_text(raw: str) -> str:
    """The text GitHub renders for a heading's Markdown: links and images as their text, no
    emphasis markers, code spans as their content."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = _CODE_SPAN.sub(lambda m: m.group(2), text)
    return re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)


def _prose(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks (code is never a link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text; a repeated one gets -1, -2, ... as on GitHub."""
    seen: set[str] = set()
    for line in _prose(text):
        if match := _HEADING.match(line):
            base = slug(_heading_text(match.group(2)))
            found, n = base, 0
            while found in seen:
                n += 1
                found = f"{base}-{n}"
            seen.add(found)
    return seen


def _targets(text: str) -> list[str]:
    found = []
    for line in _prose(text):
        if definition := _DEFINITION.match(line):
            found.append(definition.group(1))
            continue
        found += _LINK.findall(_CODE_SPAN.sub("", line))
    return found


def broken_links(pages: list[Path], root: Path) -> list[str]:
    """`page: target (why)` for every relative link of ``pages`` that does not resolve inside
    ``root``, or whose #anchor is not a heading of the page it names."""
    broken = []
    for page in pages:
        shown = page.relative_to(root).as_posix()
        for target in _targets(page.read_text()):
            if not target or _SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            base = root if path.startswith("/") else page.parent
            linked = (base / unquote(path).lstrip("/")).resolve() if path else page
            where = linked.relative_to(root).as_posix() if linked.is_relative_to(root) else None
            if where is None or not linked.exists():
                broken.append(f"{shown}: {target} (no such file in the repository)")
            elif anchor and (linked.suffix != ".md" or unquote(anchor) not in anchors(linked.read_text())):
                broken.append(f"{shown}: {target} (no heading #{anchor} in {where})")
    return broken


def _pages() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_relative_link_and_anchor_of_the_docs_resolves() -> None:
    pages = _pages()
    assert len(pages) > 10  # the docs tree is there, not an empty glob
    assert broken_links(pages, REPO) == []


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Quick start", "quick-start"),
        ("`tasgen fetch`", "tasgen-fetch"),
        ("`import-nodes -o`", "import-nodes--o"),
        ("Kill (SIGKILL, OOM, Ctrl-C at any moment)", "kill-sigkill-oom-ctrl-c-at-any-moment"),
        ("What `tasgen plan` reports, and why", "what-tasgen-plan-reports-and-why"),
        ("rendered/ reference", "rendered-reference"),
        ("Kueue v0.17.0 & later: **bold**", "kueue-v0170--later-bold"),
        ("The [drain gate](gate.md) and snake_case", "the-drain-gate-and-snake_case"),
        ("Über größe", "über-größe"),
        ("1. Install tasgen", "1-install-tasgen"),
    ],
)
def test_anchors_are_github_slugs(heading: str, anchor: str) -> None:
    assert anchors(f"# {heading}\n") == {anchor}


def test_the_link_check_reports_what_does_not_resolve(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "outside.md").write_text("# Outside\n")
    page = tmp_path / "docs" / "page.md"
    other = tmp_path / "docs" / "other.md"
    other.write_text("# Other\n\n## Usage\n\n## Usage\n\n```\n## Not a heading\n```\n")
    page.write_text(
        "# Page\n\n"
        "[ok](other.md) [ok](other.md#usage) [ok](other.md#usage-1) [ok](#page) [ok](../outside.md)\n"
        "[ok](https://example.com/x.md#nowhere) `[code](missing.md)` ![ok](other.md)\n"
        "[gone](missing.md) [bad anchor](other.md#usage-2) [fenced](other.md#not-a-heading)\n"
        "[self](#nowhere) [up](../../escape.md) ![img](gone.png)\n"
        "[ref]: nowhere.md\n"
        "```\n[in code](missing-too.md)\n```\n"
    )
    assert broken_links([page], tmp_path) == [
        "docs/page.md: missing.md (no such file in the repository)",
        "docs/page.md: other.md#usage-2 (no heading #usage-2 in docs/other.md)",
        "docs/page.md: other.md#not-a-heading (no heading #not-a-heading in docs/other.md)",
        "docs/page.md: #nowhere (no heading #nowhere in docs/page.md)",
        "docs/page.md: ../../escape.md (no such file in the repository)",
        "docs/page.md: gone.png (no such file in the repository)",
        "docs/page.md: nowhere.md (no such file in the repository)",
    ]
