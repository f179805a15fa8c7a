"""load -> validate -> plan -> emit, as one visible pipeline used by the CLI, tests and
benchmarks. Nothing here exits or prints; the result says what happened."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from generator import emit, memo
from generator.load.files import InputFile, display_path, load_files, read_inventory
from generator.load.locate import locate
from generator.model import Finding, Level, Problem
from generator.plan import Plan, Summary, plan, source_statuses
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
        return _run(read_inventory(inventory_dir), out_dir, now, mode, strict)
    finally:
        if gc_was_enabled:
            gc.enable()


def _render_with_memo(inventory_dir: Path, out_dir: Path, now: datetime, strict: bool) -> Result:
    files = read_inventory(inventory_dir)
    # Keyed on the bytes that are parsed below, never re-read: an edit during the render
    # cannot pair old bytes with new output.
    digest = memo.input_digest(files, (display_path(inventory_dir), display_path(out_dir)))
    record = memo.recall(out_dir, digest, now, emit.owned_files(out_dir))
    if record is not None:
        summary = Summary.from_data(record["summary"])
        summary.mutated_nodes = 0
        return Result(memo.problems_of(record), summary)
    result = _run(files, out_dir, now, Mode.RENDER, strict)
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


@dataclass
class Compilation:
    """What an inventory compiles to, before anything is compared with or written to disk."""

    findings: list[Finding]
    texts: dict[str, str]  # inventory texts by shown path, for positions
    planned: Plan | None = None  # None when validation failed
    summary: Summary | None = None
    expiries: list[datetime] = field(default_factory=list)  # of every snapshot

    @property
    def failed(self) -> bool:
        return self.planned is None or any(f.level is Level.ERROR for f in self.findings)

    def problems(self) -> list[Problem]:
        return locate(self.findings, self.texts)


def compile(files: list[InputFile], now: datetime, *, node_features: bool = True) -> Compilation:
    """Inventory files -> the planned objects: pure (no file is opened, nothing written), so
    that a git revision compiles as well as the working tree."""
    validation = validate(load_files(files), now)
    texts, ctx = dict(validation.texts), validation.context
    if validation.has_errors or ctx is None:
        summary = Summary(sources=source_statuses(ctx, validation.findings)) if ctx else None
        return Compilation(validation.findings, texts, summary=summary)
    planned = plan(ctx, node_features=node_features)
    expiries = [
        s.snapshot.expires_at
        for s in ctx.inventory.sources.values()
        if s.snapshot is not None and s.snapshot.expires_at is not None
    ]
    return Compilation(validation.findings + planned.findings, texts, planned, planned.summary, expiries)


def _run(files: list[InputFile], out_dir: Path, now: datetime, mode: Mode, strict: bool) -> Result:
    compiled = compile(files, now, node_features=mode is not Mode.VALIDATE)
    if mode is Mode.VALIDATE or compiled.failed or compiled.planned is None:
        return Result(compiled.problems(), compiled.summary)
    findings, texts, planned = compiled.findings, compiled.texts, compiled.planned
    out_label = display_path(out_dir)
    emission = emit.compare(planned.manifests, out_dir, out_label)
    texts.update(emission.texts)
    findings += emission.findings
    planned.summary.mutated_nodes = emission.mutated_nodes
    if mode is Mode.CHECK:
        findings += emission.stale(out_label)
    result = _finish(findings, texts, planned.summary, emission, out_dir, mode, strict)
    result.expiries = compiled.expiries
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
