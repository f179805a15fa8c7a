"""``tasgen retire``: delete the ResourceFlavors and Topologies tasgen no longer renders, once
nothing refers to them: the last step of a sync, after the queues.

The engines' prune would delete them before the gate has switched the queues, and Kueue's
finalizer would keep them Terminating (a revert during the drain could never apply them
again). A use that passes by itself is waited for, then exit 1 for a retry; a lasting one is
reported. The whole story: docs/explanation/gate.md, "Ordering".
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import click
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from urllib3.exceptions import HTTPError

from .admissions import any_holder, flavors_of
from .command import kubeconfig_option
from .decision import QueueStatus, flavor_names
from .kube import GROUP, VERSIONS, Catalog, Conflict, Deadline, load_client, with_backoff
from .plan import load_yaml
from .runner import JsonLog

KEEP_KEY = "keep.yaml"
MANAGED_BY = ("app.kubernetes.io/managed-by", "tasgen")
#: the serial of the render that last wrote a Topology or flavor (generator.compile.gate_wiring
#: writes it; the gate may not import the compiler, a test pins both)
RENDER_ANNOTATION = "topology.gpustack.ai/render"
FLAVORS, TOPOLOGIES, QUEUES = "resourceflavors", "topologies", "clusterqueues"
#: Exit codes, as the gate's: 1 the timeout passed (the API server failing, or a managed queue
#: still naming a retired flavor), 2 unusable keep list.
DONE, FAILED, UNUSABLE = 0, 1, 2
#: Rounds of read-decide-delete; a round ends early only on a Conflict (read again).
MAX_ROUNDS = 5
POLL_SECONDS = 0.5
#: Seconds between reads while a managed queue still names a retired flavor.
WAIT_SECONDS = 2.0

Obj = Mapping[str, Any]


class KeepError(Exception):
    """The keep list cannot be used; nothing is deleted."""


@dataclass(frozen=True)
class Keep:
    """What the current render holds: nothing of these is ever deleted."""

    version: str
    flavors: frozenset[str]
    topologies: frozenset[str]
    #: the render's serial: only what an older render stamped is retired (None: a keep list of
    #: a tasgen that stamped nothing)
    render: int | None = None


@dataclass(frozen=True)
class Use:
    """Why a retired object is kept, and whether that lets go without a person: a queue tasgen
    manages is switched off it by the gate (under Argo CD the retire step can run before the
    gate has finished), a retired flavor naming a Topology goes itself."""

    why: str
    passing: bool


@dataclass(frozen=True)
class Retirement:
    """One round's verdict: objects to delete (flavors before Topologies) and the retired ones
    kept, each with its use."""

    delete: tuple[tuple[str, Obj], ...]
    held: tuple[tuple[str, str, Use], ...]  # plural, name, use

    @property
    def waiting(self) -> bool:
        """Something retired is kept only by what lets go by itself: worth waiting for."""
        return any(use.passing for _, _, use in self.held)


def choose(
    keep: Keep,
    flavors: Sequence[Obj],
    topologies: Sequence[Obj],
    queues: Sequence[Obj],
    workloads: Sequence[Obj] = (),
) -> Retirement:
    """Pure: which retired flavors and Topologies may go now. A flavor that a Workload's
    admission names stays (nothing else may name or report it any more: its queue dropped
    it). A Topology waits for every flavor that names it to be gone, retired ones included (the
    run deletes those first and reads again), so that Kueue's finalizer never keeps it
    Terminating."""
    delete: list[tuple[str, Obj]] = []
    held: list[tuple[str, str, Use]] = []
    flavor_users = _flavor_users(queues)
    for flavor, use in _workload_users(workloads).items():
        _use(flavor_users, flavor, use)
    for obj in _retired(flavors, keep.flavors):
        _newer(keep, obj, flavor_users)
    for obj in _retired(flavors, keep.flavors):
        _sort(FLAVORS, obj, flavor_users, delete, held)
    retired = {_name(f): flavor_users.get(_name(f)) for f in _retired(flavors, keep.flavors)}
    topology_users = _topology_users(flavors, retired)
    for obj in _retired(topologies, keep.topologies):
        _newer(keep, obj, topology_users)
        _sort(TOPOLOGIES, obj, topology_users, delete, held)
    return Retirement(tuple(delete), tuple(held))


def _sort(
    plural: str,
    obj: Obj,
    users: Mapping[str, Use],
    delete: list[tuple[str, Obj]],
    held: list[tuple[str, str, Use]],
) -> None:
    if _name(obj) in users:
        held.append((plural, _name(obj), users[_name(obj)]))
    else:
        delete.append((plural, obj))


def _stamp(obj: Obj) -> int:
    """The render serial an object carries; 0 when it has none (a tasgen before stamps: older
    than every stamped render)."""
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(RENDER_ANNOTATION)
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def _newer(keep: Keep, obj: Obj, users: dict[str, Use]) -> None:
    """Not this render's to retire: a render at least as new wrote it (a newer commit added it
    while this one's step still runs, e.g. an engine retrying an old revision)."""
    if keep.render is not None and _stamp(obj) >= keep.render:
        why = f"render {_stamp(obj)} wrote it, not one older than this render ({keep.render})"
        users[_name(obj)] = Use(why, False)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _ours(obj: Obj) -> bool:
    key, value = MANAGED_BY
    return ((obj.get("metadata") or {}).get("labels") or {}).get(key) == value


