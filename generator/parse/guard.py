"""What the fast parser would get wrong or could not survive, checked around it.

yaml-rs stops at a NUL byte, keeps control characters YAML forbids, ignores tags, expands
aliases before any size check, crashes on deep nesting and returns non-string keys. So each
text is checked before parsing (characters; tags, depth and alias expansion with one pass
over libyaml's events, only for the rare texts that may need it) and after it (keys, numbers),
positions found only for a file with a problem. What is refused: docs/explanation/guarantees.md,
"Bad input".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import chain, compress
from operator import is_
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import yaml_rs

from ..rules import Rule
from ..rules.load import (
    JSON_SYNTAX,
    MAPPING_KEY,
    NUMBER_RANGE,
    YAML_ALIAS_CYCLE,
    YAML_ALIAS_LIMIT,
    YAML_DEPTH,
    YAML_SYNTAX,
    YAML_TAG,
    YAML_TAG_MISMATCH,
)
from ..util.lazyimport import on_first_use

if TYPE_CHECKING:
    import yaml
else:
    yaml = on_first_use("yaml")  # rarely needed: see generator.util.lazyimport

Position = tuple[int, int]

#: outside YAML 1.2's printable set: C0 controls but tab and line breaks, DEL, C1 controls but
#: NEL, surrogates and the non-characters U+FFFE, U+FFFF (listed: a class of the allowed
#: million code points is slow to compile, in every run)
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
_PRINTABLE_ASCII = bytes([9, 10, 13, *range(0x20, 0x7F)])
#: an alias (``*a``) or a tag (``!foo``, ``!!binary``) can only start a token like this: at a
#: line's start, after white space or a flow indicator, or right after the ``:`` of a quoted
#: or flow key (``{"k":*a}``, an adjacent value YAML 1.2 allows; tests/test_guard_events.py)
_NEEDS_EVENTS = re.compile(r"(?:^|[\s\[{,:])[*!]", re.MULTILINE)
#: tags of YAML's core schema, which only say what an untagged node could say too (where they
#: agree with it: yaml-tag-mismatch)
_CORE_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)

#: Expanding aliases may add at most this much plus a few times the text's own size
#: (counted as characters of scalars and one per node): a fleet that anchors one
#: allocatable map and aliases it on every node stays far below it, an alias bomb does not.
ALIAS_BUDGET_BASE = 4 * 1024 * 1024
ALIAS_BUDGET_FACTOR = 4
MAX_ALIAS_DEPTH = 32
#: ... and replay at most this many nodes (yaml-rs enforces the same two limits as a backstop)
MAX_ALIAS_EVENTS = 200_000

#: Collections nested in one another, aliases expanded: far deeper than any inventory (a
#: Kubernetes object nests a few dozen levels), far below the ~11k where yaml-rs's recursion
#: overflows the stack and the process dies without a word (and below libyaml's own 1,000,
#: so that the events pass reports it as this rule)
MAX_DEPTH = 500
#: How block YAML nests: each level takes one more column of indentation, or two columns of
#: "- ", "? " or ": " (a sequence may share its mapping key's column: one level per column, so
#: two is a safe bound); a flow collection ("[[[") nests at most 255 deep (yaml-rs refuses
#: more). So a text whose lines all start with fewer of these characters cannot pass
#: MAX_DEPTH (2 * 120 + 255 + 2 < 500) and needs no events pass for it.
_DEEP_PREFIX = (MAX_DEPTH - 258) // 2
_DEEP_SHAPE = b"-" * _DEEP_PREFIX  # in an ASCII text's shape (see shape_of)
_DEEP_LINE_SHAPE = b"\n" + _DEEP_SHAPE
_DEEP_START = re.compile(rf"[ \t?:-]{{{_DEEP_PREFIX}}}")
#: for other texts: a literal first, so that the regex engine jumps from line break to line
#: break (a class of both line breaks first is tried at every character)
_DEEP_LINE = re.compile(rf"\n{_DEEP_START.pattern}")
_DEEP_OLD_MAC_LINE = re.compile(rf"\r{_DEEP_START.pattern}")  # YAML's third line break


class GuardError(Exception):
    """A text that must not reach the parser (or whose parse must not be used)."""

    def __init__(self, rule: Rule, message: str, position: Position | None) -> None:
        super().__init__(message)
        self.rule, self.message, self.position = rule, message, position


def position_of(text: str, offset: int) -> Position:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_text(text: str) -> None:
    """Everything judged before parsing: the characters, then tags, depth and aliases."""
    shape = shape_of(text)
    check_characters(text, shape)
    check_events(text, shape)


@dataclass(frozen=True)
class Shape:
    """What an ASCII text's shape (see _SHAPES) says to the checks before parsing."""

    refused: bool  # it holds a character YAML refuses
    deep: bool  # a line starts with _DEEP_PREFIX characters that may nest (see _DEEP_PREFIX)


