"""The workload globs of ``GeneratorConfig.spec.workloads``: paths relative to the repository's
top folder, matched as git and shells match them (docs/reference/inventory.md "workloads").

``*`` and ``?`` stay inside one folder, ``[abc]`` is one character of a set, and ``**`` as a
whole path segment spans any number of folders (none included); a glob without wildcards names a
file or a folder (its .yaml, .yml and .json files at any depth), as git's ``:(glob)`` pathspecs
do (tests/test_globs.py asks git). The working tree and a git revision are matched by the same
function, so that both sides of a plan read the same files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from .files import SUFFIXES


def glob_problem(glob: str) -> str | None:
    """Why a glob cannot name files of the repository, or None."""
    if glob.startswith("/"):
        return "is absolute: write it relative to the repository's top folder"
    if ".." in glob.split("/"):
        return "leaves the repository ('..'): write it relative to the repository's top folder"
    if "\\" in glob:
        return "holds a backslash: separate folders with '/' and write no escapes"
    if _unclosed_set(glob):
        return "opens a character set '[' that it does not close"
    if any("**" in segment and segment != "**" for segment in glob.split("/")):
        return "uses '**' inside a segment: '**' spans folders only as a whole segment, as in a/**/b"
    return None


def matches(globs: Iterable[str], path: str) -> bool:
    """Whether the repository-relative ``path`` ('/'-separated) matches one of ``globs``."""
    return any(_pattern(glob).fullmatch(path) or _below(glob, path) for glob in globs)


def _below(glob: str, path: str) -> bool:
    """A wildcard-free glob that names a folder holds its workload files below it."""
    literal = not any(c in glob for c in "*?[")
    return literal and path.startswith(f"{glob.rstrip('/')}/") and path.endswith(SUFFIXES)


def roots(globs: Iterable[str]) -> tuple[str, ...]:
    """The folders a listing must cover: each glob's leading segments up to its first wildcard
    ("" for the whole repository)."""
    found = []
    for glob in globs:
        fixed = []
        for segment in glob.split("/")[:-1]:
            if any(c in segment for c in "*?["):
                break
            fixed.append(segment)
        found.append("/".join(fixed))
    return tuple(sorted(set(found)))


def _unclosed_set(glob: str) -> bool:
    at = 0
    while (start := glob.find("[", at)) != -1:
        end = _set_end(glob, start)
        if end == -1 or "/" in glob[start:end]:
            return True
        at = end + 1
    return False


def _set_end(text: str, start: int) -> int:
    """The ']' closing the set opened at ``start``; -1 when none. As in fnmatch, a ']' first
    in the set (after a negating '!' or '^') is a member."""
    first = start + 1
    if text[first : first + 1] in ("!", "^"):
        first += 1
    return text.find("]", first + 1)


@cache
def _pattern(glob: str) -> re.Pattern[str]:
    parts = []
    segments = glob.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]*/)*")  # a last "**": every file below
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    return re.compile("".join(parts))


def _segment(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _set_end(segment, i)
            members = segment[i + 1 : end]
            negated = members[:1] in ("!", "^")
            members = members[1:] if negated else members
            escaped = "".join(f"\\{m}" if m in "\\^[]" else m for m in members)
            out.append(f"[^/{escaped}]" if negated else f"[{escaped}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
