"""--color auto|always|never and NO_COLOR: the level of each problem line is coloured on a
terminal (a real pseudo-terminal here), never in a pipe or a file, and never with NO_COLOR."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from tests.conftest import REPO

CASE = REPO / "tests" / "cases" / "invalid" / "flavor-limit" / "inventory"
RED, RESET = "\x1b[1;31m", "\x1b[0m"
PLAIN = "queue.yaml:7:3: error: queue 'main' needs 66 flavors"
COLOURED = f"queue.yaml:7:3: {RED}error{RESET}: queue 'main' needs 66 flavors"


def run(*options: str, terminal: bool, no_color: str | None = None) -> str:
    """tasgen validate on the case, its standard output a pseudo-terminal or a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["TERM"] = "xterm"
    if no_color is not None:
        env["NO_COLOR"] = no_color
    command = [sys.executable, "-m", "tasgen.cli", *options, "validate", "-i", str(CASE)]
    if not terminal:
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=REPO, check=False, timeout=120
        )
        return done.stdout
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed, the output is all read
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
    finally:
        os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize(
    ("options", "terminal", "no_color", "coloured"),
    [
        ((), True, None, True),  # auto, on a terminal
        ((), False, None, False),  # auto, in a pipe
        ((), True, "1", False),  # NO_COLOR
        ((), True, "", True),  # NO_COLOR empty: as if unset (no-color.org)
        (("--color", "never"), True, None, False),
        (("--color", "always"), False, None, True),
        (("--color", "always"), True, "1", True),  # the option is the user's explicit choice
    ],
)
def test_the_level_is_coloured_when_asked_for(
    options: tuple[str, ...], terminal: bool, no_color: str | None, coloured: bool
) -> None:
    output = run(*options, terminal=terminal, no_color=no_color)
    assert (COLOURED if coloured else PLAIN) in output, output
    assert ("\x1b[" in output) == coloured, output