def _retired(objects: Iterable[Obj], kept: frozenset[str]) -> list[Obj]:
    """Ours (the managed-by label), not in the render, not being deleted already."""
    return [
        obj
        for obj in objects
        if _ours(obj) and _name(obj) not in kept and not (obj.get("metadata") or {}).get("deletionTimestamp")
    ]


def _flavor_users(queues: Iterable[Obj]) -> dict[str, Use]:
    """flavor -> why it is in use: a queue names it (passing when tasgen manages the queue), or
    reports reservations or usage on a flavor it no longer names (stranded: a person's)."""
    users: dict[str, Use] = {}
    for queue in queues:
        status, named = QueueStatus(queue), flavor_names(queue)
        for flavor in named:
            _use(users, flavor, Use(f"ClusterQueue {_name(queue)} names it", _ours(queue)))
        for flavor in status.flavors() - set(named):
            if status.busy(flavor):
                why = f"ClusterQueue {_name(queue)} reports reservations or usage on it"
                _use(users, flavor, Use(why, False))
    return users


def _workload_users(workloads: Iterable[Obj]) -> dict[str, Use]:
    """flavor -> the first Workload whose admission names it (generator/gate/admissions.py):
    it lets go when the Workload ends, which may take days; the next run tries again."""
    users: dict[str, Use] = {}
    held = any_holder(workloads)
    for workload in workloads:
        meta = workload.get("metadata") or {}
        for flavor in sorted(flavors_of(workload) & held):
            why = f"Workload {meta.get('namespace')}/{meta.get('name')} is admitted on it"
            users.setdefault(flavor, Use(why, False))
    return users


def _topology_users(flavors: Iterable[Obj], retired: Mapping[str, Use | None]) -> dict[str, Use]:
    """Topology -> why it is in use: a flavor names it (passing when that flavor is retired
    and goes now or once its own use passes)."""
    users: dict[str, Use] = {}
    for flavor in flavors:
        topology = (flavor.get("spec") or {}).get("topologyName")
        if topology:
            name = _name(flavor)
            own = retired.get(name)
            # one being deleted already (an engine's prune, an earlier run) goes by itself too
            terminating = bool((flavor.get("metadata") or {}).get("deletionTimestamp"))
            passing = terminating or (name in retired and (own is None or own.passing))
            _use(users, str(topology), Use(f"ResourceFlavor {name} names it", passing))
    return users


def _use(users: dict[str, Use], name: str, use: Use) -> None:
    """The first reason, unless a later one does not pass: one lasting use keeps it for good."""
    old = users.get(name)
    if old is None or (old.passing and not use.passing):
        users[name] = use


# --- the keep list -------------------------------------------------------------------------


def read_keep(path: Path) -> Keep:
    """The keep list: a YAML file, or the mounted ConfigMap's folder holding keep.yaml."""
    file = path / KEEP_KEY if path.is_dir() else path
    docs = load_yaml(file, KeepError)
    if len(docs) != 1:
        raise KeepError(f"{file}: expected one YAML document, found {len(docs)}")
    doc = docs[0]
    if not isinstance(doc, dict):
        raise KeepError(f"{file}: expected a mapping with apiVersion, resourceFlavors and topologies")
    version = str(doc.get("apiVersion", "")).rpartition("/")[2]
    if doc.get("apiVersion") not in [f"{GROUP}/{v}" for v in VERSIONS]:
        raise KeepError(f"{file}: apiVersion must be {GROUP}/v1beta2 or v1beta1, got {doc.get('apiVersion')}")
    render = doc.get("render")
    if render is not None and (not isinstance(render, int) or isinstance(render, bool) or render < 1):
        raise KeepError(f"{file}: render must be a positive integer, got {render!r}")
    return Keep(version, _names(doc, "resourceFlavors", file), _names(doc, "topologies", file), render)


def _names(doc: Mapping[str, Any], key: str, file: Path) -> frozenset[str]:
    names = doc.get(key)
    if names is None:
        names = []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise KeepError(f"{file}: {key} must be a list of names")
    return frozenset(names)


# --- the run --------------------------------------------------------------------------------


