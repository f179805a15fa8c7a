"""The real gate (``python -m tasgen.gate``'s command) with one fault at its k-th write to
the real API server, for tests/e2e/test_gate_faults.py:

    python -m tests.gate.faulty_gate FAULT K NAMESPACE -- <the gate's options>

FAULT is count, kill-before, kill-after, admit or hold: CONTRIBUTING.md, "Gate faults".
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kubernetes import config

from tasgen.gate import kube
from tasgen.gate.command import gate
from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.gate.support import Kueue, admitted_on, unique

Write = Callable[..., dict[str, Any]]
T = TypeVar("T")


def _say(**fields: Any) -> None:
    print(json.dumps({"event": "fault", **fields}), flush=True)


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class Faults:
    """Counts the gate's writes and runs the fault at the k-th."""

    def __init__(self, fault: str, k: int, namespace: str, kubeconfig: str) -> None:
        self.fault, self.k, self.namespace = fault, k, namespace
        self.writes = 0
        self.admin = Kueue(config.new_client_from_config(config_file=kubeconfig))

    def wrap(self, write: Write) -> Write:
        def faulty(queues: kube.Queues, body: Mapping[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
            self.writes += 1
            if self.writes != self.k:
                return write(queues, body, *args, **kwargs)
            if self.fault == "kill-before":
                _kill()
            if self.fault in ("admit", "hold"):
                applied = getattr(self, self.fault)(body["metadata"]["name"])
                _say(fault=self.fault, write=self.k, applied=applied)
            answer = write(queues, body, *args, **kwargs)
            if self.fault == "kill-after":
                _kill()
            return answer

        return faulty

    def admit(self, queue: str) -> str | None:
        """Kueue admits a new Job on the queue, if the queue admits at all just now: the
        flavor it was admitted on."""
        before = self.admin.get(queue)
        job = unique("admitted")
        self.admin.job(self.namespace, job)
        if before["spec"].get("stopPolicy", "None") != "None":
            return None
        flavor = _wait(lambda: self._admitted(job))
        # ...and Kueue's status of the queue counts it (the gate decides from that status)
        _wait(lambda: self.admin.reserving(queue, len(self._reserving())))
        return flavor

    def _reserving(self) -> list[dict[str, Any]]:
        return [w for w in self.admin.workloads(self.namespace) if admitted_on(w)]

    def _admitted(self, job: str) -> str | None:
        return next((admitted_on(w) for w in self._reserving() if job in w["metadata"]["name"]), None)

    def hold(self, queue: str) -> str | None:
        """An administrator's Hold, unless the gate's drain record is on the queue."""
        live = self.admin.get(queue)
        if PREVIOUS_POLICY_ANNOTATION in (live["metadata"].get("annotations") or {}):
            return None
        self.admin.patch_spec(queue, {"stopPolicy": "Hold"})
        return "Hold"


def _wait(probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    end = time.monotonic() + timeout
    while not (found := probe()):
        if time.monotonic() > end:
            raise SystemExit(f"faulty_gate: timed out after {timeout}s waiting for Kueue")
        time.sleep(0.2)
    return found


def main(argv: list[str]) -> None:
    fault, k, namespace, dashes, *options = argv
    assert dashes == "--", argv
    faults = Faults(fault, int(k), namespace, options[options.index("--kubeconfig") + 1])
    kube.Queues.replace = faults.wrap(kube.Queues.replace)  # type: ignore[method-assign]
    kube.Queues.set_condition = faults.wrap(kube.Queues.set_condition)  # type: ignore[method-assign]
    try:
        gate.main(options, prog_name="tasgen gate")
    finally:  # a run that ends (was not killed) says how many writes it made
        _say(fault="count", writes=faults.writes)


if __name__ == "__main__":
    main(sys.argv[1:])
