"""Line and column of values, looked up only when a problem needs them.

The fast parser keeps no positions, so a file that has problems is read once more as
libyaml's event stream (C speed, no objects built), following the pointers of its
problems; JSON is YAML here, so JSON files are served the same way. A snapshot embedded
as a block scalar in a ConfigMap is resolved in two steps: the position of the scalar in
the file, then the position inside its text, shifted by the scalar's first content line
and indentation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model import Pointer
from ..util.lazyimport import on_first_use

if TYPE_CHECKING:
    import yaml
else:
    yaml = on_first_use("yaml")  # rarely needed: see generator.util.lazyimport

#: 1-based (line, column)
Position = tuple[int, int]
_Path = tuple[int, Pointer]  # (document index, pointer)


@dataclass
class _Scalar:
    value: str
    style: str | None
    position: Position


@dataclass
class _Frame:
    path: _Path
    is_map: bool
    index: int = 0
    key: str | None = None
    expecting_key: bool = True
    complex_key: bool = False  # a mapping or sequence used as a key (skipped)


class _Walk:
    """One pass over the events of a text, recording the start of every wanted path."""

    def __init__(self, wanted: set[_Path], wanted_keys: set[_Path]) -> None:
        self.wanted, self.wanted_keys = wanted, wanted_keys
        self.found: dict[_Path, Position] = {}
        self.found_keys: dict[_Path, Position] = {}
        self.scalars: dict[_Path, _Scalar] = {}
        self.containers: set[_Path] = set()
        self.stack: list[_Frame] = []
        self.doc = -1

    def run(self, text: str) -> None:
        remaining = len(self.wanted) + len(self.wanted_keys)
        try:
            for event in yaml.parse(text, Loader=yaml.CSafeLoader):
                self._on(event)
                if len(self.found) + len(self.found_keys) >= remaining:
                    return
        except yaml.YAMLError:
            return  # positions found so far still help; the parse error is reported elsewhere

    def _on(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.doc += 1
            self.stack.clear()
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            if not self.stack.pop().complex_key:
                self._advance()
        elif isinstance(event, yaml.NodeEvent):
            self._on_node(event)

    def _on_node(self, event: yaml.NodeEvent) -> None:
        top = self.stack[-1] if self.stack else None
        if top is not None and top.is_map and top.expecting_key:
            self._on_key(top, event)
            return
        path = self._child_path(top)
        position = _start(event)
        if path in self.wanted:
            self.found[path] = position
        if isinstance(event, yaml.ScalarEvent):
            if path in self.wanted:
                self.scalars[path] = _Scalar(event.value, event.style, position)
            self._advance()
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self.containers.add(path)
            self.stack.append(_Frame(path, isinstance(event, yaml.MappingStartEvent)))
        else:  # an alias: a complete value
            self._advance()

    def _on_key(self, top: _Frame, event: yaml.NodeEvent) -> None:
        top.key = event.value if isinstance(event, yaml.ScalarEvent) else "?"
        top.expecting_key = False
        path = self._child_path(top)
        if path in self.wanted_keys:
            self.found_keys[path] = _start(event)
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            is_map = isinstance(event, yaml.MappingStartEvent)
            self.stack.append(_Frame((self.doc, ("?",)), is_map, complex_key=True))

    def _child_path(self, top: _Frame | None) -> _Path:
        if top is None:
            return (self.doc, ())
        step: str | int = top.key if top.is_map and top.key is not None else top.index
        return (top.path[0], (*top.path[1], step))

    def _advance(self) -> None:
        if not self.stack:
            return
        top = self.stack[-1]
        if top.is_map:
            top.expecting_key = True
        else:
            top.index += 1


def _start(event: yaml.Event) -> Position:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _normalize(doc: int, pointer: Pointer) -> _Path:
    return (doc, tuple(p if isinstance(p, int) else str(p) for p in pointer))


def _prefixes(path: _Path) -> Iterable[_Path]:
    doc, pointer = path
    for end in range(len(pointer), -1, -1):
        yield (doc, pointer[:end])


class PositionIndex:
    """Positions of many pointers of one text, found in one pass."""

    def __init__(
        self, text: str, pointers: Iterable[tuple[int, Pointer]], keys: Iterable[tuple[int, Pointer]] = ()
    ) -> None:
        wanted = {p for d, ptr in pointers for p in _prefixes(_normalize(d, ptr))}
        wanted_keys = {_normalize(d, ptr) for d, ptr in keys}
        wanted |= {p for k in wanted_keys for p in _prefixes(k)}
        wanted_keys |= wanted  # a container is shown at its key ("labels:"), not its first entry
        self._walk = _Walk(wanted, wanted_keys)
        self._walk.run(text)

    def position(self, doc: int, pointer: Pointer, *, key: bool = False) -> Position:
        """The value's position, or the nearest enclosing value found; (1, 1) as last resort."""
        walk = self._walk
        for prefix in _prefixes(_normalize(doc, pointer)):
            if (key or prefix in walk.containers) and prefix in walk.found_keys:
                return walk.found_keys[prefix]
            if prefix in walk.found:
                return walk.found[prefix]
            key = False
        return (1, 1)

    def embedded(self, doc: int, pointer: Pointer) -> tuple[Position, str | None, str | None]:
        """Where the scalar at ``pointer`` starts, its style and its text."""
        scalar = self._walk.scalars.get(_normalize(doc, pointer))
        if scalar is None:
            return self.position(doc, pointer), None, None
        return scalar.position, scalar.style, scalar.value


