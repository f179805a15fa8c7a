"""The controllers the render relies on, recognised in the cluster's Deployments by their
images (as their upstream manifests and Helm charts deploy them), and the settings their
command lines and configuration files hold. Pure: plain API documents in, facts out."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...parse import ParseError, parse_text

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Deployed:
    """A controller's Deployment: where, its version (the image tag), its arguments and env."""

    name: str  # the component, e.g. "kueue"
    deployment: str  # namespace/name
    version: str | None
    args: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    config_maps: tuple[tuple[str, str], ...] = ()  # (namespace, name) mounted as volumes


def _image_name(image: str) -> tuple[str, str | None]:
    """``registry/path/name:tag@digest`` -> (name, tag)."""
    image = image.split("@", 1)[0]
    path, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
    return path.rsplit("/", 1)[-1], tag or None


def _component(container: Obj, deployment: str) -> str | None:
    name, _ = _image_name(str(container.get("image") or ""))
    words = " ".join([deployment, *_command_line(container)])
    if name == "kueue":
        return "kueue"
    if name == "node-feature-discovery" and "nfd-master" in words:
        return "nfd-master"
    if name == "argocd" and "applicationset-controller" in words:
        return "argocd-applicationset-controller"
    if name in ("source-controller", "kustomize-controller"):
        return f"flux-{name}"
    return None


def _command_line(container: Obj) -> list[str]:
    return [str(a) for a in [*(container.get("command") or ()), *(container.get("args") or ())]]


def deployed(deployments: Iterable[Obj]) -> dict[str, Deployed]:
    """Component -> its Deployment (the first found, in the API server's order)."""
    found: dict[str, Deployed] = {}
    for d in deployments:
        meta = d.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        pod = ((d.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in pod.get("containers") or ():
            component = _component(container, name)
            if component is None or component in found:
                continue
            maps = tuple(
                (namespace, str(v["configMap"]["name"]))
                for v in pod.get("volumes") or ()
                if (v.get("configMap") or {}).get("name")
            )
            env = {str(e["name"]): str(e["value"]) for e in container.get("env") or () if "value" in e}
            found[component] = Deployed(
                name=component,
                deployment=f"{namespace}/{name}",
                version=_image_name(str(container.get("image") or ""))[1],
                args=tuple(_command_line(container)),
                env=env,
                config_maps=maps,
            )
    return found


def config_maps_of(deployments: Iterable[Obj]) -> Iterator[tuple[str, str]]:
    """The ConfigMaps the recognised controllers mount: their configuration files."""
    for d in deployed(deployments).values():
        yield from d.config_maps


def flag(args: Iterable[str], name: str) -> str | None:
    """The last value of ``--name=value`` / ``-name=value`` / ``--name value`` (Go's flag
    packages take the last one); a bare ``--name`` is "true"."""
    value: str | None = None
    args = list(args)
    for i, arg in enumerate(args):
        for dashes in ("--", "-"):
            if arg == f"{dashes}{name}":
                following = args[i + 1] if i + 1 < len(args) else ""
                value = following if following and not following.startswith("-") else "true"
            elif arg.startswith(f"{dashes}{name}="):
                value = arg.split("=", 1)[1]
    return value


def gates(text: str | None) -> dict[str, bool]:
    """``A=true,B=false`` -> {A: True, B: False}."""
    out: dict[str, bool] = {}
    for part in (text or "").split(","):
        key, _, value = part.strip().partition("=")
        if key:
            out[key] = value.strip().lower() == "true"
    return out


def config_documents(data: Mapping[str, str]) -> Iterator[Obj]:
    """The YAML mappings of a ConfigMap's values (configuration files); others are skipped."""
    for value in data.values():
        try:
            loaded = parse_text(value)  # the cluster's text is input too: the guarded reader
        except ParseError:
            continue
        for doc in loaded:
            if isinstance(doc, dict):
                yield doc


def version_tuple(version: str | None) -> tuple[int, int, int] | None:
    """``v0.17.0`` (or ``0.17.0-rc.1``) -> (0, 17, 0); None when it is no version."""
    if not version:
        return None
    parts = version.removeprefix("v").split("-", 1)[0].split(".")
    try:
        numbers = [int(p) for p in parts[:3]]
    except ValueError:
        return None
    numbers += [0, 0]
    return numbers[0], numbers[1], numbers[2]
