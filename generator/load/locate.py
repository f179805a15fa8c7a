"""Turn findings into problems: look up the line and column of each, one pass per file."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from ..model import Finding, Pointer, Problem, Where
from ..rules.load import DUPLICATE_KEY
from .positions import (
    Position,
    PositionIndex,
    find_duplicate_key,
    shift_into_block,
)

_Scalar = tuple[int, Pointer]  # (document, pointer) of a scalar that embeds a snapshot


def locate(findings: Iterable[Finding], texts: Mapping[str, str]) -> list[Problem]:
    """Problems in report order (file, line, column), each with its position."""
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_file[finding.where.file].append(finding)
    problems: list[Problem] = []
    for file, group in by_file.items():
        problems.extend(_FileLocator(group, texts.get(file, "")).problems(file))
    return sorted(set(problems))


class _FileLocator:
    def __init__(self, findings: list[Finding], text: str) -> None:
        self.findings, self.text = findings, text
        open_ = [f.where for f in findings if f.where.line_col is None]
        self.index = (
            PositionIndex(
                text,
                [(w.doc, w.pointer) for w in open_],
                [(w.doc, w.pointer) for w in open_ if w.key and w.inner is None],
            )
            if open_ and text
            else None
        )
        self.inner_pointers: dict[_Scalar, list[Pointer]] = defaultdict(list)
        for where in open_:
            if where.inner is not None:
                self.inner_pointers[(where.doc, where.pointer)].append(where.inner)
        self.inner_indexes: dict[_Scalar, PositionIndex] = {}

    def problems(self, file: str) -> Iterable[Problem]:
        for finding in self.findings:
            line, col = self._position(finding)
            yield Problem(file, line, col, finding.rule, finding.message, finding.level)

    def _position(self, finding: Finding) -> Position:
        where = finding.where
        if where.line_col is not None:
            return where.line_col
        if finding.rule == DUPLICATE_KEY.id and self.text:
            duplicate = find_duplicate_key(self.text)
            if duplicate is not None:
                return duplicate[0]
        if self.index is None:
            return (1, 1)  # a file-level problem
        if where.inner is None:
            return self.index.position(where.doc, where.pointer, key=where.key)
        return self._inner_position(where)

    def _inner_position(self, where: Where) -> Position:
        assert self.index is not None and where.inner is not None
        start, style, value = self.index.embedded(where.doc, where.pointer)
        if value is None:
            return start
        scalar = (where.doc, where.pointer)
        if scalar not in self.inner_indexes:
            pointers = [(0, p) for p in self.inner_pointers[scalar]]
            self.inner_indexes[scalar] = PositionIndex(value, pointers, pointers)
        inner = self.inner_indexes[scalar].position(0, where.inner, key=where.key)
        return shift_into_block(start, style, self.text, inner)
