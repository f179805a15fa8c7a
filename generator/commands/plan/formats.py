"""The plan report printed: text for terminals, Markdown for a pull-request comment (a jinja2
template, always under GitHub's 65,536 characters), JSON as it is."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Generic, TypeVar

import jinja2

from ...fit.capacity import is_gpu
from ...printable import one_line
from ...reporters import PLAN, markdown_code, markdown_text, problem_line
from ...util.typed_json import to_json
from .queues import eviction, retention
from .shape import (
    RETAIN,
    Fit,
    Identity,
    LiveDrain,
    LiveFlavor,
    Names,
    Pin,
    Queue,
    QuotaChange,
    Replaced,
    Report,
    Summary,
    WorkloadFit,
)

T = TypeVar("T")

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


def markdown(report: Report) -> str:
    for budget in BUDGETS:
        text = _markdown(report, budget)
        if len(text) < COMMENT_LIMIT:
            return text
    return _markdown(report, Budget(0, False))


@dataclass(frozen=True)
class Cut(Generic[T]):
    """The rows a table shows, and how many it leaves out."""

    rows: Sequence[T]
    more: int


def _cut(rows: Sequence[T], limit: int) -> Cut[T]:
    return Cut(rows[:limit], max(0, len(rows) - limit))


@dataclass(frozen=True)
class QueueRow:
    """A queue's row, whose quota cell holds at most the budget's changes (a queue of 60
    identities and 8 resources has 480: one such cell outgrew every budget)."""

    queue: Queue
    quota: Cut[QuotaChange]


@dataclass(frozen=True)
class ReplacedRow:
    queue: str
    flavor: Replaced


def _markdown(report: Report, budget: Budget) -> str:
    changed = [q for q in report.queues if q.change != "unchanged"]
    replaced = [ReplacedRow(q.name, r) for q in changed for r in q.flavors_replaced]
    # the queues a merge drains or stops are named whatever the budget: the alert is the point
    alerted = max(budget.rows, ALERT_ROWS)
    profiles = report.profiles
    context = {
        "report": report,
        "queues": _cut([QueueRow(q, _cut(q.quota, budget.rows)) for q in changed], budget.rows),
        "drains": _cut(report.summary.drains, alerted),
        "stopped": _cut(report.summary.stopped, alerted),
        "replaced": _cut(replaced, budget.rows),
        "base_problems": _cut(report.base.problems or (), budget.rows),
        "hierarchy": {
            "sources": _cut(profiles.sources, budget.rows),
            "added": _cut(profiles.added, budget.rows),
            "removed": _cut(profiles.removed, budget.rows),
            "changed": _cut(profiles.changed, budget.rows),
        },
        "moves": _cut(profiles.moves, budget.rows),
        "sources": _cut(report.nodes.by_source, budget.rows),
        "domains": _cut(report.nodes.by_domain, min(budget.rows, DOMAIN_ROWS)),
        "pins": _cut(report.nodes.pins, budget.rows),
        "fit": _cut([f for f in report.fit if f.changed], budget.rows),
        "workloads": _cut(report.workloads, budget.rows),
        "never_fit": _cut(report.summary.never_fit, alerted),
        "warnings": _cut(report.warnings, budget.rows),
        "diagrams": budget.diagrams,
    }
    return _environment().get_template("plan.md.j2").render(context)


@cache
def _environment() -> jinja2.Environment:
    folder = resources.files("tasgen").joinpath("templates")
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


def _identity(identity: Identity) -> str:
    return ", ".join(f"`{v}`" for v in identity.values())


def _fit(value: Fit | None) -> str:
    if value is None:  # the queue has not the flavor, or its Topology not the level
        return "no flavor"
    quota = " by quota" if value.by_quota else ""
    if value.pods == 0:
        return f"**does not fit**{quota}"
    pods = f"{value.pods} pod{'' if value.pods == 1 else 's'} of {value.gpus_per_pod}"
    return f"{value.gpus} GPUs ({pods}){', bounded' + quota if quota else ''}"


def _verdict(value: WorkloadFit | None) -> str:
    """A workload's verdict in a few words: where it fits, or why it never does (the first
    PodSet that does not; Kueue stops there)."""
    if value is None:
        return "(new)"
    if value.fits:
        if len(value.pod_sets) == 1 and value.pod_sets[0].flavor is not None:
            ps = value.pod_sets[0]
            return f"fits on {ps.flavor}" + (f" at {ps.level}" if ps.level else "")
        return "fits"
    first = next(p for p in value.pod_sets if not p.fits)
    return f"never fits: PodSet {first.name}: {first.reason or 'Kueue admits it with no flavor'}"


def _levels(levels: Names | None) -> str:
    return "(none)" if levels is None else " > ".join(f"`{k}`" for k in levels)


def _live(live: LiveDrain, name: Callable[[str], str] = str) -> str:
    """``name`` writes a flavor's name (markdown: as code)."""
    # reservingWorkloads counts the queue's every flavor: the dropped ones' are counted apart
    reserving = f"{sum(f.workloads for f in live.flavors)} workload(s) admitted on the dropped flavors"
    sentence = f"no workload evicted; {reserving}"
    if live.evicted.workloads:
        holding = _amounts(live.evicted.resources) or "nothing"
        sentence = f"{live.evicted.workloads} workload(s) evicted, holding {holding}; {reserving}"
    return "; ".join([sentence, *(_kept(f, name) for f in live.retained)])


