"""The gate's only contact with the API server: read a queue, write it, report on it.

Every write carries the resourceVersion that the decision was made on, so a write that races
Kueue, an administrator or a second gate fails with 409 Conflict and the caller decides again
from a fresh read. Transient errors (5xx, 429, connection failures) are retried here with
capped exponential backoff; anything else is the caller's to report.
"""

from __future__ import annotations

import builtins
import random
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from .decision import CONDITION_TYPE, Condition

GROUP, VERSION, PLURAL, KIND = "kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue"
#: the Kueue API versions the gate can speak: a plan rendered for kueueAPIVersion v1beta1 (a
#: Kueue release before v0.15 serves no v1beta2) is read and written in v1beta1
VERSIONS = ("v1beta2", "v1beta1")
FIELD_MANAGER = "tasgen-gate"
#: Workloads per list request (the API server's pagination)
WORKLOAD_PAGE = 500
T = TypeVar("T")


class Conflict(Exception):
    """The object changed since it was read (HTTP 409): read again and decide again."""


class Deadline:
    """The wall-clock bound of one gate run, with an injectable clock for tests."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + seconds

    def left(self) -> float:
        return self._end - self._clock()

    @property
    def passed(self) -> bool:
        return self.left() <= 0


def load_client(kubeconfig: str | None) -> client.ApiClient:
    """An explicit kubeconfig wins; else the in-cluster ServiceAccount; else KUBECONFIG/~/.kube."""
    if kubeconfig is None:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
            return client.ApiClient()
        except config.ConfigException:
            pass  # not in a Pod: fall back to the usual kubeconfig search
    try:
        api = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (TypeError, AttributeError, KeyError, ValueError) as err:
        # The client's loader takes any YAML and fails deep inside on a file of another
        # shape (a list, `clusters: 5`), wherever it was found (--kubeconfig, KUBECONFIG,
        # ~/.kube/config): a configuration problem, which every caller reports.
        raise config.ConfigException(
            f"not a kubeconfig: a YAML mapping with lists of clusters, users and contexts ({err})"
        ) from err
    except ImportError as err:  # a socks5:// proxy-url: urllib3 imports PySocks only then
        raise config.ConfigException(f"cannot use the kubeconfig: {_missing(err)}") from err
    return cast(client.ApiClient, api)


def _missing(err: ImportError) -> str:
    """What a proxy-url the client cannot serve needs (the one optional module it imports)."""
    return f"its proxy-url needs the module {err.name!r}, which is not installed (pip install pysocks)"


def _transient(err: Exception) -> bool:
    if isinstance(err, ApiException):
        return err.status in (429, 500, 502, 503, 504) or err.status == 0
    return isinstance(err, HTTPError | OSError)


def with_backoff(call: Callable[[], T], deadline: Deadline, on_retry: Callable[[Exception], None]) -> T:
    """call(), retrying transient API errors with jittered exponential backoff (0.5 s to 10 s)
    until the deadline; a 409 becomes Conflict, other errors propagate."""
    delay = 0.5
    while True:
        try:
            return call()
        except ApiException as err:
            if err.status == 409:
                raise Conflict(str(err.reason)) from err
            if not _transient(err) or deadline.left() < delay:
                raise
            on_retry(err)
        except (HTTPError, OSError) as err:
            if deadline.left() < delay:
                raise
            on_retry(err)
        time.sleep(delay * random.uniform(0.5, 1.0))
        delay = min(delay * 2, 10.0)


class Queues:
    """ClusterQueue reads and writes, and Events about them."""

    def __init__(
        self, api: client.ApiClient, event_namespace: str = "default", version: str = VERSION
    ) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._event_namespace = event_namespace
        self._version = version  # the plan's: the live queue is compared in its spelling

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            obj = self._custom.get_cluster_custom_object(GROUP, self._version, PLURAL, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return cast(dict[str, Any], obj)

    def workloads(self) -> Iterator[dict[str, Any]]:
        """Every Workload of every namespace, a page at a time: a caller that reduces each one
        as it comes (generator/gate/admissions.py) holds one page, not the cluster's list, in
        the gate's small memory limit."""
        token: str | None = None
        while True:
            page = cast(
                dict[str, Any],
                self._custom.list_cluster_custom_object(
                    GROUP, self._version, "workloads", limit=WORKLOAD_PAGE, _continue=token
                ),
            )
            yield from (cast(dict[str, Any], item) for item in page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return

    def replace(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the whole object; its metadata.resourceVersion makes the write conditional."""
        name = body["metadata"]["name"]
        new = self._custom.replace_cluster_custom_object(
            GROUP, self._version, PLURAL, name, dict(body), field_manager=FIELD_MANAGER
        )
        return cast(dict[str, Any], new)

    def trial(self, body: Mapping[str, Any]) -> None:
        """The same PUT as a server-side dry run (dryRun=All): validated and admitted as a write
        would be (CRD schema and CEL, Kueue's webhook, admission policies), nothing stored."""
        name = body["metadata"]["name"]
        self._custom.replace_cluster_custom_object(
            GROUP, self._version, PLURAL, name, dict(body), field_manager=FIELD_MANAGER, dry_run="All"
        )

    def set_condition(
        self,
        live: Mapping[str, Any],
        cond: Condition,
        now: datetime,
    ) -> dict[str, Any]:
        """Server-side apply of the TopologyReady condition alone, as field manager tasgen-gate.

        Kueue replaces the status with a conditional update of the object it read, so it keeps
        this condition; applying only our own list entry (conditions is listType=map on type)
        never touches Kueue's Active condition or its usage figures. Returns the new object.
        """
        meta = live["metadata"]
        body = {
            "apiVersion": f"{GROUP}/{self._version}",
            "kind": KIND,
            "metadata": {"name": meta["name"], "resourceVersion": meta["resourceVersion"]},
            "status": {"conditions": [condition_body(live, cond, now)]},
        }
        new = self._custom.patch_cluster_custom_object_status(
            GROUP,
            self._version,
            PLURAL,
            meta["name"],
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
        )
        return cast(dict[str, Any], new)

    def event(self, live: Mapping[str, Any], reason: str, message: str, warning: bool, now: datetime) -> None:
        """An events.k8s.io Event regarding the queue, in the namespace where kubectl describe
        finds events of cluster-scoped objects. Created through the generic custom-object
        path, which takes plain dicts in every client version."""
        meta = live["metadata"]
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # Named the way client-go names events (events.k8s.io rejects a generateName that
            # ends in a dot): the object's name and the time in hex nanoseconds.
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": self._event_namespace},
            "regarding": {
                "apiVersion": f"{GROUP}/{self._version}",
                "kind": KIND,
                "name": meta["name"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "eventTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": f"{GROUP}/{FIELD_MANAGER}",
            "reportingInstance": _instance(),
            "action": reason,
            "reason": reason,
            "note": message[:1024],
            "type": "Warning" if warning else "Normal",
        }
        self._custom.create_namespaced_custom_object(
            "events.k8s.io", "v1", self._event_namespace, "events", body
        )


class PlanConfigMap:
    """The ConfigMap the gate's plan is mounted from, read as it is now on the API server."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self._core = client.CoreV1Api(api)
        self.namespace, self.name = namespace, name

    def data(self) -> dict[str, str] | None:
        """Its data (key -> text); None when it is gone."""
        try:
            found = self._core.read_namespaced_config_map(self.name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        return dict(found.data or {})


def _instance() -> str:
    """The Pod's name (the hostname in a Pod) tells which gate run reported an Event."""
    return f"{FIELD_MANAGER}-{socket.gethostname()}"[:128]


def current_condition(live: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (live.get("status") or {}).get("conditions") or []:
        if cond.get("type") == CONDITION_TYPE:
            return dict(cond)
    return None


def condition_body(live: Mapping[str, Any], cond: Condition, now: datetime) -> dict[str, Any]:
    """The condition as the API wants it; its transition time moves only when status does."""
    old = current_condition(live)
    since = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    if old is not None and old.get("status") == cond.status and old.get("lastTransitionTime"):
        since = str(old["lastTransitionTime"])
    return {
        "type": CONDITION_TYPE,
        "status": cond.status,
        "reason": cond.reason,
        "message": cond.message[:32768],
        "lastTransitionTime": since,
        "observedGeneration": live["metadata"].get("generation", 0),
    }


def condition_is(live: Mapping[str, Any], cond: Condition) -> bool:
    """The live queue already reports exactly this condition for its current generation."""
    old = current_condition(live)
    return old is not None and (
        old.get("status"),
        old.get("reason"),
        old.get("message"),
        old.get("observedGeneration"),
    ) == (cond.status, cond.reason, cond.message[:32768], live["metadata"].get("generation"))


def utcnow() -> datetime:
    return datetime.now(UTC)


class Catalog:
    """Kueue's cluster-scoped objects by plural (resourceflavors, topologies, clusterqueues):
    list them, and delete one only as it was read."""

    def __init__(self, api: client.ApiClient, version: str = VERSION) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._version = version

    def list(self, plural: str) -> list[dict[str, Any]]:
        """Every object of ``plural``; namespaced kinds (workloads) from every namespace."""
        found = cast(dict[str, Any], self._custom.list_cluster_custom_object(GROUP, self._version, plural))
        return [cast(dict[str, Any], item) for item in found.get("items") or []]

    def workloads(self) -> builtins.list[dict[str, Any]]:
        """Every Workload of every namespace (generator/gate/admissions.py reads them)."""
        return self.list("workloads")

    def delete(self, plural: str, live: Mapping[str, Any]) -> bool:
        """Delete the object if it is still the one that was read (uid and resourceVersion as
        preconditions: an engine that re-applied it meanwhile turns this into a Conflict).
        False when it was gone already."""
        meta = live["metadata"]
        same = client.V1Preconditions(uid=meta.get("uid"), resource_version=meta.get("resourceVersion"))
        try:
            self._custom.delete_cluster_custom_object(
                GROUP, self._version, plural, meta["name"], body=client.V1DeleteOptions(preconditions=same)
            )
        except ApiException as err:
            if err.status == 404:
                return False
            if err.status == 409:
                raise Conflict(str(err.reason)) from err
            raise
        return True
