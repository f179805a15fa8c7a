"""How the capacity report is printed: text (a line per level and size), JSON (the shape of
generator/schemas/capacity-report.schema.json) and Markdown (a table per ClusterQueue)."""

from __future__ import annotations

import json
from collections.abc import Callable

from ...model import Problem
from ...printable import one_line
from ...reporters import CAPACITY, markdown_code, markdown_text, problem_line
from ...util.typed_json import to_json
from .report import CapacityReport, FlavorCapacity, SizeSlots, Slots

Format = Callable[[CapacityReport, list[Problem]], str]


def text(report: CapacityReport, problems: list[Problem]) -> str:
    lines = []
    for q in report.queues:
        lines.append(one_line(f"ClusterQueue {q.name}" + (f" (cohort {q.cohort})" if q.cohort else "")))
        for f in q.flavors:
            lines.append(one_line(f"  flavor {f.name}: {_flavor_facts(f)}"))
            for level in f.levels:
                lines.append(one_line(f"    {level.level}: {level.domains} domain(s)"))
                for s in level.sizes:
                    lines.append(one_line(f"      {_size(s)}: {_slots(s.empty, s)}"))
                    if s.now is not None:
                        lines.append(one_line(f"        now: {_slots(s.now, s)}"))
    lines += [problem_line(p) for p in problems]
    lines.append(_summary(report, problems))
    return "\n".join(lines) + "\n"


def _flavor_facts(f: FlavorCapacity) -> str:
    if f.topology is None:
        return "not topology-aware: no levels"
    said = f"Topology {f.topology}, {f.nodes} node(s)"
    if f.resource is None or f.quota is None:
        return said + ", no GPUs"
    said += f", quota {f.quota.empty} {f.resource}"
    return said + (f" ({f.quota.now} now)" if f.quota.now is not None else "")


def _size(s: SizeSlots) -> str:
    return f"{s.gpus_per_pod}-GPU pods" + (f" x{s.pods}" if s.pods > 1 else "")


def _slots(slots: Slots, s: SizeSlots) -> str:
    return (
        f"largest {slots.largest} pod(s) ({slots.largest_gpus} GPUs), {slots.domains} domain(s) hold {s.pods}"
    )


def _summary(report: CapacityReport, problems: list[Problem]) -> str:
    flavors = sum(len(q.flavors) for q in report.queues)
    said = f"{len(report.queues)} ClusterQueue(s), {flavors} flavor(s)"
    said += ", empty and now" if report.live else ", on an empty cluster"
    return said + (f"; {len(problems)} problem(s)" if problems else "")


def json_format(report: CapacityReport, problems: list[Problem]) -> str:
    return json.dumps(to_json(report), indent=2) + "\n"


def markdown(report: CapacityReport, problems: list[Problem]) -> str:
    """A table per ClusterQueue: a row per flavor, level and size."""
    out = ["## Capacity", ""]
    now = " | largest now | domains now" if report.live else ""
    for q in report.queues:
        out += [
            f"### ClusterQueue {markdown_code(q.name, table=False)}"
            + (f" (cohort {markdown_code(q.cohort, table=False)})" if q.cohort else ""),
            "",
        ]
        rows = []
        for f in q.flavors:
            if not f.levels or f.quota is None:
                out.append(f"- {markdown_code(f.name, table=False)}: {markdown_text(_flavor_facts(f))}")
                continue
            for level in f.levels:
                for s in level.sizes:
                    cells = [
                        markdown_code(f.name),
                        markdown_code(level.level),
                        str(level.domains),
                        _size(s),
                        _md_slots(s.empty),
                        str(s.empty.domains),
                    ]
                    if s.now is not None:
                        cells += [_md_slots(s.now), str(s.now.domains)]
                    rows.append("| " + " | ".join(cells) + " |")
        if rows:
            if out[-1] != "":
                out.append("")
            head = f"| flavor | level | domains | size | largest | domains holding it{now} |"
            out += [head, "|---" * (head.count("|") - 1) + "|", *rows]
        out.append("")
    out += [f"- {markdown_text(problem_line(p))}" for p in problems]
    out.append(_summary(report, problems))
    return "\n".join(out) + "\n"


def _md_slots(slots: Slots) -> str:
    return f"{slots.largest} pod(s), {slots.largest_gpus} GPUs"


FORMATS: dict[str, Format] = CAPACITY.bind({"text": text, "json": json_format, "markdown": markdown})
