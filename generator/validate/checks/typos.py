"""One root cause, one error: a misspelt level of a writing source is reported once, at the
level, and the errors that follow from it at the snapshot's lines (each node's label under the
right key undeclared, each finer level without its parent) are folded into it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...model import Finding, Source
from ...rules.semantic import HIERARCHY_PARENT_CHAIN, SNAPSHOT_UNDECLARED_LEVEL, SOURCE_LEVEL_TYPO
from ...util.names import nearest
from .base import Context

#: The rule this pass raises: not a check of its own (it runs after the checks, on their findings).
RAISES = (SOURCE_LEVEL_TYPO,)


@dataclass(frozen=True)
class LevelTypo:
    source: Source
    index: int  # in the levels as written
    written: str
    stated: str  # the key the snapshot states instead
    nodes: int  # that state it


def level_typos(ctx: Context) -> Iterator[LevelTypo]:
    """Each declared level that no node states while exactly one undeclared key the nodes
    state is within two edits of it."""
    for src in ctx.writing_sources():
        if src.snapshot is None:
            continue
        stated: dict[str, int] = {}
        for labels in src.snapshot.nodes.values():
            for key in labels:
                stated[key] = stated.get(key, 0) + 1
        undeclared = [key for key in stated if key not in src.levels]
        for index, level in enumerate(src.declared_levels):
            near = nearest(level, undeclared) if level not in stated else []
            if len(near) == 1:
                yield LevelTypo(src, index, level, near[0], stated[near[0]])


def fold(ctx: Context, findings: list[Finding]) -> list[Finding]:
    """The findings with each level typo's follow-on errors replaced by one error at it."""
    typos = list(level_typos(ctx))
    if not typos:
        return findings
    kept, folded = list(findings), []
    for typo in typos:
        follows = [f for f in kept if _follows(f, typo)]
        kept = [f for f in kept if not _follows(f, typo)]
        message = (
            f"level {typo.written!r} of source {typo.source.name!r} is stated by no node of its "
            f"snapshot, which states {typo.stated!r} on {typo.nodes} node(s) instead: did you mean "
            f"{typo.stated!r}?"
        )
        if follows:
            message += f" ({len(follows)} error(s) at the snapshot's lines follow from it, not shown)"
        folded.append(
            SOURCE_LEVEL_TYPO(
                typo.source.where.at("spec", "levels", typo.index), message, source=typo.source.name
            )
        )
    return [*folded, *kept]


def _follows(finding: Finding, typo: LevelTypo) -> bool:
    snapshot = typo.source.snapshot
    assert snapshot is not None
    if finding.rule == SNAPSHOT_UNDECLARED_LEVEL.id:
        return finding.where.file == snapshot.where.file and finding.message.startswith(f"{typo.stated!r} ")
    return (
        finding.rule == HIERARCHY_PARENT_CHAIN.id
        and finding.source == typo.source.name
        and f" but no {typo.written}: " in finding.message
    )