#: An ASCII text is shaped a piece of this many characters at a time: whole-text copies (the
#: encoded text and its translation, each as large as a big NodeInventory) are fresh
#: memory that a new process pays for in page faults; pieces reuse theirs.
_PIECE = 1 << 20
#: a piece starts this far into the one before it: a deep line's start ("\n" and _DEEP_PREFIX
#: characters) that spans two pieces begins at most _DEEP_PREFIX characters before the second
#: piece's own start, so it lies whole in the second
_OVERLAP = _DEEP_PREFIX


def shape_of(text: str, piece: int = _PIECE) -> Shape | None:
    """The shape of an ASCII text, judged ``piece`` characters at a time; None for another."""
    if not text.isascii():
        return None
    assert piece > 0, "a piece of no characters would judge nothing"
    refused, deep = False, _DEEP_START.match(text) is not None  # the first line: no "\n" before it
    for start in range(0, len(text), piece):
        shaped = shape_piece(text[max(0, start - _OVERLAP) : start + piece])
        refused = refused or b"\0" in shaped
        deep = deep or _DEEP_LINE_SHAPE in shaped
    return Shape(refused, deep)


def shape_piece(text: str) -> bytes:
    """An ASCII text's characters as the checks before parsing see them (see _SHAPES)."""
    return text.encode("ascii").translate(_SHAPES)


#: each ASCII character as the checks before parsing see it (an ASCII text is translated piece
#: by piece, at C speed): a line break (LF, CR), one that can start a line deep (space, tab, "-", "?",
#: ":"), any other printable one, or NUL for one YAML refuses
_SHAPES = bytes(
    10 if byte in b"\n\r" else 45 if byte in b" \t-?:" else 120 if byte in _PRINTABLE_ASCII else 0
    for byte in range(256)
)


def check_characters(text: str, shape: Shape | None = None) -> None:
    # Inventories are mostly ASCII: their shape says whether any character is refused.
    if shape is not None and not shape.refused:
        return
    found = _FORBIDDEN.search(text)
    if found is not None:
        char = found.group()
        message = f"invalid YAML: the character U+{ord(char):04X} is not allowed in YAML text"
        raise GuardError(YAML_SYNTAX, message, position_of(text, found.start()))


def check_events(text: str, shape: Shape | None = None) -> None:
    """Tags, depth and alias expansion, judged from the events before the parser builds
    anything (only for a text that may have an alias, a tag or a deep line)."""
    if not (_may_alias_or_tag(text) or _may_nest_deep(text, shape)):
        return
    budget = _AliasBudget(ALIAS_BUDGET_BASE + ALIAS_BUDGET_FACTOR * len(text))
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            _check_tag(event)
            budget.on(event)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        position = (mark.line + 1, mark.column + 1) if mark is not None else None
        raise GuardError(YAML_SYNTAX, f"invalid YAML: {e.problem or e}", position) from e
    except yaml.YAMLError as e:
        raise GuardError(YAML_SYNTAX, f"invalid YAML: {e}", None) from e


def _may_alias_or_tag(text: str) -> bool:
    return ("*" in text or "!" in text) and _NEEDS_EVENTS.search(text) is not None


def _may_nest_deep(text: str, shape: Shape | None = None) -> bool:
    if shape is not None:
        return shape.deep
    return (
        _DEEP_START.match(text) is not None
        or _DEEP_LINE.search(text) is not None
        or ("\r" in text and _DEEP_OLD_MAC_LINE.search(text) is not None)
    )


def _check_tag(event: yaml.Event) -> None:
    tag = getattr(event, "tag", None)
    if tag is None or (tag == "!" and isinstance(event, yaml.ScalarEvent)):
        return
    shown = tag.replace("tag:yaml.org,2002:", "!!")
    if tag in _CORE_TAGS:
        contradiction = _contradiction(event, shown)
        if contradiction is not None:
            message = f"the YAML tag {shown} contradicts its node: {contradiction}"
            raise GuardError(YAML_TAG_MISMATCH, message, _start(event))
        return
    message = f"the YAML tag {shown} is not supported: inventories are plain mappings, lists and strings"
    raise GuardError(YAML_TAG, message, _start(event))


