"""From the command line's arguments to the printed report and its exit code (the command line
prints and exits)."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ...fit.check import Checked, check_files, positions
from ...fit.inventory import cluster_of
from ...fit.judge import Judgement
from ...fit.kinds import ClusterFacts
from ...fit.report import FitReport, PodSetVerdict, ProblemData, WorkloadVerdict
from ...load import discovery
from ...load.cluster import LiveError
from ...load.files import SUFFIXES, InputFile, display_path, read_inventory
from ...load.git import GitError, read_globbed
from ...load.locate import locate
from ...load.previous import FILES, carried_of
from ...load.previous_profiles import PROFILES_FILE
from ...model import Carried, Level, Problem
from ...pipeline import Compilation, compile_inventory
from ...util.folders import folder_problem
from ...util.gc import no_cycle_collection
from .formats import FORMATS

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
    if problem := folder_problem(inventory):
        raise UsageProblem("-i / --inventory", problem)
    outcome = run(_read(paths) if paths else None, inventory, now, kubeconfig)
    failed = any(p.level is Level.ERROR for p in outcome.problems) or (
        strict and any(p.level is Level.WARNING for p in outcome.problems)
    )
    return FORMATS[format_](outcome.report, outcome.problems), EXIT_PROBLEMS if failed else EXIT_CLEAN


def run(files: list[InputFile] | None, inventory: Path, now: datetime, kubeconfig: Path | None) -> Outcome:
    """``files`` None: the GeneratorConfig's ``workloads`` globs, in the working tree."""
    with no_cycle_collection():
        compiled = compile_inventory(read_inventory(inventory), now, node_features=False, carried=_rendered())
        if compiled.failed:
            problems = compiled.problems()
            return Outcome(FitReport(workloads=[], problems=_problem_data(problems)), problems, True)
        cluster = cluster_of(compiled)
        facts = _facts(kubeconfig) if kubeconfig is not None else None
        checked = check_files(
            cluster, files if files is not None else _configured(inventory, compiled), facts
        )
        now_fits = _live(kubeconfig, cluster, checked.judgement) if kubeconfig is not None else None
        problems = locate(checked.findings, checked.texts)
        report = FitReport(workloads=_verdicts(checked, now_fits), problems=_problem_data(problems))
        return Outcome(report, problems)


#: the rendered/ that fit judges against, as render and plan default to it
RENDERED = Path("rendered")


def _rendered() -> Carried | None:
    """What rendered/ (in the working directory) carries on: the flavors WaitForIdle queues
    keep and the nodes kept on their flavors, so that fit judges the state render writes. None
    when there is none (a first render carries nothing either)."""
    if not RENDERED.is_dir():
        return None
    texts = {}
    for path in sorted(RENDERED.rglob("*.yaml")):
        relative = path.relative_to(RENDERED).as_posix()
        if relative in FILES or relative.endswith("/" + PROFILES_FILE):
            try:
                texts[relative] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue  # unreadable: carried on as nothing, as render would
    return carried_of(texts)


def _configured(inventory: Path, compiled: Compilation) -> list[InputFile]:
    assert compiled.context is not None
    globs = compiled.context.inventory.settings.workloads
    if not globs:
        raise UsageProblem(
            "PATH", "name the workload manifests, or list them in GeneratorConfig spec.workloads"
        )
    try:
        return read_globbed(inventory, globs)
    except GitError as e:
        raise UsageProblem(
            "PATH", f"GeneratorConfig spec.workloads is matched in a git work tree: {e}"
        ) from e


def _facts(kubeconfig: Path) -> ClusterFacts:
    live = importlib.import_module("tasgen.commands.fit.live")
    try:
        facts: ClusterFacts = live.cluster_facts(kubeconfig)
    except LiveError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e
    return facts


def _live(kubeconfig: Path, cluster: object, judgement: Judgement) -> list[list[bool | None]]:
    # The API client costs a second of start-up: imported only when asked for.
    live = importlib.import_module("tasgen.commands.fit.live")
    try:
        result: list[list[bool | None]] = live.fits_now(kubeconfig, cluster, judgement)
    except LiveError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e
    return result


def _verdicts(checked: Checked, now_fits: list[list[bool | None]] | None) -> list[WorkloadVerdict]:
    out: list[WorkloadVerdict] = []
    for i, (judged, (line, column)) in enumerate(
        zip(checked.judgement.judged, positions(checked), strict=True)
    ):
        w = judged.workload
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
