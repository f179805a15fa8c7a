"""Check Kubernetes objects against upstream CustomResourceDefinitions, as the API server would.

The CRDs come from the upstream releases' Go modules (``go mod download``, as a user gets
them); :meth:`CrdVersion.validate` defaults, checks the schema (unknown fields are errors),
list types and every CEL rule, and a rule it cannot evaluate raises
:class:`UnsupportedRuleError`: nothing is silently passed. The steps: CONTRIBUTING.md,
"CRD conformance".
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import celpy
import celpy.celtypes as ct
import jsonschema
import lark
import yaml
from jsonschema.exceptions import ValidationError

try:
    from yaml import CSafeLoader as _FastSafeLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader as _FastSafeLoader  # type: ignore[assignment]

KUEUE_MODULE: Final = "sigs.k8s.io/kueue"
NFD_MODULE: Final = "sigs.k8s.io/node-feature-discovery"
KUEUE_VERSIONS: Final = ("v0.17.0", "v0.19.2")
#: the newest release that serves kueue.x-k8s.io/v1beta1 only (v0.15.0 added v1beta2): the
#: target of GeneratorConfig kueueAPIVersion v1beta1
KUEUE_V1BETA1_VERSION: Final = "v0.14.8"
#: Kueue API version -> the pinned releases that serve it
SERVING: Final = {"v1beta2": KUEUE_VERSIONS, "v1beta1": (KUEUE_V1BETA1_VERSION, *KUEUE_VERSIONS)}
NFD_VERSION: Final = "v0.19.0"
KUEUE_CRD_DIR: Final = "config/components/crd/bases"
NFD_CRD_FILE: Final = "deployment/base/nfd-crds/nfd-api-crds.yaml"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
NFD_GROUP: Final = "nfd.k8s-sigs.io"
CHECKED_GROUPS: Final = frozenset({KUEUE_GROUP, NFD_GROUP})

Obj = dict[str, Any]


class CRDSourceError(RuntimeError):
    """The upstream CRDs could not be obtained (``go`` missing, module not served, ...)."""


class UnsupportedRuleError(RuntimeError):
    """A CRD uses something this checker cannot evaluate faithfully."""


@dataclass(frozen=True, order=True)
class Problem:
    """One reason the API server would refuse an object."""

    path: str  # field path, Kubernetes style: spec.levels[3].nodeLabel, spec.labels[key]
    message: str
    rule: str  # what was violated: a CEL rule's text, or a schema keyword such as "maxItems: 16"
    source: str = "schema"  # schema | strict | metadata | list-type | cel | catalog

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message} [{self.source}: {self.rule}]"


# --------------------------------------------------------------------------------------------
# Obtaining the CRDs from the upstream releases
# --------------------------------------------------------------------------------------------


@functools.cache
def go_module_dir(module: str, version: str) -> Path:
    """Download ``module@version`` into the Go module cache (if needed); return its directory."""
    go = shutil.which("go")
    if go is None:
        raise CRDSourceError(
            f"`go` is not on PATH: it is needed to download {module}@{version}, whose CRDs "
            "tasgen's output is checked against"
        )
    env = dict(os.environ, GOTOOLCHAIN="local", GO111MODULE="on")
    env["GOFLAGS"] = " ".join(filter(None, [env.get("GOFLAGS", ""), "-mod=mod"]))
    with tempfile.TemporaryDirectory(prefix="tasgen-crds-") as cwd:  # outside any go.mod
        try:
            done = subprocess.run(
                [go, "mod", "download", "-json", f"{module}@{version}"],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CRDSourceError(f"go mod download {module}@{version} failed: {exc}") from exc
    try:
        info = json.loads(done.stdout) if done.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    if done.returncode != 0 or info.get("Error") or not info.get("Dir"):
        detail = info.get("Error") or done.stderr.strip() or done.stdout.strip()
        raise CRDSourceError(f"go mod download {module}@{version} failed (exit {done.returncode}): {detail}")
    directory = Path(info["Dir"])
    if not directory.is_dir():
        raise CRDSourceError(f"go mod download {module}@{version}: {directory} does not exist")
    return directory


def kueue_crd_paths(version: str) -> list[Path]:
    """The CRD files of a Kueue release."""
    base = go_module_dir(KUEUE_MODULE, version) / KUEUE_CRD_DIR
    paths = sorted(base.glob("*.yaml"))
    if not paths:
        raise CRDSourceError(f"no CRDs under {base}")
    return paths


def nfd_crd_paths(version: str) -> list[Path]:
    """The CRD file of an NFD release (NodeFeature, NodeFeatureGroup, NodeFeatureRule)."""
    path = go_module_dir(NFD_MODULE, version) / NFD_CRD_FILE
    if not path.is_file():
        raise CRDSourceError(f"{path} does not exist")
    return [path]


# --------------------------------------------------------------------------------------------
# CEL: one environment, compiled programs cached by rule text
# --------------------------------------------------------------------------------------------

_MACROS: Final = frozenset({"has", "all", "exists", "exists_one", "map", "filter"})
_CEL_RESERVED_WORDS: Final = (
    "true false null in as break const continue else for function if import let loop "
    "package namespace return var void while"
)
_CEL_RESERVED: Final = frozenset(_CEL_RESERVED_WORDS.split())
_CEL_ESCAPABLE: Final = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")


def _ascii_lower(s: ct.StringType) -> ct.StringType:
    return ct.StringType(str(s).translate(str.maketrans(_UPPER, _LOWER)))


def _ascii_upper(s: ct.StringType) -> ct.StringType:
    return ct.StringType(str(s).translate(str.maketrans(_LOWER, _UPPER)))


_UPPER: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER: Final = _UPPER.lower()


def _is_sorted(values: list[Any]) -> ct.BoolType:
    return ct.BoolType(all(values[i] <= values[i + 1] for i in range(len(values) - 1)))


def _index_of(receiver: Any, item: Any) -> ct.IntType:
    if isinstance(receiver, ct.StringType):
        return ct.IntType(str(receiver).find(str(item)))
    for i, value in enumerate(receiver):
        if value == item:
            return ct.IntType(i)
    return ct.IntType(-1)


def _last_index_of(receiver: Any, item: Any) -> ct.IntType:
    if isinstance(receiver, ct.StringType):
        return ct.IntType(str(receiver).rfind(str(item)))
    for i in range(len(receiver) - 1, -1, -1):
        if receiver[i] == item:
            return ct.IntType(i)
    return ct.IntType(-1)


def _list_min(values: list[Any]) -> Any:
    if not values:
        raise ValueError("min called on an empty list")
    return min(values)


def _list_max(values: list[Any]) -> Any:
    if not values:
        raise ValueError("max called on an empty list")
    return max(values)


# A few of the Kubernetes CEL library functions (k8s.io/apiserver/pkg/cel/library and cel-go's
# strings extension) whose semantics are simple enough to reproduce exactly. Anything else that
# cel-python lacks (quantity, url, ip, cidr, format, ...) makes the rule unsupported.
_K8S_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "lowerAscii": _ascii_lower,
    "upperAscii": _ascii_upper,
    "trim": lambda s: ct.StringType(str(s).strip(" \t\n\r\v\f")),
    "join": lambda values, sep="": ct.StringType(str(sep).join(map(str, values))),
    "isSorted": _is_sorted,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "min": _list_min,
    "max": _list_max,
}
_SUPPORTED_FUNCTIONS: Final = (
    _MACROS
    | frozenset(_K8S_FUNCTIONS)
    | frozenset(name for name in celpy.evaluation.base_functions if name.isidentifier())
)


@functools.cache
def _cel_env() -> celpy.Environment:
    return celpy.Environment()


def _called_functions(tree: lark.Tree[Any]) -> set[str]:
    names: set[str] = set()
    for node in tree.iter_subtrees():
        token: object = None
        if node.data in ("ident_arg", "dot_ident_arg"):
            token = node.children[0]
        elif node.data == "member_dot_arg":
            token = node.children[1]
        if isinstance(token, lark.Token):
            names.add(str(token))
    return names


def _identifiers(tree: lark.Tree[Any]) -> set[str]:
    return {
        str(node.children[0])
        for node in tree.iter_subtrees()
        if node.data == "ident" and isinstance(node.children[0], lark.Token)
    }


@dataclass(frozen=True)
class CompiledCel:
    """A compiled CEL expression and whether it reads ``oldSelf``."""

    text: str
    program: celpy.Runner
    uses_old_self: bool


@functools.cache
def compile_cel(text: str) -> CompiledCel:
    """Compile one CEL expression; raise :class:`UnsupportedRuleError` if it cannot be run."""
    env = _cel_env()
    try:
        tree = env.compile(text)
    except Exception as exc:
        raise UnsupportedRuleError(f"CEL rule does not parse: {text!r}: {exc}") from exc
    unknown = _called_functions(tree) - _SUPPORTED_FUNCTIONS
    if unknown:
        raise UnsupportedRuleError(
            f"CEL rule {text!r} calls {sorted(unknown)}, which cel-python does not provide "
            "(Kubernetes CEL library function?): it cannot be checked faithfully"
        )
    program = env.program(tree, functions=_K8S_FUNCTIONS)
    return CompiledCel(text, program, "oldSelf" in _identifiers(tree))


def _cel_field_name(name: str) -> str | None:
    """The name under which Kubernetes exposes a declared property to CEL (None: not at all)."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _CEL_ESCAPABLE.match(name):
        return None
    return (
        name.replace("__", "__underscores__")
        .replace(".", "__dot__")
        .replace("-", "__dash__")
        .replace("/", "__slash__")
    )


