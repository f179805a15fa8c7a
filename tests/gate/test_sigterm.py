"""tasgen gate stopped by SIGTERM (its Pod deleted) while the API server does not answer: it
still exits, with 1, within its bounded shutdown, well inside the kubelet's shortest grace
period; a run killed at the end of the grace period (exit 137) reports nothing at all."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tasgen.gate.command import SHUTDOWN_SECONDS, TIMEOUT
from tests.conftest import REPO

#: Generous: the bound itself is SHUTDOWN_SECONDS; this only keeps a broken shutdown from
#: hanging the suite (before the bound, such a run never exited at all).
EXIT_WAIT_S = 60


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A listener on 127.0.0.1 that never answers what it accepts: an API server that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.settimeout(EXIT_WAIT_S)
        yield listener


def kubeconfig_for(path: Path, port: int) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


def test_sigterm_ends_the_gate_within_its_shutdown_bound_when_the_api_hangs(
    tmp_path: Path, silent: socket.socket
) -> None:
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", silent.getsockname()[1])
    command = [sys.executable, "-m", "tasgen.cli", "gate", "--plan", str(REPO / "rendered" / "queues")]
    command += ["--timeout", "600", "--kubeconfig", str(kubeconfig)]
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        connection, _ = silent.accept()  # the run's first read of a queue: it waits on it now
        with connection:
            run.send_signal(signal.SIGTERM)
            sent = time.monotonic()
            code = run.wait(timeout=EXIT_WAIT_S)
            took = time.monotonic() - sent
            out, err = run.communicate()
    finally:
        run.kill()
        run.communicate()
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == TIMEOUT and "Traceback" not in err, (code, err)
    assert [line["event"] for line in lines] == ["start", "terminated", "finish"], lines
    # Ended by the shutdown's bound (its report hung on the API server too), not by the end of
    # the report, nor before the bound.
    assert lines[-1]["exitCode"] == TIMEOUT and "cut short" in lines[-1]["message"], lines
    assert took >= SHUTDOWN_SECONDS, took


def _fill(pipe: int) -> None:
    """Fill a pipe to the last byte, then make its writers block again (the flag belongs to
    the pipe's one open file, which the child shares)."""
    os.set_blocking(pipe, False)
    for size in (4096, 1):
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(pipe, b"x" * size)
    os.set_blocking(pipe, True)


def test_sigterm_ends_the_gate_even_when_its_standard_output_is_blocked(
    tmp_path: Path, silent: socket.socket
) -> None:
    """A runtime that reads the container's output too slowly leaves the pipe full: the run's
    report blocks in a write holding the stream's lock, and the watchdog's last line with it.
    The watchdog still exits 1 within its bound, without the line, before the kubelet's kill."""
    kubeconfig = kubeconfig_for(tmp_path / "kubeconfig", silent.getsockname()[1])
    command = [sys.executable, "-m", "tasgen.cli", "gate", "--plan", str(REPO / "rendered" / "queues")]
    command += ["--timeout", "600", "--kubeconfig", str(kubeconfig)]
    read_end, write_end = os.pipe()
    run = subprocess.Popen(command, cwd=REPO, stdout=write_end, stderr=subprocess.PIPE, text=True)
    try:
        connection, _ = silent.accept()  # started, its SIGTERM handler set, waiting on a read
        with connection:
            _fill(write_end)
            run.send_signal(signal.SIGTERM)
            code = run.wait(timeout=EXIT_WAIT_S)
    finally:
        run.kill()
        run.communicate()
        os.close(write_end)
    with os.fdopen(read_end, "rb") as output:
        written = output.read()
    assert code == TIMEOUT, code
    start = json.loads(written.split(b"\n")[0])
    assert start["event"] == "start"  # then the filler: nothing the run wrote after it got in
    assert written.rstrip(b"x").endswith(b"\n"), written[-200:]