def shift_into_block(scalar: Position, style: str | None, file_text: str, inner: Position) -> Position:
    """Map a position inside a scalar's text to the file: exact for block scalars (``|``,
    ``>``), whose content starts on the line after the indicator at a fixed indentation."""
    line, col = scalar
    if style in ("|", ">"):
        indent = _indentation(file_text, line + 1)  # the block's first content line
        return (line + inner[0], indent + inner[1])
    if inner[0] == 1:  # a quoted or plain scalar: same line, after the opening quote
        quote = 1 if style in ('"', "'") else 0
        return (line, col + quote + inner[1] - 1)
    return (line + inner[0] - 1, inner[1])  # multi-line quoted text: the nearest we can say


def _indentation(text: str, line: int) -> int:
    lines = text.splitlines()
    if 0 < line <= len(lines):
        content = lines[line - 1]
        return len(content) - len(content.lstrip(" "))
    return 0


def find_duplicate_key(text: str) -> tuple[Position, str] | None:
    """The position of the first repeated mapping key: the fast parser refuses duplicates
    but does not say where."""
    stack: list[set[str] | None] = []  # None for sequences
    expecting_key: list[bool] = []
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            found = _duplicate_step(event, stack, expecting_key)
            if found is not None:
                return found
    except yaml.YAMLError:
        return None
    return None


def _duplicate_step(
    event: yaml.Event, stack: list[set[str] | None], expecting_key: list[bool]
) -> tuple[Position, str] | None:
    if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
        stack.pop()
        expecting_key.pop()
        _flip(stack, expecting_key)
        return None
    if not isinstance(event, yaml.NodeEvent):
        return None
    in_key = bool(stack) and stack[-1] is not None and expecting_key[-1]
    if in_key and isinstance(event, yaml.ScalarEvent):
        keys = stack[-1]
        assert keys is not None
        if event.value in keys:
            return _start(event), event.value
        keys.add(event.value)
    if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
        stack.append(set() if isinstance(event, yaml.MappingStartEvent) else None)
        expecting_key.append(True)
    else:
        _flip(stack, expecting_key)
    return None


def _flip(stack: list[set[str] | None], expecting_key: list[bool]) -> None:
    if stack and stack[-1] is not None:
        expecting_key[-1] = not expecting_key[-1]


def embedded_position(text: str, doc: int, pointer: Pointer, inner: Position) -> Position:
    """The file position of ``inner`` (a position in the text of the scalar at ``pointer``),
    e.g. of a syntax error in a snapshot held by a ConfigMap."""
    index = PositionIndex(text, [(doc, pointer)])
    start, style, _ = index.embedded(doc, pointer)
    return shift_into_block(start, style, text, inner)
