"""The repository's example fleet as the end-to-end tests see it: the Nodes of the
NodeInventory and the objects of rendered/, in the order a GitOps engine applies them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
INVENTORY_DIR = REPO / "inventories"
RENDERED_DIR = REPO / "rendered"

# tasgen's own label namespace; nfd-master drops every namespace it is not told to allow.
TASGEN_LABEL_NS = "topology.gpustack.ai"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# Within one sync wave Argo CD applies kinds in this order (a shortened version of its
# kind ordering); kinds not listed come after, by name.
KIND_ORDER = [
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ConfigMap",
]

Obj = dict[str, Any]


@dataclass(frozen=True)
class Node:
    name: str
    labels: dict[str, str]
    allocatable: dict[str, str]
    taints: tuple[dict[str, str], ...] = ()  # as in the NodeInventory: key, value, effect


@dataclass(frozen=True)
class Fleet:
    nodes: list[Node]
    rendered: list[Obj]
    admin_label_prefix: str | None
    node_feature_namespace: str

    @property
    def nfd_label_namespaces(self) -> list[str]:
        """The label namespaces nfd-master must allow, as a deployment of tasgen configures it."""
        namespaces = [TASGEN_LABEL_NS]
        if self.admin_label_prefix:
            namespaces.append(self.admin_label_prefix.split("/", 1)[0])
        return namespaces

    def local_queue_namespaces(self) -> dict[str, dict[str, str]]:
        """The namespaces of the rendered LocalQueues, with the labels their ClusterQueue's
        namespaceSelector matches: what an administrator creates before the sync
        (docs/reference/inventory.md)."""
        selectors = {
            q["metadata"]["name"]: q["spec"].get("namespaceSelector") or {}
            for q in self.of_kind("ClusterQueue")
        }
        return {
            lq["metadata"]["namespace"]: dict(selectors[lq["spec"]["clusterQueue"]].get("matchLabels") or {})
            for lq in self.of_kind("LocalQueue")
        }

    def of_kind(self, kind: str) -> list[Obj]:
        return [obj for obj in self.rendered if obj["kind"] == kind]

    def node_feature_labels(self) -> dict[str, dict[str, str]]:
        """Node name -> the labels that the rendered NodeFeatures give it."""
        labels: dict[str, dict[str, str]] = defaultdict(dict)
        for feature in self.of_kind("NodeFeature"):
            node = feature["metadata"]["labels"][NODE_NAME_LABEL]
            labels[node].update(feature["spec"].get("labels", {}))
        return dict(labels)


def _documents(path: Path) -> list[Obj]:
    with path.open(encoding="utf-8") as stream:
        return [doc for doc in yaml.safe_load_all(stream) if isinstance(doc, dict) and "kind" in doc]


def _inventory_documents(inventory_dir: Path) -> list[Obj]:
    files = [p for p in sorted(inventory_dir.rglob("*")) if p.suffix in {".yaml", ".yml", ".json"}]
    return [doc for path in files for doc in _documents(path)]


def _rendered_files(rendered_dir: Path) -> list[Path]:
    """Every manifest of rendered/ that a sync applies: not the kustomizations, not the
    engines' wiring (flux/, argocd/)."""
    return [
        path
        for path in sorted(rendered_dir.rglob("*.yaml"))
        if path.name != "kustomization.yaml"
        and not {"flux", "argocd"} & set(path.relative_to(rendered_dir).parts)
    ]


def apply_order(obj: Obj) -> tuple[int, int, str]:
    wave = int(obj["metadata"].get("annotations", {}).get(SYNC_WAVE, "0"))
    kind = obj["kind"]
    rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
    return wave, rank, kind


def load_fleet(inventory_dir: Path = INVENTORY_DIR, rendered_dir: Path = RENDERED_DIR) -> Fleet:
    """A fleet's inventory and its render: the repository's example unless told otherwise."""
    inventory = _inventory_documents(inventory_dir)
    nodes = [
        Node(
            name=n["name"],
            labels=dict(n.get("labels", {})),
            allocatable=dict(n.get("allocatable", {})),
            taints=tuple(n.get("taints", ())),
        )
        for doc in inventory
        if doc["kind"] == "NodeInventory"
        for n in doc.get("nodes", [])
    ]
    configs = [doc.get("spec", {}) for doc in inventory if doc["kind"] == "GeneratorConfig"]
    settings = configs[0] if configs else {}
    rendered = [obj for path in _rendered_files(rendered_dir) for obj in _documents(path)]
    return Fleet(
        nodes=nodes,
        rendered=sorted(rendered, key=apply_order),
        admin_label_prefix=settings.get("adminLabelPrefix"),
        node_feature_namespace=settings.get("nodeFeatureNamespace", "node-feature-discovery"),
    )
