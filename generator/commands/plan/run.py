"""Compile the base revision (from git objects) and the working tree, and compare them."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...fit.check import check_files
from ...fit.cluster import Cluster
from ...fit.inventory import cluster_of
from ...load.files import InputFile, LoadedFile, load_file, read_inventory
from ...load.git import read_files, read_globbed, read_named, read_revision
from ...load.previous import FILES, carried_of, read_rendered
from ...load.previous_profiles import PROFILES_FILE
from ...model import Problem
from ...pipeline import Compilation, compile_inventory
from ...util.gc import no_cycle_collection
from .report import build
from .shape import Report
from .workloads import WorkloadSides


@dataclass
class Outcome:
    """The report, or the problems of an invalid working-tree inventory (no report then)."""

    report: Report | None
    problems: list[Problem] = field(default_factory=list)
    desired: dict[str, dict[str, Any]] = field(default_factory=dict)  # the new ClusterQueues by name


def plan_change(inventory: Path, base_ref: str, now: datetime, output: Path = Path("rendered")) -> Outcome:
    """Raises :class:`generator.load.git.GitError` when the base cannot be read. ``output``:
    rendered/ in the working tree. Each side carries on its own rendered/, as render does from
    the rendered/ it replaces: the base revision's (what the cluster runs) and the working
    tree's, so that a change of rendered/ alone (the scheduled live refresh: released nodes,
    lowered quotas, flavors that leave) is planned as what it writes. A working tree without a
    rendered/ carries on the base's (docs/explanation/plan.md, "A live refresh")."""
    base_files = read_revision(inventory, base_ref)
    labels = read_named(output, base_ref, inventory, "labels", PROFILES_FILE)
    carried = carried_of(read_files(output, base_ref, inventory, FILES) | labels)
    working = read_rendered(output)
    carried_head = carried_of(working) if working is not None else carried
    with no_cycle_collection():
        head_files = read_inventory(inventory)
        parsed = _Parsed()
        head = compile_inventory(head_files, now, node_features=False, parse=parsed, carried=carried_head)
        if head.failed:
            return Outcome(None, head.problems())
        shared = _shared(base_files, head_files)
        base = (
            compile_inventory(shared, now, node_features=False, parse=parsed, carried=carried)
            if base_files
            else None
        )
        assert head.rendering is not None
        queues = {m.name: m.body for m in head.rendering.manifests if m.kind == "ClusterQueue"}
        workloads = _workloads(inventory, base_ref, base, head)
        return Outcome(build(base, head, base_ref, workloads, now), desired=queues)


def _workloads(
    inventory: Path, base_ref: str, base: Compilation | None, head: Compilation
) -> WorkloadSides | None:
    """The workloads of GeneratorConfig spec.workloads (the head's globs on both sides: what
    the change does to the manifests the repository will hold), judged at each revision."""
    assert head.context is not None
    globs = head.context.inventory.settings.workloads
    if not globs:
        return None
    base_cluster = cluster_of(base) if base is not None and not base.failed else Cluster([])
    return WorkloadSides(
        before=check_files(base_cluster, read_globbed(inventory, globs, base_ref)),
        after=check_files(cluster_of(head), read_globbed(inventory, globs)),
    )


class _Parsed:
    """Parses each file once: a file whose bytes both revisions share (most of them; the
    NodeInventory, the biggest, most often) yields the same documents for both."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[InputFile, LoadedFile]] = {}  # the file is kept: its id stays its own

    def __call__(self, files: list[InputFile]) -> list[LoadedFile]:
        return [self._one(f) for f in files]

    def _one(self, file: InputFile) -> LoadedFile:
        if id(file) not in self._done:
            self._done[id(file)] = (file, load_file(file))
        return self._done[id(file)][1]


def _shared(base: list[InputFile], head: list[InputFile]) -> list[InputFile]:
    """The base's files, each replaced by the working tree's when the bytes are the same (then
    positions are the same too, so problems may name the working tree's file)."""
    by_path = {f.relative: f for f in head}
    return [by_path[f.relative] if _same(f, by_path.get(f.relative)) else f for f in base]


def _same(base: InputFile, head: InputFile | None) -> bool:
    return head is not None and base.data is not None and base.data == head.data
