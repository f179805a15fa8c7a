"""Whether a typed report (frozen dataclasses, generator/util/typed_json.py) and its published
JSON Schema say the same thing, at every depth and both ways: every property is a field and
every field a property, required exactly when the field is not ``Absent``, nullable exactly
when the hint holds None, the same JSON type, enum, const and lower bound. Read from the type
hints and the schema alone (nothing listed by hand), for any report and its schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args, get_origin

from tasgen.util.typed_json import NON_NEGATIVE, bare, dataclass_of, extras, fields_of, nullable

#: keywords that say nothing about a document's shape
_NOTES = {"$schema", "$id", "$defs", "title", "description"}
_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", bool: "boolean"}


def disagreements(hint: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every place where ``hint`` (a dataclass) and ``schema`` (its root) differ; [] when none."""
    found: list[str] = []
    _compare(hint, schema, schema, "$", found)
    return found


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref  # a local reference: the schema stands alone
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _split_null(node: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The schema without its null, and whether it allowed null (``type: [X, "null"]`` or a
    ``oneOf`` with a ``{"type": "null"}`` branch)."""
    node = _resolve(node, root)
    if "oneOf" in node:
        branches = [_resolve(b, root) for b in node["oneOf"]]
        rest = [b for b in branches if b != {"type": "null"}]
        if len(rest) == 1 and len(branches) == 2:
            return {**{k: v for k, v in node.items() if k != "oneOf"}, **rest[0]}, True
    kind = node.get("type")
    if isinstance(kind, list) and "null" in kind:
        others = [k for k in kind if k != "null"]
        return {**node, "type": others[0] if len(others) == 1 else others}, True
    return node, False


def _compare(
    hint: Any, node: Mapping[str, Any], root: Mapping[str, Any], path: str, found: list[str]
) -> None:
    inner, hint_null = nullable(hint)
    node, schema_null = _split_null(node, root)
    if hint_null != schema_null:
        found.append(f"{path}: nullable in the {'type' if hint_null else 'schema'} only")
    shape = {k: v for k, v in node.items() if k not in _NOTES}
    unread = set(shape) - {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
    }
    if unread:
        found.append(f"{path}: schema keywords this comparison does not read: {sorted(unread)}")
    minimum = shape.get("minimum")
    if (minimum == 0) != (NON_NEGATIVE in extras(hint) or NON_NEGATIVE in extras(inner)):
        found.append(f"{path}: minimum {minimum} in the schema, {extras(hint) or 'no bound'} in the type")
    _compare_shape(bare(inner), shape, root, path, found)


def _compare_shape(
    hint: Any, shape: Mapping[str, Any], root: Mapping[str, Any], path: str, found: list[str]
) -> None:
    origin = get_origin(hint)
    if dataclass_of(hint) is not None:
        _compare_object(hint, shape, root, path, found)
    elif origin is tuple:
        _expect(shape.get("type") == "array" and "items" in shape, path, "an array", shape, found)
        if "items" in shape:
            _compare(get_args(hint)[0], shape["items"], root, f"{path}[]", found)
    elif origin in (dict, Mapping):
        ok = shape.get("type") == "object" and "properties" not in shape
        _expect(ok and isinstance(shape.get("additionalProperties"), Mapping), path, "a map", shape, found)
        if isinstance(shape.get("additionalProperties"), Mapping):
            _compare(get_args(hint)[1], shape["additionalProperties"], root, f"{path}.*", found)
    elif origin is Literal:
        values = set(get_args(hint))
        schema_values = (
            set(shape["enum"]) if "enum" in shape else {shape["const"]} if "const" in shape else None
        )
        _expect(schema_values == values, path, f"the values {sorted(map(str, values))}", shape, found)
    elif hint in _PRIMITIVES:
        _expect(shape.get("type") == _PRIMITIVES[hint], path, _PRIMITIVES[hint], shape, found)
    else:
        found.append(f"{path}: a type this comparison does not know: {hint!r}")


def _compare_object(
    cls: Any, node: Mapping[str, Any], root: Mapping[str, Any], path: str, found: list[str]
) -> None:
    _expect(node.get("type") == "object", path, "an object", node, found)
    if node.get("additionalProperties") is not False:
        found.append(f"{path}: the schema allows other properties; {cls.__name__} has none")
    fields = {f.key: f for f in fields_of(cls)}
    properties = node.get("properties", {})
    for key in sorted(properties.keys() - fields.keys()):
        found.append(f"{path}.{key}: in the schema, not a field of {cls.__name__}")
    for key in sorted(fields.keys() - properties.keys()):
        found.append(f"{path}.{key}: a field of {cls.__name__}, not in the schema")
    required = set(node.get("required", ()))
    for key in sorted(required - properties.keys()):
        found.append(f"{path}.{key}: required by the schema, which does not describe it")
    for key, f in sorted(fields.items()):
        if key not in properties:
            continue
        if (key in required) == f.omitted:
            said = "required" if key in required else "not required"
            found.append(
                f"{path}.{key}: {said} in the schema, {'Absent' if f.omitted else 'always there'} in the type"
            )
        hint = f.hint
        if f.omitted:  # Absent[X]: None is no key, so the value is X, never null
            hint, _ = nullable(hint)
        _compare(hint, properties[key], root, f"{path}.{key}", found)


def _expect(ok: bool, path: str, what: str, node: Mapping[str, Any], found: list[str]) -> None:
    if not ok:
        found.append(f"{path}: {what} in the type, {dict(node)} in the schema")
