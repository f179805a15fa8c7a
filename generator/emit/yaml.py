"""A small deterministic YAML writer for Kubernetes objects.

Output depends only on the data (insertion order of mappings, which the plan stage makes
deterministic), never on the library version installed, so the same inventory gives
byte-identical files on every machine. Strings are plain only when no YAML 1.1 or 1.2
reader could take them for anything but a string; otherwise they are double-quoted, or
written as a literal block when they span lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"})
_BLOCK_LINE = re.compile(r"^[^\s\x00-\x1f\x7f]?[^\x00-\x08\x0b-\x1f\x7f]*(?<![ \t])$")


def quote(text: str) -> str:
    """A string as a YAML scalar: plain when unambiguous, else double-quoted."""
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text, ensure_ascii=False)


class _QuotedCache(dict[str, str]):
    """quote() of strings that repeat (label keys and values): a hit is one dict lookup."""

    LIMIT = 200_000

    def __missing__(self, text: str) -> str:
        quoted = quote(text)
        if len(self) < self.LIMIT:
            self[text] = quoted
        return quoted


QUOTED = _QuotedCache()


def scalar(value: object) -> str:
    if value.__class__ is str:
        return QUOTED[value]  # type: ignore[index]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return json.dumps(value)
    return QUOTED[str(value)]


def dump(data: dict[str, Any]) -> str:
    """One document: a mapping at the top level."""
    lines: list[str] = []
    _mapping(data, "", lines)
    return "\n".join(lines) + "\n"


def _mapping(data: dict[str, Any], indent: str, lines: list[str]) -> None:
    for key, value in data.items():
        _entry(f"{indent}{scalar(key)}:", value, indent, lines)


def _entry(head: str, value: Any, indent: str, lines: list[str]) -> None:
    if isinstance(value, dict) and value:
        lines.append(head)
        _mapping(value, indent + "  ", lines)
    elif isinstance(value, list) and value:
        lines.append(head)
        _sequence(value, indent + "  ", lines)
    elif isinstance(value, str) and "\n" in value and _block_ok(value):
        _block(head, value, indent + "  ", lines)
    else:
        lines.append(f"{head} {_flow(value)}")


def _sequence(items: list[Any], indent: str, lines: list[str]) -> None:
    for item in items:
        if isinstance(item, dict) and item:
            first = len(lines)
            _mapping(item, indent + "  ", lines)
            lines[first] = f"{indent}- {lines[first][len(indent) + 2 :]}"
        elif isinstance(item, list) and item:
            lines.append(f"{indent}-")
            _sequence(item, indent + "  ", lines)
        else:
            lines.append(f"{indent}- {_flow(item)}")


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return scalar(value)


def _block_ok(text: str) -> bool:
    body = text[:-1] if text.endswith("\n") else text
    if body.lstrip("\n")[:1] in ("", " ", "\t"):  # empty, or needs an indentation indicator
        return False
    return not body.endswith("\n") and all(_BLOCK_LINE.match(line) for line in body.split("\n"))


def _block(head: str, text: str, indent: str, lines: list[str]) -> None:
    chomp = "|" if text.endswith("\n") else "|-"
    lines.append(f"{head} {chomp}")
    body = text[:-1] if text.endswith("\n") else text
    lines.extend(f"{indent}{line}" if line else "" for line in body.split("\n"))
