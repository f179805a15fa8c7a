"""A small deterministic YAML writer for Kubernetes objects.

Output depends only on the data (insertion order of mappings, which the compile stage makes
deterministic), never on the library version installed, so the same inventory gives
byte-identical files on every machine. Strings are plain only when no YAML 1.1 or 1.2
reader could take them for anything but a string; otherwise they are double-quoted, or
written as a literal block when they span lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..model import Documents

# A letter first: some YAML 1.2 readers (yaml-rs) take "_0" for the integer 0, as YAML 1.1
# allows "_" between digits; digits, signs and dots start numbers in every reader.
_PLAIN = re.compile(r"^[A-Za-z][A-Za-z0-9_./-]*$")
_RESERVED = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"})
# Characters never written raw: outside YAML's printable set (section 5.1), or line
# breaks to a YAML 1.1 reader (NEL, LS, PS), or the byte order mark. Listed, not negated: a
# class of the allowed million code points is slow to compile, in every run.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
#: a block scalar's line: no unsafe character but tab, and no space or tab at its end
_BLOCK_LINE = re.compile(
    "^[^\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]*(?<![ \\t])$"
)


def quote(text: str) -> str:
    """A string as a YAML scalar: plain when no reader can take it for anything else, else
    double-quoted with every character a reader could mistake escaped."""
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    return _double_quoted(text)


#: plain scalars, one a line (quote_all)
_PLAIN_LINES = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*(?:\n[A-Za-z][A-Za-z0-9_./-]*)*")


def quote_all(texts: list[str]) -> list[str]:
    """[quote(t) for t in texts], judged in one match when every text is plain (node names
    of a fleet are: no text is then looked at on its own, and ``texts`` itself is returned)."""
    lines = "\n".join(texts)
    if lines.count("\n") == len(texts) - 1 and _PLAIN_LINES.fullmatch(lines) and _none_reserved(texts):
        return texts
    return [quote(text) for text in texts]


def quote_prefixed(prefix: str, texts: list[str], quoted: list[str]) -> list[str]:
    """quote_all([prefix + t for t in texts]), given ``quoted``, quote_all(texts): plain texts
    behind a plain prefix are plain (NodeFeature names: judged again only when short enough to
    spell a reserved word)."""
    joined = list(map(prefix.__add__, texts))
    if quoted is texts and (not prefix or _PLAIN.fullmatch(prefix)) and _none_reserved(joined):
        return joined
    return quote_all(joined)


_LONGEST_RESERVED = max(map(len, _RESERVED))


def _none_reserved(texts: list[str]) -> bool:
    """No text spells a reserved word, in any case (texts longer than every reserved word
    cannot: told at C speed without lowering each)."""
    return min(map(len, texts), default=0) > _LONGEST_RESERVED or _RESERVED.isdisjoint(map(str.lower, texts))


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _double_quoted(text: str) -> str:
    """YAML's double-quoted style, escaping what a reader could take for anything else."""
    if not _UNSAFE.search(text) and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return '"' + "".join(_ESCAPES.get(c) or (_escape(c) if _UNSAFE.match(c) else c) for c in text) + '"'


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


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
        return QUOTED[value]  # type: ignore[index,unused-ignore]
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


def entry(key: str, value: Any, indent: str) -> str:
    """One mapping entry as dump() writes it at that indentation, with its newline: the
    NodeFeature fast path uses it for values it does not write itself."""
    lines: list[str] = []
    _entry(f"{indent}{scalar(key)}:", value, indent, lines)
    return "\n".join(lines) + "\n"


def flat_entry(key: str, data: Mapping[str, str], indent: str) -> str:
    """entry() of a mapping of strings to strings (labels), by a faster path: one line per
    item, unless a value spans lines (a literal block: entry()'s layout)."""
    if not data or any("\n" in value for value in data.values()):
        return entry(key, dict(data), indent)
    inner, quoted = indent + "  ", QUOTED
    lines = [f"{inner}{quoted[k]}: {quoted[v]}\n" for k, v in data.items()]
    return f"{indent}{scalar(key)}:\n" + "".join(lines)


def _mapping(data: dict[str, Any], indent: str, lines: list[str]) -> None:
    for key, value in data.items():
        _entry(f"{indent}{scalar(key)}:", value, indent, lines)


def documents(value: Documents) -> str:
    """Documents held as one string value: each written as dump() writes a file's."""
    return "---\n".join(dump(doc) for doc in value.items)


def _entry(head: str, value: Any, indent: str, lines: list[str]) -> None:
    if isinstance(value, Documents):
        value = documents(value)
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
    return not body.endswith("\n") and all(_BLOCK_LINE.fullmatch(line) for line in body.split("\n"))


def _block(head: str, text: str, indent: str, lines: list[str]) -> None:
    chomp = "|" if text.endswith("\n") else "|-"
    lines.append(f"{head} {chomp}")
    body = text[:-1] if text.endswith("\n") else text
    lines.extend(f"{indent}{line}" if line else "" for line in body.split("\n"))
