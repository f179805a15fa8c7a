"""tasgen gate stopped by SIGTERM (its Pod deleted) while the API server does not answer: it
still exits, with 1, within its bounded shutdown, well inside the kubelet's shortest grace
period; a run killed at the end of the grace period (exit 137) reports nothing at all."""

from __future__ import annotations

import json
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
