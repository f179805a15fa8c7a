"""What ``tasgen check`` shows of a stale rendered/: a unified diff of each file that differs
from what ``tasgen render`` would write, bounded, with a count of what is left out."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping

#: Lines of diff shown at most: enough for a hand edit or two, short enough for a CI log.
MAX_LINES = 200


def unified(old: Mapping[str, str], new: Mapping[str, str], paths: list[str], label: str) -> str:
    """The diff of each path (rendered/ as it is, ``old``, against what render writes, ``new``;
    a missing side is empty), at most MAX_LINES lines, then how many more lines and files.
    The lines are a file's as they are: the reporter escapes what a terminal must not see."""
    shown: list[str] = []
    hidden_lines = hidden_files = 0
    for path in paths:
        lines = list(_diff(old.get(path), new.get(path), f"{label}/{path}"))
        room = MAX_LINES - len(shown)
        if room <= 0:
            hidden_lines += len(lines)
            hidden_files += 1
            continue
        shown += lines[:room]
        hidden_lines += max(len(lines) - room, 0)
    if hidden_lines:
        files = f" (in {hidden_files} more file(s) and the last one shown)" if hidden_files else ""
        shown.append(
            f"... {hidden_lines} more line(s) of differences{files}: run 'tasgen render' and "
            f"'git diff {label}' to see them all"
        )
    return "".join(f"{line}\n" for line in shown)


def _diff(old: str | None, new: str | None, shown: str) -> Iterator[str]:
    before = old.splitlines() if old is not None else []
    after = new.splitlines() if new is not None else []
    yield from difflib.unified_diff(
        before,
        after,
        f"{shown} (as it is)" if old is not None else "/dev/null",
        f"{shown} (as 'tasgen render' writes it)" if new is not None else "/dev/null",
        lineterm="",
    )