# --------------------------------------------------------------------------------------------
# The structural schema, as a tree of nodes
# --------------------------------------------------------------------------------------------

_NO_DEFAULT: Final = object()


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry, compiled."""

    cel: CompiledCel
    message: str
    message_expression: CompiledCel | None
    field_path: str
    reason: str

    @property
    def text(self) -> str:
        return self.cel.text


def _compile_rule(raw: Mapping[str, Any]) -> Rule:
    if raw.get("optionalOldSelf"):
        raise UnsupportedRuleError(f"optionalOldSelf is not supported: {raw.get('rule')!r}")
    expression = raw.get("messageExpression")
    return Rule(
        cel=compile_cel(str(raw["rule"])),
        message=str(raw.get("message", "")),
        message_expression=compile_cel(str(expression)) if expression else None,
        field_path=str(raw.get("fieldPath", "")),
        reason=str(raw.get("reason", "FieldValueInvalid")),
    )


@dataclass
class Node:
    """One node of a structural schema."""

    raw: Mapping[str, Any]
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    items: Node | None = None
    rules: list[Rule] = field(default_factory=list)
    has_rules_below: bool = False

    @property
    def nullable(self) -> bool:
        return bool(self.raw.get("nullable"))

    @property
    def default(self) -> Any:
        return self.raw.get("default", _NO_DEFAULT)

    @property
    def keeps_unknown(self) -> bool:
        return bool(self.raw.get("x-kubernetes-preserve-unknown-fields"))

    @property
    def list_type(self) -> str:
        return str(self.raw.get("x-kubernetes-list-type", "atomic"))

    @property
    def map_keys(self) -> tuple[str, ...]:
        return tuple(self.raw.get("x-kubernetes-list-map-keys", ()))


def build_node(raw: Mapping[str, Any]) -> Node:
    """Build the node tree of a structural schema, compiling its CEL rules."""
    node = Node(raw)
    for name, sub in (raw.get("properties") or {}).items():
        node.properties[name] = build_node(sub)
    additional = raw.get("additionalProperties")
    if isinstance(additional, Mapping):
        node.additional = build_node(additional)
    if isinstance(raw.get("items"), Mapping):
        node.items = build_node(raw["items"])
    node.rules = [_compile_rule(r) for r in raw.get("x-kubernetes-validations") or ()]
    children = [*node.properties.values(), node.additional, node.items]
    node.has_rules_below = bool(node.rules) or any(c and c.has_rules_below for c in children)
    return node


def _child(node: Node | None, key: str | int) -> Node | None:
    if node is None:
        return None
    if isinstance(key, int):
        return node.items
    return node.properties.get(key, node.additional)


def format_path(node: Node | None, parts: Iterable[str | int]) -> str:
    """Kubernetes field path: ``spec.levels[3].nodeLabel``, map keys as ``labels[key]``."""
    out = ""
    for part in parts:
        is_key = node is not None and part not in node.properties and node.additional is not None
        if isinstance(part, int) or is_key:
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
        node = _child(node, part)
    return out


# --------------------------------------------------------------------------------------------
# Structural defaulting and pruning (what the API server does to a decoded object)
# --------------------------------------------------------------------------------------------


def prune_nulls(value: Any, node: Node | None) -> None:
    """Drop ``null`` values of non-nullable fields and map entries without a default (in place)."""
    if node is None:
        return
    if isinstance(value, dict):
        for key in list(value):
            sub = _child(node, key)
            if sub is None:
                continue
            if value[key] is None and sub.default is _NO_DEFAULT and not sub.nullable:
                del value[key]
            else:
                prune_nulls(value[key], sub)
    elif isinstance(value, list):
        for item in value:
            prune_nulls(item, node.items)


def _null_default(item: Any, node: Node | None) -> Any:
    """A non-nullable ``null`` takes the schema's default, if there is one."""
    if item is None and node is not None and not node.nullable and node.default is not _NO_DEFAULT:
        return copy.deepcopy(node.default)
    return item