def _contradiction(event: yaml.Event, shown: str) -> str | None:
    """What the node is, where a core tag says otherwise (None when they agree). A scalar's
    value is judged by the fast parser itself, as the parse would (``!!int 16`` agrees, ``!!int
    abc`` does not), at the tag rather than at the file's start where it would report it."""
    if isinstance(event, yaml.MappingStartEvent):
        return None if shown == "!!map" else "a mapping (use !!map, or no tag)"
    if isinstance(event, yaml.SequenceStartEvent):
        return None if shown == "!!seq" else "a list (use !!seq, or no tag)"
    assert isinstance(event, yaml.ScalarEvent)
    if shown in ("!!map", "!!seq"):
        return f"a scalar, {event.value!r}"
    try:
        yaml_rs.loads(f"{shown} {json.dumps(event.value, ensure_ascii=False)}", parse_datetime=False)
    except (yaml_rs.YAMLDecodeError, ValueError):
        return f"{event.value!r} is not a {shown} value"
    return None


@dataclass
class _Node:
    anchor: str | None
    size: int = 1  # characters of its scalars plus one per node
    depth: int = 0  # of alias nesting inside it
    events: int = 1  # nodes it holds, aliases expanded
    height: int = 0  # collections nested in it, itself included, aliases expanded


@dataclass
class _AliasBudget:
    """Sizes of anchored nodes, so that each alias adds what it would expand to; and how deep
    collections nest, an alias as deep as what it repeats."""

    limit: int
    expanded: int = 0
    replayed: int = 0
    anchors: dict[str, _Node] = field(default_factory=dict)
    open: list[_Node] = field(default_factory=list)

    def on(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.ScalarEvent):
            self._close(_Node(event.anchor, 1 + len(event.value)))
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self._nest(1, event)
            self.open.append(_Node(event.anchor, height=1))
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            self._close(self.open.pop())
        elif isinstance(event, yaml.AliasEvent):
            self._alias(event)

    def _nest(self, height: int, event: yaml.Event) -> None:
        """Refuse a collection (or an alias of one) that would nest beyond MAX_DEPTH."""
        if len(self.open) + height > MAX_DEPTH:
            message = (
                f"YAML nested deeper than {MAX_DEPTH:,} levels (aliases expanded): no inventory "
                "nests like this, and parsers crash on it; flatten it"
            )
            raise GuardError(YAML_DEPTH, message, _start(event))

    def _alias(self, event: yaml.AliasEvent) -> None:
        if any(node.anchor == event.anchor for node in self.open):
            message = (
                f"the alias *{event.anchor} is inside the node anchored &{event.anchor}: a structure "
                "that contains itself has no JSON form; alias a complete node, or write it out"
            )
            raise GuardError(YAML_ALIAS_CYCLE, message, _start(event))
        anchored = self.anchors.get(event.anchor or "", _Node(None))
        self._nest(anchored.height, event)
        self.expanded += anchored.size
        self.replayed += anchored.events
        if (
            self.expanded > self.limit
            or self.replayed > MAX_ALIAS_EVENTS
            or anchored.depth >= MAX_ALIAS_DEPTH
        ):
            message = (
                f"YAML aliases would expand beyond the allowed size ({self.limit:,} characters, "
                f"{MAX_ALIAS_EVENTS:,} nodes, {MAX_ALIAS_DEPTH} levels): an alias bomb? Write it out"
            )
            raise GuardError(YAML_ALIAS_LIMIT, message, _start(event))
        self._close(_Node(None, anchored.size, anchored.depth + 1, anchored.events, anchored.height))

    def _close(self, node: _Node) -> None:
        if node.anchor is not None:
            self.anchors[node.anchor] = node
        if self.open:
            parent = self.open[-1]
            parent.size += node.size
            parent.events += node.events
            parent.depth = max(parent.depth, node.depth)
            parent.height = max(parent.height, node.height + 1)


def _start(event: yaml.Event) -> Position | None:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else None


# --- after parsing: keys that are not strings --------------------------------------------


