"""A PodSet as Kueue builds it from a pod template: its count, one pod's requests as Kueue
computes them, its tolerations and node constraints, and its topology request (the
``kueue.x-k8s.io/podset-*`` annotations)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from generator.kube.quantities import kueue_units
from generator.kube.selectors import Expression

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
TOPOLOGY_ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_LEVEL, SLICE_SIZE, GROUP)


@dataclass(frozen=True)
class TopologyRequest:
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    slice_level: str | None = None
    slice_size: int | None = None
    group: str | None = None

    @property
    def explicit(self) -> bool:
        """Kueue's ``IsExplicitlyRequestingTAS``."""
        return (
            self.unconstrained is not None
            or self.required is not None
            or self.preferred is not None
            or self.slice_level is not None
            or self.slice_size is not None
        )

    @property
    def slice_only(self) -> bool:
        return self.required is None and self.preferred is None and self.slice_level is not None


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, int]  # one pod's, in Kueue's units
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] | None = None
    #: required node affinity: terms (ORed) of expressions (ANDed); None when there is none
    affinity: tuple[tuple[Expression, ...], ...] | None = None
    topology: TopologyRequest | None = None


def topology_request(annotations: Mapping[str, str]) -> TopologyRequest | None:
    """Kueue's ``NewPodSetTopologyRequest(...).Build()`` for annotations Kueue's webhook
    accepted (:func:`annotation_errors` says which it refuses)."""
    found = {k: str(v) for k, v in annotations.items() if k in TOPOLOGY_ANNOTATIONS}
    if not found:
        return None
    request: dict[str, Any] = {}
    if REQUIRED in found:
        request["required"] = found[REQUIRED]
    elif PREFERRED in found:
        request["preferred"] = found[PREFERRED]
    elif UNCONSTRAINED in found:
        request["unconstrained"] = found[UNCONSTRAINED].lower() in ("1", "t", "true")
    if SLICE_LEVEL in found and SLICE_SIZE in found:
        request["slice_level"] = found[SLICE_LEVEL]
        request["slice_size"] = int(found[SLICE_SIZE])
    if GROUP in found and (REQUIRED in found or PREFERRED in found):
        request["group"] = found[GROUP]
    made = TopologyRequest(**request)
    return made if made.explicit else None


def annotation_errors(annotations: Mapping[str, str], count: int) -> list[tuple[str, str]]:
    """(annotation, Kueue's message) for each topology annotation Kueue's webhook refuses
    (``ValidateTASPodSetRequest``): such a workload is refused when it is created."""
    found = {k: str(v) for k, v in annotations.items() if k in TOPOLOGY_ANNOTATIONS}
    errors: list[tuple[str, str]] = []
    levels = [k for k in (REQUIRED, PREFERRED, UNCONSTRAINED) if k in found]
    if len(levels) > 1:
        errors.append((levels[1], f"must not contain more than one topology annotation: {_quoted()}"))
    if UNCONSTRAINED in found and found[UNCONSTRAINED].lower() not in _BOOLS:
        errors.append((UNCONSTRAINED, f"Invalid value: {found[UNCONSTRAINED]!r}: must be a boolean value"))
    if SLICE_SIZE in found:
        errors.extend(_slice_size_errors(found[SLICE_SIZE], count))
    if SLICE_LEVEL in found and SLICE_SIZE not in found:
        errors.append(
            (SLICE_LEVEL, f"{SLICE_SIZE}: Required value: must be set when '{SLICE_LEVEL}' is specified")
        )
    if SLICE_SIZE in found and SLICE_LEVEL not in found:
        errors.append((SLICE_SIZE, f"Forbidden: may not be set when '{SLICE_LEVEL}' is not specified"))
    if GROUP in found:
        errors.extend(_group_errors(found))
    return errors


_BOOLS = ("1", "t", "true", "0", "f", "false")


def _quoted() -> str:
    return "[" + ", ".join(f'"{k}"' for k in (REQUIRED, PREFERRED, UNCONSTRAINED)) + "]"


def _slice_size_errors(value: str, count: int) -> list[tuple[str, str]]:
    try:
        size = int(value, 10)
    except ValueError:
        return [(SLICE_SIZE, f"Invalid value: {value!r}: must be a numeric value")]
    if size < 1:
        return [(SLICE_SIZE, f"Invalid value: {value!r}: must be greater than or equal to 1")]
    if size > count:
        return [(SLICE_SIZE, f"Invalid value: {value!r}: must not be greater than pod set count {count}")]
    return []


def _group_errors(found: Mapping[str, str]) -> list[tuple[str, str]]:
    errors = []
    if found[GROUP].isdigit():
        errors.append((GROUP, f"Invalid value: {found[GROUP]!r}: must not be a number"))
    for other in (SLICE_SIZE, SLICE_LEVEL):
        if other in found:
            errors.append((GROUP, f"Forbidden: may not be set when '{other}' is specified"))
    if REQUIRED not in found and PREFERRED not in found:
        errors.append(
            (GROUP, f"Forbidden: may not be set when neither '{PREFERRED}' nor '{REQUIRED}' is specified")
        )
    return errors


# --- one pod's requests, as Kueue computes them ------------------------------------------


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """k8s' ``PodRequests`` after Kueue's ``UseLimitsAsMissingRequestsInPod``: the larger of
    the containers' sum (sidecars included) and each init container's (plus the sidecars
    started before it), plus the pod's overhead; pod-level requests win for what they set."""
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add(total, _container_requests(container))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for container in spec.get("initContainers") or ():
        own = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(own)
            _add(step, sidecars)
        for r, v in step.items():
            init_max[r] = max(init_max.get(r, 0), v)
    for r, v in init_max.items():
        total[r] = max(total.get(r, 0), v)
    pod_level = _amounts(
        (spec.get("resources") or {}).get("requests") or (spec.get("resources") or {}).get("limits")
    )
    for r in ("cpu", "memory"):
        if r in pod_level:
            total[r] = pod_level[r]
    _add(total, _amounts(spec.get("overhead")))
    return total


def _container_requests(container: Mapping[str, Any]) -> dict[str, int]:
    resources = container.get("resources") or {}
    requests = _amounts(resources.get("requests"))
    for r, v in _amounts(resources.get("limits")).items():
        requests.setdefault(r, v)
    return requests


def _amounts(values: Any) -> dict[str, int]:
    if not isinstance(values, Mapping):
        return {}
    return {str(r): u for r, v in values.items() if (u := kueue_units(str(r), v)) is not None}


def _add(into: dict[str, int], more: Mapping[str, int]) -> None:
    for r, v in more.items():
        into[r] = into.get(r, 0) + v