def run(catalog: Catalog, keep: Keep, log: JsonLog, deadline: Deadline, dry_run: bool = False) -> int:
    """Rounds of read, choose, delete, wait until the deleted objects are gone (then the
    Topologies they named are free), until a round finds nothing more to delete. After a
    Conflict (an object changed since the read), read and choose again. While what is left is
    kept only by uses that pass (a managed queue the gate has yet to switch), wait for them
    until the timeout; then exit 1, so that the engine retries the step."""
    rounds, told = 0, False
    while rounds < MAX_ROUNDS:
        verdict = _read_and_choose(catalog, keep, deadline, log)
        if not verdict.delete and verdict.waiting and not dry_run and not deadline.passed:
            if not told:
                names = sorted(f"{p}/{n}" for p, n, use in verdict.held if use.passing)
                log("waiting", objects=names, timeout=round(deadline.left()))
                told = True
            time.sleep(WAIT_SECONDS)
            continue
        if dry_run or not verdict.delete:
            _report(verdict, log, dry_run)
            return FAILED if verdict.waiting and not dry_run else DONE
        rounds += 1
        try:
            deleted = _delete(catalog, verdict, log, deadline)
        except Conflict as err:
            log("conflict", message=str(err)[:300])
            continue
        if not _gone(catalog, deleted, deadline, log):
            return FAILED
    log("error", message=f"objects kept changing: {MAX_ROUNDS} rounds without an end")
    return FAILED


def _report(verdict: Retirement, log: JsonLog, dry_run: bool) -> None:
    for plural, obj in verdict.delete:  # only on a dry run: the first round's deletions
        log("retire", kind=plural, name=_name(obj), dryRun=True)
    for plural, name, use in verdict.held:
        log("held", kind=plural, name=name, why=use.why, passing=use.passing, dryRun=dry_run)


def _read_and_choose(catalog: Catalog, keep: Keep, deadline: Deadline, log: JsonLog) -> Retirement:
    def retry(err: Exception) -> None:
        log("retry", error=str(err)[:300])

    flavors, topologies, queues = (
        with_backoff(partial(catalog.list, p), deadline, retry) for p in (FLAVORS, TOPOLOGIES, QUEUES)
    )
    workloads = with_backoff(catalog.workloads, deadline, retry)
    return choose(keep, flavors, topologies, queues, workloads)


def _delete(catalog: Catalog, verdict: Retirement, log: JsonLog, deadline: Deadline) -> list[tuple[str, str]]:
    deleted: list[tuple[str, str]] = []
    for plural, obj in verdict.delete:
        gone = with_backoff(partial(catalog.delete, plural, obj), deadline, lambda err: None)
        log("retired" if gone else "gone", kind=plural, name=_name(obj))
        deleted.append((plural, _name(obj)))
    return deleted


def _gone(catalog: Catalog, deleted: list[tuple[str, str]], deadline: Deadline, log: JsonLog) -> bool:
    """Wait for Kueue's finalizers to let the deleted objects go: at once, as nothing referred
    to them when read; one that stays means something started to refer to it since."""
    while True:
        left = [(p, n) for p, n in deleted if n in {_name(o) for o in catalog.list(p)}]
        if not left:
            return True
        if deadline.passed:
            names = ", ".join(f"{p}/{n}" for p, n in left)
            log(
                "error",
                message=f"still being deleted at the timeout (something refers to them again): {names}",
            )
            return False
        time.sleep(POLL_SECONDS)


@click.command("retire")
@click.option(
    "--keep",
    "keep_path",
    required=True,
    type=click.Path(path_type=Path),
    help="The render's keep list: a YAML file, or a folder holding keep.yaml (the mounted ConfigMap).",
)
@click.option(
    "--timeout",
    type=click.IntRange(min=0),
    default=300,
    show_default=True,
    help="Seconds to wait for managed queues to let go of retired flavors and to retry a "
    "failing API server; then exit 1.",
)
@kubeconfig_option
@click.option("--dry-run", is_flag=True, help="Print what would be deleted and what is held; delete nothing.")
def retire(*, keep_path: Path, timeout: int, kubeconfig: str | None, dry_run: bool) -> None:
    """Delete the ResourceFlavors and Topologies labelled managed-by tasgen that the render no
    longer holds, once no ClusterQueue names or uses them and no Workload's admission names
    them (a Topology: once no flavor names it), and only those an older render stamped. One
    JSON line per object on stdout.

    \b
    Example:
      tasgen retire --keep /etc/tasgen/retire       # in the Job
    Exit: 0 done (objects a person must free are kept and reported), 1 the timeout passed with
    a managed queue still naming a retired flavor (the gate has not switched it yet: the engine
    retries the step) or the API server failing, 2 unusable keep list or kubeconfig.
    """
    log = JsonLog()
    try:
        keep = read_keep(keep_path)
        catalog = Catalog(load_client(kubeconfig), keep.version)
    except (KeepError, ConfigException, OSError) as err:
        log("error", message=str(err))
        sys.exit(UNUSABLE)
    log("start", keep=len(keep.flavors) + len(keep.topologies), dryRun=dry_run)
    try:
        code = run(catalog, keep, log, Deadline(timeout), dry_run)
    except (ApiException, HTTPError, OSError) as err:
        log("error", message=f"the API server failed until the timeout: {err}"[:500])
        code = FAILED
    log("finish", exitCode=code)
    sys.exit(code)


if __name__ == "__main__":
    retire(prog_name="tasgen retire")
