"""Frozen dataclasses as JSON documents: a report is typed in code and written as its published
JSON Schema says (docs/explanation/plan.md "Formats"), both derived from the same type hints.

A field ``flavors_added`` is the key ``flavorsAdded`` (``from_`` is ``from``); a tuple is an array,
a ``Mapping[str, X]`` an object of X; a field typed :data:`Absent` is left out when it is None
(the schema does not require it), any other None is a JSON null. A generic dataclass is an
object whose fields' types are its parameters' (``BeforeAfter[str]``).
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Hashable, Mapping
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, cast, get_args, get_origin, get_type_hints

T = TypeVar("T")


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: a field whose None means "not in the document" (the schema does not require the key)
OMITTED = _Marker("OMITTED")
#: an integer the schema bounds below by 0 (a count)
NON_NEGATIVE = _Marker("NON_NEGATIVE")

Absent = Annotated[T | None, OMITTED]
Count = Annotated[int, NON_NEGATIVE]


def json_name(field: str) -> str:
    """``flavors_added`` -> ``flavorsAdded``; a trailing underscore (``from_``) is dropped."""
    head, *rest = field.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(frozen=True)
class Field:
    name: str  # the attribute
    key: str  # the document's key
    hint: Any  # the type hint, Annotated extras kept
    omitted: bool  # None is no key (else a null)


_FIELDS: dict[Any, tuple[Field, ...]] = {}


def dataclass_of(hint: Any) -> Any:
    """The dataclass a hint names (a generic one's class for ``BeforeAfter[str]``), else None."""
    cls = get_origin(hint) or hint
    return cls if isinstance(cls, type) and dataclasses.is_dataclass(cls) else None


def fields_of(cls: Any) -> tuple[Field, ...]:
    """A dataclass's fields with their keys and type hints (read once per class); a generic
    one's parameters (``BeforeAfter[str]``) replace its type variables in the hints."""
    if cls not in _FIELDS:
        origin = dataclass_of(cls)
        given = dict(zip(getattr(origin, "__parameters__", ()), get_args(cls), strict=False))
        hints = {k: _given(h, given) for k, h in get_type_hints(origin, include_extras=True).items()}
        _FIELDS[cls] = tuple(
            Field(f.name, json_name(f.name), hints[f.name], OMITTED in extras(hints[f.name]))
            for f in dataclasses.fields(origin)
        )
    return _FIELDS[cls]


def _given(hint: Any, given: dict[Any, Any]) -> Any:
    """``hint`` with the type variables of ``given`` replaced."""
    if isinstance(hint, TypeVar):
        return given.get(hint, hint)
    variables = getattr(hint, "__parameters__", ())
    return hint[tuple(given.get(v, v) for v in variables)] if given and variables else hint


def extras(hint: Any) -> tuple[Any, ...]:
    return get_args(hint)[1:] if get_origin(hint) is Annotated else ()


def bare(hint: Any) -> Any:
    """The hint without its Annotated extras."""
    return get_args(hint)[0] if get_origin(hint) is Annotated else hint


def nullable(hint: Any) -> tuple[Any, bool]:
    """The hint without None, and whether it held None."""
    hint = bare(hint)
    if get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in get_args(hint) if a is not type(None)]
        if len(rest) < len(get_args(hint)):
            (only,) = rest
            return only, True
    return hint, False


def to_json(value: Any) -> Any:
    """The document of a value: dataclasses, tuples and mappings made dicts and lists."""
    if isinstance(value, str | int | float | None):
        return value
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    document = {}
    for f in fields_of(type(value)):
        v = getattr(value, f.name)
        if v is not None or not f.omitted:
            document[f.key] = to_json(v)
    return document


def from_json(cls: type[T], document: Any) -> T:
    """The typed value of a document, checked against the type hints (ValueError names the
    path of the first mismatch)."""
    read: Reader = _reader(cast(Hashable, cls))  # a class is hashable; mypy's type[T] is not
    found: T = read(document, "$")
    return found


Reader = Callable[[Any, str], Any]


@cache
def _reader(hint: Any) -> Reader:
    """A function reading a document of ``hint`` (made once per hint: reports can be large)."""
    hint, can_be_null = nullable(hint)
    read = _non_null_reader(hint)
    if not can_be_null:
        return read

    def read_nullable(data: Any, path: str) -> Any:
        return None if data is None else read(data, path)

    return read_nullable


def _non_null_reader(hint: Any) -> Reader:
    origin = get_origin(hint)
    if dataclass_of(hint) is not None:
        return _object_reader(hint)
    if origin is tuple:
        item = _reader(get_args(hint)[0])
        return lambda data, path: tuple(item(x, f"{path}[{i}]") for i, x in enumerate(_is(list, data, path)))
    if origin in (dict, Mapping):
        value = _reader(get_args(hint)[1])
        return lambda data, path: {str(k): value(v, f"{path}.{k}") for k, v in _is(dict, data, path).items()}
    if origin is Literal:
        allowed = get_args(hint)
        return lambda data, path: data if _expect(data in allowed, path, f"one of {allowed}", data) else None
    # bool is an int to Python, not to JSON
    return lambda data, path: data if _expect(type(data) is hint, path, hint.__name__, data) else None


def _object_reader(cls: Any) -> Reader:
    known, make = fields_of(cls), dataclass_of(cls)
    keys = {f.key for f in known}
    readers = [(f, _reader(f.hint)) for f in known]

    def read(data: Any, path: str) -> Any:
        _is(dict, data, path)
        unknown = data.keys() - keys
        _expect(not unknown, path, "no other key", sorted(unknown))
        values = {}
        for f, field_reader in readers:
            value = data.get(f.key)
            if value is None and f.key not in data and not f.omitted:
                raise ValueError(f"{path}: no {f.key!r}")
            if value is None and f.key in data and f.omitted:
                raise ValueError(f"{path}: {f.key!r} is null (absent when it has no value)")
            if value is None and not f.omitted and not nullable(f.hint)[1]:
                raise ValueError(f"{path}.{f.key}: null where {bare(f.hint)} is expected")
            values[f.name] = field_reader(value, f"{path}.{f.key}")
        return make(**values)

    return read


def _is(kind: type, data: Any, path: str) -> Any:
    _expect(isinstance(data, kind), path, f"a {'list' if kind is list else 'mapping'}", data)
    return data


def _expect(ok: bool, path: str, what: str, data: Any) -> bool:
    if not ok:
        raise ValueError(f"{path}: {what} expected, not {data!r}")
    return True