def _kept(flavor: LiveFlavor, name: Callable[[str], str]) -> str:
    """A retained flavor's figures: what keeps running on it, or that it can leave."""
    if not flavor.workloads:
        return f"retained {name(flavor.name)} is idle: the next `tasgen render --kubeconfig` drops it"
    reserving = _amounts(flavor.reservation) or "nothing"
    running = f"{flavor.workloads} workload(s) keep running"
    return f"{running} on retained {name(flavor.name)}, reserving {reserving}"


def _amounts(resources: Mapping[str, str]) -> str:
    """``2 nvidia.com/gpu, 1 cpu``: GPUs first, then by name."""
    ordered = sorted(resources.items(), key=lambda item: (not is_gpu(item[0]), item[0]))
    return ", ".join(f"{amount} {resource}" for resource, amount in ordered)


def _evicts(queue: str, action: str) -> str:
    return eviction(queue, action) or ""


def _retains(queue: Queue) -> str:
    """WaitForIdle's sentence for a queue that retains flavors (markdown: names as code)."""
    if queue.drain.action != RETAIN:
        return ""
    return retention(", ".join(markdown_code(f) for f in queue.flavors_retained))


FILTERS: dict[str, Callable[..., str]] = {
    "retains": _retains,
    "cell": markdown_text,
    "evicts": _evicts,
    "code": markdown_code,
    "identity": _identity,
    "fit": _fit,
    "levels": _levels,
    "live": lambda live: _live(live, name=markdown_code),
    "verdict": lambda value: markdown_text(_verdict(value)),
    "pin": lambda pin: pin_text(pin, name=markdown_code),
}


def json_text(report: Report) -> str:
    return json.dumps(to_json(report), indent=2, sort_keys=True) + "\n"


def text(report: Report) -> str:
    """For terminals: one line per change, the same cuts as the comment's largest budget
    (each cut says how many lines it left out)."""
    lines = [_headline(report)]
    sections = (
        _base_lines,
        _queue_lines,
        _profile_lines,
        _node_lines,
        _fit_lines,
        _workload_lines,
        _warning_lines,
    )
    for section in sections:
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


def _base_lines(report: Report) -> list[str]:
    problems = [f"  {problem_line(w)}" for w in report.base.problems or ()]
    return _shown(problems, "problem of the base", "  ")


def _headline(report: Report) -> str:
    s, base = report.summary, report.base
    note = {"absent": " (no inventory there)", "invalid": " (its inventory does not compile)"}
    return (
        f"tasgen plan against {base.ref}{note.get(base.state, '')}: {_queue_count(s)}, "
        f"{s.flavors_added} flavor(s) added, {s.flavors_removed} removed, "
        f"{s.nodes_changed} node(s) relabelled, {s.fit_changed} fit figure(s) changed, "
        f"{_workload_count(report)}{s.warnings} warning(s)"
    )


def _queue_count(s: Summary) -> str:
    """Queues changed; new and removed ones apart, said only when there are some (a new queue
    changes nothing that runs)."""
    added = f", {s.queues_added} new queue(s)" if s.queues_added else ""
    removed = f", {s.queues_removed} queue(s) removed" if s.queues_removed else ""
    return f"{s.queues_changed} queue(s) changed{added}{removed}"


def _workload_count(report: Report) -> str:
    """Said only when there is one: most inventories list no workloads."""
    count = report.summary.workloads_changed
    return f"{count} workload verdict(s) new or changed, " if count else ""


