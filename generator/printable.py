"""Report text that is not Unicode: found before anything is written, placed at its source.

An unpaired UTF-16 surrogate can only enter tasgen's strings through an escape (``\\ud800``
in JSON or a double-quoted YAML scalar): decoding UTF-8 bytes never yields one. Such a string
can be neither printed nor applied (kubectl refuses the escape in a rendered file).
"""

from __future__ import annotations

from .load.files import InputFile
from .model import Problem
from .rules.load import JSON_SYNTAX, YAML_SYNTAX


def one_line(value: str) -> str:
    """A value from outside (a file name, a revision from an endpoint, a quoted value) on one
    line, control characters escaped: a line break in it could otherwise start a line of its
    own, which GitHub reads as a workflow command (an annotation, or ::stop-commands::), and an
    escape sequence would drive the terminal."""
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in value)


def unpaired_surrogate(text: str) -> str | None:
    """Half of a UTF-16 surrogate pair: what a JSON or YAML escape such as \\ud800 decodes to.
    It is not a character: it cannot be printed, and kubectl refuses it in a rendered file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return text[e.start]
    return None


def surrogate_problem(char: str, files: list[InputFile]) -> Problem | None:
    """The problem at the escape in the inventory that made ``char``; None when no inventory
    text has it (a surrogate from an undecodable file name: that is printed escaped)."""
    escape = f"\\u{ord(char):04x}"
    message = (
        f"{escape} is half of a UTF-16 surrogate pair, not a character: it can be neither "
        "printed nor applied to a cluster; write the character itself"
    )
    for file in files:
        text = (file.data or b"").decode("utf-8", "replace")
        at = text.lower().find(escape)
        if at >= 0:
            rule = JSON_SYNTAX if file.relative.endswith(".json") else YAML_SYNTAX
            line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
            return rule.problem(file.shown, line, col, message)
    return None
