"""Reading the desired ClusterQueues: a YAML file of several documents, or a directory of them
(a ConfigMap mounted as a volume: one file per key, beside the ``..data`` links that the kubelet
uses to swap contents atomically, which are skipped; or rendered/queues/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from generator.gate.kube import GROUP, KIND, VERSION, VERSIONS


class PlanError(Exception):
    """The plan cannot be used; nothing is changed."""


def read_plan(path: Path) -> dict[str, dict[str, Any]]:
    """ClusterQueue name -> desired object, from every YAML document under path."""
    files = _files(path)
    queues: dict[str, dict[str, Any]] = {}
    for file in files:
        for doc in _documents(file):
            if isinstance(doc, dict) and doc.get("kind") == "LocalQueue":
                continue  # rendered/queues/ holds them beside the ClusterQueues
            name = _check(doc, file)
            if name in queues:
                raise PlanError(f"{file}: ClusterQueue {name} appears twice in the plan")
            queues[name] = doc
    versions = {doc["apiVersion"] for doc in queues.values()}
    if len(versions) > 1:
        raise PlanError(
            f"{path}: the plan mixes {' and '.join(sorted(versions))}; render it for one Kueue version"
        )
    return queues


def plan_version(queues: dict[str, dict[str, Any]]) -> str:
    """The Kueue API version the plan is written in (the gate reads and writes the live queues
    in it, so that both sides are spelled alike); v1beta2 for an empty plan."""
    return next((str(q["apiVersion"]).rpartition("/")[2] for q in queues.values()), VERSION)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise PlanError(f"{path}: no such file or directory")
    # A kustomization.yaml is skipped, so that rendered/queues/ itself is a plan too (for a
    # run by hand: tasgen gate --plan rendered/queues --dry-run).
    return sorted(
        p
        for p in path.iterdir()
        if not p.name.startswith(".")
        and p.suffix in (".yaml", ".yml")
        and p.stem != "kustomization"
        and p.is_file()
    )


def _documents(file: Path) -> list[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(file.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise PlanError(f"{file}: {err}") from err
    return [d for d in docs if d is not None]


def _check(doc: Any, file: Path) -> str:
    """A ClusterQueue of the Kueue version the gate writes, with a name."""
    if not isinstance(doc, dict):
        raise PlanError(f"{file}: a document is not a mapping")
    if doc.get("apiVersion") not in [f"{GROUP}/{v}" for v in VERSIONS] or doc.get("kind") != KIND:
        raise PlanError(
            f"{file}: expected {GROUP}/{VERSION} (or v1beta1) {KIND} documents only, "
            f"got {doc.get('apiVersion')} {doc.get('kind')}"
        )
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise PlanError(f"{file}: a ClusterQueue's metadata is not a mapping")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise PlanError(f"{file}: a ClusterQueue has no metadata.name")
    if not isinstance(doc.get("spec") or {}, dict):
        raise PlanError(f"{file}: ClusterQueue {name}: spec is not a mapping")
    return name
