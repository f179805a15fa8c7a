"""Text from the inventory in the plan's pull-request comment (a file name, a value a message
quotes, the base ref) can neither format it, break its tables, link, notify anyone, nor start
a line: judged by a real CommonMark parser with GFM tables (markdown-it-py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from tasgen.commands.plan import formats
from tasgen.commands.plan.formats import COMMENT_LIMIT, markdown
from tasgen.commands.plan.shape import Report
from tasgen.reporters import markdown_code, markdown_text
from tasgen.util.typed_json import from_json
from tests.conftest import NOW, examples, tasgen
from tests.plan.fleet import Fleet, Repo

PARSER = MarkdownIt("commonmark").enable("table")
HOSTILE = "a|b `c` <img src=x> @octocat #1 [l](https://e) www.e.com *x* _y_ ~z~ \\| \x1b[31m\nl2::error::x"
#: how Python's unicode_escape codec writes the control characters it names
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def shown_on_one_line(value: str) -> str:
    """The oracle of how a value is shown: every character str.isprintable() refuses written as
    its backslash escape (\\n, \\xNN, \\uNNNN, \\UNNNNNNNN), every other one as it is."""
    out = []
    for c in value:
        n = ord(c)
        if c.isprintable():
            out.append(c)
        elif c in _NAMED:
            out.append(_NAMED[c])
        else:
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


def _cells(text: str) -> list[Token]:
    """The inline tokens of each body cell of a one-row table holding ``text``'s cells."""
    tokens = PARSER.parse(f"| a | b |\n|---|---|\n{text}\n")
    body = tokens[tokens.index(next(t for t in tokens if t.type == "tbody_open")) :]
    return [t for t in body if t.type == "inline"]


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
@example(HOSTILE)
@example("``")
@example(" ` ")
def test_a_value_in_a_table_stays_in_its_cell_as_plain_text(value: str) -> None:
    code, cell = _cells(f"| {markdown_code(value)} | {markdown_text(value)} |")
    [span] = code.children or []
    assert span.type == "code_inline"
    expected = shown_on_one_line(value)
    # a code span's content is its text, one line (the table unescapes its pipes); CommonMark
    # strips one space of padding, and a span of spaces only is shown as it is
    assert span.content in (expected, expected[1:-1]) or not expected.strip(" "), span.content
    kinds = {t.type for t in cell.children or []}
    assert kinds <= {"text"}, kinds  # no link, image, HTML, emphasis or code
    shown = "".join(t.content for t in cell.children or []).replace("\u200b", "")
    assert shown == shown_on_one_line(" ".join(value.split()))


@settings(max_examples=examples(200), deadline=None)
@given(st.text())
@example(HOSTILE)
@example("&commat;octocat &#x40;octocat &#64;octocat &#x23;1 https&colon;//e.com")  # entities
def test_nothing_in_a_cell_mentions_references_or_links(value: str) -> None:
    [_, cell] = _cells(f"| x | {markdown_text(value)} |")
    shown = "".join(t.content for t in cell.children or [])
    assert not re.search(r"@\w|#\d", shown), shown  # GitHub's mentions and issue references
    assert "://" not in shown and "www." not in shown.lower()
    assert shown.replace("\u200b", "").isprintable()  # no line break, no control character


