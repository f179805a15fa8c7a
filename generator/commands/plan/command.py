"""``tasgen plan`` from the command line's options to the printed report and its exit code (the
command line prints and exits)."""

from __future__ import annotations

import importlib
import io
from datetime import datetime
from pathlib import Path

from ...load.cluster import LiveError
from ...load.git import GitError
from ...pipeline import Result
from ...reporters import REPORTERS
from ...util.folders import folder_problem
from .formats import FORMATS
from .run import Outcome, plan_change

EXIT_CLEAN, EXIT_PROBLEMS = 0, 1


class UsageProblem(Exception):
    """An option's value cannot be used (a usage error, exit 2)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option, self.message = option, message


def execute(
    base: str,
    inventory: Path,
    format_: str,
    now: datetime,
    kubeconfig: Path | None,
    output: Path = Path("rendered"),
) -> tuple[str, str, int]:
    """The report (for standard output), the problems (for standard error) and the exit code;
    raises :class:`UsageProblem`."""
    if problem := folder_problem(inventory):
        raise UsageProblem("-i / --inventory", problem)
    try:
        outcome = plan_change(inventory, base, now, output)
    except GitError as e:
        raise UsageProblem("--base", str(e)) from e
    if outcome.report is None:
        # As validate prints them: the working tree's inventory is what the change must fix.
        # They go to standard error, so that `plan --format markdown > plan.md` shows them in
        # the CI log rather than hiding them in the file meant for the comment.
        out = io.StringIO()
        REPORTERS["text"](Result(outcome.problems), "plan", out)
        return "", out.getvalue(), EXIT_PROBLEMS
    if kubeconfig is not None:
        _add_live(outcome, kubeconfig)
    return FORMATS[format_](outcome.report), "", EXIT_CLEAN


def _add_live(outcome: Outcome, kubeconfig: Path) -> None:
    # The API client costs a second of start-up: imported only when asked for.
    live = importlib.import_module("tasgen.commands.plan.live")
    assert outcome.report is not None
    try:
        outcome.report = live.add_live_figures(outcome.report, outcome.desired, kubeconfig)
    except LiveError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e
