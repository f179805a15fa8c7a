"""Reporters, chosen by name: the formats each report kind prints in (the one registry every
command's --format comes from), how problems and the status summary are printed, and the
GitHub and Markdown escaping every format shares."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TextIO, TypeVar

from .model import Problem
from .pipeline import Result
from .printable import one_line

Reporter = Callable[[Result, str, TextIO], None]
P = TypeVar("P")


@dataclass(frozen=True)
class Format:
    name: str
    #: what the format is, in --format's help ("" when its name says it all)
    what: str = ""


@dataclass(frozen=True)
class ReportKind:
    """A report and the formats it prints in, the first the default: the click option's
    choices, default and help are built from it, and the printers are bound to it."""

    formats: tuple[Format, ...]
    #: the help's opening words, when the formats' own need a subject
    lead: str = ""

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.formats]

    @property
    def default(self) -> str:
        return self.formats[0].name

    def help(self) -> str:
        said = "; ".join(f"{f.name}: {f.what}" for f in self.formats if f.what)
        return f"{self.lead} ({said})." if self.lead else f"{said}."

    def bind(self, printers: Mapping[str, P]) -> dict[str, P]:
        """The printers by format, refused (at import) unless they are exactly the declared ones."""
        if sorted(printers) != sorted(self.names):
            raise TypeError(f"printers for {sorted(printers)}, but the formats are {self.names}")
        return {name: printers[name] for name in self.names}


def _schema(name: str) -> Format:
    return Format("json", f"the shape of generator/schemas/{name}.schema.json")


_GITHUB = Format("github", "PR annotations")

#: validate, render and check: the problems and the status summary
PROBLEMS = ReportKind((Format("text"), Format("json"), _GITHUB), lead="How problems are printed")
PLAN = ReportKind((Format("text"), Format("markdown", "a pull-request comment"), _schema("plan-report")))
FIT = ReportKind((Format("text"), _schema("fit-report"), _GITHUB))
CAPACITY = ReportKind((Format("text"), _schema("capacity-report"), Format("markdown")))
DOCTOR = ReportKind((Format("text"), _schema("doctor-report")))
RULES = ReportKind((Format("text"), Format("json", "the entry's fields (every rule's without RULE-ID)")))


def text(result: Result, command: str, out: TextIO) -> None:
    for p in result.problems:
        out.write(problem_line(p) + "\n")
    if result.difference:  # a hand-edited file's control characters must not drive the terminal
        out.write("\n" + "".join(one_line(line) + "\n" for line in result.difference.splitlines()))
    if result.summary is not None:
        out.write(_summary_text(result))
    out.write(_verdict(result, command) + "\n")


def _summary_text(result: Result) -> str:
    assert result.summary is not None
    data = result.summary.as_data()
    lines = ["", "sources:" if data["sources"] else "sources: none"]
    for s in data["sources"]:
        state = "Ready" if s["ready"] else "NotReady"
        flags = [f"Valid={s['valid']}", f"OwnershipConflict={s['ownershipConflict']}"]
        flags += ["expired"] if s["expired"] else []
        lines.append(
            f"  {s['name']} ({s['type']}): {state} {' '.join(flags)} "
            f"revision={one_line(s['revision'] or '-')} nodes={'-' if s['nodes'] is None else s['nodes']}"
        )
    if data["profiles"]:
        lines.append("profiles:")
        lines += [f"  {p['id']}: {' > '.join(p['levels'])} ({p['nodes']} nodes)" for p in data["profiles"]]
    if data["queues"]:
        lines.append("queues:")
        lines += [_queue_line(q) for q in data["queues"]]
    if data["mutatedNodes"] is not None:
        lines.append(f"mutatedNodes: {data['mutatedNodes']}")
    return "\n".join(lines) + "\n"


def _queue_line(queue: dict[str, Any]) -> str:
    flavors = "; ".join(_flavor_text(f) for f in queue["flavors"]) or "no flavors"
    local = queue.get("localQueues")
    reached = f"; LocalQueues {', '.join(local)}" if local else ""
    return f"  {queue['name']} (stopPolicy {queue['stopPolicy']}): {flavors}{reached}"


def _flavor_text(flavor: dict[str, Any]) -> str:
    text = f"{flavor['name']} {_amounts(flavor['nominalQuota'])}"
    if "retiringSince" in flavor:
        text += f" (retained until idle, since {flavor['retiringSince']})"
    limits = [f"{key} {_amounts(flavor[key])}" for key in ("borrowingLimit", "lendingLimit") if key in flavor]
    return f"{text} ({'; '.join(limits)})" if limits else text


def _amounts(amounts: dict[str, str]) -> str:
    return ", ".join(f"{r}={q}" for r, q in amounts.items())


def _verdict(result: Result, command: str) -> str:
    counts = f"{result.errors} error(s), {result.warnings} warning(s)"
    if command == "render" and result.errors == 0:
        return f"{counts}; rendered/: {len(result.written)} file(s) written or removed"
    return counts


def json_report(result: Result, command: str, out: TextIO) -> None:
    document = {
        "command": command,
        "problems": [_problem_data(p) for p in result.problems],
        "errors": result.errors,
        "warnings": result.warnings,
        "summary": result.summary.as_data() if result.summary else None,
        "written": result.written,
    }
    out.write(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _problem_data(p: Problem) -> dict[str, Any]:
    return {
        "path": p.path,
        "line": p.line,
        "col": p.col,
        "rule": p.rule,
        "message": p.message,
        "level": str(p.level),
    }


def github(result: Result, command: str, out: TextIO) -> None:
    """GitHub workflow commands: annotations on the pull request's files."""
    for p in result.problems:
        out.write(problem_annotation(p) + "\n")
    if result.summary is not None:
        out.write(_summary_text(result))
    out.write(_verdict(result, command) + "\n")


