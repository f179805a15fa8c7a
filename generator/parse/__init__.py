"""The one guarded reader of YAML and JSON texts: every input tasgen reads (the inventory, a
fetched snapshot, kubectl's nodes, the previous render, the gate's plan and keep list) is
parsed here, with the checks of :mod:`generator.parse.guard` around the fast parser, and every
refusal is a :class:`ParseError` with a rule and, where one exists, a line and column.

Parsing is the hot path of a 100k-node inventory, so documents are read with a Rust YAML
parser (and the standard JSON parser for ``.json``). It sits below the compiler's stages, so
that the in-cluster gate, which must not import them, reads its inputs through it too.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml_rs

from ..rules import Rule
from ..rules.load import DUPLICATE_KEY, JSON_SYNTAX, YAML_ALIAS_LIMIT, YAML_SYNTAX
from . import guard

# A document marker at the start of a line: tells a multi-document file from a single
# document whose top level is a list (the parser returns a list for both).
#: a document marker after a line break: a pattern that starts with a literal is searched at
#: C speed (a "^" with MULTILINE is tried at every position: far slower on a large file)
_DOC_MARKER = re.compile(r"\n---(?=\s|$)")
_FIRST_MARKER = re.compile(r"---(?=\s|$)")
# Bounds alias expansion (the "billion laughs" document) well above any real inventory.
_ALIAS_LIMITS = yaml_rs.AliasLimits(max_total_replayed_events=200_000, max_replay_stack_depth=32)
_ERROR_POSITION = re.compile(r"at line (\d+), column (\d+)")


class ParseError(Exception):
    def __init__(self, rule: Rule, message: str, position: tuple[int, int] | None) -> None:
        super().__init__(message)
        self.rule, self.message, self.position = rule, message, position


def parse_text(text: str, *, json_syntax: bool = False, data_checks: bool = True) -> list[Any]:
    """The documents of a YAML or JSON text, as plain data; raises :class:`ParseError`. Without
    ``data_checks``, keys that are not strings and numbers out of range are left to the caller
    (import-nodes names the node and key of each)."""
    text = text.removeprefix("\ufeff")  # a byte order mark is allowed at the start of a stream
    try:
        return _parse(text, json_syntax, data_checks)
    except guard.GuardError as e:
        raise ParseError(e.rule, e.message, _within(text, e.position)) from e
    except ParseError as e:
        e.position = _within(text, e.position)
        raise


def _parse(text: str, json_syntax: bool, data_checks: bool) -> list[Any]:
    if json_syntax:
        data = _parse_json(text)
        guard.check_surrogates(text, data)
        return [data]
    return _parse_yaml(text, data_checks)


def _within(text: str, position: tuple[int, int] | None) -> tuple[int, int] | None:
    """A parser's position, kept inside the text (libyaml reports the end of a stream that
    lacks a final newline on the line after it)."""
    if position is None:
        return None
    lines = text.split("\n")
    line = min(position[0], len(lines))
    col = position[1] if line == position[0] else len(lines[line - 1]) + 1
    return line, min(col, len(lines[line - 1]) + 1)


def _parse_yaml(text: str, data_checks: bool = True) -> list[Any]:
    guard.check_text(text)
    try:
        data = yaml_rs.loads(text, parse_datetime=False, alias_limits=_ALIAS_LIMITS)
    except yaml_rs.YAMLDecodeError as e:
        raise _yaml_error(str(e)) from e
    except (ValueError, RecursionError) as e:  # the parser's other refusals, e.g. deep nesting
        raise ParseError(YAML_SYNTAX, f"cannot parse YAML: {e}", None) from e
    if data_checks:
        guard.check_data(text, data)
    if isinstance(data, list) and _document_count(text) > 1:
        return data
    return [data]


def _document_count(text: str) -> int:
    """How many documents a text holds, from its markers: each '---' starts one, and
    content before the first marker is one more."""
    markers = [0] if _FIRST_MARKER.match(text) else []
    markers += [found.start() + 1 for found in _DOC_MARKER.finditer(text)]
    before = text[: markers[0]] if markers else text
    # before the first marker: a comment, or a directive (%YAML, %TAG), is no document
    lines = before.splitlines()
    content_before = any(line.strip() and not line.lstrip().startswith(("#", "%")) for line in lines)
    return len(markers) + (1 if content_before else 0)


def _parse_json(text: str) -> Any:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise ParseError(DUPLICATE_KEY, f"duplicate key {key!r}", None)
            seen[key] = value
        return seen

    try:
        return json.loads(
            text,
            object_pairs_hook=no_duplicates,
            parse_int=guard.json_int,
            parse_float=guard.json_float,
            parse_constant=guard.json_constant,
        )
    except guard.GuardError as e:
        found = guard.LONG_NUMBER.search(text)
        raise ParseError(e.rule, e.message, guard.position_of(text, found.start()) if found else None) from e
    except json.JSONDecodeError as e:
        raise ParseError(JSON_SYNTAX, f"invalid JSON: {e.msg}", (e.lineno, e.colno)) from e
    except RecursionError as e:
        raise ParseError(JSON_SYNTAX, "JSON nested too deeply", None) from e


def _yaml_error(raw: str) -> ParseError:
    first = raw.strip().splitlines()[0] if raw.strip() else "invalid YAML"
    detail = raw.strip().splitlines()[-1].strip() if "\n" in raw.strip() else first
    found = _ERROR_POSITION.search(raw)
    position = (int(found[1]), int(found[2])) if found else None
    if "duplicate" in first:
        return ParseError(DUPLICATE_KEY, f"{first}: every key may appear once", position)
    if "alias" in raw.lower() or "replay" in raw.lower():
        message = "YAML aliases expand beyond the allowed size (an alias bomb?); write it out"
        return ParseError(YAML_ALIAS_LIMIT, message, position)
    return ParseError(YAML_SYNTAX, f"invalid YAML: {detail}", position)
