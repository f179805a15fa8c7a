"""load -> validate -> plan -> emit, as one visible pipeline used by the CLI, tests and
benchmarks. Nothing here exits or prints; the result says what happened."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from generator import emit, memo
from generator.load.files import display_path, load_all
from generator.load.locate import locate
from generator.model import Finding, Level, Problem
from generator.plan import Summary, plan, source_statuses
from generator.validate import validate


class Mode(StrEnum):
    VALIDATE = "validate"
    RENDER = "render"
    CHECK = "check"


@dataclass
class Result:
    problems: list[Problem]
    summary: Summary | None = None
    written: list[str] = field(default_factory=list)  # rendered/ files written or removed
    files: dict[str, str] | None = field(default=None, repr=False)  # the rendered tree (render)
    expiries: list[datetime] = field(default_factory=list, repr=False)  # of every snapshot

    @property
    def errors(self) -> int:
        return sum(p.level is Level.ERROR for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(p.level is Level.WARNING for p in self.problems)


def run(
    inventory_dir: Path,
    out_dir: Path,
    now: datetime,
    mode: Mode,
    *,
    use_memo: bool = True,
    strict: bool = False,
) -> Result:
    """The whole pipeline; with ``strict``, warnings block writing as errors do."""
    # The run allocates millions of small objects and frees them by reference counting;
    # the cycle collector would rescan the growing heap again and again (~20% of a
    # 100k-node render) for cycles that this code does not make.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        if mode is Mode.RENDER and use_memo:
            return _render_with_memo(inventory_dir, out_dir, now, strict)
        return _run(inventory_dir, out_dir, now, mode, strict)
    finally:
        if gc_was_enabled:
            gc.enable()


def _render_with_memo(inventory_dir: Path, out_dir: Path, now: datetime, strict: bool) -> Result:
    digest = memo.input_digest(inventory_dir, (display_path(inventory_dir), display_path(out_dir)))
    record = memo.recall(out_dir, digest, now, emit.owned_files(out_dir))
    if record is not None:
        summary = Summary.from_data(record["summary"])
        summary.mutated_nodes = 0
        return Result(memo.problems_of(record), summary)
    result = _run(inventory_dir, out_dir, now, Mode.RENDER, strict)
    if result.errors == 0 and result.summary is not None and result.files is not None:
        memo.remember(
            out_dir,
            digest,
            memo.Window.around(now, result.expiries),
            result.files,
            result.problems,
            result.summary.as_data(),
        )
    return result


def _run(inventory_dir: Path, out_dir: Path, now: datetime, mode: Mode, strict: bool) -> Result:
    files = load_all(inventory_dir)
    validation = validate(files, now)
    texts = dict(validation.texts)
    ctx = validation.context
    if validation.has_errors or ctx is None:
        summary = Summary(sources=source_statuses(ctx, validation.findings)) if ctx else None
        return Result(locate(validation.findings, texts), summary)
    planned = plan(ctx, node_features=mode is not Mode.VALIDATE)
    findings: list[Finding] = validation.findings + planned.findings
    if mode is Mode.VALIDATE or any(f.level is Level.ERROR for f in findings):
        return Result(locate(findings, texts), planned.summary)
    out_label = display_path(out_dir)
    emission = emit.compare(planned.manifests, out_dir, out_label)
    texts.update(emission.texts)
    findings += emission.findings
    planned.summary.mutated_nodes = emission.mutated_nodes
    if mode is Mode.CHECK:
        findings += emission.stale(out_label)
    result = _finish(findings, texts, planned.summary, emission, out_dir, mode, strict)
    result.expiries = [
        s.snapshot.expires_at
        for s in ctx.inventory.sources.values()
        if s.snapshot is not None and s.snapshot.expires_at is not None
    ]
    return result


def _finish(
    findings: list[Finding],
    texts: dict[str, str],
    summary: Summary,
    emission: emit.Emission,
    out_dir: Path,
    mode: Mode,
    strict: bool,
) -> Result:
    result = Result(locate(findings, texts), summary)
    if mode is Mode.RENDER and result.errors == 0 and not (strict and result.warnings):
        try:
            emit.write(out_dir, emission.changes)
        except OSError as e:
            message = f"cannot write rendered/: {e.strerror or e} ({e.filename}); nothing was changed"
            problem = Problem(display_path(out_dir), 1, 1, "output-unwritable", message)
            return Result([*result.problems, problem], summary)
        result.written = sorted([*emission.changes.changed, *emission.changes.removed])
        result.files = emission.files
    return result