def _queue_lines(report: Report) -> list[str]:
    lines = []
    for q in (q for q in report.queues if q.change != "unchanged"):
        lines.append(f"queue {q.name} ({q.change}): drain {q.drain.action}: {q.drain.reason}")
        policy = q.stop_policy
        if policy.before is not None and policy.after is not None and policy.before != policy.after:
            lines.append(f"  stopPolicy: {policy.before} -> {policy.after}")
        lines += [f"  + {f.name}" for f in q.flavors_added]
        lines += [f"  - {f.name}" for f in q.flavors_removed]
        lines += [f"  = {f}: retained until idle at the quota its Workloads hold" for f in q.flavors_retained]
        lines += [f"  ~ {f.name}: {', '.join(f.fields)} changed" for f in q.flavors_changed]
        if q.flavor_order:
            order = q.flavor_order
            lines.append(f"  flavor order: {', '.join(order.before)} -> {', '.join(order.after)}")
        quota = [
            f"  quota {_identity_text(d.identity)}{' ' + d.flavor if d.flavor is not None else ''} "
            f"{d.resource} {d.field}: {d.before or '-'} -> {d.after or '-'}"
            for d in q.quota
        ]
        lines += _shown(quota, "quota change", "  ")
        if q.settings_changed:
            lines.append(f"  settings changed: {', '.join(q.settings_changed)}")
        lines += [f"  + LocalQueue {lq}" for lq in q.local_queues_added]
        lines += [f"  - LocalQueue {lq}" for lq in q.local_queues_removed]
        if q.drain.live:
            lines.append(f"  live: {_live(q.drain.live)}")
    return lines


def _identity_text(identity: Identity) -> str:
    return ",".join(identity.values())


def _profile_lines(report: Report) -> list[str]:
    p = report.profiles
    lines = [f"source {x.source}: levels {_arrow(x.before)} -> {_arrow(x.after)}" for x in p.sources]
    lines += [f"profile {x.id} added: {_arrow(x.levels)} ({x.nodes} nodes)" for x in p.added]
    lines += [f"profile {x.id} removed: {_arrow(x.levels)} ({x.nodes} nodes)" for x in p.removed]
    lines += [f"profile {x.id}: {x.nodes_before} -> {x.nodes_after} nodes" for x in p.changed]
    moves = [f"  {m.nodes} node(s) move {m.from_ or '(new)'} -> {m.to or '(gone)'}" for m in p.moves]
    return lines + _shown(moves, "move", "  ")


def _arrow(levels: Names | None) -> str:
    return "(none)" if levels is None else " > ".join(levels)


def pin_text(pin: Pin, name: Callable[[str], str] = str) -> str:
    """A pin in the words every format uses (``name`` writes a name as the format does)."""
    who = ", ".join(name(x) for x in pin.names) if pin.names is not None else f"{pin.nodes} node(s)"
    if pin.profile is None:
        kept = "in transit (no flavor selects it)"
    else:
        flavors = ", ".join(name(f) for f in pin.flavors)
        kept = f"kept on profile {name(pin.profile)}" + (f" (flavor {flavors})" if flavors else "")
    return f"{who}: {kept} until idle, then profile {name(pin.planned_profile)}"


def _pin_lines(report: Report) -> list[str]:
    pins = [f"  {pin_text(p)}" for p in report.nodes.pins]
    if not pins:
        return []
    head = f"pinned: {sum(p.nodes for p in report.nodes.pins)} node(s) keep their flavor labels until idle"
    return [head, *_shown(pins, "pin", "  ")]


def _node_lines(report: Report) -> list[str]:
    n = report.nodes
    if not n.changed:
        return _pin_lines(report)
    lines = [f"nodes: {n.changed} of {n.total} get new labels"]
    for x in n.by_source:
        keys = ", ".join(f"{k} ({c})" for k, c in x.keys.items())
        lines.append(f"  by {x.source}: {x.nodes} node(s): {keys}")
    domains = [
        f"  in {d.level}={d.domain}: {d.nodes} node(s)" if d.domain else f"  {d.level}: {d.nodes} node(s)"
        for d in n.by_domain
    ]
    lines += _shown(domains, "domain", "  ", DOMAIN_ROWS)
    for c in n.changes or ():
        changes = "; ".join(f"{x.key} {x.before or '-'} -> {x.after or '-'}" for x in c.labels)
        lines.append(f"  {c.node}: {changes}")
    return lines + _pin_lines(report)


def _fit_lines(report: Report) -> list[str]:
    lines = [
        f"fit {f.queue} {_identity_text(f.identity)} {f.flavor} at {f.level}: "
        f"largest {_fit(f.before).replace('*', '')} -> {_fit(f.after).replace('*', '')}"
        for f in report.fit
        if f.changed
    ]
    return _shown(lines, "fit figure")


def _workload_lines(report: Report) -> list[str]:
    lines = [
        f"workload {w.kind} {w.namespace}/{w.name} ({w.change}) {w.file}:{w.line}:{w.column}: "
        f"{_verdict(w.before)} -> {_verdict(w.after)}"
        for w in report.workloads
    ]
    return _shown(lines, "workload")


def _warning_lines(report: Report) -> list[str]:
    return [problem_line(w) for w in report.warnings]


FORMATS: dict[str, Callable[[Report], str]] = PLAN.bind(
    {"text": text, "markdown": markdown, "json": json_text}
)
