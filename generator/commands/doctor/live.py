"""Reading the live cluster for ``tasgen doctor``: GETs and LISTs only, through the edge every
live command uses (generator/load/cluster.py), whose :class:`LiveError` says what could not be
read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kubernetes import client as k8s

from ...load.cluster import LiveError, reading, shown
from .components import config_maps_of
from .expected import POLICY_KINDS, RBAC_KINDS, Expected, Ref

Obj = Mapping[str, Any]
#: the kinds whose live objects the checks compare with the render
_READ_KINDS = ("Topology", "ResourceFlavor", "ClusterQueue", "ApplicationSet", "Kustomization")
ARGOCD_CONFIG_MAPS = ("argocd-cm", "argocd-cmd-params-cm")
#: the label every object tasgen writes carries
MANAGED_BY = ("app.kubernetes.io/managed-by", "tasgen")
_METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass(frozen=True)
class Live:
    """What the checks read of the cluster (plain API documents)."""

    server: str
    served: frozenset[str]  # the group versions the API server serves ("v1" for the core group)
    objects: Mapping[Ref, Obj | None]  # each object of the render the checks read: live, or None
    nodes: Mapping[str, Obj]
    deployments: tuple[Obj, ...]
    config_maps: Mapping[tuple[str, str], Mapping[str, str]]  # (namespace, name) -> data, when found
    applications: tuple[Obj, ...]  # the Argo CD Applications beside the ApplicationSet
    node_features: frozenset[Ref] = frozenset()  # tasgen's NodeFeatures in the render's namespaces


def read(kubeconfig: Path | None, expected: Expected) -> Live:
    """Everything the checks need, read once; raises :class:`generator.load.cluster.LiveError`
    (a :class:`generator.load.cluster.KubeconfigError` when the kubeconfig cannot be used)."""
    where = f"the cluster of {shown(kubeconfig)}"
    with reading(kubeconfig) as api:
        try:
            return _Reader(api).read(expected)
        except _Refused as e:
            raise LiveError(f"cannot read {where}: {e}") from e
        except ValueError as e:  # an answer that is not JSON (a proxy's error page, say)
            raise LiveError(f"cannot read {where}: not an API server's answer ({e})") from e


class _Refused(Exception):
    """A request the API server answered with an error (403: the identity may not read it)."""


class _Reader:
    def __init__(self, api: k8s.ApiClient) -> None:
        self.api = api
        self.resources: dict[tuple[str, str], tuple[str, bool]] = {}  # (group version, kind) -> plural

    def get(self, path: str, accept: str = "application/json") -> Any:
        """The document at ``path``; None when the API server answers 404."""
        method, url, headers, body, post = self.api.param_serialize(
            "GET", path, header_params={"Accept": accept}, auth_settings=["BearerToken"]
        )
        response = self.api.call_api(method, url, headers, body, post, _request_timeout=30)
        response.read()  # type: ignore[no-untyped-call]
        if response.status == 404:
            return None
        if not 200 <= response.status < 300:
            raise _Refused(f"GET {path} was answered {response.status} {response.reason}")
        return json.loads(response.data or b"null")

    def read(self, expected: Expected) -> Live:
        served = self._served()
        wanted = [
            r
            for r in expected.files
            if r.kind in _READ_KINDS or r.kind in POLICY_KINDS or r.kind in RBAC_KINDS
        ]
        objects = self._objects([*wanted, *expected.flux_service_accounts], served)
        deployments = tuple(self._items("/apis/apps/v1/deployments"))
        nodes = {str(n["metadata"]["name"]): n for n in self._items("/api/v1/nodes")}
        maps: list[tuple[str, str]] = list(config_maps_of(deployments))
        applications: tuple[Obj, ...] = ()
        appset = expected.application_set
        if appset is not None and appset.namespace and objects.get(appset) is not None:
            maps += [(appset.namespace, name) for name in ARGOCD_CONFIG_MAPS]
            applications = tuple(
                self._items(f"/apis/{appset.api_version}/namespaces/{appset.namespace}/applications")
            )
        config_maps = {}
        for namespace, name in maps:
            found = self.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
            if found is not None:
                data = found.get("data") or {}
                config_maps[(namespace, name)] = {str(k): str(v) for k, v in data.items()}
        features = self._node_features(expected, served)
        configuration = self.api.configuration
        return Live(
            server=str(configuration.host),
            served=frozenset(served),
            objects=objects,
            nodes=nodes,
            deployments=deployments,
            config_maps=config_maps,
            applications=applications,
            node_features=features,
        )

    def _node_features(self, expected: Expected, served: set[str]) -> frozenset[Ref]:
        """The NodeFeatures tasgen manages in the namespaces the render writes them to: names
        only (a metadata-only list: a fleet has one or more per node)."""
        refs = [r for r in expected.files if r.kind == "NodeFeature" and r.api_version in served]
        found: set[Ref] = set()
        for api_version, namespace in sorted({(r.api_version, r.namespace or "") for r in refs}):
            selector = quote("=".join(MANAGED_BY), safe="")
            path = f"/apis/{api_version}/namespaces/{namespace}/nodefeatures?labelSelector={selector}"
            listed = self.get(path, _METADATA_ONLY) or {}
            for item in listed.get("items") or ():
                found.add(Ref("NodeFeature", str(item["metadata"]["name"]), namespace, api_version))
        return frozenset(found)

    def _served(self) -> set[str]:
        served = {"v1"}
        groups = self.get("/apis") or {}
        for group in groups.get("groups") or ():
            served.update(str(v["groupVersion"]) for v in group.get("versions") or ())
        return served

    def _items(self, path: str) -> list[Obj]:
        found = self.get(path)
        return list((found or {}).get("items") or [])

    def _plural(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        if (api_version, kind) not in self.resources:
            base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            for resource in (self.get(base) or {}).get("resources") or ():
                if "/" not in str(resource["name"]):
                    key = (api_version, str(resource["kind"]))
                    self.resources[key] = (str(resource["name"]), bool(resource["namespaced"]))
        return self.resources.get((api_version, kind))

    def _objects(self, refs: Iterable[Ref], served: set[str]) -> dict[Ref, Obj | None]:
        """Each ref's live object: one LIST per kind and namespace, not a GET per object."""
        found: dict[Ref, Obj | None] = {}
        listed: dict[tuple[str, str, str | None], dict[str, Obj]] = {}
        for ref in refs:
            plural = self._plural(ref.api_version, ref.kind) if ref.api_version in served else None
            if plural is None:
                found[ref] = None
                continue
            name, namespaced = plural
            namespace = ref.namespace if namespaced else None
            key = (ref.api_version, name, namespace)
            if key not in listed:
                base = "/api/v1" if ref.api_version == "v1" else f"/apis/{ref.api_version}"
                path = f"{base}/namespaces/{namespace}/{name}" if namespace else f"{base}/{name}"
                listed[key] = {str(o["metadata"]["name"]): o for o in self._items(path)}
            found[ref] = listed[key].get(ref.name)
        return found
