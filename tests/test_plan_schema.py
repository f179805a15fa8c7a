"""The typed plan report (generator/commands/plan/shape.py) and its published JSON Schema
agree at every depth, both ways; and the comparison itself catches each kind of drift, tried on
every property of the schema (tests/typed_schema.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Generic, Literal, TypeVar

import pytest

from tasgen.commands.plan.shape import Report
from tasgen.util.typed_json import Absent, Count, from_json, to_json
from tests.typed_schema import disagreements

SCHEMA: dict[str, Any] = json.loads(
    resources.files("tasgen").joinpath("schemas", "plan-report.schema.json").read_text()
)


def test_the_report_type_and_its_schema_agree() -> None:
    assert disagreements(Report, SCHEMA) == []


def _objects(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every object of the schema that lists properties."""
    if isinstance(node, Mapping):
        if "properties" in node:
            yield path
        for key, value in node.items():
            yield from _objects(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _objects(value, (*path, i))


def _at(schema: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        schema = schema[part]
    return schema


PROPERTIES = [(path, name) for path in _objects(SCHEMA) for name in _at(SCHEMA, path)["properties"]]


def _id(value: Any) -> str:
    return "/".join(map(str, value)) if isinstance(value, tuple) else str(value)


@pytest.mark.parametrize(("path", "name"), PROPERTIES, ids=_id)
def test_a_property_missing_renamed_or_required_otherwise_is_caught(path: tuple[Any, ...], name: str) -> None:
    """Each drift of one property, made on a copy of the schema, is a disagreement."""
    for mutate in (_drop, _rename, _flip_required, _retype):
        schema = copy.deepcopy(SCHEMA)
        mutate(_at(schema, path), name)
        assert disagreements(Report, schema), (mutate.__name__, path, name)


def _drop(node: dict[str, Any], name: str) -> None:
    del node["properties"][name]
    node["required"] = [r for r in node.get("required", []) if r != name]


def _rename(node: dict[str, Any], name: str) -> None:
    node["properties"][name + "X"] = node["properties"].pop(name)
    node["required"] = [r + "X" if r == name else r for r in node.get("required", [])]


def _flip_required(node: dict[str, Any], name: str) -> None:
    required = node.get("required", [])
    node["required"] = [r for r in required if r != name] if name in required else [*required, name]


def _retype(node: dict[str, Any], name: str) -> None:
    node["properties"][name] = {"type": "number"}


def _toggle_null(node: dict[str, Any], name: str) -> None:
    prop = node["properties"][name]
    if prop.get("oneOf"):
        node["properties"][name] = next(b for b in prop["oneOf"] if b != {"type": "null"})
    elif isinstance(prop.get("type"), list):
        node["properties"][name] = {**prop, "type": next(t for t in prop["type"] if t != "null")}
    else:
        node["properties"][name] = {"oneOf": [{"type": "null"}, prop]}


def _toggle_minimum(node: dict[str, Any], name: str) -> None:
    prop = node["properties"][name]
    if "minimum" in prop:
        del prop["minimum"]
    else:
        prop["minimum"] = 0


@pytest.mark.parametrize(("path", "name"), PROPERTIES, ids=_id)
def test_a_property_made_nullable_or_bounded_otherwise_is_caught(path: tuple[Any, ...], name: str) -> None:
    for mutate in (_toggle_null, _toggle_minimum):
        schema = copy.deepcopy(SCHEMA)
        mutate(_at(schema, path), name)
        assert disagreements(Report, schema), (mutate.__name__, path, name)


@dataclass(frozen=True, kw_only=True)
class _Leaf:
    count: Count
    state: Literal["a", "b"]
    note: Absent[str] = None


@dataclass(frozen=True, kw_only=True)
class _Root:
    leaves: tuple[_Leaf, ...]
    labels: Mapping[str, str]
    parent: str | None


def _leaf_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["count", "state"],
        "properties": {
            "count": {"type": "integer", "minimum": 0},
            "state": {"enum": ["a", "b"]},
            "note": {"type": "string"},
        },
        "additionalProperties": False,
    }


def _root_schema(leaf: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["leaves", "labels", "parent"],
        "properties": {
            "leaves": {"type": "array", "items": {"$ref": "#/$defs/leaf"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "parent": {"type": ["string", "null"]},
        },
        "additionalProperties": False,
        "$defs": {"leaf": leaf},
    }


def test_a_small_type_and_its_schema_agree() -> None:
    assert disagreements(_Root, _root_schema(_leaf_schema())) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["properties"].pop("note"), "$.leaves[].note: a field of _Leaf, not in the schema"),
        (
            lambda s: s["required"].append("note"),
            "$.leaves[].note: required in the schema, Absent in the type",
        ),
        (lambda s: s["required"].remove("count"), "$.leaves[].count: not required in the schema"),
        (lambda s: s["properties"]["state"].update(enum=["a", "c"]), "$.leaves[].state: the values"),
        (lambda s: s["properties"]["count"].pop("minimum"), "$.leaves[].count: minimum None in the schema"),
        (lambda s: s.update(additionalProperties=True), "$.leaves[]: the schema allows other properties"),
        (
            lambda s: s["properties"]["note"].update(type=["string", "null"]),
            "$.leaves[].note: nullable in the schema only",
        ),
        (
            lambda s: s["properties"]["note"].update(format="date"),
            "$.leaves[].note: schema keywords this comparison does not read",
        ),
    ],
)
def test_each_kind_of_drift_is_named(change: Callable[[dict[str, Any]], object], expected: str) -> None:
    leaf = _leaf_schema()
    change(leaf)
    found = disagreements(_Root, _root_schema(leaf))
    assert len(found) == 1 and found[0].startswith(expected), found


T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class _Sides(Generic[T]):
    before: T
    after: T


_SIDES_SCHEMA = {
    "type": "object",
    "required": ["before", "after"],
    "properties": {"before": {"type": "integer"}, "after": {"type": "integer"}},
    "additionalProperties": False,
}


def test_a_generic_type_is_compared_with_its_parameters() -> None:
    assert disagreements(_Sides[int], _SIDES_SCHEMA) == []
    found = disagreements(_Sides[str], _SIDES_SCHEMA)
    assert [f.split(":")[0] for f in found] == ["$.after", "$.before"], found


def test_a_generic_type_is_read_with_its_parameters() -> None:
    document = {"before": 1, "after": 2}
    assert from_json(_Sides[int], document) == _Sides(before=1, after=2)
    assert to_json(_Sides(before=1, after=2)) == document
    with pytest.raises(ValueError, match=r"\$\.before: str expected, not 1"):
        from_json(_Sides[str], document)