def apply_defaults(value: Any, node: Node | None) -> None:
    """Fill in the schema's ``default`` values (in place), as structural defaulting does."""
    if node is None:
        return
    if isinstance(value, dict):
        for key, sub in node.properties.items():
            if sub.default is not _NO_DEFAULT and key not in value:
                value[key] = copy.deepcopy(sub.default)
        for key in value:
            child = _child(node, key)
            value[key] = _null_default(value[key], child)
            apply_defaults(value[key], child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            value[i] = _null_default(item, node.items)
            apply_defaults(value[i], node.items)


def prune_unknown(value: Any, node: Node | None, *, root: bool = False) -> Any:
    """A copy of ``value`` without the fields its schema does not know (what gets stored)."""
    if node is None:
        return value
    if isinstance(value, dict):
        if node.properties or node.additional is not None or not node.keeps_unknown:
            known = set(node.properties) | ({"apiVersion", "kind", "metadata"} if root else set())
            return {
                k: prune_unknown(v, _child(node, k))
                for k, v in value.items()
                if k in known or node.additional is not None or node.keeps_unknown
            }
        return value
    if isinstance(value, list):
        return [prune_unknown(v, node.items) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# openAPIV3Schema -> JSON Schema (draft 2020-12) with a few Kubernetes keywords kept
# --------------------------------------------------------------------------------------------

_PLAIN_KEYWORDS_WORDS: Final = (
    "enum maximum minimum multipleOf maxLength minLength pattern maxItems minItems "
    "uniqueItems maxProperties minProperties required format x-kubernetes-list-type "
    "x-kubernetes-list-map-keys"
)
_PLAIN_KEYWORDS: Final = tuple(_PLAIN_KEYWORDS_WORDS.split())
_JSON_TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean"})

DNS1123_LABEL: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
LABEL_VALUE: Final = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
QUALIFIED_NAME: Final = r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"

_STRING_MAP: Final = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT_META_SCHEMA: Final[Obj] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 253, "pattern": DNS1123_SUBDOMAIN},
        "generateName": {"type": "string"},
        "namespace": {"type": "string", "maxLength": 63, "pattern": DNS1123_LABEL},
        "labels": {
            **_STRING_MAP,
            "x-tasgen-keys": "label",
            "additionalProperties": {"type": "string", "maxLength": 63, "pattern": LABEL_VALUE},
        },
        "annotations": {**_STRING_MAP, "x-tasgen-keys": "annotation"},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "additionalProperties": False,
                "properties": {
                    **{k: {"type": "string"} for k in ("apiVersion", "kind", "name", "uid")},
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": {"type": ["string", "null"], "format": "date-time"},
        "deletionTimestamp": {"type": ["string", "null"], "format": "date-time"},
        "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
        "managedFields": {"type": "array", "items": {"type": "object"}},
        "selfLink": {"type": "string"},
    },
}