def check_data(text: str, data: Any) -> None:
    """Keys that are not strings, and numbers out of range, found in one walk over the data;
    only a file that has one is read once more, as events, for the position."""
    found = None if _plain(data) else _scan(data)
    if found == "key":
        raise foreign_key_error(text)
    if found == "number":
        raise GuardError(NUMBER_RANGE, _OUT_OF_RANGE, next(_bad_number_positions(text), None))


#: Kubernetes' integers are 64-bit, and JSON has no infinity or NaN; Python's integers are
#: unbounded (and refuse to print beyond 4,300 digits) and YAML has .inf and .nan
_INT64 = range(-(2**63), 2**63)

#: What inventories are mostly made of: strings, booleans, nulls, lists, and mappings with
#: string keys. jsonschema-rs's validator walks data in Rust (several times faster than
#: _scan): a key that is not a string or a set makes it raise, a number makes it
#: answer False, and _scan then says what, if anything, is wrong (numbers are left to _scan:
#: jsonschema-rs calls an integer of 5,000 digits within any maximum). Its recursion is
#: bounded: a text nests at most MAX_DEPTH levels (it survives 10,000).
_PLAIN = jsonschema_rs.validator_for(
    {
        "$defs": {
            "value": {
                "anyOf": [
                    {"type": ["string", "boolean", "null"]},
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/value"}},
                    {"type": "array", "items": {"$ref": "#/$defs/value"}},
                ]
            }
        },
        "$ref": "#/$defs/value",
    }
)


def _plain(data: Any) -> bool:
    try:
        return _PLAIN.is_valid(data)
    except ValueError:  # jsonschema-rs cannot convert it: a key that is not a string, a set
        return False


def _scan(data: Any) -> str | None:
    """The first kind of trouble in ``data``, found level by level with C-speed passes
    (types mapped, filtered with ``compress``, keys and values chained), not a Python loop
    per value: a large fleet holds millions of values (touching each value's type is most
    of the cost)."""
    level: list[Any] = [data]
    while level:
        found = set(map(type, level))
        if found <= _LEAVES:
            return None  # the usual last level: strings only
        kinds = list(map(type, level))
        if not found.isdisjoint(_TROUBLE_TYPES) and (trouble := _trouble(level, kinds, found)):
            return trouble
        dicts = _of_type(dict, level, kinds) if dict in found else []
        if dicts and not set(map(type, chain.from_iterable(dicts))) <= _STR:
            return "key"
        values = chain.from_iterable(map(dict.values, dicts))
        lists = chain.from_iterable(_of_type(list, level, kinds)) if list in found else ()
        level = [*values, *lists]
    return None


_STR = frozenset({str})
_LEAVES = frozenset({str, bool, type(None)})
#: types whose values need a look: numbers (their range) and sets (!!set: mapping keys)
_TROUBLE_TYPES = frozenset({int, float, set})


def _of_type(kind: type, values: list[Any], kinds: list[type]) -> list[Any]:
    return list(compress(values, map(partial(is_, kind), kinds)))


def _trouble(values: list[Any], kinds: list[type], found: set[type]) -> str | None:
    if set in found:
        return "key"  # !!set: a mapping of keys to nulls
    ints = _of_type(int, values, kinds)
    if ints and (min(ints) < _INT64.start or max(ints) >= _INT64.stop):
        return "number"  # beyond 64 bits
    if not all(map(math.isfinite, _of_type(float, values, kinds))):
        return "number"  # inf or nan
    return None


def foreign_key_error(text: str) -> GuardError:
    """The error for the first mapping key that the parser reads as something but a string."""
    position, shown = next(_foreign_keys(text), (None, "a key"))
    message = f'mapping key {shown} is not a string (Kubernetes keys are strings: quote it, e.g. "1":)'
    return GuardError(MAPPING_KEY, message, position)


def _foreign_keys(text: str) -> Iterator[tuple[Position | None, str]]:
    # per open collection: None for a sequence, else whether the mapping awaits a key
    stack: list[bool | None] = []
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                stack.pop()
                _done(stack)
            elif isinstance(event, yaml.NodeEvent):
                shown = _foreign(event) if stack and stack[-1] is True else None
                if shown is not None:
                    yield _start(event), shown
                if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                    stack.append(True if isinstance(event, yaml.MappingStartEvent) else None)
                else:
                    _done(stack)
    except yaml.YAMLError:
        return


