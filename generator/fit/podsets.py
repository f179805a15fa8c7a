"""A PodSet as Kueue builds it from a pod template: its count, one pod's requests as Kueue
computes them, its tolerations and node constraints, and its topology request (the
``kueue.x-k8s.io/podset-*`` annotations)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..kube.quantities import kueue_units
from ..kube.selectors import Expression

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
GROUP = "kueue.x-k8s.io/podset-group-name"
#: the multi-layer slice annotation, behind Kueue's TASMultiLayerTopology gate (off in v0.17)
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
TOPOLOGY_ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_LEVEL, SLICE_SIZE, GROUP, SLICE_CONSTRAINTS)


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
        request["unconstrained"] = go_bool(found[UNCONSTRAINED])
    if SLICE_LEVEL in found and SLICE_SIZE in found:
        request["slice_level"] = found[SLICE_LEVEL]
        request["slice_size"] = _int32(found[SLICE_SIZE])
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
    if UNCONSTRAINED in found and go_bool(found[UNCONSTRAINED]) is None:
        errors.append(
            (UNCONSTRAINED, f"Invalid value: {go_quote(found[UNCONSTRAINED])}: must be a boolean value")
        )
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
    if SLICE_CONSTRAINTS in found:
        errors.append(
            (
                SLICE_CONSTRAINTS,
                "Forbidden: the TASMultiLayerTopology feature gate must be enabled to use this annotation",
            )
        )
    return errors


_TRUE, _FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")
#: what Go's strconv.ParseInt(value, 10, 32) takes
_INT = re.compile(r"[+-]?[0-9]+")


def go_bool(value: str) -> bool | None:
    """Go's ``strconv.ParseBool``, which Kueue parses the annotation with; None when refused."""
    return True if value in _TRUE else False if value in _FALSE else None


def go_quote(value: str) -> str:
    """A value as Go's ``%q`` prints it (Kubernetes' field errors quote values so)."""
    return json.dumps(value, ensure_ascii=False)


def _int32(value: str) -> int | None:
    if not _INT.fullmatch(value):
        return None
    number = int(value)
    return number if -(2**31) <= number < 2**31 else None


def _quoted() -> str:
    return "[" + ", ".join(f'"{k}"' for k in (REQUIRED, PREFERRED, UNCONSTRAINED)) + "]"


def _slice_size_errors(value: str, count: int) -> list[tuple[str, str]]:
    size = _int32(value)
    if size is None:
        return [(SLICE_SIZE, f"Invalid value: {go_quote(value)}: must be a numeric value")]
    if size < 1:
        return [(SLICE_SIZE, f"Invalid value: {go_quote(value)}: must be greater than or equal to 1")]
    if size > count:
        return [
            (SLICE_SIZE, f"Invalid value: {go_quote(value)}: must not be greater than pod set count {count}")
        ]
    return []


def _group_errors(found: Mapping[str, str]) -> list[tuple[str, str]]:
    errors = []
    name = found[GROUP]
    if name and all(c in "0123456789" for c in name) and int(name) < 2**64:  # Go's ParseUint
        errors.append((GROUP, f"Invalid value: {go_quote(name)}: must not be a number"))
    for other in (SLICE_SIZE, SLICE_LEVEL):
        if other in found:
            errors.append((GROUP, f"Forbidden: may not be set when '{other}' is specified"))
    if REQUIRED not in found and PREFERRED not in found:
        errors.append(
            (GROUP, f"Forbidden: may not be set when neither '{PREFERRED}' nor '{REQUIRED}' is specified")
        )
    return errors


def group_errors(podsets: list[PodSet], paths: list[str]) -> list[tuple[int, str]]:
    """(PodSet index, Kueue's message) for each ``podset-group-name`` group Kueue's webhook
    refuses (``ValidatePodSetGroupingTopology``); ``paths`` are the PodSets' annotation paths
    as Kueue names them."""
    groups: dict[str, list[int]] = {}
    for i, ps in enumerate(podsets):
        if ps.topology is not None and ps.topology.group is not None:
            groups.setdefault(ps.topology.group, []).append(i)
    errors: list[tuple[int, str]] = []
    for name, members in groups.items():
        quoted = go_quote(name)
        if len(members) != 2:
            message = f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)"
            errors += [(i, f"Invalid value: {quoted}: {message}") for i in members]
            continue
        a, b = (podsets[i] for i in members)
        if a.count != 1 and b.count != 1:
            message = (
                "can only define groups where at least one pod set has only 1 replica, got: "
                f"{a.count} replica(s) and {b.count} replica(s) in the group"
            )
            errors += [(i, f"Invalid value: {quoted}: {message}") for i in members]
        ta, tb = a.topology, b.topology
        assert ta is not None and tb is not None
        if (ta.required, ta.preferred) != (tb.required, tb.preferred):
            for i, other in ((members[0], members[1]), (members[1], members[0])):
                errors.append(
                    (
                        i,
                        f"Invalid value: must specify '{REQUIRED}' or '{PREFERRED}' topology consistent "
                        f"with '{paths[other]}' in group '{name}'",
                    )
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