def _json_type(raw: Mapping[str, Any]) -> list[str] | None:
    if raw.get("x-kubernetes-int-or-string"):
        types = ["integer", "string"]
    elif raw.get("type"):
        if raw["type"] not in _JSON_TYPES:
            raise UnsupportedRuleError(f"unknown schema type {raw['type']!r}")
        types = [str(raw["type"])]
    else:
        return None
    return [*types, "null"] if raw.get("nullable") else types


def _bounds(raw: Mapping[str, Any], out: Obj) -> None:
    # OpenAPI v3.0 spells exclusive bounds as booleans next to minimum/maximum.
    for bound, flag in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if raw.get(flag) and bound in raw:
            out.pop(bound, None)
            out[flag] = raw[bound]


def to_json_schema(raw: Mapping[str, Any], *, value_only: bool = False) -> Obj:
    """Convert one structural schema node to JSON Schema.

    ``value_only`` is for the branches of anyOf/allOf/oneOf/not, which in a structural schema only
    add value validations: they neither declare types nor forbid fields.
    """
    out: Obj = {k: copy.deepcopy(raw[k]) for k in _PLAIN_KEYWORDS if k in raw}
    _bounds(raw, out)
    types = _json_type(raw)
    if types is not None:
        out["type"] = types if len(types) > 1 else types[0]
    _combinators(raw, out)
    if "properties" in raw:
        out["properties"] = {
            k: to_json_schema(v, value_only=value_only) for k, v in raw["properties"].items()
        }
    if isinstance(raw.get("items"), Mapping):
        out["items"] = to_json_schema(raw["items"], value_only=value_only)
    additional = raw.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = to_json_schema(additional, value_only=value_only)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif not value_only and _is_closed_object(raw):
        out["additionalProperties"] = False  # unknown fields: strict field validation
    if raw.get("x-kubernetes-embedded-resource") and not value_only:
        _add_type_meta(out, raw)
    return out


def _combinators(raw: Mapping[str, Any], out: Obj) -> None:
    for key in ("anyOf", "allOf", "oneOf"):
        if key in raw:
            out[key] = [to_json_schema(sub, value_only=True) for sub in raw[key]]
    if "not" in raw:
        out["not"] = to_json_schema(raw["not"], value_only=True)


def _is_closed_object(raw: Mapping[str, Any]) -> bool:
    return raw.get("type") == "object" and not raw.get("x-kubernetes-preserve-unknown-fields")


def _add_type_meta(out: Obj, raw: Mapping[str, Any]) -> None:
    """apiVersion, kind and metadata are implicit at the root and in embedded resources."""
    props = out.setdefault("properties", {})
    props["apiVersion"] = to_json_schema(raw.get("properties", {}).get("apiVersion", {})) | {"type": "string"}
    props["kind"] = to_json_schema(raw.get("properties", {}).get("kind", {})) | {"type": "string"}
    meta = raw.get("properties", {}).get("metadata", {})
    # A CRD may only narrow metadata.name and metadata.generateName.
    narrowed = {
        k: to_json_schema(v, value_only=True)
        for k, v in (meta.get("properties") or {}).items()
        if k in ("name", "generateName")
    }
    props["metadata"] = OBJECT_META_SCHEMA
    if narrowed:
        props["metadata"] = {"allOf": [OBJECT_META_SCHEMA, {"properties": narrowed}]}


# --------------------------------------------------------------------------------------------
# The JSON Schema validator, with Kubernetes' keywords and messages
# --------------------------------------------------------------------------------------------

_DATE_TIME: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?"
    r"(?:[Zz]|[+-]\d{2}:?\d{2})?$"
)
_INT_RANGES: Final = {"int32": 32, "int64": 64}
# Formats that kube-openapi validates but this checker does not: meeting one fails loudly.
_UNCHECKED_FORMATS_WORDS: Final = (
    "bsonobjectid uri email hostname ipv4 ipv6 cidr mac uuid uuid3 uuid4 uuid5 isbn "
    "isbn10 isbn13 creditcard ssn hexcolor rgbcolor byte duration datetime date"
)
_UNCHECKED_FORMATS: Final = frozenset(_UNCHECKED_FORMATS_WORDS.split())


