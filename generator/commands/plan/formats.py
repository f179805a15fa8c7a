"""The plan report printed: text for terminals, Markdown for a pull-request comment (a jinja2
template, always under GitHub's 65,536 characters), JSON as it is."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from generator.printable import one_line

#: GitHub refuses a comment body of 65,536 characters or more
COMMENT_LIMIT = 65_536
MARKER = "<!-- tasgen-plan -->"


@dataclass(frozen=True)
class Budget:
    """How many rows each table shows, and whether the diagrams are drawn."""

    rows: int
    diagrams: bool


#: tried in order until the comment fits; the last one is bounded whatever the report's size
BUDGETS = (Budget(200, True), Budget(40, True), Budget(10, False), Budget(3, False))
#: domains listed under nodes: a source whose coarsest level is a rack has one per rack, and a
#: large change would list hundreds of one-node domains (the JSON keeps them all)
DOMAIN_ROWS = 20
#: queues named in the drain and stop alerts even when the tables show fewer rows
ALERT_ROWS = 10


def markdown(report: dict[str, Any]) -> str:
    for budget in BUDGETS:
        text = _markdown(report, budget)
        if len(text) < COMMENT_LIMIT:
            return text
    return _markdown(report, Budget(0, False))


def _markdown(report: dict[str, Any], budget: Budget) -> str:
    queues = [_quota_cut(q, budget.rows) for q in report["queues"] if q["change"] != "unchanged"]
    replaced = [{"queue": q["name"], **r} for q in queues for r in q["flavorsReplaced"]]
    # the queues a merge drains or stops are named whatever the budget: the alert is the point
    alerted = max(budget.rows, ALERT_ROWS)
    context = {
        "report": report,
        "queues": _cut(queues, budget.rows),
        "drains": _cut(report["summary"]["drains"], alerted),
        "stopped": _cut(report["summary"]["stopped"], alerted),
        "replaced": _cut(replaced, budget.rows),
        "base_problems": _cut(report["base"].get("problems", []), budget.rows),
        "hierarchy": {
            k: _cut(report["profiles"][k], budget.rows) for k in ("sources", "added", "removed", "changed")
        },
        "moves": _cut(report["profiles"]["moves"], budget.rows),
        "sources": _cut(report["nodes"]["bySource"], budget.rows),
        "domains": _cut(report["nodes"]["byDomain"], min(budget.rows, DOMAIN_ROWS)),
        "fit": _cut([f for f in report["fit"] if f["changed"]], budget.rows),
        "warnings": _cut(report["warnings"], budget.rows),
        "diagrams": budget.diagrams,
    }
    return _environment().get_template("plan.md.j2").render(context)


def _cut(rows: list[Any], limit: int) -> dict[str, Any]:
    return {"rows": rows[:limit], "more": max(0, len(rows) - limit)}


def _quota_cut(queue: dict[str, Any], limit: int) -> dict[str, Any]:
    """A queue row whose quota cell holds at most ``limit`` changes (a queue of 60 identities
    and 8 resources has 480: one such cell outgrew every budget)."""
    return {**queue, "quota": queue["quota"][:limit], "quotaMore": max(0, len(queue["quota"]) - limit)}


@cache
def _environment() -> jinja2.Environment:
    folder = resources.files("generator").joinpath("templates")
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: folder.joinpath(name).read_text("utf-8")),
        autoescape=False,  # Markdown; cells are escaped by the cell filter
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)
    return env


#: Markdown's inline syntax, HTML and its entities, and the table's pipe: escaped in text from
#: outside (an entity such as &commat; would otherwise spell what the escapes keep out)
_MARKUP = {c: f"\\{c}" for c in "\\`*_[]<>|!~&"}
#: an @mention, an #issue reference and a bare link are made by GitHub from plain text: a
#: zero-width space after the sign keeps them text (it is invisible, but copied with the text)
_LINKING = re.compile(r"(@)(?=\w)|(#)(?=\d)|(:)(?=//)|(www)(?=\.)", re.IGNORECASE)


def _cell(text: object) -> str:
    """Text from anywhere (a message quoting a value, a file name) as a table cell or a list
    item: one line, control characters escaped, markup escaped, nothing that links or
    notifies. A value in the inventory can then neither format the comment nor break its
    table, nor ping anyone."""
    value = one_line(" ".join(str(text).split()))
    return "".join(_MARKUP.get(c, c) for c in _LINKING.sub(lambda m: f"{m.group(0)}\u200b", value))


def _code(text: object, table: bool = True) -> str:
    """A code span that holds any text: one line, fenced by more backticks than it holds; in a
    table its pipes escaped (GitHub reads \\| inside a cell's code span as |)."""
    value = one_line(str(text))
    value = (value.replace("|", "\\|") if table else value) or " "  # `` is no code span: ` ` is
    fence = "`" * (max(map(len, re.findall("`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _identity(identity: dict[str, str]) -> str:
    return ", ".join(f"`{v}`" for v in identity.values())


def _fit(value: dict[str, int] | None) -> str:
    if value is None:  # no flavor of the identity has this level (a queue or level added or gone)
        return "no flavor"
    if value["pods"] == 0:
        return "**does not fit**"
    return f"{value['gpus']} GPUs ({value['pods']} pod{'' if value['pods'] == 1 else 's'})"


def _levels(levels: list[str] | None) -> str:
    return "(none)" if levels is None else " > ".join(f"`{k}`" for k in levels)


def _live(live: dict[str, Any]) -> str:
    return f"{live['reservingWorkloads']} workload(s) reserve the dropped flavors"


FILTERS: dict[str, Callable[..., str]] = {
    "cell": _cell,
    "code": _code,
    "identity": _identity,
    "fit": _fit,
    "levels": _levels,
    "live": _live,
}


def json_text(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def text(report: dict[str, Any]) -> str:
    """For terminals: one line per change, the same cuts as the comment's largest budget
    (each cut says how many lines it left out)."""
    lines = [_headline(report)]
    for section in (_base_lines, _queue_lines, _profile_lines, _node_lines, _fit_lines, _warning_lines):
        lines += section(report)
    return "\n".join(map(one_line, lines)) + "\n"  # a value's line break stays in its line


def _shown(lines: list[str], noun: str, indent: str = "", limit: int = BUDGETS[0].rows) -> list[str]:
    """At most ``limit`` rows (the largest budget's), and a line that says how many more."""
    more = (
        [f"{indent}... and {len(lines) - limit} more {noun}(s): see --format json"]
        if len(lines) > limit
        else []
    )
    return lines[:limit] + more


def _base_lines(report: dict[str, Any]) -> list[str]:
    problems = [
        f"  {w['path']}:{w['line']}:{w['col']}: {w['level']}: {w['message']} [{w['rule']}]"
        for w in report["base"].get("problems", [])
    ]
    return _shown(problems, "problem of the base", "  ")


def _headline(report: dict[str, Any]) -> str:
    s, base = report["summary"], report["base"]
    note = {"absent": " (no inventory there)", "invalid": " (its inventory does not compile)"}
    return (
        f"tasgen plan against {base['ref']}{note.get(base['state'], '')}: {s['queuesChanged']} queue(s) "
        f"changed, {s['flavorsAdded']} flavor(s) added, {s['flavorsRemoved']} removed, "
        f"{s['nodesChanged']} node(s) relabelled, {s['fitChanged']} fit figure(s) changed, "
        f"{s['warnings']} warning(s)"
    )


def _queue_lines(report: dict[str, Any]) -> list[str]:
    lines = []
    for q in (q for q in report["queues"] if q["change"] != "unchanged"):
        lines.append(
            f"queue {q['name']} ({q['change']}): drain {q['drain']['action']}: {q['drain']['reason']}"
        )
        policy = q["stopPolicy"]
        if (
            policy["before"] is not None
            and policy["after"] is not None
            and policy["before"] != policy["after"]
        ):
            lines.append(f"  stopPolicy: {policy['before']} -> {policy['after']}")
        lines += [f"  + {f['name']}" for f in q["flavorsAdded"]]
        lines += [f"  - {f['name']}" for f in q["flavorsRemoved"]]
        lines += [f"  ~ {f['name']}: {', '.join(f['fields'])} changed" for f in q["flavorsChanged"]]
        if q["flavorOrder"]:
            order = q["flavorOrder"]
            lines.append(f"  flavor order: {', '.join(order['before'])} -> {', '.join(order['after'])}")
        quota = [
            f"  quota {_identity_text(d['identity'])}{' ' + d['flavor'] if 'flavor' in d else ''} "
            f"{d['resource']} {d['field']}: {d['before'] or '-'} -> {d['after'] or '-'}"
            for d in q["quota"]
        ]
        lines += _shown(quota, "quota change", "  ")
        if q["settingsChanged"]:
            lines.append(f"  settings changed: {', '.join(q['settingsChanged'])}")
        lines += [f"  + LocalQueue {lq}" for lq in q["localQueuesAdded"]]
        lines += [f"  - LocalQueue {lq}" for lq in q["localQueuesRemoved"]]
        if q["drain"].get("live"):
            lines.append(f"  live: {_live(q['drain']['live'])}")
    return lines


def _identity_text(identity: dict[str, str]) -> str:
    return ",".join(identity.values())


def _profile_lines(report: dict[str, Any]) -> list[str]:
    p = report["profiles"]
    lines = [
        f"source {x['source']}: levels {_arrow(x['before'])} -> {_arrow(x['after'])}" for x in p["sources"]
    ]
    lines += [f"profile {x['id']} added: {_arrow(x['levels'])} ({x['nodes']} nodes)" for x in p["added"]]
    lines += [f"profile {x['id']} removed: {_arrow(x['levels'])} ({x['nodes']} nodes)" for x in p["removed"]]
    lines += [f"profile {x['id']}: {x['nodesBefore']} -> {x['nodesAfter']} nodes" for x in p["changed"]]
    moves = [
        f"  {m['nodes']} node(s) move {m['from'] or '(new)'} -> {m['to'] or '(gone)'}" for m in p["moves"]
    ]
    return lines + _shown(moves, "move", "  ")


def _arrow(levels: list[str] | None) -> str:
    return "(none)" if levels is None else " > ".join(levels)


def _node_lines(report: dict[str, Any]) -> list[str]:
    n = report["nodes"]
    if not n["changed"]:
        return []
    lines = [f"nodes: {n['changed']} of {n['total']} get new labels"]
    for x in n["bySource"]:
        keys = ", ".join(f"{k} ({c})" for k, c in x["keys"].items())
        lines.append(f"  by {x['source']}: {x['nodes']} node(s): {keys}")
    domains = [
        f"  in {d['level']}={d['domain']}: {d['nodes']} node(s)"
        if d["domain"]
        else f"  {d['level']}: {d['nodes']} node(s)"
        for d in n["byDomain"]
    ]
    lines += _shown(domains, "domain", "  ", DOMAIN_ROWS)
    for c in n["changes"] or []:
        changes = "; ".join(f"{x['key']} {x['before'] or '-'} -> {x['after'] or '-'}" for x in c["labels"])
        lines.append(f"  {c['node']}: {changes}")
    return lines


def _fit_lines(report: dict[str, Any]) -> list[str]:
    lines = [
        f"fit {f['queue']} {_identity_text(f['identity'])} at {f['level']}: "
        f"{_fit(f['before']).strip('*')} -> {_fit(f['after']).strip('*')}"
        for f in report["fit"]
        if f["changed"]
    ]
    return _shown(lines, "fit figure")


def _warning_lines(report: dict[str, Any]) -> list[str]:
    return [
        f"{w['path']}:{w['line']}:{w['col']}: {w['level']}: {w['message']} [{w['rule']}]"
        for w in report["warnings"]
    ]


FORMATS: dict[str, Callable[[dict[str, Any]], str]] = {"text": text, "markdown": markdown, "json": json_text}
