"""``tasgen retire``: delete the ResourceFlavors and Topologies tasgen no longer renders, once
nothing refers to them: the last step of a sync, after the queues (docs/gate.md, "Ordering").

Why not the GitOps engine's prune: Flux prunes a Kustomization's removed objects when it
applies, and Argo CD within the Application's own sync, both before the gate has switched the
queues. Kueue's resource-in-use finalizer then keeps the flavor Terminating, and a revert during
the drain re-applies a Terminating object that never becomes ready: the chain never reaches the
gate and the queue stays held. So tasgen renders flavors and Topologies with the engines'
prune turned off, and this step deletes a retired one only when no ClusterQueue names it or
reports reservations or usage on it (a Topology: when no remaining flavor names it). Nothing it
deletes is then held by a finalizer, and a revert simply applies the object again.

A retired object still in use is kept, with a ``held`` line saying by what; the next run (every
sync, and Flux's recreation of the finished Job) tries again.
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
import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.config import ConfigException
from urllib3.exceptions import HTTPError

from generator.gate.command import kubeconfig_option
from generator.gate.decision import QueueStatus, flavor_names
from generator.gate.kube import GROUP, VERSIONS, Catalog, Conflict, Deadline, load_client, with_backoff
from generator.gate.runner import JsonLog

KEEP_KEY = "keep.yaml"
MANAGED_BY = ("app.kubernetes.io/managed-by", "tasgen")
FLAVORS, TOPOLOGIES, QUEUES = "resourceflavors", "topologies", "clusterqueues"
#: Exit codes, as the gate's: 1 the API server failed us until the timeout, 2 unusable keep list.
DONE, FAILED, UNUSABLE = 0, 1, 2
#: Rounds of read-decide-delete; a round ends early only on a Conflict (read again).
MAX_ROUNDS = 5
POLL_SECONDS = 0.5

Obj = Mapping[str, Any]


class KeepError(Exception):
    """The keep list cannot be used; nothing is deleted."""


@dataclass(frozen=True)
class Keep:
    """What the current render holds: nothing of these is ever deleted."""

    version: str
    flavors: frozenset[str]
    topologies: frozenset[str]


@dataclass(frozen=True)
class Retirement:
    """One round's verdict: objects to delete (flavors before Topologies) and the retired ones
    kept, each with why."""

    delete: tuple[tuple[str, Obj], ...]
    held: tuple[tuple[str, str, str], ...]  # plural, name, why


def choose(
    keep: Keep, flavors: Sequence[Obj], topologies: Sequence[Obj], queues: Sequence[Obj]
) -> Retirement:
    """Pure: which retired flavors and Topologies may go now. A Topology waits for every flavor
    that names it to be gone, retired ones included (the run deletes those first and reads
    again), so that Kueue's finalizer never keeps it Terminating."""
    flavor_users, topology_users = _flavor_users(queues), _topology_users(flavors)
    delete: list[tuple[str, Obj]] = []
    held: list[tuple[str, str, str]] = []
    for plural, objects, kept, users in (
        (FLAVORS, flavors, keep.flavors, flavor_users),
        (TOPOLOGIES, topologies, keep.topologies, topology_users),
    ):
        for obj in _retired(objects, kept):
            if _name(obj) in users:
                held.append((plural, _name(obj), users[_name(obj)]))
            else:
                delete.append((plural, obj))
    return Retirement(tuple(delete), tuple(held))


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _retired(objects: Iterable[Obj], kept: frozenset[str]) -> list[Obj]:
    """Ours (the managed-by label), not in the render, not being deleted already."""
    key, value = MANAGED_BY
    return [
        obj
        for obj in objects
        if ((obj.get("metadata") or {}).get("labels") or {}).get(key) == value
        and _name(obj) not in kept
        and not (obj.get("metadata") or {}).get("deletionTimestamp")
    ]


def _flavor_users(queues: Iterable[Obj]) -> dict[str, str]:
    """flavor -> the first reason it is in use: a queue names it, or reports it busy."""
    users: dict[str, str] = {}
    for queue in queues:
        status = QueueStatus(queue)
        for flavor in flavor_names(queue):
            users.setdefault(flavor, f"ClusterQueue {_name(queue)} names it")
        for flavor in status.flavors():
            if status.busy(flavor):
                users.setdefault(flavor, f"ClusterQueue {_name(queue)} reports reservations or usage on it")
    return users


def _topology_users(flavors: Iterable[Obj]) -> dict[str, str]:
    users: dict[str, str] = {}
    for flavor in flavors:
        topology = (flavor.get("spec") or {}).get("topologyName")
        if topology:
            users.setdefault(str(topology), f"ResourceFlavor {_name(flavor)} names it")
    return users


# --- the keep list -------------------------------------------------------------------------


def read_keep(path: Path) -> Keep:
    """The keep list: a YAML file, or the mounted ConfigMap's folder holding keep.yaml."""
    file = path / KEEP_KEY if path.is_dir() else path
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise KeepError(f"{file}: {err}") from err
    if not isinstance(doc, dict):
        raise KeepError(f"{file}: expected a mapping with apiVersion, resourceFlavors and topologies")
    version = str(doc.get("apiVersion", "")).rpartition("/")[2]
    if doc.get("apiVersion") not in [f"{GROUP}/{v}" for v in VERSIONS]:
        raise KeepError(f"{file}: apiVersion must be {GROUP}/v1beta2 or v1beta1, got {doc.get('apiVersion')}")
    return Keep(version, _names(doc, "resourceFlavors", file), _names(doc, "topologies", file))


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
    Conflict (an object changed since the read), read and choose again."""
    for _ in range(MAX_ROUNDS):
        verdict = _read_and_choose(catalog, keep, deadline, log)
        if dry_run or not verdict.delete:
            _report(verdict, log, dry_run)
            return DONE
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
    for plural, name, why in verdict.held:
        log("held", kind=plural, name=name, why=why, dryRun=dry_run)


def _read_and_choose(catalog: Catalog, keep: Keep, deadline: Deadline, log: JsonLog) -> Retirement:
    def retry(err: Exception) -> None:
        log("retry", error=str(err)[:300])

    lists = [with_backoff(partial(catalog.list, p), deadline, retry) for p in (FLAVORS, TOPOLOGIES, QUEUES)]
    return choose(keep, *lists)


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
    help="Seconds to retry an unreachable or failing API server; then exit 1.",
)
@kubeconfig_option
@click.option("--dry-run", is_flag=True, help="Print what would be deleted and what is held; delete nothing.")
def retire(*, keep_path: Path, timeout: int, kubeconfig: str | None, dry_run: bool) -> None:
    """Delete the ResourceFlavors and Topologies labelled managed-by tasgen that the render no
    longer holds, once no ClusterQueue names or uses them (a Topology: once no flavor names
    it). One JSON line per object on stdout.

    \b
    Example:
      tasgen retire --keep /etc/tasgen/retire       # in the Job
    Exit: 0 done (held objects are kept and reported), 1 the API server failed until the
    timeout, 2 unusable keep list or kubeconfig.
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