def _format_ok(fmt: str, instance: Any) -> bool:
    if fmt in _INT_RANGES and isinstance(instance, int) and not isinstance(instance, bool):
        limit: int = 2 ** (_INT_RANGES[fmt] - 1)
        return -limit <= instance < limit
    if fmt == "date-time" and isinstance(instance, str):
        match = _DATE_TIME.match(instance)
        if not match:
            return False
        year, month, day, hour, minute, second = (int(g or 0) for g in match.groups())
        try:
            dt.datetime(year, month, day, hour, minute, second)
        except ValueError:
            return False
    return True


def _check_formats(raw: Any) -> None:
    """Fail loudly on a format the API server checks and this validator would not."""
    if isinstance(raw, Mapping):
        if raw.get("format") in _UNCHECKED_FORMATS:
            raise UnsupportedRuleError(f"format {raw['format']!r} is not checked by this validator")
        for key, value in raw.items():
            if key not in ("default", "enum", "example"):
                _check_formats(value)
    elif isinstance(raw, list):
        for value in raw:
            _check_formats(value)


def _kw_format(validator: Any, fmt: str, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if not _format_ok(fmt, instance):
        yield ValidationError(f"Invalid value: {instance!r}: must be of format {fmt}")


def _kw_required(
    validator: Any, required: list[str], instance: Any, schema: Obj
) -> Iterator[ValidationError]:
    if isinstance(instance, dict):
        for name in required:
            if name not in instance:
                yield ValidationError("Required value", path=[name])


def _kw_additional(validator: Any, additional: Any, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    extras = [k for k in instance if k not in schema.get("properties", {})]
    if additional is False:
        for key in extras:
            yield ValidationError("unknown field", path=[key])
    elif isinstance(additional, dict):
        for key in extras:
            yield from validator.descend(instance[key], additional, path=key)


def _kw_list_type(validator: Any, list_type: str, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if not isinstance(instance, list) or list_type not in ("set", "map"):
        return
    keys = schema.get("x-kubernetes-list-map-keys", ())
    seen: set[str] = set()
    for i, item in enumerate(instance):
        if list_type == "map" and isinstance(item, dict):
            identity: Any = {k: item.get(k) for k in keys}
        else:
            identity = item
        token = json.dumps(identity, sort_keys=True)
        if token in seen:
            yield ValidationError(f"Duplicate value: {token}", path=[i])
        seen.add(token)


def _kw_keys(validator: Any, kind: str, instance: Any, schema: Obj) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for key in instance:
        problem = qualified_name_problem(key.lower() if kind == "annotation" else key)
        if problem:
            yield ValidationError(f"Invalid value: {key!r}: {problem}", path=[key])
    if kind == "annotation":
        size = sum(len(k) + len(str(v)) for k, v in instance.items())
        if size > 256 * 1024:
            yield ValidationError(f"Too long: must have at most 262144 bytes (has {size})")


def qualified_name_problem(name: str) -> str | None:
    """Why ``name`` is not a Kubernetes qualified name (label or annotation key), or None."""
    prefix, _, short = name.rpartition("/")
    if "/" in prefix:
        return "a qualified name must consist of an optional DNS prefix, '/' and a name"
    if "/" in name and not prefix:
        return "prefix part must be non-empty"
    if prefix and (len(prefix) > 253 or not re.match(DNS1123_SUBDOMAIN, prefix)):
        return "prefix part must be a lowercase RFC 1123 subdomain"
    if not short or len(short) > 63 or not re.match(QUALIFIED_NAME, short):
        return (
            "name part must consist of at most 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


_K8sValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    {
        "format": _kw_format,
        "required": _kw_required,
        "additionalProperties": _kw_additional,
        "x-kubernetes-list-type": _kw_list_type,
        "x-tasgen-keys": _kw_keys,
    },
)

# Errors after which the API server does not evaluate CEL rules (apiextensions hasBlockingErr).
_BLOCKING: Final = frozenset({"type", "enum", "required", "maxLength", "maxItems", "maxProperties"})


def _json_kind(value: Any) -> str:
    for python, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
        (type(None), "null"),
    ):
        if isinstance(value, python):
            return name
    return type(value).__name__


def _message(error: ValidationError) -> str:
    keyword, value, instance = error.validator, error.validator_value, error.instance
    size = len(instance) if isinstance(instance, list | dict | str) else None
    messages: dict[str, Callable[[], str]] = {
        "type": lambda: f"Invalid value: {_json_kind(instance)}: must be of type {value}",
        "enum": lambda: f"Unsupported value: {instance!r}: supported values: {value}",
        "maxItems": lambda: f"Too many: {size}: must have at most {value} items",
        "minItems": lambda: f"Invalid value: {size}: should have at least {value} items",
        "maxLength": lambda: f"Too long: may not be longer than {value} (is {size})",
        "minLength": lambda: f"Invalid value: {instance!r}: should be at least {value} chars long",
        "maxProperties": lambda: f"Too many: {size}: must have at most {value} properties",
        "minProperties": lambda: f"Invalid value: {size}: must have at least {value} properties",
        "pattern": lambda: f"Invalid value: {instance!r}: should match '{value}'",
        "minimum": lambda: f"Invalid value: {instance}: should be >= {value}",
        "maximum": lambda: f"Invalid value: {instance}: should be <= {value}",
        "exclusiveMinimum": lambda: f"Invalid value: {instance}: should be > {value}",
        "exclusiveMaximum": lambda: f"Invalid value: {instance}: should be < {value}",
    }
    describe = messages.get(str(keyword))
    return describe() if describe else error.message


def _problem(error: ValidationError, root: Node) -> Problem:
    keyword = str(error.validator)
    source = {
        "additionalProperties": "strict",
        "x-kubernetes-list-type": "list-type",
        "x-tasgen-keys": "metadata",
    }.get(keyword, "schema")
    if keyword == "required":
        rule = "required"
    elif keyword == "additionalProperties":
        rule = "unknown fields are rejected (fieldValidation=Strict)"
    elif keyword == "x-tasgen-keys":
        rule = f"{error.validator_value} keys are qualified names"
    else:
        rule = f"{keyword}: {json.dumps(error.validator_value)}"
    path = format_path(root, list(error.absolute_path))
    message = _message(error)
    if source == "strict":
        message = f'unknown field "{path}"'
    return Problem(path, message, rule, source)


# --------------------------------------------------------------------------------------------
# CEL evaluation over an object
# --------------------------------------------------------------------------------------------


_CEL_SCALARS: Final[dict[type, Callable[[Any], Any]]] = {
    bool: ct.BoolType,
    int: ct.IntType,
    float: ct.DoubleType,
    str: ct.StringType,
}


def to_cel(value: Any, node: Node | None) -> Any:
    """Kubernetes' CEL view of a value: declared properties under their escaped names."""
    scalar = _CEL_SCALARS.get(type(value))
    if scalar is not None:
        return scalar(value)
    if value is None:
        return None
    if isinstance(value, list):
        return ct.ListType([to_cel(v, node.items if node else None) for v in value])
    if isinstance(value, dict):
        return ct.MapType(dict(_cel_items(value, node)))
    raise TypeError(f"not a JSON value: {value!r}")


def _cel_items(value: Obj, node: Node | None) -> Iterator[tuple[ct.StringType, Any]]:
    for key, item in value.items():
        if node is not None and key in node.properties:
            name = _cel_field_name(key)
            if name is not None:
                yield ct.StringType(name), to_cel(item, node.properties[key])
        else:
            yield ct.StringType(key), to_cel(item, node.additional if node else None)


@dataclass
class _CelRun:
    root: Node
    cache: dict[tuple[int, str], _Outcomes]
    problems: list[Problem] = field(default_factory=list)

    def walk(self, value: Any, old: Any, node: Node, path: list[str | int], has_old: bool) -> None:
        if value is None or not node.has_rules_below:
            return  # rules only see non-null values
        if node.rules:
            self.evaluate(value, old, node, path, has_old)
        for key, sub_value, sub_old, sub_has_old, sub_node in self._children(value, old, node, has_old):
            self.walk(sub_value, sub_old, sub_node, [*path, key], sub_has_old)

    @staticmethod
    def _children(
        value: Any, old: Any, node: Node, has_old: bool
    ) -> Iterator[tuple[str | int, Any, Any, bool, Node]]:
        if isinstance(value, dict):
            old_map = old if has_old and isinstance(old, dict) else {}
            for key, sub_value in value.items():
                sub = _child(node, key)
                if sub is not None:
                    yield key, sub_value, old_map.get(key), key in old_map, sub
        elif isinstance(value, list) and node.items is not None:
            old_items = _correlate(old, node) if has_old else {}
            for i, item in enumerate(value):
                identity = _map_key(item, node)
                found = identity is not None and identity in old_items
                yield i, item, old_items.get(identity) if found else None, found, node.items

    def evaluate(self, value: Any, old: Any, node: Node, path: list[str | int], has_old: bool) -> None:
        key = (id(node), json.dumps([value, old, has_old], sort_keys=True, default=repr))
        outcomes = self.cache.get(key)
        if outcomes is None:
            outcomes = _outcomes(value, old, node, has_old)
            if len(self.cache) >= _CEL_CACHE_SIZE:
                self.cache.clear()
            self.cache[key] = outcomes
        where = format_path(self.root, path)
        for rule, message in outcomes:
            self.problems.append(Problem(where + rule.field_path, message, rule.text, "cel"))


_CEL_CACHE_SIZE: Final = 50_000
_Outcomes = tuple[tuple[Rule, str], ...]


def _outcomes(value: Any, old: Any, node: Node, has_old: bool) -> _Outcomes:
    """The failing rules of ``node`` and their messages, for one value (and old value)."""
    activation: dict[str, Any] = {"self": to_cel(value, node)}
    if has_old:
        activation["oldSelf"] = to_cel(old, node)
    failed: list[tuple[Rule, str]] = []
    for rule in node.rules:
        if rule.cel.uses_old_self and not has_old:
            continue  # a transition rule: only on update, where an old value correlates
        message = _run_rule(rule, activation)
        if message is not None:
            failed.append((rule, message))
    return tuple(failed)


def _run_rule(rule: Rule, activation: Mapping[str, Any]) -> str | None:
    """None if the rule holds, else the API server's message."""
    try:
        result = rule.cel.program.evaluate(dict(activation))
    except Exception as exc:
        return f"Invalid value: rule evaluation error: {exc}"
    if not isinstance(result, ct.BoolType):
        return f"Invalid value: rule did not evaluate to a bool: {result!r}"
    return None if result else _rule_message(rule, activation)


def _map_key(item: Any, node: Node) -> str | None:
    if node.list_type != "map" or not isinstance(item, dict):
        return None
    return json.dumps([item.get(k) for k in node.map_keys])


def _correlate(old: Any, node: Node) -> dict[str | None, Any]:
    """Old items of a list-type map by key; other lists' items do not correlate."""
    if not isinstance(old, list):
        return {}
    return {key: item for item in old if (key := _map_key(item, node)) is not None}


def _rule_message(rule: Rule, activation: Mapping[str, Any]) -> str:
    text: Any = None
    if rule.message_expression is not None:
        try:
            text = rule.message_expression.program.evaluate(dict(activation))
        except Exception:
            text = None  # the API server then falls back to message
    prefix = _REASONS.get(rule.reason, "Invalid value")
    if isinstance(text, str) and text.strip():
        return f"{prefix}: {text}"
    return f"{prefix}: {rule.message or 'failed rule: ' + rule.text}"


# How the API server words a failed rule, by the rule's reason.
_REASONS: Final = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}


# --------------------------------------------------------------------------------------------
# One served version of one CRD, and catalogs of them
# --------------------------------------------------------------------------------------------


class CrdVersion:
    """The compiled schema of one served version of one CRD."""

    def __init__(self, crd: Mapping[str, Any], version: Mapping[str, Any]) -> None:
        spec = crd["spec"]
        self.group: str = spec["group"]
        self.version: str = version["name"]
        self.kind: str = spec["names"]["kind"]
        self.namespaced: bool = spec.get("scope") == "Namespaced"
        self.served: bool = bool(version.get("served"))
        self.deprecated: bool = bool(version.get("deprecated"))
        # The warning the API server sends with every request using a deprecated version.
        self.deprecation: str | None = None
        if self.deprecated:
            default = f"{self.group}/{self.version} {self.kind} is deprecated"
            self.deprecation = str(version.get("deprecationWarning") or default)
        raw = (version.get("schema") or spec.get("validation") or {}).get("openAPIV3Schema")
        if not raw:
            raise UnsupportedRuleError(f"{self.api_version} {self.kind} has no openAPIV3Schema")
        _check_formats(raw)
        self.node = build_node(raw)
        self.node.properties["metadata"] = build_node(OBJECT_META_SCHEMA)
        self.json_schema = to_json_schema(raw)
        _add_type_meta(self.json_schema, raw)
        _K8sValidator.check_schema(self.json_schema)
        self._validator = _K8sValidator(self.json_schema)
        # CEL outcomes by schema node and value: rules are pure, and the interpreter is slow.
        self._cel_cache: dict[tuple[int, str], _Outcomes] = {}

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def _prepare(self, obj: Mapping[str, Any]) -> Obj:
        work = copy.deepcopy(dict(obj))
        prune_nulls(work, self.node)
        apply_defaults(work, self.node)
        return work

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Problem]:
        """The problems the API server would report for ``obj`` (empty: accepted)."""
        work = self._prepare(obj)
        errors = list(self._validator.iter_errors(work))
        problems = [_problem(e, self.node) for e in errors]
        meta = work.get("metadata")
        if isinstance(meta, dict) and not meta.get("name") and not meta.get("generateName"):
            problems.append(
                Problem(
                    "metadata.name",
                    "Required value: name or generateName is required",
                    "ObjectMeta",
                    "metadata",
                )
            )
        if self.node.has_rules_below:
            if any(e.validator in _BLOCKING for e in errors):
                problems.append(
                    Problem(
                        "",
                        "some validation rules were not checked because the object was invalid; "
                        "correct the existing errors to complete validation",
                        "x-kubernetes-validations",
                        "cel",
                    )
                )
            else:
                problems.extend(self._cel(work, old))
        return sorted(set(problems))

    def _cel(self, work: Obj, old: Mapping[str, Any] | None) -> list[Problem]:
        run = _CelRun(self.node, self._cel_cache)
        new = _cel_view(work, self.node)
        previous = _cel_view(self._prepare(old), self.node) if old else None
        run.walk(new, previous, self.node, [], previous is not None)
        return run.problems


