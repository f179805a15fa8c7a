"""What the render needs from a cluster, read from the rendered folder (the objects the engine
syncs and its wiring) and the inventory (the nodes it names)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...emit.tree import NOT_SYNCED
from ...parse import ParseError, parse_text
from ...util.folders import folder_problem

#: the label nfd-master reads a NodeFeature's node from
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
KUEUE_GROUP = "kueue.x-k8s.io"
NFD_GROUP = "nfd.k8s-sigs.io"
ARGO_GROUP = "argoproj.io"
FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
#: what a Role or binding grants, compared with the live object's
GRANT_FIELDS = ("rules", "roleRef", "subjects")
#: Argo CD's key prefix of a resource health check in argocd-cm (then ``<group>_<kind>``)
HEALTH_PREFIX = "resource.customizations.health."
#: the Kueue kinds whose health Argo CD must judge for RollingSync to wait on them
HEALTH_KINDS = ("ClusterQueue", "LocalQueue")


class RenderError(Exception):
    """The rendered folder cannot be read."""


@dataclass(frozen=True, order=True)
class Ref:
    """An object of the render, as the API server names it."""

    kind: str
    name: str
    namespace: str | None
    api_version: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def shown(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Expected:
    """Everything a check compares the live cluster with."""

    output: str  # the rendered folder, as given
    files: Mapping[Ref, str]  # each object -> its file under the rendered folder
    kueue_api: str | None  # the kueue.x-k8s.io group version the render writes
    topologies: tuple[str, ...]
    flavors: tuple[str, ...]
    queues: Mapping[str, Mapping[str, Any]]  # ClusterQueue name -> its spec
    policies: tuple[Ref, ...]
    rbac: tuple[Ref, ...]
    node_labels: Mapping[str, Mapping[str, str]]  # node -> the labels its NodeFeatures give it
    nodes: tuple[str, ...]  # the inventory's nodes
    application_set: Ref | None = None
    rolling_sync: bool = False
    #: argocd-cm key -> its Lua (None: any; the render does not carry argocd-cm)
    argocd_health: Mapping[str, str | None] = field(default_factory=dict)
    kustomizations: tuple[Ref, ...] = ()
    flux_health_exprs: bool = False  # a Kustomization checks health with CEL (healthCheckExprs)
    flux_service_accounts: tuple[Ref, ...] = ()  # the Kustomizations' spec.serviceAccountName
    grants: Mapping[Ref, Mapping[str, Any]] = field(default_factory=dict)  # rules, roleRef, subjects
    kueue_refs: Mapping[tuple[str, str], Ref] = field(default_factory=dict)  # (kind, name) -> ref

    def file_of(self, ref: Ref) -> str:
        return self.files.get(ref, self.output)


def read_render(output: Path, nodes: Iterable[str]) -> Expected:
    """The render in ``output`` (every YAML file but kustomization.yaml and those no engine
    syncs) and the inventory's nodes."""
    if problem := folder_problem(output):
        raise RenderError(f"{problem}: render first (tasgen render -o {output})")
    documents: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(output.rglob("*.yaml")):
        if path.name == "kustomization.yaml" or not path.is_file():
            continue
        if path.relative_to(output).as_posix() in NOT_SYNCED:
            continue  # an administrator's (Flux's grant), not the render's: flux-service-account
        relative = (output.name / path.relative_to(output)).as_posix()
        try:
            loaded = parse_text(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise RenderError(f"{path}: cannot be read: {e}") from e
        except ParseError as e:
            line, col = e.position or (1, 1)
            raise RenderError(f"{path}:{line}:{col}: {e.message} [{e.rule.id}]") from e
        for doc in loaded:
            if isinstance(doc, dict) and isinstance(doc.get("kind"), str):
                documents.append((relative, doc))
    return expected_of(documents, nodes, str(output))


def _ref(doc: Mapping[str, Any]) -> Ref:
    meta = doc.get("metadata") or {}
    return Ref(str(doc["kind"]), str(meta.get("name")), meta.get("namespace"), str(doc.get("apiVersion")))


@dataclass
class _Collected:
    """The expectations gathered so far, document by document."""

    files: dict[Ref, str] = field(default_factory=dict)
    kueue_api: str | None = None
    topologies: list[str] = field(default_factory=list)
    flavors: list[str] = field(default_factory=list)
    queues: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    policies: list[Ref] = field(default_factory=list)
    rbac: list[Ref] = field(default_factory=list)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    health: dict[str, str | None] = field(default_factory=dict)
    accounts: list[Ref] = field(default_factory=list)
    grants: dict[Ref, Mapping[str, Any]] = field(default_factory=dict)
    kueue_refs: dict[tuple[str, str], Ref] = field(default_factory=dict)
    application_set: Ref | None = None
    rolling: bool = False
    kustomizations: list[Ref] = field(default_factory=list)
    health_exprs: bool = False

    def add(self, file: str, doc: Mapping[str, Any]) -> None:
        ref = _ref(doc)
        self.files[ref] = file
        spec = doc.get("spec") or {}
        if ref.group == KUEUE_GROUP:
            self._kueue(ref, spec)
        elif ref.group == NFD_GROUP and ref.kind == "NodeFeature":
            node = ((doc.get("metadata") or {}).get("labels") or {}).get(NODE_NAME_LABEL)
            if node:
                labels = spec.get("labels") or {}
                self.labels.setdefault(str(node), {}).update({str(k): str(v) for k, v in labels.items()})
        elif ref.kind in POLICY_KINDS:
            self.policies.append(ref)
        elif ref.kind in RBAC_KINDS and ref.group in ("", "rbac.authorization.k8s.io"):
            self.rbac.append(ref)
            self.grants[ref] = {k: doc[k] for k in GRANT_FIELDS if k in doc}
        elif ref.group == ARGO_GROUP and ref.kind == "ApplicationSet":
            self.application_set = ref
            self.rolling = (spec.get("strategy") or {}).get("type") == "RollingSync"
        elif ref.group == FLUX_KUSTOMIZE_GROUP and ref.kind == "Kustomization":
            self.kustomizations.append(ref)
            self.health_exprs = self.health_exprs or bool(spec.get("healthCheckExprs"))
            account = spec.get("serviceAccountName")
            if (
                account
                and (sa := Ref("ServiceAccount", str(account), ref.namespace, "v1")) not in self.accounts
            ):
                self.accounts.append(sa)
        elif ref.kind == "ConfigMap" and ref.name == "argocd-cm":
            data = doc.get("data") or {}
            self.health.update({str(k): str(v) for k, v in data.items() if str(k).startswith(HEALTH_PREFIX)})

    def _kueue(self, ref: Ref, spec: Mapping[str, Any]) -> None:
        self.kueue_api = self.kueue_api or ref.api_version
        self.kueue_refs[(ref.kind, ref.name)] = ref
        if ref.kind in HEALTH_KINDS:
            self.health.setdefault(f"{HEALTH_PREFIX}{KUEUE_GROUP}_{ref.kind}", None)
        if ref.kind == "Topology":
            self.topologies.append(ref.name)
        elif ref.kind == "ResourceFlavor":
            self.flavors.append(ref.name)
        elif ref.kind == "ClusterQueue":
            self.queues[ref.name] = spec


def expected_of(
    documents: Iterable[tuple[str, Mapping[str, Any]]], nodes: Iterable[str], output: str = "rendered"
) -> Expected:
    """Pure: the expectations of rendered documents (file, object) and inventory nodes."""
    got = _Collected()
    for file, doc in documents:
        got.add(file, doc)
    return Expected(
        output=output,
        files=got.files,
        kueue_api=got.kueue_api,
        topologies=tuple(got.topologies),
        flavors=tuple(got.flavors),
        queues=got.queues,
        policies=tuple(got.policies),
        rbac=tuple(got.rbac),
        node_labels=got.labels,
        nodes=tuple(nodes),
        application_set=got.application_set,
        rolling_sync=got.rolling,
        argocd_health=got.health,
        kustomizations=tuple(got.kustomizations),
        flux_health_exprs=got.health_exprs,
        flux_service_accounts=tuple(got.accounts),
        grants=got.grants,
        kueue_refs=got.kueue_refs,
    )


def label_namespace(key: str) -> str:
    """A label key's prefix (its namespace, as NFD calls it); "" when it has none."""
    return key.split("/", 1)[0] if "/" in key else ""
