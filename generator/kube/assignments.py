"""A Workload's topology assignment as Kueue writes it, decoded once: the gate reads which
nodes an admission places pods on, fit what admitted Workloads use on each node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def lowest_domains(assignment: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(the lowest level's value, pods) of each domain of a topology assignment. Kueue v0.17
    (v1beta2) writes ``slices``: ``domainCount`` domains each, every level's values one
    ``universal`` value for all of them or ``individual`` roots between an optional prefix and
    suffix, the pods per domain likewise (apis/kueue/v1beta2/workload_types.go,
    TopologyAssignment); v1beta1 writes ``domains`` of ``values`` and ``count``. A domain
    whose pods are not given counts 0."""
    if isinstance(assignment.get("domains"), list):
        return [
            (str(d["values"][-1]), int(d.get("count") or 0))
            for d in assignment["domains"]
            if isinstance(d, Mapping)
        ]
    found: list[tuple[str, int]] = []
    for piece in assignment.get("slices") or ():
        count = int(piece.get("domainCount") or 0)
        lowest = (piece.get("valuesPerLevel") or [{}])[-1]
        if lowest.get("universal") is not None:
            values = [str(lowest["universal"])] * count
        else:
            each = lowest.get("individual") or {}
            prefix, suffix = each.get("prefix") or "", each.get("suffix") or ""
            values = [f"{prefix}{root}{suffix}" for root in each.get("roots") or ()]
        pods = piece.get("podCounts") or {}
        if pods.get("universal") is not None:
            counts = [int(pods["universal"])] * len(values)
        else:
            counts = [int(c) for c in pods.get("individual") or ()]
            counts += [0] * (len(values) - len(counts))
        found += zip(values, counts, strict=False)
    return found
