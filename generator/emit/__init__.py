"""The emit stage: compiled manifests -> the files of rendered/, compared, checked, written."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compile import Rendering
from ..model import Finding, Where
from ..rules.emit import STALE_RENDER
from . import apply, repository
from .difference import unified
from .drift import drift
from .output import Changes, changes, first_difference, mutated_nodes
from .outtree import OutputTree
from .tree import render_tree

__all__ = ["Emission", "compare"]


@dataclass
class Emission:
    """What a render would do to rendered/, before anything is written."""

    files: dict[str, str]  # the new tree
    changes: Changes
    mutated_nodes: int
    findings: list[Finding] = field(default_factory=list)  # immutable drift
    texts: dict[str, str] = field(default_factory=dict)  # old files, by shown path (positions)
    litter: list[str] = field(default_factory=list)  # leftovers of older tasgen in rendered/
    #: paths tasgen writes where a file it did not write stands (a render replaces it)
    foreign: frozenset[str] = frozenset()

    @property
    def written(self) -> list[str]:
        """Every path that writing the new tree adds, changes or removes."""
        return sorted([*self.changes.changed, *self.changes.removed, *self.litter])

    def stale(self, out_label: str) -> list[Finding]:
        """A stale-render problem per file that differs from what render would write."""
        old = {p[len(out_label) + 1 :]: t for p, t in self.texts.items()}
        found = [
            STALE_RENDER(
                Where(f"{out_label}/{p}", line_col=(first_difference(old.get(p, ""), t), 1)),
                _stale_message(p, p in old, p in self.foreign),
            )
            for p, t in sorted(self.changes.changed.items())
        ]
        found += [
            STALE_RENDER(
                Where(f"{out_label}/{p}", line_col=(1, 1)),
                "tasgen no longer writes this file; run 'tasgen render' to remove it",
            )
            for p in self.changes.removed
        ]
        found += [
            STALE_RENDER(
                Where(f"{out_label}/{p}", line_col=(1, 1)),
                "a leftover of an interrupted render; run 'tasgen render' to remove it",
            )
            for p in self.litter
        ]
        return found

    def difference(self, out_label: str) -> str:
        """The bounded unified diff of every stale file (tasgen check prints it)."""
        old = {p[len(out_label) + 1 :]: t for p, t in self.texts.items()}
        # edited files first: a missing or extra file's diff is all of it
        paths = sorted(
            [*self.changes.changed, *self.changes.removed],
            key=lambda p: (p not in old or p not in self.files, p),
        )
        return unified(old, self.files, paths, out_label)


def _stale_message(path: str, exists: bool, foreign: bool = False) -> str:
    if foreign:
        return f"{path} is a file tasgen did not write, where it writes one; 'tasgen render' replaces it"
    if not exists:
        return f"{path} is missing; run 'tasgen render' and commit rendered/"
    return "differs from what 'tasgen render' writes from the inventory; run it and commit rendered/"


def compare(rendering: Rendering, out: OutputTree) -> Emission:
    """The new tree against rendered/ as it was read (once, under the lock)."""
    manifests = rendering.manifests
    measured = apply.server_side_where_needed(manifests)
    tree = render_tree(manifests, rendering.features, rendering.synced)
    where = rendering.repo_path_where
    old = out.owned
    return Emission(
        files=tree.files,
        changes=changes(tree.files, old),
        mutated_nodes=mutated_nodes(tree, old),
        findings=[
            *drift(manifests, old, out.label),
            *apply.oversized(measured, out.label),
            *repository.sync_path(out.path, out.label, rendering.repo_path, where),
        ],
        texts={f"{out.label}/{p}": t for p, t in old.items()},
        litter=out.litter,
        foreign=frozenset(tree.files).intersection(out.others),
    )
