"""The one format registry: every command's --format offers exactly the formats its report
prints, with the declared default and help, and the Markdown formats escape text from outside
alike."""

from __future__ import annotations

import click
import pytest

from tasgen import reporters
from tasgen.cli import cli
from tasgen.commands.capacity import formats as capacity_formats
from tasgen.commands.capacity.report import CapacityReport
from tasgen.commands.doctor import formats as doctor_formats
from tasgen.commands.fit import formats as fit_formats
from tasgen.commands.plan import formats as plan_formats
from tasgen.model import Level, Problem

#: what each command prints, by format: the printers its module binds
PRINTERS = {
    "validate": reporters.REPORTERS,
    "render": reporters.REPORTERS,
    "check": reporters.REPORTERS,
    "plan": plan_formats.FORMATS,
    "fit": fit_formats.FORMATS,
    "capacity": capacity_formats.FORMATS,
    "doctor": doctor_formats.FORMATS,
}


def _format_option(command: str) -> click.Option:
    [option] = [p for p in cli.commands[command].params if p.name == "format_"]
    assert isinstance(option, click.Option)
    return option


def test_every_command_with_a_format_option_is_listed_here() -> None:
    taking = {name for name, c in cli.commands.items() if any(p.name == "format_" for p in c.params)}
    assert taking == {*PRINTERS, "rules"}


@pytest.mark.parametrize("command", sorted(PRINTERS))
def test_the_option_offers_exactly_what_the_command_prints(command: str) -> None:
    option = _format_option(command)
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == list(PRINTERS[command])
    assert option.default == "text" and option.show_default


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("validate", "How problems are printed (github: PR annotations)."),
        (
            "plan",
            "markdown: a pull-request comment; json: the shape of generator/schemas/plan-report.schema.json.",
        ),
        ("fit", "json: the shape of generator/schemas/fit-report.schema.json; github: PR annotations."),
        ("capacity", "json: the shape of generator/schemas/capacity-report.schema.json."),
        ("doctor", "json: the shape of generator/schemas/doctor-report.schema.json."),
        ("rules", "json: the entry's fields (every rule's without RULE-ID)."),
    ],
)
def test_the_help_says_what_each_format_is(command: str, words: str) -> None:
    assert _format_option(command).help == words


def test_printers_are_refused_unless_they_are_the_declared_formats() -> None:
    kind = reporters.ReportKind((reporters.Format("text"), reporters.Format("json")))
    assert list(kind.bind({"json": 2, "text": 1})) == ["text", "json"]  # the declared order
    for printers in ({"text": 1}, {"text": 1, "json": 2, "xml": 3}):
        with pytest.raises(TypeError, match="the formats are"):
            kind.bind(printers)


def test_capacity_markdown_escapes_a_problem_as_the_plan_comment_does() -> None:
    problem = Problem("a_b.yaml", 3, 5, "cap", "@team see <b>#12</b> | www.x.io", Level.WARNING)
    report = CapacityReport(live=False, queues=(), problems=())
    markdown = capacity_formats.FORMATS["markdown"](report, [problem])
    line = "- a\\_b.yaml:3:5: warning: @\u200bteam see \\<b\\>#\u200b12\\</b\\> \\| www\u200b.x.io \\[cap\\]"
    assert markdown.splitlines()[2] == line
