"""The command-line docs cannot drift from the click commands: README.md's and
docs/reference/cli.md's commands tables give every command, the same synopsis in both, and only
options, values and arguments the command has; the table of shared options is generated from
the commands (python -m tests.cli_reference --write)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from tests.cli_reference import (
    CLI_PAGE,
    README,
    command_rows,
    commands,
    common_options_table,
    synopsis_problems,
    with_table,
)

COMMANDS = commands()
PAGES = [README, CLI_PAGE]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_commands_table_gives_every_command_once(page: Path) -> None:
    rows = command_rows(page.read_text())
    assert sorted(rows) == sorted(COMMANDS)
    assert [name for name, synopses in rows.items() if len(synopses) != 1] == []


def test_readme_and_the_reference_give_each_command_the_same_synopsis() -> None:
    readme, reference = command_rows(README.read_text()), command_rows(CLI_PAGE.read_text())
    assert {n: s for n, s in readme.items() if reference.get(n) != s} == {}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_synopsis_is_what_the_command_takes(name: str) -> None:
    (synopsis,) = command_rows(CLI_PAGE.read_text())[name]
    assert synopsis_problems(name, COMMANDS[name], synopsis) == []


def test_the_shared_options_table_is_current() -> None:
    page = CLI_PAGE.read_text()
    assert with_table(page, common_options_table()) == page, "run python -m tests.cli_reference --write"


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--base", required=True)
@click.option("--format", "format_", type=click.Choice(["text", "json"]), default="text")
@click.option("--strict", is_flag=True)
def sample(paths: tuple[str, ...], base: str, format_: str, strict: bool) -> None:
    """A command to check the checker on."""


@pytest.mark.parametrize(
    ("synopsis", "problems"),
    [
        ("--base REF [--format text|json] [--strict] [PATH...]", []),
        ("--base REF [--format json|text] [PATH...]", []),  # the values in another order
        ("[--base REF] [PATH...]", ["x: --base is required"]),
        ("--base REF [--format text|xml] [PATH...]", ["x: --format takes text|json, not text|xml"]),
        ("--base REF [--strict VALUE] [PATH...]", ["x: --strict is a flag"]),
        ("--base REF [--format] [PATH...]", ["x: --format takes a value"]),
        ("--base REF [--color never] [PATH...]", ["x: no option --color"]),
        ("--base REF [PATH]", ["x: [PATH] takes many"]),
        ("--base REF PATH...", ["x: PATH... is optional"]),
        ("--base REF", ["x: argument PATHS is not shown"]),
        ("[PATH...]", ["x: required option --base is not shown"]),
        ("--base REF [PATH...] [DIR]", ["x: no argument [DIR]"]),
    ],
)
def test_the_synopsis_check_finds_each_kind_of_drift(synopsis: str, problems: list[str]) -> None:
    assert synopsis_problems("x", sample, synopsis) == problems
