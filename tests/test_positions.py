"""Positions: 1-based line and column of values, keys, and values inside embedded snapshots."""

from __future__ import annotations

from tasgen.load.locate import locate
from tasgen.load.positions import PositionIndex, find_duplicate_key
from tasgen.model import Finding, Where
from tasgen.parse import ParseError, parse_text

TEXT = """\
kind: A
---
kind: B
metadata:
  name: b
  labels: {x: "1", y: "2"}
data:
  snap.yaml: |
    revision: r1
    nodes:
      n1:
        zone: z
  inline: '{"nodes": {"n2": {"rack": "r"}}}'
list:
  - x: 1
  - x: 2
    y: [3, 4]
"""


def test_values_keys_and_containers() -> None:
    index = PositionIndex(
        TEXT,
        [
            (1, ("metadata", "name")),
            (1, ("list", 1, "y", 1)),
            (1, ("metadata",)),
            (1, ("metadata", "labels", "y")),
        ],
        [(1, ("metadata", "name"))],
    )
    assert index.position(1, ("metadata", "name")) == (5, 9)
    assert index.position(1, ("metadata", "name"), key=True) == (5, 3)
    assert index.position(1, ("list", 1, "y", 1)) == (17, 12)
    assert index.position(1, ("metadata",)) == (4, 1)  # a mapping is shown at its key
    assert index.position(1, ("metadata", "labels", "y")) == (6, 23)


def test_a_missing_value_is_shown_at_its_nearest_parent() -> None:
    index = PositionIndex(TEXT, [(1, ("list", 1, "z"))])
    assert index.position(1, ("list", 1, "z")) == (16, 5)


def test_positions_inside_a_block_scalar_map_to_the_file() -> None:
    root = Where("f.yaml", 1, ("data", "snap.yaml"), ())
    problems = locate(
        [
            Finding(root.at("nodes", "n1", "zone"), "r", "value"),
            Finding(root.key_of("nodes", "n1", "zone"), "r", "key"),
            Finding(root.at("revision"), "r", "revision"),
        ],
        {"f.yaml": TEXT},
    )
    assert [(p.line, p.col, p.message) for p in problems] == [
        (9, 15, "revision"),
        (12, 9, "key"),
        (12, 15, "value"),
    ]


def test_positions_inside_a_quoted_scalar_stay_on_its_line() -> None:
    root = Where("f.yaml", 1, ("data", "inline"), ())
    [problem] = locate([Finding(root.key_of("nodes", "n2"), "r", "m")], {"f.yaml": TEXT})
    assert (problem.line, problem.col) == (13, 23)  # the quote is column 11


def test_json_files_have_positions_too() -> None:
    text = '{\n  "kind": "NodeInventory",\n  "nodes": [\n    {"name": "n1"}\n  ]\n}\n'
    [problem] = locate([Finding(Where("n.json", 0, ("nodes", 0, "name")), "r", "m")], {"n.json": text})
    assert (problem.line, problem.col) == (4, 14)


def test_the_duplicate_key_is_found() -> None:
    assert find_duplicate_key("a: 1\nb:\n  c: 1\n  d: [1, {c: 2, c: 3}]\n") == ((4, 17), "c")
    assert find_duplicate_key("a: 1\nb: {a: 1}\n") is None


def test_parse_errors_carry_positions() -> None:
    for text, position, rule in [("a: [1\n", (1, 4), "yaml-syntax"), ("a: 1\na: 2\n", None, "duplicate-key")]:
        try:
            parse_text(text)
        except ParseError as e:
            assert (e.position, e.rule.id) == (position, rule)
        else:
            raise AssertionError("parsed")


def test_documents_and_lists_are_told_apart() -> None:
    assert parse_text("---\n- a\n- b\n") == [["a", "b"]]
    assert parse_text("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    assert parse_text("# c\n---\na: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
