"""load -> validate -> compile -> emit, as one visible pipeline used by the CLI, tests and
benchmarks. Nothing here exits or prints; the result says what happened."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from pathlib import Path

from . import emit, memo, printable
from .compile import Rendering, Summary, render_objects, source_statuses
from .compile.gate_wiring import RenderStamp
from .emit import outtree, repository
from .emit.previous import render_stamp_of
from .load import live
from .load.files import InputFile, LoadedFile, display_path, load_files, read_inventory
from .load.locate import locate
from .load.previous import carried_of
from .model import Carried, Finding, Level, Problem
from .rules.compile import PREVIOUS_RENDER_UNREAD
from .rules.emit import OUTPUT_UNWRITABLE
from .rules.load import CLUSTER_UNREADABLE
from .util.gc import no_cycle_collection
from .validate import validate
from .validate.checks import Context


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
    report: str = field(default="", repr=False)  # what the CLI prints, made before any write
    difference: str = field(default="", repr=False)  # check: the diff of the stale files
    inputs: list[InputFile] = field(default_factory=list, repr=False)  # to place bad text
    #: the typed inventory and plan, held so that they are freed with the process, not
    #: object by object when the run returns (a large render's objects; see cli.main)
    compilation: Compilation | None = field(default=None, repr=False)

    @property
    def errors(self) -> int:
        return sum(p.level is Level.ERROR for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(p.level is Level.WARNING for p in self.problems)

    def reported(self, report: Report) -> Result:
        """This result with its report; one whose report is not Unicode text becomes a
        problem at the escape it came from (nothing of it is written or printed)."""
        self.report = report(self)
        bad = printable.unpaired_surrogate(self.report) or printable.unpaired_surrogate(self._text())
        problem = printable.surrogate_problem(bad, self.inputs) if bad else None
        if problem is None:
            return self  # (a surrogate of an undecodable file name is printed escaped)
        failed = Result([problem])
        failed.report = report(failed)
        return failed

    def _text(self) -> str:
        """Every string of the result, unescaped (a JSON report escapes what a text one shows)."""
        data = [vars(p) for p in self.problems], self.summary.as_data() if self.summary else None
        return json.dumps(data, ensure_ascii=False, default=str)


#: Result -> the text printed for it; it runs before rendered/ is touched, so that a
#: report that cannot be made (or printed) never follows a write.
Report = Callable[[Result], str]


def run(
    inventory_dir: Path,
    out_dir: Path,
    now: datetime,
    mode: Mode,
    *,
    report: Report,
    use_memo: bool = True,
    strict: bool = False,
    on_wait: Callable[[], None] = lambda: None,
    kubeconfig: Path | None = None,
) -> Result:
    """The whole pipeline; with ``strict``, warnings block writing as errors do. rendered/ is
    read once, under a lock held until the new tree is swapped in (emit.outtree). With
    ``kubeconfig``, the live cluster says which retained flavors are idle (read-only; never
    recalled from the memo)."""
    with no_cycle_collection():
        files = read_inventory(inventory_dir)
        if mode is Mode.VALIDATE:
            return _run(files, None, now, mode, strict).reported(report)
        out_label = display_path(out_dir)
        try:
            create = mode is Mode.RENDER
            with outtree.opened(out_dir, out_label, inventory_dir, create=create, on_wait=on_wait) as out:
                if mode is Mode.CHECK:
                    return _run(files, out, now, mode, strict, kubeconfig).reported(report)
                use_memo = use_memo and kubeconfig is None
                in_label = display_path(inventory_dir)
                return _render(files, out, now, strict, use_memo, report, in_label, kubeconfig)
        except outtree.OutputError as e:
            return Result([OUTPUT_UNWRITABLE.problem(out_label, 1, 1, str(e))]).reported(report)


def _render(
    files: list[InputFile],
    out: outtree.OutputTree,
    now: datetime,
    strict: bool,
    use_memo: bool,
    report: Report,
    in_label: str,
    kubeconfig: Path | None = None,
) -> Result:
    # Keyed on the bytes that are parsed below, never re-read: an edit during the render
    # cannot pair old bytes with new output.
    # ...and on where rendered/ sits in a git work tree, which the sync-path warning judges
    digest = memo.input_digest(files, (in_label, out.label, str(repository.in_work_tree(out.path))))
    recalled = memo.recall(out, digest, now) if use_memo else None
    if recalled is not None:
        return Result(*recalled, inputs=files).reported(report)
    result = _run(files, out, now, Mode.RENDER, strict, kubeconfig).reported(report)
    if result.files is None:
        return result
    try:
        digests = out.replace(result.files) if result.written else None
    except outtree.OutputError as e:
        problem = OUTPUT_UNWRITABLE.problem(out.label, 1, 1, str(e))
        return Result([*result.problems, problem], result.summary, inputs=files).reported(report)
    # A render that could not read the previous one says so; the next, from what it wrote, can:
    # its result is not this one's, so this one is not remembered.
    unread = any(p.rule == PREVIOUS_RENDER_UNREAD.id for p in result.problems)
    if use_memo and result.summary is not None and not unread:
        window = memo.Window.around(now, result.expiries)
        written = digests if digests is not None else memo.files_digest(result.files)
        memo.remember(out.path, digest, window, written, result.problems, result.summary.as_data())
    return result


@dataclass
class Compilation:
    """What an inventory compiles to, before anything is compared with or written to disk."""

    findings: list[Finding]
    texts: dict[str, str]  # inventory texts by shown path, for positions
    rendering: Rendering | None = None  # None when validation failed
    summary: Summary | None = None
    expiries: list[datetime] = field(default_factory=list)  # when the result changes with time
    context: Context | None = None  # the typed inventory (tasgen plan reads its nodes and sources)

    @property
    def failed(self) -> bool:
        return self.rendering is None or any(f.level is Level.ERROR for f in self.findings)

    def problems(self) -> list[Problem]:
        return locate(self.findings, self.texts)


def compile_inventory(
    files: list[InputFile],
    now: datetime,
    *,
    node_features: bool = True,
    parse: Callable[[list[InputFile]], list[LoadedFile]] = load_files,
    stamp: RenderStamp | None = None,
    carried: Carried | None = None,
) -> Compilation:
    """Inventory files -> the compiled objects: pure (no file is opened, nothing written), so
    that a git revision compiles as well as the working tree. ``parse``: how files become
    documents (tasgen plan parses a file that two revisions share once). Both inputs read
    from the render in rendered/ are named apart: ``stamp``, its serial and kept objects,
    which the new serial follows (None: a first render); ``carried``, what it gave the queues
    (and the cluster showed idle): WaitForIdle queues keep the flavors it gave them that the
    new plan drops (docs/explanation/gate.md)."""
    validation = validate(parse(files), now)
    texts, ctx = dict(validation.texts), validation.context
    if validation.has_errors or ctx is None:
        summary = Summary(sources=source_statuses(ctx, validation.findings)) if ctx else None
        return Compilation(validation.findings, texts, summary=summary, context=ctx)
    rendering = render_objects(
        ctx, node_features=node_features, stamp=stamp, carried=carried or Carried(), now=now
    )
    # The result changes when a source expires, and when it comes within the warning horizon
    # (source-expiring): a recorded render holds only between such times.
    horizon = timedelta(days=ctx.inventory.settings.expiry_warning_days)
    expiries = [
        moment
        for s in ctx.inventory.sources.values()
        if s.snapshot is not None and s.snapshot.expires_at is not None
        for moment in (s.snapshot.expires_at, s.snapshot.expires_at - horizon)
    ]
    expiries += rendering.expiries
    findings = validation.findings + rendering.findings
    return Compilation(findings, texts, rendering, rendering.summary, expiries, ctx)


def _run(
    files: list[InputFile],
    out: outtree.OutputTree | None,
    now: datetime,
    mode: Mode,
    strict: bool,
    kubeconfig: Path | None = None,
) -> Result:
    stamp = render_stamp_of(out.owned) if out is not None else None
    carried = carried_of(out.owned) if out is not None else None
    if carried is not None and kubeconfig is not None:
        try:
            carried = live.with_idle(carried, kubeconfig)
        except live.LiveError as e:
            return Result([CLUSTER_UNREADABLE.problem(display_path(kubeconfig), 1, 1, str(e))], inputs=files)
    features = mode is not Mode.VALIDATE
    compiled = compile_inventory(files, now, node_features=features, stamp=stamp, carried=carried)
    if out is None or compiled.failed or compiled.rendering is None:
        return Result(compiled.problems(), compiled.summary, inputs=files)
    findings, texts, rendering = compiled.findings, compiled.texts, compiled.rendering
    emission = emit.compare(rendering, out)
    texts.update(emission.texts)
    findings += emission.findings
    rendering.summary.mutated_nodes = emission.mutated_nodes
    if mode is Mode.CHECK:
        findings += emission.stale(out.label)
    problems = locate(findings, texts)
    result = Result(
        problems, rendering.summary, expiries=compiled.expiries, inputs=files, compilation=compiled
    )
    if mode is Mode.CHECK:
        result.difference = emission.difference(out.label)
    if mode is Mode.RENDER and result.errors == 0 and not (strict and result.warnings):
        result.files = emission.files  # to be written: nothing is, until the report is made
        result.written = emission.written
    return result
