"""What a rule is: an ID, a level, a stage, a summary and its reference text (why it matters,
how to fix it), and the one way to raise it. The reference is printed by ``tasgen rules ID``
and generated into docs/reference/rules/."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

from ..model import Finding, Level, Problem, Where


class Stage(StrEnum):
    LOAD = "load"
    SCHEMA = "schema"
    VALIDATE = "validate"  # the semantic checks over the typed inventory
    COMPILE = "compile"
    EMIT = "emit"
    # Commands that report rules of their own, outside the pipeline's stages: named so, so that
    # "plan" never reads as a stage of the compile
    PLAN_COMMAND = "plan"  # tasgen plan, comparing two revisions
    IMPORT_NODES_COMMAND = "import-nodes"  # tasgen import-nodes, reading kubectl's node list
    FIT_COMMAND = "fit"  # tasgen fit, judging workload manifests against the rendered queues


class Hit(NamedTuple):
    """What a semantic check found, before the engine stamps its rule's ID and level."""

    where: Where
    message: str
    source: str | None = None  # the TopologySource it is about, for the status summary


@dataclass(frozen=True)
class Rule:
    id: str
    stage: Stage
    summary: str  # one line for the catalogue: what it requires
    level: Level = Level.ERROR
    #: what goes wrong in the cluster (Kueue, NFD, the API server, the GitOps engine) without it
    why: str = field(default="", kw_only=True)
    #: what the user changes to satisfy it
    fix: str = field(default="", kw_only=True)

    def __call__(self, where: Where, message: str, *, source: str | None = None) -> Finding:
        """A finding of this rule (its position is looked up later)."""
        return Finding(where, self.id, bounded(message), self.level, source)

    def of(self, hit: Hit) -> Finding:
        return self(hit.where, hit.message, source=hit.source)

    def problem(self, path: str, line: int, col: int, message: str) -> Problem:
        """A problem whose position is already known (e.g. of a file under rendered/)."""
        return Problem(path, line, col, self.id, bounded(message), self.level)


#: Messages quote the values they are about; a 10 MB value must not make a 10 MB message.
MAX_MESSAGE = 500


def bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE:
        return message
    cut = len(message) - MAX_MESSAGE + 100
    return f"{message[:320]}...[{cut:,} characters]...{message[-80:]}"
