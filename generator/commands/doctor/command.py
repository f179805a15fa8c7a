"""From the command line's arguments to the printed report and its exit code (the command line
prints and exits)."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from ...load.cluster import KubeconfigError, LiveError
from ...load.files import read_inventory
from ...pipeline import compile_inventory
from ...reporters import problem_line
from ...util.folders import folder_problem
from ...util.gc import no_cycle_collection
from .checks import CHECKS, Facts, components, engine_of, run_checks
from .expected import RenderError, read_render
from .formats import FORMATS
from .live import read
from .report import DoctorReport, summary_of

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


class UsageProblem(Exception):
    """An argument cannot be used (a usage error, exit 2)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option, self.message = option, message


class Unreachable(Exception):
    """The cluster cannot be read (exit 1, the message printed)."""


def execute(inventory: Path, output: Path, kubeconfig: Path | None, format_: str) -> tuple[str, int]:
    """The text to print and the exit code; raises :class:`UsageProblem` or :class:`Unreachable`."""
    if problem := folder_problem(inventory):
        raise UsageProblem("-i / --inventory", problem)
    with no_cycle_collection():
        compiled = compile_inventory(read_inventory(inventory), datetime.now(UTC), node_features=False)
    if compiled.failed or compiled.context is None:
        problems = compiled.problems()
        return "".join(problem_line(p) + "\n" for p in problems), EXIT_PROBLEMS
    try:
        expected = read_render(output, compiled.context.inventory.nodes)
    except RenderError as e:
        raise UsageProblem("-o / --output", str(e)) from e
    try:
        live = read(kubeconfig, expected)
    except KubeconfigError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e
    except LiveError as e:
        raise Unreachable(str(e)) from e
    facts = Facts(expected=expected, live=live, head=head_of(output))
    findings = run_checks(facts)
    report = DoctorReport(
        version=1,
        server=live.server,
        engine=engine_of(facts),
        revision=facts.head,
        components=components(facts),
        checks=tuple(CHECKS),
        findings=findings,
        summary=summary_of(findings),
    )
    return FORMATS[format_](report), EXIT_PROBLEMS if report.summary.errors else EXIT_CLEAN


def head_of(folder: Path) -> str | None:
    """The HEAD commit of the git work tree holding ``folder``; None outside one."""
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--verify", "--quiet", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and head else None