def test_a_hostile_file_name_stays_in_its_line_and_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan whose warnings sit in a file named with a pipe, a backtick, HTML, a mention and a
    line break that starts a workflow command: text keeps it on its line, Markdown in its cell
    as code, and both reports still say where the warning is."""
    repo = Repo(tmp_path / "repo")
    repo.commit(Fleet(), "base")
    monkeypatch.chdir(repo.root)
    repo.git("checkout", "-q", "-b", "change")
    repo.write(Fleet(selector=False))  # a namespace-selector-missing warning per queue
    hostile = "q|`x` <b>@octocat\n::error::pwn.yaml"
    (repo.root / "inventories" / "queues.yaml").rename(repo.root / "inventories" / hostile)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "change")
    text = tasgen("plan", "--base", "main", "--now", NOW).output
    assert not [line for line in text.splitlines() if line.startswith("::")], text
    assert "q|`x` <b>@octocat\\n::error::pwn.yaml:" in text
    markdown = tasgen("plan", "--base", "main", "--now", NOW, "--format", "markdown").output
    warnings = markdown[markdown.index("### Warnings") :]
    tokens = PARSER.parse(warnings)
    body = tokens[[t.type for t in tokens].index("tbody_open") :]
    rows = [t for t in body if t.type == "tr_open"]
    cells = [t for t in body if t.type == "inline"]
    assert len(rows) == 2 and len(cells) == 6, warnings  # one row of three cells per queue
    where = [(c.children or [])[0] for c in cells[1::3]]  # the second cell of each row
    assert {(w.type, w.content.rsplit(":", 2)[0]) for w in where} == {
        ("code_inline", "inventories/q|`x` <b>@octocat\\n::error::pwn.yaml")
    }


def test_an_oversized_quota_cell_is_cut_and_every_cut_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One queue's quota changes outgrew every budget (60 identities x 8 resources): the last
    budget dropped every table and every 'and N more' line. Now a row's quota cell is cut
    like a table, the queues to drain are named, and each cut says what it left out."""
    repo = Repo(tmp_path / "repo")
    repo.commit(Fleet(), "base")
    monkeypatch.chdir(repo.root)
    repo.git("checkout", "-q", "-b", "change")
    repo.commit(Fleet(training=("H100",), quota="48"), "drop L40S, less H100")
    report = json.loads(tasgen("plan", "--base", "main", "--now", NOW, "--format", "json").output)
    training = next(q for q in report["queues"] if q["name"] == "training")
    assert training["drain"]["action"] == "hold-and-drain" and training["quota"]
    training["quota"] = training["quota"] * 4000  # a cell of ~300 KB
    typed = from_json(Report, report)
    text = markdown(typed)
    assert len(text) < COMMENT_LIMIT
    assert "hold and drain `training`" in text  # the alert names it
    tokens = PARSER.parse(text)
    cells = [t.content for t in tokens if t.type == "inline" and "more_" in t.content]
    assert any(re.search(r"_and \d+ more_$", c) for c in cells), text  # the quota cell's cut
    lines = formats.text(typed).splitlines()  # the terminal's report makes the same cuts
    assert len([ln for ln in lines if ln.startswith("  quota ")]) == formats.BUDGETS[0].rows
    cut = r"  \.\.\. and \d+ more quota change\(s\): see --format json"
    assert any(re.fullmatch(cut, ln) for ln in lines)


def test_the_last_budget_keeps_the_headings_the_counts_and_the_alert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no row fits (the last budget), each section keeps its heading and says how many
    it left out, and the alert still names the queue the merge drains."""
    repo = Repo(tmp_path / "repo")
    repo.commit(Fleet(), "base")
    monkeypatch.chdir(repo.root)
    repo.git("checkout", "-q", "-b", "change")
    repo.commit(Fleet(training=("H100",), quota="48", selector=False), "drop L40S, less H100")
    report = json.loads(tasgen("plan", "--base", "main", "--now", NOW, "--format", "json").output)
    text = formats._markdown(from_json(Report, report), formats.Budget(0, False))
    assert "hold and drain `training`" in text
    for heading, noun in (
        ("### Queues", "queue"),
        ("### Fit preview", "changed figure"),
        ("### Warnings", "warning"),
    ):
        assert heading in text and re.search(rf"_and \d+ more {noun}\(s\): see", text), (heading, text)
    assert "| queue |" not in text  # no table without a row


def test_the_summary_line_stays_out_of_the_base_problems_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit(Fleet(), "base")
    (repo.root / "inventories" / "broken.yaml").write_text("a: [\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "a base that does not compile")
    monkeypatch.chdir(repo.root)
    repo.git("checkout", "-q", "-b", "change")
    repo.commit(Fleet(), "fixed")
    text = tasgen("plan", "--base", "main", "--now", NOW, "--format", "markdown").output
    tokens = PARSER.parse(text)
    depth, summary_depth = 0, None
    for token in tokens:
        depth += token.nesting if token.type in ("list_item_open", "list_item_close") else 0
        if token.type == "inline" and "queue(s) changed" in token.content:
            summary_depth = depth
    assert "broken.yaml" in text and summary_depth == 0, text
