"""From the command line's arguments to the printed report and its exit code (the command line
prints and exits)."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from generator.commands.fit.formats import FORMATS
from generator.fit.inventory import cluster_of
from generator.fit.judge import Judgement, judge
from generator.fit.kinds import workloads
from generator.fit.report import FitReport, PodSetVerdict, ProblemData, WorkloadVerdict
from generator.load import discovery
from generator.load.files import SUFFIXES, InputFile, display_path, load_file, read_inventory
from generator.load.locate import locate
from generator.load.positions import PositionIndex
from generator.model import Finding, Level, Problem, Where
from generator.pipeline import compile
from generator.util.gc import no_cycle_collection

EXIT_CLEAN, EXIT_PROBLEMS = 0, 1


class UsageProblem(Exception):
    """An argument cannot be used (a usage error, exit 2)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option, self.message = option, message


@dataclass
class Outcome:
    report: FitReport
    problems: list[Problem]
    inventory_failed: bool = False


def execute(
    paths: tuple[str, ...],
    inventory: Path,
    format_: str,
    now: datetime,
    kubeconfig: Path | None,
    strict: bool,
) -> tuple[str, int]:
    """The text to print and the exit code; raises :class:`UsageProblem`."""
    if not inventory.is_dir():
        raise UsageProblem("-i / --inventory", f"{inventory} is not a folder")
    files = _read(paths)
    outcome = run(files, inventory, now, kubeconfig)
    failed = any(p.level is Level.ERROR for p in outcome.problems) or (
        strict and any(p.level is Level.WARNING for p in outcome.problems)
    )
    return FORMATS[format_](outcome.report, outcome.problems), EXIT_PROBLEMS if failed else EXIT_CLEAN


def run(files: list[InputFile], inventory: Path, now: datetime, kubeconfig: Path | None) -> Outcome:
    with no_cycle_collection():
        compiled = compile(read_inventory(inventory), now, node_features=False)
        if compiled.failed:
            problems = compiled.problems()
            return Outcome(FitReport(workloads=[], problems=_problem_data(problems)), problems, True)
        cluster = cluster_of(compiled)
        loaded = [load_file(f) for f in files]
        texts = {f.path: f.text for f in loaded}
        findings: list[Finding] = [x for f in loaded for x in f.findings]
        found, more = workloads([d for f in loaded for d in f.documents])
        findings += more
        judgement = judge(cluster, found)
        findings += judgement.findings
        now_fits = _live(kubeconfig, cluster, judgement) if kubeconfig is not None else None
        problems = locate(findings, texts)
        report = FitReport(workloads=_verdicts(judgement, texts, now_fits), problems=_problem_data(problems))
        return Outcome(report, problems)


def _live(kubeconfig: Path, cluster: object, judgement: Judgement) -> list[list[bool | None]]:
    # The API client costs a second of start-up: imported only when asked for.
    live = importlib.import_module("generator.commands.fit.live")
    try:
        result: list[list[bool | None]] = live.fits_now(kubeconfig, cluster, judgement)
    except live.LiveError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e
    return result


def _verdicts(
    judgement: Judgement, texts: dict[str, str], now_fits: list[list[bool | None]] | None
) -> list[WorkloadVerdict]:
    positions = _positions([j.workload.where for j in judgement.judged], texts)
    out: list[WorkloadVerdict] = []
    for i, judged in enumerate(judgement.judged):
        w = judged.workload
        line, column = positions[i]
        podsets: list[PodSetVerdict] = [
            PodSetVerdict(
                name=ps.name,
                count=ps.count,
                fits=v.fits,
                flavor=v.flavor,
                level=v.level,
                domains=v.domains,
                reason=v.reason,
                fitsNow=now_fits[i][k] if now_fits is not None else None,
            )
            for k, (ps, v) in enumerate(zip(w.podsets, judged.verdicts, strict=True))
        ]
        out.append(
            WorkloadVerdict(
                file=w.where.file,
                line=line,
                column=column,
                kind=w.kind,
                namespace=w.namespace,
                name=w.name,
                localQueue=judged.local_queue,
                clusterQueue=judged.cluster_queue,
                podSets=podsets,
            )
        )
    return out


def _positions(wheres: list[Where], texts: dict[str, str]) -> list[tuple[int, int]]:
    by_file: dict[str, list[Where]] = {}
    for where in wheres:
        by_file.setdefault(where.file, []).append(where)
    indexes = {
        file: PositionIndex(texts.get(file, ""), [(w.doc, w.pointer) for w in group])
        for file, group in by_file.items()
    }
    return [indexes[w.file].position(w.doc, w.pointer) for w in wheres]


def _problem_data(problems: list[Problem]) -> list[ProblemData]:
    return [
        ProblemData(path=p.path, line=p.line, col=p.col, rule=p.rule, message=p.message, level=str(p.level))
        for p in problems
    ]


def _read(paths: tuple[str, ...]) -> list[InputFile]:
    """Files, folders (their YAML and JSON files, in order) and ``-`` (standard input)."""
    files: list[InputFile] = []
    for path in paths:
        if path == "-":
            files.append(InputFile("<stdin>", "<stdin>", sys.stdin.buffer.read()))
            continue
        at = Path(path)
        if at.is_dir():
            for entry in discovery.discover(at, SUFFIXES):
                shown = display_path(entry.path)
                if entry.error is not None or entry.target is None:
                    files.append(InputFile(entry.relative, shown, None, entry.error, entry.rule))
                else:
                    files.append(_file(entry.target, shown, entry.relative))
        elif at.exists():
            files.append(_file(at, display_path(at), at.name))
        else:
            raise UsageProblem("PATH", f"{path} does not exist")
    return files


def _file(path: Path, shown: str, relative: str) -> InputFile:
    try:
        return InputFile(relative, shown, path.read_bytes())
    except OSError as e:
        return InputFile(relative, shown, None, f"cannot read the file: {e.strerror or e}")


def dumps(report: FitReport) -> str:
    return json.dumps(report, indent=2) + "\n"
