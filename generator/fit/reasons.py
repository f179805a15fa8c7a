"""Why Kueue does not admit a PodSet, each reason built here once in Kueue v0.17's words (its
flavor assigner, scheduler and TAS snapshot) and typed by what it is about, so that callers
decide on the type, never on the text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import StrEnum


class Cause(StrEnum):
    QUEUE = "queue"  # the queue, a flavor's checks (taints, affinity, TAS support)
    QUOTA = "quota"
    TOPOLOGY = "topology"  # placement on the flavor's domains
    LEVEL = "level"  # the level a topology annotation names
    SLICE_LEVEL = "slice-level"  # the slice level or size an annotation names
    SKIPPED = "skipped"  # not tried: Kueue stopped at an earlier PodSet


class Reason(str):
    """Kueue's message (a ``str``, compared and printed as one) and what it is about."""

    cause: Cause

    def __new__(cls, text: str, cause: Cause) -> Reason:
        made = super().__new__(cls, text)
        made.cause = cause
        return made


# --- the queue -------------------------------------------------------------------------


def local_queue_missing(name: str) -> Reason:
    return Reason(f"LocalQueue {name} doesn't exist", Cause.QUEUE)


def cluster_queue_missing(name: str) -> Reason:
    return Reason(f"ClusterQueue {name} doesn't exist", Cause.QUEUE)


def namespace_not_selected() -> Reason:
    return Reason("Workload namespace doesn't match ClusterQueue selector", Cause.QUEUE)


def resource_unavailable(resource: str) -> Reason:
    return Reason(f"resource {resource} unavailable in ClusterQueue", Cause.QUEUE)


# --- a flavor's checks (checkFlavorForPodSets) ------------------------------------------


def flavor_not_found(flavor: str) -> Reason:
    return Reason(f"flavor {flavor} not found", Cause.QUEUE)


def no_tas_support(flavor: str) -> Reason:
    return Reason(f'Flavor "{flavor}" does not support TopologyAwareScheduling', Cause.QUEUE)


def tas_cache_missing(flavor: str) -> Reason:
    return Reason(f'Flavor "{flavor}" information missing in TAS cache', Cause.QUEUE)


def level_missing(flavor: str) -> Reason:
    return Reason(f'Flavor "{flavor}" does not contain the requested level', Cause.LEVEL)


def tas_only(flavor: str) -> Reason:
    return Reason(f'Flavor "{flavor}" supports only TopologyAwareScheduling', Cause.QUEUE)


def untolerated_taint(taint: tuple[str, str, str], flavor: str) -> Reason:
    """The taint as Go prints a ``corev1.Taint`` value with ``%v``."""
    key, value, effect = taint
    return Reason(f"untolerated taint {{{key} {value} {effect} <nil>}} in flavor {flavor}", Cause.QUEUE)


def affinity_mismatch(flavor: str) -> Reason:
    return Reason(f"flavor {flavor} doesn't match node affinity", Cause.QUEUE)


def quota(resource: str, flavor: str, before: str, request: str, maximum: str) -> Reason:
    return Reason(
        f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets "
        f"requests ({before}) + current podset request ({request}) > maximum capacity ({maximum})",
        Cause.QUOTA,
    )


def joined(reasons: Iterable[Reason]) -> Reason | None:
    """The reasons of several flavors as Kueue's Status joins them: sorted, comma-separated;
    about the annotation's level only when every one is."""
    found = sorted(reasons)
    if not found:
        return None
    causes = {r.cause for r in found}
    return Reason(", ".join(found), causes.pop() if len(causes) == 1 else Cause.QUEUE)


# --- placement (findTopologyAssignment) -------------------------------------------------


def level_not_specified() -> Reason:
    return Reason("topology level not specified", Cause.TOPOLOGY)


def no_level(key: str) -> Reason:
    return Reason(f"no requested topology level: {key}", Cause.LEVEL)


def no_slice_level(key: str) -> Reason:
    return Reason(f"no requested topology level for slices: {key}", Cause.SLICE_LEVEL)


def slice_above(slice_key: str, key: str) -> Reason:
    return Reason(f"podset slice topology {slice_key} is above the podset topology {key}", Cause.SLICE_LEVEL)


def slice_size_missing() -> Reason:
    return Reason("slice topology requested, but slice size not provided", Cause.SLICE_LEVEL)


def no_domains(level: str) -> Reason:
    return Reason(f"no topology domains at level: {level}", Cause.TOPOLOGY)


def not_fit(topology: str, fit: int, count: int, unit: str, nodes: int, excluded: Counter[str]) -> Reason:
    """Kueue's ``notFitMessage``, with the nodes it left out and why (``ExclusionStats``)."""
    if fit == 0:
        message = f'topology "{topology}" doesn\'t allow to fit any of {count} {unit}(s)'
    else:
        message = f'topology "{topology}" allows to fit only {fit} out of {count} {unit}(s)'
    if excluded:
        stats = ", ".join(sorted(_stat(k, n) for k, n in excluded.items()))
        message += f". Total nodes: {nodes}; excluded: {stats}"
    return Reason(message, Cause.TOPOLOGY)


def _stat(key: str, n: int) -> str:
    if key in ("nodeSelector", "affinity", "topologyDomain"):
        return f"{key}: {n}"
    kind, _, name = key.partition(" ")
    return f'{kind} "{name}": {n}'


def not_tried(podset: str) -> Reason:
    """tasgen's own: Kueue stops at the first PodSet it cannot admit."""
    return Reason(f"not tried: Kueue stops at PodSet {podset}", Cause.SKIPPED)
