"""Colour for the level of each problem line (``path:line:col: error: ...``), on a terminal
only: ``--color auto|always|never``, and ``NO_COLOR`` (no-color.org) turns auto off."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TextIO

CHOICES = ("auto", "always", "never")
_LEVELS = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m"}  # bold red, bold yellow
_RESET = "\x1b[0m"
_PROBLEM = re.compile(r"^([^\n]*?:\d+:\d+: )(error|warning)(: )", re.MULTILINE)


def wanted(choice: str, stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether to colour what goes to ``stream``: always, never, or (auto) when it is a
    terminal that can show colour and NO_COLOR is unset or empty."""
    if choice != "auto":
        return choice == "always"
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def colored(text: str) -> str:
    """The text with the level of each problem line in its colour."""
    return _PROBLEM.sub(lambda m: f"{m[1]}{_LEVELS[m[2]]}{m[2]}{_RESET}{m[3]}", text)
