"""`tasgen import-nodes`: kubectl's Node list -> a sorted NodeInventory without volatile fields."""

from __future__ import annotations

import errno
import itertools
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...emit import yaml
from ...kube.quantities import quantity_error
from ...kube.taints import EFFECTS
from ...load.positions import PositionIndex, find_duplicate_key
from ...model import API_VERSION
from ...parse import ParseError, parse_text
from ...rules.load import DUPLICATE_KEY
from ...validate.labels import is_dns_subdomain, label_key_error, label_value_error
from .label_filter import LabelFilter

HEADER = (
    "# Node facts for tasgen, imported from `kubectl get nodes`: names, labels, allocatable and\n"
    "# taints only, sorted. Refresh: kubectl get nodes -o json | tasgen import-nodes - -o <this file>\n"
)
DEFAULT_NAME = "nodes"  # metadata.name of a new NodeInventory
_OWN_HEADER = "# Node facts for tasgen, imported from"  # how every wording of HEADER starts
_HEADER_LIMIT = 64 * 1024  # a comment block is read from the start of the file only


class ImportProblem(Exception):
    def __init__(self, message: str, line: int = 1, col: int = 1, at: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col
        self.file: str | None = None  # which input, when several are given
        self.at = at  # where in the node it is (a pointer below the item), for the position


class ImportProblems(Exception):
    """Every bad node of the inputs, each at its position (one node's problem does not hide the
    next): nothing is written."""

    def __init__(self, problems: list[ImportProblem]) -> None:
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


@dataclass(frozen=True)
class Imported:
    text: str
    nodes: int


def convert(
    inputs: Sequence[tuple[str, str]], name: str, keep: LabelFilter | None = None, header: str = HEADER
) -> Imported:
    """Node lists (shown name, text) -> one NodeInventory; labels ``keep`` refuses are dropped."""
    nodes: dict[str, dict[str, Any]] = {}
    origin: dict[str, str] = {}
    problems: list[ImportProblem] = []
    for shown, text in inputs:
        try:
            found, bad = _nodes(text)
        except ImportProblem as e:  # not a node list at all: nothing more to read in it
            found, bad = [], [e]
        for node, (index, pointer) in found:
            node_name = node["name"]
            if node_name in origin:
                message = f"node {node_name!r} is listed again; the first is in {origin[node_name]}"
                line, col = PositionIndex(text, [(index, pointer)]).position(index, pointer)
                bad.append(ImportProblem(message, line, col))
                continue
            origin[node_name], nodes[node_name] = shown, node
        for problem in bad:
            problem.file = shown
        problems += sorted(bad, key=lambda p: (p.line, p.col))
    if problems:
        raise ImportProblems(problems)
    for node in nodes.values():
        labels = node["labels"]
        node["labels"] = {k: v for k, v in labels.items() if keep is None or keep.keeps(k, labels)}
    inventory = {
        "apiVersion": API_VERSION,
        "kind": "NodeInventory",
        "metadata": {"name": name},
        "nodes": [nodes[n] for n in sorted(nodes)],
    }
    return Imported(header + yaml.dump(inventory), len(nodes))


def _nodes(
    text: str,
) -> tuple[list[tuple[dict[str, Any], tuple[int, tuple[str | int, ...]]]], list[ImportProblem]]:
    """Each good node of the text, with where it is (document, pointer), and a problem for each
    bad one; raises ImportProblem when the text is no node list at all."""
    try:
        documents = parse_text(text, data_checks=False)
    except ParseError as e:
        # the parsers name no position for a repeated key; the scan validate uses finds it
        duplicate = find_duplicate_key(text) if e.rule == DUPLICATE_KEY else None
        line, col = e.position or (duplicate[0] if duplicate else (1, 1))
        raise ImportProblem(e.message, line, col) from e
    nodes = []
    bad: list[tuple[int, ImportProblem]] = []
    for index, document in enumerate(documents):
        if document is None and any(d is not None for d in documents):
            continue  # an empty document beside others (a stream ending in '---') lists no node
        try:
            items = _items(document)
        except ImportProblem as e:
            e.line, e.col = PositionIndex(text, [(index, e.at)]).position(index, e.at)
            raise
        for prefix, item in items:
            try:
                nodes.append((_node(item), (index, prefix)))
            except ImportProblem as e:
                e.at = (*prefix, *e.at)
                bad.append((index, e))
    if bad:  # positions looked up once, for the bad nodes only
        where = PositionIndex(text, [(index, problem.at) for index, problem in bad])
        for index, problem in bad:
            problem.line, problem.col = where.position(index, problem.at)
    return nodes, [problem for _, problem in bad]


def header_of(path: Path) -> str:
    """The comment block at the top of the file being refreshed, kept (the rest is
    regenerated); tasgen's own header in it, if any, in its current wording."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return HEADER  # a FIFO would block the read; write_atomically refuses it anyway
        with path.open("rb") as stream:
            text = stream.read(_HEADER_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return HEADER
    head = text.removeprefix("\ufeff").splitlines()  # a byte order mark, which the loader allows
    if len(head) > 1 and sum(map(len, head)) >= _HEADER_LIMIT - len(head):
        head.pop()  # it may be cut in the middle
    lines = list(itertools.takewhile(lambda line: line.startswith("#"), head))
    if not lines:
        return HEADER
    if lines[0].startswith(_OWN_HEADER):  # every wording: that line and one with Refresh:
        mine = 2 if len(lines) > 1 and "Refresh:" in lines[1] else 1
        return HEADER + "".join(f"{line}\n" for line in lines[mine:])
    return "".join(f"{line}\n" for line in lines)


def name_of(path: Path) -> str | None:
    """metadata.name of the NodeInventory being refreshed (kept unless --name says otherwise):
    the part of the file before its node list, parsed (a 100k-node list is not); None when
    there is no such file or name."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with path.open("rb") as stream:
            head = stream.read(_HEADER_LIMIT).decode("utf-8", errors="replace")
        documents = parse_text(head.removeprefix("\ufeff").partition("\nnodes:")[0])
    except (OSError, ParseError):
        return None
    metadata = documents[0].get("metadata") if documents and isinstance(documents[0], dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def _items(document: Any) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """Each Node of a document, with its pointer in it."""
    if not isinstance(document, dict):
        raise ImportProblem("expected the output of `kubectl get nodes -o json` (or -o yaml)")
    if document.get("kind") == "Node":
        return [((), document)]
    items = document.get("items")
    if document.get("kind") not in ("List", "NodeList") or not isinstance(items, list):
        raise ImportProblem(f"expected a List of Nodes, got kind {document.get('kind')!r}")
    for i, item in enumerate(items):
        if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
            what = f"kind {item.get('kind')!r}" if isinstance(item, dict) else _json_kind(item)
            raise ImportProblem(f"items[{i}] is {what}; every item must be a Node", at=("items", i))
    return [(("items", i), item) for i, item in enumerate(items)]


def _json_kind(value: Any) -> str:
    """What a value is, in the words of the JSON or YAML it came from."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    kinds = {str: "a string", list: "a list", int: "a number", float: "a number"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def _node(item: dict[str, Any]) -> dict[str, Any]:
    metadata, status = _mapping(item, "metadata", "a Node"), _mapping(item, "status", "a Node")
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ImportProblem("a Node without metadata.name", at=("metadata",))
    if not is_dns_subdomain(name) or len(name) > 63:
        message = (
            f"node name {_short(name)} is not a DNS-1123 subdomain of at most 63 characters "
            "(lowercase letters, digits, '-' and '.'): tasgen cannot label it through NFD"
        )
        raise ImportProblem(message, at=("metadata", "name"))
    labels = _mapping(metadata, "labels", f"node {name!r}: metadata", ("metadata",))
    allocatable = _mapping(status, "allocatable", f"node {name!r}: status", ("status",))
    node: dict[str, Any] = {
        "name": name,
        "labels": {
            k: _label(name, k, labels[k]) for k in sorted(_keys(name, labels, ("metadata", "labels")))
        },
        "allocatable": {
            k: _quantity(name, k, allocatable[k])
            for k in sorted(_keys(name, allocatable, ("status", "allocatable")))
        },
    }
    spec = _mapping(item, "spec", f"node {name!r}: Node")
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
        raise ImportProblem(f"node {node!r}: spec.taints must be a list of taints", at=("spec", "taints"))
    kept = [
        {k: _taint_field(node, k, t[k], i) for k in ("key", "value", "effect") if t.get(k) not in (None, "")}
        for i, t in enumerate(taints)
    ]
    for i, taint in enumerate(kept):
        _taint_valid(node, taint, i)
    return sorted(kept, key=lambda t: (t.get("key", ""), t.get("effect", ""), t.get("value", "")))


def _taint_valid(node: str, taint: dict[str, str], index: int) -> None:
    """A taint as Kubernetes allows it: a label key, a label value, one of three effects."""
    at: tuple[str | int, ...] = ("spec", "taints", index)
    problem = (
        "it has no key"
        if "key" not in taint
        else label_key_error(taint["key"]) or label_value_error(taint.get("value", ""))
    )
    if problem is None and taint.get("effect") not in EFFECTS:
        problem = f"its effect is {_short(taint.get('effect'))}, not one of {', '.join(EFFECTS)}"
    if problem:
        raise ImportProblem(f"node {node!r}: taint {index}: {problem}", at=at)


def _taint_field(node: str, field: str, value: Any, index: int) -> str:
    """A taint's key, value and effect are strings in Kubernetes, like label values."""
    if not isinstance(value, str):
        message = f"node {node!r}: a taint's {field} is {_short(value)}, not a string (quote it)"
        raise ImportProblem(message, at=("spec", "taints", index, field))
    return value


def _mapping(parent: dict[str, Any], key: str, what: str, at: tuple[str, ...] = ()) -> dict[str, Any]:
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ImportProblem(f"{what}.{key} must be a mapping, got {type(value).__name__}", at=(*at, key))
    return value


def _keys(node: str, data: dict[Any, Any], at: tuple[str, ...]) -> list[str]:
    for key in data:
        if not isinstance(key, str):
            raise ImportProblem(f"node {node!r}: key {_short(key)} is not a string", at=at)
    return list(data)


def _label(node: str, key: str, value: Any) -> str:
    """Label values are strings in Kubernetes: null, true or 0123 would not round-trip; key
    and value as Kubernetes allows them (what validate would refuse is refused here)."""
    at = ("metadata", "labels", key)
    if not isinstance(value, str):
        raise ImportProblem(
            f"node {node!r}: label {key!r} has the value {_short(value)}, not a string; "
            "label values are strings (quote it)",
            at=at,
        )
    problem = label_key_error(key) or label_value_error(value)
    if problem:
        raise ImportProblem(f"node {node!r}: label {_short(key)}={_short(value)}: {problem}", at=at)
    return value


def _quantity(node: str, key: str, value: Any) -> str:
    """Allocatable is a quantity string in kubectl's output; a plain integer is accepted."""
    text = value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**30:
        text = str(value)
    problem = quantity_error(text, key) if text is not None else None
    if problem:
        raise ImportProblem(
            f"node {node!r}: allocatable {key!r}: {problem}", at=("status", "allocatable", key)
        )
    if text is not None:
        return text
    message = f"node {node!r}: allocatable {key!r} is {_short(value)}, not a quantity string"
    raise ImportProblem(message, at=("status", "allocatable", key))


def _short(value: Any) -> str:
    """A value as shown in a message, as YAML and JSON write it (true, null), bounded (a huge
    integer cannot even be printed whole)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int) and abs(value) >= 10**30:
        return "an integer of more than 30 digits"
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


class OutputProblem(Exception):
    """-o cannot be written; nothing was."""


def write_atomically(path: Path, text: str) -> None:
    """Replace the regular file at ``path`` (or create it) in one rename; anything else that
    stands there (a symlink, a FIFO, a device such as /dev/full) is refused, not replaced."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise _unwritable(path, e) from e
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputProblem(f"{path} is not a regular file ({_kind(info.st_mode)}); nothing was written")
    try:
        _replace(path, text.encode("utf-8"))
    except OSError as e:
        raise _unwritable(path, e) from e


def _unwritable(path: Path, error: OSError) -> OutputProblem:
    reason = "a path component is a file, not a folder" if error.errno == errno.ENOTDIR else error.strerror
    return OutputProblem(f"cannot write {path}: {reason}; nothing was written")


def _replace(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; an inventory is shared
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _kind(mode: int) -> str:
    kinds = {stat.S_ISLNK: "a symbolic link", stat.S_ISFIFO: "a FIFO", stat.S_ISDIR: "a folder"}
    return next((name for test, name in kinds.items() if test(mode)), "a device or socket")
