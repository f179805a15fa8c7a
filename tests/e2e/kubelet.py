"""A kubelet stand-in: runs the Pods of one namespace as processes on this machine.

The test control plane has no container runtime, so this plays the kubelet ONLY (the Job,
TTL and garbage collector controllers are real): it runs each Pod's command as the Pod's
ServiceAccount, writes its status as the kubelet would and stops it when the Pod is deleted.
What differs from a cluster, and its API: CONTRIBUTING.md, "The kubelet stand-in".
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

#: The kubelet's shortest grace period for stopping a container (a deletion with 0 included).
MIN_GRACE_S = 2
#: How long one watch lasts before the Pods are listed again (a missed event is then seen).
WATCH_S = 5
#: The label the Job controller puts on its Pods.
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
#: Token lifetime asked for (the API server's minimum is 10 minutes).
TOKEN_S = 3600


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Run:
    """One Pod's process and what the status needs of it."""

    pod: str
    uid: str
    process: subprocess.Popen[bytes]
    started: str
    container: str
    stopping: threading.Event = field(default_factory=threading.Event)


class Kubelet(threading.Thread):
    """Runs the Pods of ``namespace`` (see the module's docstring)."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        work_dir: Path,
        *,
        server: str | None = None,
        bound_only: bool = False,
    ) -> None:
        super().__init__(daemon=True, name=f"kubelet-{namespace}")
        self.api, self.core = api, client.CoreV1Api(api)
        self.namespace, self.work_dir = namespace, work_dir
        self.server = server or api.configuration.host
        #: run only Pods bound to a Node, as a kubelet does (for a test that plays the
        #: scheduler's bind, tests/e2e/binder.py); by default every Pod runs unbound
        self.bound_only = bound_only
        self.runs: dict[str, Run] = {}  # Pod uid -> its run
        self.running: dict[str, subprocess.Popen[bytes]] = {}  # Pod uid -> its process, while it runs
        self.done: dict[str, int] = {}  # Pod uid -> the exit code of its run
        self.names: dict[str, str] = {}  # Pod uid -> its Job's name (the Pod's, without a Job)
        self.annotations: dict[str, dict[str, str]] = {}  # Pod uid -> the Pod's annotations
        self.halt = threading.Event()
        self.lock = threading.Lock()

    # --- the loop -----------------------------------------------------------------------------

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self._list_and_watch()
            except (ApiException, urllib3.exceptions.HTTPError, OSError):
                self.halt.wait(1.0)  # the API server restarting or going away: try again

    def _list_and_watch(self) -> None:
        pods = self.core.list_namespaced_pod(self.namespace)
        seen = {p.metadata.uid for p in pods.items}
        for pod in pods.items:
            self._see(pod)
        for uid in set(self.runs) - seen:
            self._gone(uid)
        stream = watch.Watch().stream(
            self.core.list_namespaced_pod,
            self.namespace,
            resource_version=pods.metadata.resource_version,
            timeout_seconds=WATCH_S,
        )
        for event in stream:
            if self.halt.is_set():
                return
            pod = event["object"]
            if event["type"] == "DELETED":
                self._gone(pod.metadata.uid)
            elif event["type"] in ("ADDED", "MODIFIED"):
                self._see(pod)

    def _see(self, pod: Any) -> None:
        uid = pod.metadata.uid
        with self.lock:
            known = self.runs.get(uid)
        if pod.metadata.deletion_timestamp is not None:
            if known is not None:
                self._terminate(known, pod.metadata.deletion_grace_period_seconds)
            return
        if known is None and pod.status.phase in (None, "Pending"):
            if self.bound_only and not pod.spec.node_name:
                return
            self._start(pod)

    def _gone(self, uid: str) -> None:
        with self.lock:
            known = self.runs.get(uid)
        if known is not None:
            self._terminate(known, 0)

    # --- a Pod's life ---------------------------------------------------------------------------

    def _start(self, pod: Any) -> None:
        if not _supported(pod.spec):
            self._refuse(pod)
            return
        (container,) = pod.spec.containers
        folder = self.work_dir / pod.metadata.name
        folder.mkdir(parents=True, exist_ok=True)
        args = self._mount(pod.spec, container, folder)
        args += ["--kubeconfig", str(self._kubeconfig(pod, folder))]
        process = self._spawn([sys.executable, *container.command[1:], *args], pod.metadata.name)
        run = Run(pod.metadata.name, pod.metadata.uid, process, now(), container.name)
        labels = pod.metadata.labels or {}
        with self.lock:
            self.runs[run.uid] = run
            self.names[run.uid] = labels.get(JOB_NAME_LABEL, run.pod)
            self.annotations[run.uid] = dict(pod.metadata.annotations or {})
            self.running[run.uid] = process
        self._status(run, self._running_status(run))
        threading.Thread(target=self._wait, args=(run,), daemon=True).start()

    def _refuse(self, pod: Any) -> None:
        """A Pod this stand-in cannot run as a kubelet would is failed loudly, never run half
        right."""
        message = "the kubelet stand-in runs Pods of one container with a command and ConfigMap volumes only"
        status = {"phase": "Failed", "reason": "Unsupported", "message": message}
        with contextlib.suppress(ApiException):
            self.core.patch_namespaced_pod_status(pod.metadata.name, self.namespace, {"status": status})

    def _spawn(self, command: list[str], pod: str) -> subprocess.Popen[bytes]:
        with (self.work_dir / f"{pod}.log").open("wb") as out:
            # Own session: SIGTERM reaches this command alone, as in its own container.
            return subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def _mount(self, spec: Any, container: Any, folder: Path) -> list[str]:
        """The container's ConfigMap volumes written under folder (one file per key, as the
        kubelet projects them); its arguments with each mount path replaced by the folder's."""
        args: list[str] = list(container.args or [])
        volumes = {v.name: v for v in spec.volumes or []}
        for mount in container.volume_mounts or []:
            target = folder / mount.name
            target.mkdir(exist_ok=True)
            source = volumes[mount.name].config_map.name
            data = self.core.read_namespaced_config_map(source, self.namespace).data or {}
            for key, text in data.items():
                (target / key).write_text(text)
            args = [_remount(a, mount.mount_path, str(target)) for a in args]
        return args

    def _kubeconfig(self, pod: Any, folder: Path) -> Path:
        """A kubeconfig holding a token of the Pod's ServiceAccount, bound to the Pod (what
        the kubelet's projected token volume holds)."""
        request = self.core.create_namespaced_service_account_token(
            pod.spec.service_account_name or "default",
            self.namespace,
            {
                "spec": {
                    "audiences": [],
                    "expirationSeconds": TOKEN_S,
                    "boundObjectRef": {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": pod.metadata.name,
                        "uid": pod.metadata.uid,
                    },
                }
            },
        )
        cfg = self.api.configuration
        cluster: dict[str, Any] = {"server": self.server, "certificate-authority": cfg.ssl_ca_cert}
        user = {"token": request.status.token}
        path = folder / "kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "pod",
                    "clusters": [{"name": "pod", "cluster": cluster}],
                    "users": [{"name": "pod", "user": user}],
                    "contexts": [{"name": "pod", "context": {"cluster": "pod", "user": "pod"}}],
                }
            )
        )
        return path

    def _wait(self, run: Run) -> None:
        code = run.process.wait()
        # A process ended by a signal: the exit code a container runtime reports (128 + signal).
        code = 128 - code if code < 0 else code
        with self.lock:  # recorded before it is reported, as the process ended before
            self.done[run.uid] = code
            del self.running[run.uid]
        self._status(run, self._finished_status(run, code))

    def _terminate(self, run: Run, grace: int | None) -> None:
        """SIGTERM, then SIGKILL once the grace period is over (in the background)."""
        if run.stopping.is_set() or run.process.poll() is not None:
            return
        run.stopping.set()
        with contextlib.suppress(ProcessLookupError):
            run.process.send_signal(signal.SIGTERM)
        wait_s = max(grace or 0, MIN_GRACE_S)

        def kill() -> None:
            try:
                run.process.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                run.process.kill()

        threading.Thread(target=kill, daemon=True).start()

    # --- status, as the kubelet writes it ------------------------------------------------------

    def _running_status(self, run: Run) -> dict[str, Any]:
        state = {"running": {"startedAt": run.started}}
        return {
            "phase": "Running",
            "startTime": run.started,
            "conditions": _conditions(ready=True),
            "containerStatuses": [self._container(run, state, ready=True)],
        }

    def _finished_status(self, run: Run, code: int) -> dict[str, Any]:
        finished = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": run.started,
            "finishedAt": now(),
        }
        return {
            "phase": "Succeeded" if code == 0 else "Failed",
            "conditions": _conditions(ready=False),
            "containerStatuses": [self._container(run, {"terminated": finished}, ready=False)],
        }

    def _container(self, run: Run, state: dict[str, Any], *, ready: bool) -> dict[str, Any]:
        return {
            "name": run.container,
            "state": state,
            "ready": ready,
            "started": ready,
            "restartCount": 0,
            "image": "",
            "imageID": "",
        }

    def _status(self, run: Run, status: dict[str, Any]) -> None:
        """A strategic merge patch of the Pod's status (what the kubelet's status manager
        sends); a Pod gone meanwhile has nothing left to report to."""
        with contextlib.suppress(ApiException):
            self.core.patch_namespaced_pod_status(run.pod, self.namespace, {"status": status})

    # --- for the tests -------------------------------------------------------------------------

    def log(self, uid: str) -> str:
        """The output of the run of the Pod with that uid ("" before it started)."""
        with self.lock:
            run = self.runs.get(uid)
        path = self.work_dir / f"{run.pod}.log" if run else None
        return path.read_text(errors="replace") if path and path.exists() else ""

    def lines(self, uid: str) -> list[dict[str, Any]]:
        """The JSON log lines of a run (the gate's decisions and writes)."""
        return [json.loads(line) for line in self.log(uid).splitlines() if line.startswith("{")]

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=WATCH_S + 5)
        with self.lock:
            runs = list(self.runs.values())
        for run in runs:
            if run.process.poll() is None:
                run.process.kill()
                run.process.wait()


