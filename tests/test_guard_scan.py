"""How YAML texts are judged around the parser: the guard's level-by-level scan of parsed
data (C-speed passes) finds trouble exactly when a plain walk over every key and value does
(keys that are not strings, integers beyond 64 bits, infinities and NaNs, sets), and data
the Rust walk calls plain has none; documents are counted by their markers as a
line-by-line count does."""

from __future__ import annotations

import math
from typing import Any

import yaml
import yaml_rs
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tasgen.parse import _document_count
from tasgen.parse.guard import _plain, _scan
from tests.conftest import examples

SCALARS = st.one_of(
    st.text(max_size=3),
    st.booleans(),
    st.none(),
    st.integers(),  # beyond 64 bits too
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 10**4000]),  # printable: 4,300 digits
    st.floats(),  # infinities and NaN too
)
KEYS = st.one_of(st.text(max_size=3), st.text(max_size=3), st.integers(), st.booleans(), st.none())
DATA = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(KEYS, inner, max_size=4),
        st.frozensets(st.text(max_size=2), max_size=2).map(set),
    ),
    max_leaves=30,
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4))


def troubles(data: Any) -> set[str]:
    """Every kind of trouble in data, by a plain recursive walk."""
    if isinstance(data, dict):
        found = {"key" for key in data if type(key) is not str}
        return found.union(*(troubles(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(troubles(v) for v in data))
    if isinstance(data, set):
        return {"key"}
    if type(data) is int and not -(2**63) <= data < 2**63:
        return {"number"}
    if type(data) is float and not math.isfinite(data):
        return {"number"}
    return set()


@settings(max_examples=examples(300), deadline=None)
@given(DATA)
def test_the_scan_finds_trouble_exactly_when_a_plain_walk_does(data: Any) -> None:
    found, expected = _scan(data), troubles(data)
    assert (found is None) == (not expected)
    assert found is None or found in expected


@settings(max_examples=examples(300), deadline=None)
@given(DATA)
def test_data_the_rust_walk_calls_plain_has_no_trouble(data: Any) -> None:
    assert not (_plain(data) and troubles(data))


@settings(max_examples=examples(100), deadline=None)
@given(st.recursive(st.one_of(st.text(max_size=3), st.booleans(), st.none()), _containers, max_leaves=30))
def test_data_of_strings_booleans_and_nulls_is_plain(data: Any) -> None:
    """The fast path is taken for what inventories are made of (else it would gain nothing)."""
    assert _plain(data)


def test_the_rust_walk_leaves_every_number_to_the_scan() -> None:
    """jsonschema-rs calls an integer of 5,000 digits an integer within any maximum."""
    numbers = [0, 1, 2**63, -(2**63) - 1, 10**5000, 1.5, float("nan"), float("inf")]
    assert not any(_plain({"a": [number]}) for number in numbers)
    assert not any(map(_plain, ({"a": {1: "b"}}, [{"x"}], {"a": [{None: "b"}]})))


def test_the_scan_names_each_kind_of_trouble() -> None:
    assert _scan({"nodes": [{"labels": {"a": "b"}, "n": 1, "f": 1.5}]}) is None
    assert _scan({"nodes": [{"labels": {1: "b"}}]}) == "key"
    assert _scan({"nodes": [{"labels": {"a": [2**64]}}]}) == "number"
    assert _scan([{"x": float("-inf")}]) == "number"
    assert _scan([[{"x": {"y"}}]]) == "key"


def documents_by_lines(text: str) -> int:
    """Documents counted line by line: a line that is '---' (then whitespace or nothing)
    starts one; content before the first marker is one more."""
    lines = text.split("\n")
    markers = [
        i for i, line in enumerate(lines) if line.startswith("---") and line[3:4] in ("", *" \t\r\x0b\x0c")
    ]
    before = "\n".join(lines[: markers[0]] if markers else lines)
    content = any(line.strip() and not line.lstrip().startswith("#") for line in before.splitlines())
    return len(markers) + content


LINES = st.sampled_from(["---", "--- ", "---x", "----", "a: 1", "# c", "", " ---", "---\t", "x", "--- # c"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(LINES, max_size=8).map("\n".join))
def test_documents_are_counted_by_their_markers_as_line_by_line(text: str) -> None:
    assert _document_count(text) == documents_by_lines(text)


#: lines of streams with directives, markers, end markers, comments and content
STREAM_LINES = st.sampled_from(
    ["%YAML 1.2", "%TAG !e! tag:example.com,2026:", "---", "--- ", "...", "# c", "", "a: 1", "- a", "x"]
)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(STREAM_LINES, max_size=8).map(lambda lines: "\n".join(lines) + "\n"))
def test_documents_are_counted_as_libyaml_counts_them(text: str) -> None:
    """Against libyaml's own document starts, on streams that it and yaml-rs both read: a
    directive before the first marker is no document (a '%YAML' line once made one list
    document count as two, so the list was taken for the documents)."""
    try:
        events = list(yaml.parse(text, Loader=yaml.CSafeLoader))
        yaml_rs.loads(text)
    except (yaml.YAMLError, yaml_rs.YAMLDecodeError, ValueError):
        assume(False)
        return
    started = sum(isinstance(e, yaml.DocumentStartEvent) for e in events)
    if "..." not in text.split("\n"):  # after an end marker, a bare document is not counted
        assert _document_count(text) == started
