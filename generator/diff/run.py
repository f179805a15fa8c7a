"""Compile the base revision (from git objects) and the working tree, and compare them."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from generator.diff.report import build
from generator.load.files import read_inventory
from generator.load.git import read_revision
from generator.model import Problem
from generator.pipeline import compile


@dataclass
class Outcome:
    """The report, or the problems of an invalid working-tree inventory (no report then)."""

    report: dict[str, Any] | None
    problems: list[Problem] = field(default_factory=list)
    desired: dict[str, dict[str, Any]] = field(default_factory=dict)  # the new ClusterQueues by name


def plan_change(inventory: Path, base_ref: str, now: datetime) -> Outcome:
    """Raises :class:`generator.load.git.GitError` when the base cannot be read."""
    base_files = read_revision(inventory, base_ref)
    # As in a render: millions of small objects, no cycles; the collector would only rescan.
    enabled = gc.isenabled()
    gc.disable()
    try:
        head = compile(read_inventory(inventory), now, node_features=False)
        if head.failed:
            return Outcome(None, head.problems())
        base = compile(base_files, now, node_features=False) if base_files else None
        assert head.planned is not None
        queues = {m.name: m.body for m in head.planned.manifests if m.kind == "ClusterQueue"}
        return Outcome(build(base, head, base_ref), desired=queues)
    finally:
        if enabled:
            gc.enable()
