"""``tasgen gate``: switch the managed ClusterQueues to their rendered plan, draining first when
a dropped flavor still holds reservations (docs/explanation/gate.md)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import click
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from urllib3.exceptions import HTTPError

from .admissions import held_resources
from .decision import decide
from .kube import Deadline, PlanConfigMap, Queues, load_client, with_backoff
from .plan import PlanError, parse_plan, plan_hash, plan_version, read_texts, same_plan_texts
from .runner import Gate, JsonLog, Terminated

#: Exit codes. The Job fails at once on TIMEOUT and UNUSABLE (its podFailurePolicy): a new pod
#: would meet the same queue or the same plan. CRASHED is retried: nothing about it is known.
DONE, TIMEOUT, UNUSABLE, CRASHED = 0, 1, 2, 3

#: After SIGTERM the gate reports on its waiting queues for at most this long, then exits 1
#: however far the reports got: the kubelet kills it once the Pod's grace period is over, which
#: is 2 s at the shortest (a deleted unbound Pod), and a killed run reports nothing at all.
SHUTDOWN_SECONDS = 1.3
#: How long the watchdog waits for its own last log line before it exits without it: standard
#: output may be blocked (a full pipe the runtime reads too slowly, the main thread stuck in a
#: write holding the stream's lock), and the exit must not wait on it.
LAST_LINE_SECONDS = 0.2


#: Both in-cluster commands (gate, retire) find the API server alike.
kubeconfig_option = click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="Kubeconfig file; default: in-cluster config, else KUBECONFIG/~/.kube.",
)


@click.command("gate")
@click.option(
    "--plan",
    "plan_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The desired ClusterQueues: a YAML file or a directory of them.",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=0),
    default=1800,
    show_default=True,
    help="Seconds to wait for drains; then exit 1 without switching those queues.",
)
@click.option(
    "--poll-interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between status reads while waiting.",
)
@kubeconfig_option
@click.option(
    "--event-namespace",
    type=click.Choice(["default", "kube-system"]),
    default="default",
    show_default=True,
    help="Namespace of the Events about the queues (the API server accepts events of "
    "cluster-scoped objects only in these two).",
)
@click.option(
    "--plan-configmap",
    metavar="NAMESPACE/NAME",
    default=None,
    help="The ConfigMap the plan is mounted from: write only while it still holds this plan, "
    "so that a run of an older plan stops once a newer one is synced (the rendered Job sets it).",
)
@click.option("--dry-run", is_flag=True, help="Print each queue's decision; change nothing.")
def gate(
    *,
    plan_path: Path,
    timeout: int,
    poll_interval: float,
    kubeconfig: str | None,
    event_namespace: str,
    plan_configmap: str | None,
    dry_run: bool,
) -> None:
    """Switch the managed ClusterQueues to their rendered plan, holding and draining a queue
    first when a flavor it drops still has reservations (docs/explanation/gate.md). One JSON line per
    decision and change on stdout.

    \b
    Example:
      tasgen gate --plan rendered/queues --dry-run
      tasgen gate --plan /etc/tasgen/plan --timeout 1800    # in the Job
    Exit: 0 done, 1 timed out, stopped or an API error, 2 unusable plan or kubeconfig,
    3 unexpected error.
    """
    log = JsonLog()
    try:
        texts = read_texts(plan_path)
        desired = parse_plan(texts, plan_path)
        source = _configmap(plan_configmap)
        api = load_client(kubeconfig)
    except (PlanError, ConfigException, OSError) as err:
        log("error", message=str(err))
        sys.exit(UNUSABLE)
    queues = Queues(api, event_namespace, plan_version(desired))
    digest = plan_hash(desired)
    log("start", queues=sorted(desired), timeout=timeout, dryRun=dry_run, plan=digest)
    if dry_run:
        sys.exit(_dry_run(queues, desired, log, Deadline(timeout)))
    signal.signal(signal.SIGTERM, _terminate(log))
    try:
        current = None
        if source is not None:
            configmap = PlanConfigMap(api, *source)
            current = partial(_holds, configmap, texts)
        code = Gate(
            queues, desired, Deadline(timeout), log, poll_interval, plan=digest, current=current
        ).run()
    except Exception as err:  # a bug of ours or a library's: one log line, and a retry
        log("crash", error=f"{type(err).__name__}: {err}"[:1000])
        code = CRASHED
    log("finish", exitCode=code)
    sys.exit(code)


def _configmap(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    namespace, _, name = value.partition("/")
    if not namespace or not name or "/" in name:
        raise PlanError(f"--plan-configmap {value}: expected NAMESPACE/NAME")
    return namespace, name


def _holds(configmap: PlanConfigMap, texts: Mapping[str, str]) -> bool:
    """The ConfigMap on the API server still holds the plan this run read."""
    return same_plan_texts(texts, configmap.data())


def _terminate(log: JsonLog) -> Callable[[int, FrameType | None], None]:
    """The SIGTERM handler (the kubelet stopping the pod): the run ends through Gate.run's
    report, and a watchdog ends the process if that report is not done within
    SHUTDOWN_SECONDS (an API server that does not answer, a loaded node)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the report
        watchdog = threading.Timer(SHUTDOWN_SECONDS, _cut_short, (log,))
        watchdog.daemon = True
        watchdog.start()
        raise Terminated

    return handler


def _cut_short(log: JsonLog) -> None:
    message = f"stopped: the reports were cut short after {SHUTDOWN_SECONDS} s"
    last = threading.Thread(target=log, args=("finish",), kwargs={"exitCode": TIMEOUT, "message": message})
    last.daemon = True
    last.start()
    last.join(LAST_LINE_SECONDS)
    os._exit(TIMEOUT)


def _held(queues: Queues, name: str) -> frozenset[tuple[str, str]]:
    return held_resources(queues.workloads(), name)


def _dry_run(
    queues: Queues, desired: Mapping[str, Mapping[str, Any]], log: JsonLog, deadline: Deadline
) -> int:
    """Each queue's next step, as the gate would take it now; nothing is written. Reads are
    retried as in a real run, until --timeout."""

    def retry(err: Exception) -> None:
        log("retry", error=str(err)[:300], dryRun=True)

    for name in sorted(desired):
        try:
            live = with_backoff(partial(queues.get, name), deadline, retry)
            held = with_backoff(partial(_held, queues, name), deadline, retry)
            action = decide(live, desired[name], held)
        except ApiException as err:
            log("error", queue=name, status=err.status, reason=err.reason, dryRun=True)
            return TIMEOUT
        except (HTTPError, OSError) as err:
            message = f"the API server stayed unreachable until the timeout: {err}"[:500]
            log("error", queue=name, message=message, dryRun=True)
            return TIMEOUT
        cond = action.condition
        log(
            "decision",
            queue=name,
            action=action.kind.value,
            dryRun=True,
            reason=cond.reason if cond else None,
            message=cond.message if cond else "",
            dropped=list(action.dropped),
            droppedResources=[list(p) for p in action.dropped_resources],
        )
    return 0
