"""What the API server refuses in a pod template's container resources, in its words: a value
that is not a quantity (decoding fails), and, for the built-in kinds whose pod templates it
validates (Pod, Job, Deployment, StatefulSet), a negative value, a fraction of an integer
resource, an extended resource requested without an equal limit, a request above its limit
(``ValidateResourceRequirements`` in k8s.io/kubernetes pkg/apis/core/validation). A custom
resource's schema checks only the quantity pattern."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from ..kube.quantities import parse
from ..model import Pointer

#: what Kubernetes' quantity decoder takes before it looks closer (its ErrFormatWrong)
_LOOSE = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
#: the pattern CRD schemas give quantities (JobSet, LeaderWorkerSet, Kubeflow, Ray, ...)
_CRD = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
#: the kinds whose pod templates the API server validates itself
BUILT_IN = frozenset({"Pod", "Job", "Deployment", "StatefulSet"})


def resource_errors(kind: str, api: str, spec: Mapping[str, Any], at: Pointer) -> list[tuple[Pointer, str]]:
    """(where, the API server's message) for each refused value of the pod spec at ``at``;
    decoding stops at the first value that is not a quantity."""
    errors: list[tuple[Pointer, str]] = []
    for where, values in _resource_lists(spec, at):
        for name, value in values.items():
            problem = _not_a_quantity(value, kind, api, _path((*where, str(name))))
            if problem is not None:
                return [((*where, str(name)), problem)]
    if kind not in BUILT_IN:
        return errors
    for where, container in _containers(spec, at):
        errors += _requirements(container, where)
    return errors


def _resource_lists(spec: Mapping[str, Any], at: Pointer) -> Iterator[tuple[Pointer, Mapping[str, Any]]]:
    for where, container in _containers(spec, at):
        for field, values in container["resources"].items():  # in the order decoding meets them
            if field in ("limits", "requests") and isinstance(values, Mapping):
                yield (*where, "resources", field), values


def _containers(spec: Mapping[str, Any], at: Pointer) -> Iterator[tuple[Pointer, Mapping[str, Any]]]:
    for field in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field) or ()):
            if isinstance(container, Mapping) and isinstance(container.get("resources"), Mapping):
                yield (*at, field, i), container


def _not_a_quantity(value: Any, kind: str, api: str, path: str) -> str | None:
    text = _text(value)
    if text is not None and _exact(text):
        return None
    shown = _quote(text if text is not None else str(value))
    if kind not in BUILT_IN:
        return f"{path}: Invalid value: {shown}: {path}: should match '{_CRD}'"
    version = api.rpartition("/")[2]
    if text is None or not re.fullmatch(_LOOSE, text):
        why = f"quantities must match the regular expression '{_LOOSE}'"
    elif not _NUMBER.match(text) or text.count(".") > 1:
        why = "unable to parse numeric part of quantity"
    else:
        why = "unable to parse quantity's suffix"
    return f'{kind} in version "{version}" cannot be handled as a {kind}: {why} ({shown})'


def _text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return value if isinstance(value, str) else str(value)


def _exact(text: str) -> bool:
    try:
        parse(text)
    except (ValueError, ArithmeticError):
        return False
    return True


def _requirements(container: Mapping[str, Any], where: Pointer) -> list[tuple[Pointer, str]]:
    resources = container["resources"]
    limits = _amounts(resources.get("limits"))
    requests = _amounts(resources.get("requests"))
    errors: list[tuple[Pointer, str]] = []
    for field, amounts in (("limits", limits), ("requests", requests)):
        for name, (text, amount) in amounts.items():
            at = (*where, "resources", field, name)
            path = _path(at)
            if amount < 0:
                errors.append(
                    (at, f"{path}: Invalid value: {_quote(text)}: must be greater than or equal to 0")
                )
            if _integer_resource(name) and amount != amount.to_integral_value():
                errors.append((at, f"{path}: Invalid value: {_quote(text)}: must be an integer"))
    for name, (text, amount) in requests.items():
        at = (*where, "resources", "requests", name)
        limit_path = _path((*where, "resources", "limits"))
        request_path = _path((*where, "resources", "requests"))
        if name in limits:
            limit_text, limit = limits[name]
            if amount != limit and not _overcommit_allowed(name):
                message = f"must be equal to {name} limit of {limit_text}"
                errors.append((at, f"{request_path}: Invalid value: {_quote(text)}: {message}"))
            elif amount > limit:
                message = f"must be less than or equal to {name} limit of {limit_text}"
                errors.append((at, f"{request_path}: Invalid value: {_quote(text)}: {message}"))
        elif not _overcommit_allowed(name):
            message = "Required value: Limit must be set for non overcommitable resources"
            errors.append((at, f"{limit_path}: {message}"))
    return errors


def _amounts(values: Any) -> dict[str, tuple[str, Decimal]]:
    if not isinstance(values, Mapping):
        return {}
    out = {}
    for name, value in values.items():
        text = _text(value)
        if text is not None:
            out[str(name)] = (text, parse(text))
    return out


def _native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return _native(name) and not name.startswith("hugepages-")


def _integer_resource(name: str) -> bool:
    """Extended resources (and the standard integer ones, which containers do not request)."""
    return not _native(name) and not name.startswith("requests.")


def _path(pointer: Pointer) -> str:
    """A field as Kubernetes' field errors name it: spec.containers[0].resources.requests[cpu]."""
    out = ""
    for step in pointer:
        if isinstance(step, int) or "/" in step or "." in step or out.endswith(("requests", "limits")):
            out += f"[{step}]"
        else:
            out += f".{step}"
    return out.lstrip(".")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
