"""`tasgen import-nodes`: kubectl's Node list -> a sorted NodeInventory without volatile fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from generator.emit import yaml
from generator.emit.output import Changes, write
from generator.load.files import ParseError, parse_text
from generator.model import API_VERSION

HEADER = (
    "# Node facts for tasgen, imported from `kubectl get nodes`: names, labels, allocatable and\n"
    "# taints only, sorted. Refresh: kubectl get nodes -o json | tasgen import-nodes - -o <this file>\n"
)


class ImportProblem(Exception):
    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


def convert(text: str, name: str) -> str:
    try:
        documents = parse_text(text)
    except ParseError as e:
        line, col = e.position or (1, 1)
        raise ImportProblem(e.message, line, col) from e
    nodes = [_node(item) for document in documents for item in _items(document)]
    nodes.sort(key=lambda n: n["name"])
    inventory = {
        "apiVersion": API_VERSION,
        "kind": "NodeInventory",
        "metadata": {"name": name},
        "nodes": nodes,
    }
    return HEADER + yaml.dump(inventory)


def _items(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        raise ImportProblem("expected the output of `kubectl get nodes -o json` (or -o yaml)")
    if document.get("kind") == "Node":
        return [document]
    items = document.get("items")
    if document.get("kind") not in ("List", "NodeList") or not isinstance(items, list):
        raise ImportProblem(f"expected a List of Nodes, got kind {document.get('kind')!r}")
    for item in items:
        if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
            raise ImportProblem("every item must be a Node")
    return items


def _node(item: dict[str, Any]) -> dict[str, Any]:
    metadata = item.get("metadata") or {}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ImportProblem("a Node without metadata.name")
    labels = metadata.get("labels") or {}
    allocatable = (item.get("status") or {}).get("allocatable") or {}
    if not isinstance(labels, dict) or not isinstance(allocatable, dict):
        raise ImportProblem(f"node {name!r}: labels and status.allocatable must be mappings")
    node: dict[str, Any] = {
        "name": name,
        "labels": {str(k): str(labels[k]) for k in sorted(labels)},
        "allocatable": {str(k): str(allocatable[k]) for k in sorted(allocatable)},
    }
    spec = item.get("spec") or {}
    taints = _taints(name, spec.get("taints") or [])
    if taints:
        node["taints"] = taints
    if spec.get("unschedulable") is True:
        node["unschedulable"] = True
    return node


def _taints(node: str, taints: Any) -> list[dict[str, str]]:
    """key, value and effect, sorted; timeAdded (set by the node lifecycle on NoExecute
    taints) is dropped: it changes on every flap and says nothing about the hardware."""
    if not isinstance(taints, list) or not all(isinstance(t, dict) for t in taints):
        raise ImportProblem(f"node {node!r}: spec.taints must be a list of taints")
    kept = [{k: str(t[k]) for k in ("key", "value", "effect") if t.get(k) not in (None, "")} for t in taints]
    return sorted(kept, key=lambda t: (t.get("key", ""), t.get("effect", ""), t.get("value", "")))


def write_atomically(path: Path, text: str) -> None:
    write(path.parent, Changes(changed={path.name: text}))