def _done(stack: list[bool | None]) -> None:
    """After a complete node: a mapping that read a key now reads its value, and back."""
    if stack and stack[-1] is not None:
        stack[-1] = not stack[-1]


def _foreign(event: yaml.NodeEvent) -> str | None:
    """How a key that is not a string is shown, or None for a string key."""
    if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
        return "(a mapping or list)"
    if isinstance(event, yaml.AliasEvent):
        return f"*{event.anchor}"
    assert isinstance(event, yaml.ScalarEvent)
    if event.tag is not None and event.tag not in ("tag:yaml.org,2002:str", "!"):
        return repr(event.value)
    if _plain_non_string(event) and type(_resolve(event.value)) is not str:
        return repr(event.value) if event.value else "~ (empty)"
    return None


_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n"})


def _plain_non_string(event: yaml.ScalarEvent) -> bool:
    """Whether a scalar could be read as something but a string: untagged, plain, and
    starting like a number or spelling a null or boolean (a cheap filter before resolving)."""
    value = event.value
    if event.tag is not None or not event.implicit[0]:
        return False
    return not value or value[0] in "0123456789+-.~" or value.lower() in _WORDS


def _resolve(plain: str) -> Any:
    """What the fast parser makes of a plain scalar (so both agree on what is a string)."""
    try:
        return yaml_rs.loads(plain, parse_datetime=False) if plain else None
    except (yaml_rs.YAMLDecodeError, ValueError):
        return plain


# --- JSON: escapes of unpaired surrogates -------------------------------------------------

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPES = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?|\\u[dD][c-fC-F]")


def check_surrogates(text: str, data: Any) -> None:
    """JSON may escape half of a UTF-16 pair (``"\\ud800"``); such a string is not Unicode
    text, cannot be written as UTF-8 and is refused by Kubernetes."""
    if _SURROGATE_ESCAPE.search(text) is None or not _has_surrogate(data):
        return
    unpaired = (m for m in _ESCAPES.finditer(text) if not (m.group(1) and m.group(2)))
    found = next(unpaired, None)
    position = position_of(text, found.start()) if found is not None else None
    message = (
        "invalid JSON: this escape is half of a UTF-16 surrogate pair, not a character: it can be "
        "neither printed nor applied to a cluster; write the character itself"
    )
    raise GuardError(JSON_SYNTAX, message, position)


def _has_surrogate(data: Any) -> bool:
    stack = [data]
    while stack:
        value = stack.pop()
        if type(value) is str:
            if not value.isascii() and _FORBIDDEN_SURROGATE.search(value):
                return True
        elif type(value) is dict:
            stack.extend(value.keys())
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return False


_FORBIDDEN_SURROGATE = re.compile("[\ud800-\udfff]")


# --- numbers beyond Kubernetes' range -----------------------------------------------------

_OUT_OF_RANGE = "a number beyond Kubernetes' range (64-bit integers, finite numbers); quote it if it is text"
#: where a JSON number out of range starts
LONG_NUMBER = re.compile(r"(?<![\w.\"-])(?:-?[0-9]{19,}|-?[0-9.]+[eE][+-]?[0-9]{3,}|NaN|-?Infinity)")


def json_int(digits: str) -> int:
    """``parse_int`` for the JSON parser: the same bound, before Python converts the digits."""
    if len(digits.lstrip("-")) > 19 or int(digits) not in _INT64:
        raise GuardError(NUMBER_RANGE, _OUT_OF_RANGE, None)
    return int(digits)


def json_float(text: str) -> float:
    """``parse_float`` for the JSON parser: 1e5000 would become infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise GuardError(NUMBER_RANGE, _OUT_OF_RANGE, None)
    return value


def json_constant(name: str) -> float:
    """``parse_constant``: NaN and Infinity are not JSON (Python's parser takes them)."""
    raise GuardError(NUMBER_RANGE, f"{name} is not a JSON number; {_OUT_OF_RANGE}", None)


def _bad(value: Any) -> bool:
    kind = type(value)
    return (kind is int and value not in _INT64) or (kind is float and not math.isfinite(value))


def _bad_number_positions(text: str) -> Iterator[Position | None]:
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if (
                isinstance(event, yaml.ScalarEvent)
                and _plain_non_string(event)
                and _bad(_resolve(event.value))
            ):
                yield _start(event)
    except yaml.YAMLError:
        return