def _cel_view(obj: Obj, root: Node) -> Obj:
    """What CEL rules see: the stored (pruned) object; of metadata, only name and generateName."""
    view: Obj = prune_unknown(obj, root, root=True)
    if isinstance(view.get("metadata"), dict):
        view["metadata"] = {k: v for k, v in view["metadata"].items() if k in ("name", "generateName")}
    return view


class KubeYamlLoader(_FastSafeLoader):
    """YAML read as kubectl reads manifests (sigs.k8s.io/yaml).

    Timestamps stay strings (PyYAML would make them datetimes), and a key given twice in one
    mapping is an error, as the API server's strict field validation reports it.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r}", key_node.start_mark,
                )  # fmt: skip
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


KubeYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(text: str) -> list[Any]:
    """The documents of a (multi-document) YAML manifest, as kubectl would read them."""
    return list(yaml.load_all(text, Loader=KubeYamlLoader))


_DOC_HEADER: Final = re.compile(
    r"^kind:\s*CustomResourceDefinition\s*$.*?^  group:\s*(\S+)\s*$.*?^    kind:\s*(\S+)\s*$",
    re.M | re.S,
)


@dataclass
class _CrdFile:
    path: Path
    kinds: set[tuple[str, str]]  # (group, kind), read cheaply without parsing the YAML

    @functools.cached_property
    def documents(self) -> list[Obj]:
        with self.path.open(encoding="utf-8") as stream:
            docs = yaml.load_all(stream, Loader=_FastSafeLoader)
            return [d for d in docs if isinstance(d, dict)]


class Catalog:
    """The CRDs of some releases: validates objects by apiVersion and kind.

    CRD files are parsed, and their schemas and CEL rules compiled, on first use of a kind.
    """

    def __init__(self, name: str, paths: Sequence[Path]) -> None:
        self.name = name
        self._files: list[_CrdFile] = []
        for path in paths:
            text = path.read_text(encoding="utf-8")
            kinds = {(m.group(1), m.group(2)) for m in _DOC_HEADER.finditer(text)}
            self._files.append(_CrdFile(path, kinds))
        self._versions: dict[tuple[str, str, str], CrdVersion | None] = {}

    def __repr__(self) -> str:
        return f"Catalog({self.name!r})"

    @property
    def groups(self) -> set[str]:
        return {group for f in self._files for group, _ in f.kinds}

    def crd_version(self, api_version: str, kind: str) -> CrdVersion | None:
        """The compiled CRD version serving ``apiVersion``/``kind`` here, or None."""
        group, _, version = api_version.rpartition("/")
        key = (group, version, kind)
        if key not in self._versions:
            self._versions[key] = self._compile(group, version, kind)
        return self._versions[key]

    def _compile(self, group: str, version: str, kind: str) -> CrdVersion | None:
        for crd_file in self._files:
            if (group, kind) not in crd_file.kinds:
                continue
            for doc in crd_file.documents:
                spec = doc.get("spec") or {}
                if spec.get("group") != group or spec.get("names", {}).get("kind") != kind:
                    continue
                for served in spec.get("versions") or ():
                    if served.get("name") == version:
                        return CrdVersion(doc, served)
        return None

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[Problem]:
        """Problems of ``obj`` against the CRD version it names (empty: accepted)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str):
            return [Problem("", "apiVersion and kind are required strings", "TypeMeta", "catalog")]
        crd = self.crd_version(api_version, kind)
        if crd is None:
            message = f"no CRD in {self.name} defines {kind} in {api_version}"
            return [Problem("apiVersion", message, "CRD lookup", "catalog")]
        if not crd.served:
            message = f"{api_version} {kind} is not served by {self.name}"
            return [Problem("apiVersion", message, "served", "catalog")]
        return crd.validate(obj, old)


