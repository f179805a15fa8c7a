"""Taints and tolerations as Kubernetes reads them (``corev1.Toleration.ToleratesTaint``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: a taint: key, value (may be empty), effect
Taint = tuple[str, str, str]

#: the effects a Node's taint may have (the API server's enum)
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: the effects that keep pods off a node (PreferNoSchedule only discourages)
BLOCKING = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Whether the toleration tolerates the taint: an empty effect or key matches any, then
    Exists matches any value and Equal (or no operator) the same value."""
    key, value, effect = taint
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == value


def untolerated(taints: Iterable[Taint], tolerations: Iterable[Mapping[str, Any]]) -> Taint | None:
    """The first taint that keeps pods off (NoSchedule, NoExecute) and that no toleration
    tolerates; None when the pods may go there."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint[2] in BLOCKING and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
