"""``tasgen plan`` from the command line's options to the printed report and the exit code."""

from __future__ import annotations

import importlib
import sys
from datetime import datetime
from pathlib import Path

import click

from generator.diff.formats import FORMATS
from generator.diff.run import Outcome, plan_change
from generator.load.git import GitError
from generator.pipeline import Result
from generator.report import REPORTERS

EXIT_CLEAN, EXIT_PROBLEMS = 0, 1


def run(
    base: str, inventory: Path, output: Path, format_: str, now: datetime, kubeconfig: Path | None
) -> None:
    if not inventory.is_dir():
        raise click.BadParameter(f"{inventory} is not a folder", param_hint="'-i' / '--inventory'")
    try:
        outcome = plan_change(inventory, base, now)
    except GitError as e:
        raise click.BadParameter(str(e), param_hint="'--base'") from e
    if outcome.report is None:
        REPORTERS["text"](Result(outcome.problems), "plan", sys.stdout)
        sys.exit(EXIT_PROBLEMS)
    outcome.report["rendered"] = output.as_posix()
    if kubeconfig is not None:
        _add_live(outcome, kubeconfig)
    sys.stdout.write(FORMATS[format_](outcome.report))
    sys.exit(EXIT_CLEAN)


def _add_live(outcome: Outcome, kubeconfig: Path) -> None:
    # The API client costs a second of start-up: imported only when asked for.
    live = importlib.import_module("generator.diff.live")
    assert outcome.report is not None
    try:
        live.add_live_figures(outcome.report, outcome.desired, kubeconfig)
    except live.LiveError as e:
        raise click.BadParameter(str(e), param_hint="'--kubeconfig'") from e