@functools.cache
def catalog(kueue_version: str, nfd_version: str = NFD_VERSION) -> Catalog:
    """The CRDs of one Kueue release together with NFD's (cached for the session)."""
    paths = [*kueue_crd_paths(kueue_version), *nfd_crd_paths(nfd_version)]
    return Catalog(f"kueue {kueue_version} + nfd {nfd_version}", paths)


def catalogs() -> list[Catalog]:
    """One catalog per supported Kueue release."""
    return [catalog(version) for version in KUEUE_VERSIONS]


def is_checked(obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` belongs to a group whose CRDs are checked here (Kueue, NFD)."""
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.rpartition("/")[0] in CHECKED_GROUPS


def describe(obj: Mapping[str, Any]) -> str:
    """``Kind namespace/name (apiVersion)`` of an object, for messages."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
    name = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
    return f"{obj.get('kind')} {name or '<unnamed>'} ({obj.get('apiVersion')})"


def conformance_problems(
    objects: Iterable[Mapping[str, Any]], against: Sequence[Catalog] | None = None
) -> list[str]:
    """Every problem of every Kueue/NFD object, against every catalog (default: all releases)."""
    checked = list(against) if against is not None else catalogs()
    out: list[str] = []
    for obj in objects:
        if not is_checked(obj):
            continue
        for cat in checked:
            out.extend(f"{describe(obj)} vs {cat.name}: {p}" for p in cat.validate(obj))
    return out


def assert_conforms(objects: Iterable[Mapping[str, Any]]) -> None:
    """Fail if any Kueue or NFD object would be refused by any supported release's CRDs.

    Objects of other groups (Namespace, RBAC, Flux, ...) are not CRD-checked.
    """
    problems = conformance_problems(objects)
    if problems:
        shown = "\n  ".join(problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        raise AssertionError(f"{len(problems)} CRD conformance problem(s):\n  {shown}{more}")