def step_summary(result: Result, command: str) -> None:
    """The status summary in the GitHub job summary (GITHUB_STEP_SUMMARY), if there is one."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path and result.summary is not None:
        try:
            with open(path, "a", encoding="utf-8", errors="backslashreplace") as stream:
                stream.write(f"### tasgen {command}\n\n```\n{_summary_text(result).strip()}\n```\n")
        except OSError as e:  # the job summary is a courtesy; the annotations are printed
            print(f"tasgen: cannot write the job summary {path}: {e.strerror}", file=sys.stderr)


REPORTERS: dict[str, Reporter] = PROBLEMS.bind({"text": text, "json": json_report, "github": github})


class Located(Protocol):
    """A problem as every report prints it (the pipeline's, or one a report carries)."""

    @property
    def path(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def col(self) -> int: ...
    @property
    def level(self) -> str: ...
    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...


def problem_line(p: Located) -> str:
    """One line whatever the path and message hold (a file name or a taint with a line break
    would start a line of its own: in a CI log, a workflow command)."""
    return f"{one_line(p.path)}:{p.line}:{p.col}: {p.level}: {one_line(p.message)} [{p.rule}]"


def problem_annotation(p: Located) -> str:
    """A problem as a GitHub annotation on its file, naming the command that prints its rule's
    reference (the user's repository has no tasgen docs)."""
    message = f"{p.message} (tasgen rules {p.rule})"
    return annotation(str(p.level), p.path, p.line, p.col, p.rule, message)


def annotation(level: str, path: str, line: int, col: int, title: str, message: str) -> str:
    """A GitHub workflow command that annotates ``path`` (``line`` 0: the whole file), escaped
    as GitHub reads it, so that no value can end the command or start another."""
    where = f"file={_escape_property(path)}" + (f",line={line},col={col}" if line else "")
    return f"::{level} {where},title={_escape_property(title)}::{_escape_data(message)}"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


#: Markdown's inline syntax, HTML and its entities, and the table's pipe: escaped in text from
#: outside (an entity such as &commat; would otherwise spell what the escapes keep out)
_MARKUP = {c: f"\\{c}" for c in "\\`*_[]<>|!~&"}
#: an @mention, an #issue reference and a bare link are made by GitHub from plain text: a
#: zero-width space after the sign keeps them text (it is invisible, but copied with the text)
_LINKING = re.compile(r"(@)(?=\w)|(#)(?=\d)|(:)(?=//)|(www)(?=\.)", re.IGNORECASE)


def markdown_text(text: object) -> str:
    """Text from anywhere (a message quoting a value, a file name) as a Markdown table cell or
    list item: one line, control characters escaped, markup escaped, nothing that links or
    notifies. A value in the inventory can then neither format a comment nor break its table,
    nor ping anyone."""
    value = one_line(" ".join(str(text).split()))
    return "".join(_MARKUP.get(c, c) for c in _LINKING.sub(lambda m: f"{m.group(0)}\u200b", value))


def markdown_code(text: object, table: bool = True) -> str:
    """A Markdown code span that holds any text: one line, fenced by more backticks than it
    holds; in a table its pipes escaped (GitHub reads \\| inside a cell's code span as |)."""
    value = one_line(str(text))
    value = (value.replace("|", "\\|") if table else value) or " "  # `` is no code span: ` ` is
    fence = "`" * (max(map(len, re.findall("`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"