def _supported(spec: Any) -> bool:
    """What the gate's and the retire step's Pods are: one container with a command, every
    volume it mounts a ConfigMap. (The test API server runs without the ServiceAccount admission
    plugin, as envtest starts it, so no token volume is added; --kubeconfig stands for it.)"""
    if len(spec.containers) != 1 or spec.init_containers or not spec.containers[0].command:
        return False
    volumes = {v.name: v for v in spec.volumes or []}
    mounts = spec.containers[0].volume_mounts or []
    return all(m.name in volumes and volumes[m.name].config_map is not None for m in mounts)


def _remount(arg: str, mount: str, target: str) -> str:
    if arg == mount or arg.startswith(mount + "/"):
        return target + arg[len(mount) :]
    return arg


def _conditions(*, ready: bool) -> list[dict[str, Any]]:
    """The kubelet's Pod conditions; PodScheduled is the scheduler's, and none runs here."""
    status = "True" if ready else "False"
    at = now()
    reason = {} if ready else {"reason": "PodCompleted"}
    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": at},
        {"type": "Initialized", "status": "True", "lastTransitionTime": at},
        {"type": "ContainersReady", "status": status, "lastTransitionTime": at, **reason},
        {"type": "Ready", "status": status, "lastTransitionTime": at, **reason},
    ]
