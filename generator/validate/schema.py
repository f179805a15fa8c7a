"""JSON Schema checks of inventory documents and snapshots.

The schemas ship with the package (``tasgen schema KIND`` prints them for editors). A
document is checked first with jsonschema-rs, which is fast enough for 100k-node
inventories; only an invalid document is checked again with the pure-Python validator,
whose errors carry better wording and a full path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema_rs

if TYPE_CHECKING:
    import jsonschema

from ..model import Finding, Where
from ..rules.schema import SCHEMA
from ..sourcetypes import SOURCE_TYPES
from .patterns import in_words

#: kind -> the apiVersion it is written with
KINDS = {
    "TopologySource": "topology.gpustack.ai/v1alpha1",
    "ConfigMap": "v1",
    "NodeInventory": "topology.gpustack.ai/v1alpha1",
    "ClusterQueuePlan": "topology.gpustack.ai/v1alpha1",
    "GeneratorConfig": "topology.gpustack.ai/v1alpha1",
}
SNAPSHOT = "Snapshot"


@cache
def schema_of(kind: str) -> dict[str, Any]:
    text = resources.files("tasgen").joinpath("schemas", f"{kind}.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    if kind == "TopologySource":
        # Each source type describes its own part (generator/sourcetypes.py).
        schema["properties"]["spec"]["properties"].update({t.key: t.schema for t in SOURCE_TYPES})
    return schema


@cache
def _fast(kind: str) -> Any:
    return jsonschema_rs.validator_for(schema_of(kind))


@cache
def _wordy(kind: str) -> jsonschema.Draft202012Validator:
    import jsonschema  # noqa: PLC0415 - only invalid documents need it (slow to import)

    return jsonschema.Draft202012Validator(schema_of(kind))


def check(kind: str, instance: Any, where: Where) -> list[Finding]:
    """Every schema violation of ``instance``; empty when it conforms."""
    if _fast(kind).is_valid(instance):
        return []
    errors = sorted(_wordy(kind).iter_errors(instance), key=lambda e: list(map(str, e.path)))
    if not errors:
        # The two validators disagree (Python's "$" also matches before a final newline):
        # the fast one's verdict stands, in its own words.
        return [SCHEMA(where.at(*e.instance_path), e.message) for e in _fast(kind).iter_errors(instance)]
    return [_finding(error, where) for error in _leaves(errors)]


def _leaves(errors: list[jsonschema.ValidationError]) -> Iterator[jsonschema.ValidationError]:
    # An anyOf/oneOf failure is reported through its most relevant branch.
    for error in errors:
        if error.context:
            from jsonschema.exceptions import best_match  # noqa: PLC0415

            yield best_match(error.context)
        else:
            yield error


def _finding(error: jsonschema.ValidationError, where: Where) -> Finding:
    path = tuple(error.absolute_path)
    shown = ".".join(str(p) for p in path) or "(document)"
    message = f"{shown}: {error.message}"
    if error.validator == "pattern":  # the form in words, never the regular expression
        message = f"{shown}: {error.instance!r} is not {in_words(str(error.validator_value))}"
    hint = error.schema.get("description") if isinstance(error.schema, dict) else None
    if hint and error.validator in (
        "pattern",
        "type",
        "enum",
        "maxProperties",
        "minLength",
        "maxItems",
        "minItems",
    ):
        message += f" ({hint})"
    if error.validator == "additionalProperties":
        unexpected = _unexpected(error)
        if unexpected is not None:
            return SCHEMA(where.key_of(*path, unexpected), message)
    return SCHEMA(where.at(*path), message)


def _unexpected(error: jsonschema.ValidationError) -> str | None:
    allowed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    if isinstance(error.instance, dict):
        for key in error.instance:
            if key not in allowed:
                return str(key)
    return None
