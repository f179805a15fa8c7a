"""Reading the desired ClusterQueues: a YAML file of several documents, or a directory of them
(a ConfigMap mounted as a volume: one file per key, beside the ``..data`` links that the kubelet
uses to swap contents atomically, which are skipped; or rendered/queues/)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..parse import ParseError, parse_text
from .kube import GROUP, KIND, VERSION, VERSIONS

#: How deep a plan's documents may nest: a ClusterQueue is a few levels deep, and a deeper
#: document would reach the recursion of a parser, a copy or the client's serialiser (a crash,
#: which the Job retries, where an unusable plan ends it).
MAX_DEPTH = 64


class PlanError(Exception):
    """The plan cannot be used; nothing is changed."""


def read_plan(path: Path) -> dict[str, dict[str, Any]]:
    """ClusterQueue name -> desired object, from every YAML document under path."""
    return parse_plan(read_texts(path), path)


def read_texts(path: Path) -> dict[str, str]:
    """File name -> text of every plan file under path, read once: the plan is parsed from
    these texts and compared, as they are, with its ConfigMap (a mounted ConfigMap can be
    swapped between two reads)."""
    texts: dict[str, str] = {}
    for file in _files(path):
        try:
            texts[file.name] = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise PlanError(f"{file}: {err}") from err
    return texts


def plan_keys(names: Iterable[str]) -> list[str]:
    """The names among these (a directory's files, a ConfigMap's keys) that are plan files."""
    return sorted(
        n
        for n in names
        if not n.startswith(".") and Path(n).suffix in (".yaml", ".yml") and Path(n).stem != "kustomization"
    )


def same_plan_texts(ours: Mapping[str, str], data: Mapping[str, str] | None) -> bool:
    """The ConfigMap's data holds exactly these plan files."""
    return data is not None and {k: data[k] for k in plan_keys(data)} == dict(ours)


def plan_hash(queues: Mapping[str, Mapping[str, Any]]) -> str:
    """The plan's hash as the Job's pod template carries it (topology.gpustack.ai/plan-hash):
    the queues in name order, as JSON."""
    text = json.dumps([queues[k] for k in sorted(queues)], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_plan(texts: Mapping[str, str], path: Path) -> dict[str, dict[str, Any]]:
    """ClusterQueue name -> desired object, from the plan files' texts."""
    queues: dict[str, dict[str, Any]] = {}
    for file_name, text in texts.items():
        file = path / file_name if path.is_dir() else path
        for doc in _documents(file, text):
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
    _readable(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise PlanError(f"{path}: not a file or a directory")
    # A kustomization.yaml is skipped, so that rendered/queues/ itself is a plan too (for a
    # run by hand: tasgen gate --plan rendered/queues --dry-run).
    entries = {p.name: p for p in path.iterdir()}
    named = [entries[n] for n in plan_keys(entries)]
    for p in named:
        _readable(p)  # a key of a mounted ConfigMap that resolves to nothing is no empty plan
    return [p for p in named if p.is_file()]


def _readable(path: Path) -> None:
    """Where the path (through its links) cannot be reached, say why."""
    try:
        path.stat()
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise PlanError(f"{path}: a symbolic link loop") from err
        if err.errno == errno.ENOENT:
            dangling = path.is_symlink()
            raise PlanError(
                f"{path}: a symbolic link to nothing ({os.readlink(path)})"
                if dangling
                else f"{path}: no such file or directory"
            ) from err
        raise PlanError(f"{path}: {err.strerror or err}") from err


def load_yaml(file: Path, what: type[Exception], text: str | None = None) -> list[Any]:
    """Every document of a YAML file (or of its text, read already), read by the guarded reader
    the inventory uses (generator.parse: alias bombs, depth, tags, keys, numbers refused before
    anything is expanded) and each checked to nest at most MAX_DEPTH levels; any failure is
    ``what``, naming the file, the position and the rule."""
    try:
        raw = file.read_text(encoding="utf-8") if text is None else text
    except (OSError, UnicodeDecodeError) as err:
        raise what(f"{file}: {err}") from err
    try:
        docs = parse_text(raw)
    except ParseError as err:
        where = f"{file}:{err.position[0]}:{err.position[1]}" if err.position else f"{file}"
        raise what(f"{where}: {err.message} [{err.rule.id}]") from err
    for doc in docs:
        problem = _shape(doc)
        if problem:
            raise what(f"{file}: {problem}")
    return docs


def _shape(doc: Any) -> str | None:
    """Why the document cannot be used (too deep), or None; level by level, so that a deep
    document does not exhaust the stack here either."""
    level, depth = [doc], 1
    while level := [node for node in level if isinstance(node, dict | list)]:
        if depth > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep"
        level = [child for node in level for child in _children(node)]
        depth += 1
    return None


def _children(node: dict[Any, Any] | list[Any]) -> Iterator[Any]:
    if isinstance(node, dict):
        yield from node.keys()
        yield from node.values()
    else:
        yield from node


def _documents(file: Path, text: str) -> list[dict[str, Any]]:
    return [d for d in load_yaml(file, PlanError, text) if d is not None]


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
