"""How deep YAML may nest (rule yaml-depth): the events pass that counts levels runs only for
texts with a deep line start (or an alias), which the guard claims every text nesting beyond
MAX_DEPTH has. Block texts are generated level by level in every way YAML nests (indented
mappings, compact and indented sequences, a sequence in its key's column), ending in flow
collections as deep as the parser takes; each is refused exactly when it is too deep."""

from __future__ import annotations

from typing import Any

import pytest
import yaml_rs
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tasgen.parse import ParseError, guard, parse_text
from tests.conftest import examples

#: how one level opens: its text after the current line, and the columns it adds
STEPS = st.sampled_from(["map-indent-1", "map-indent-2", "seq-compact", "seq-indent-1", "seq-in-map"])


def block_text(steps: list[str], flow: int) -> str:
    """A chain of collections, one per step, then ``flow`` nested flow sequences."""
    text, column = "", 0
    for step in steps:
        if step.startswith("map-indent"):
            text += "k:\n"
            column += int(step[-1])
            text += " " * column
        elif step == "seq-compact":
            text += "- "
            column += 2
        elif step == "seq-indent-1":
            text += "-\n"
            column += 1
            text += " " * column
        else:  # a mapping whose value is a sequence in the key's own column
            text += "k:\n" + " " * column + "- "
            column += 2
    return text + "[" * flow + "x" + "]" * flow + "\n"


def expected_depth(steps: list[str], flow: int) -> int:
    return sum(2 if step == "seq-in-map" else 1 for step in steps) + flow


def depth_of(data: Any) -> int:
    depth = 0
    while isinstance(data, list | dict):
        depth += 1
        data = data[0] if isinstance(data, list) else data["k"]
    return depth


#: chains of up to 600 levels (the limit is 500), each kind of step in any mix
CHAINS = st.integers(0, 600).flatmap(lambda n: st.lists(STEPS, min_size=n, max_size=n))


@settings(max_examples=examples(60), deadline=None)
@given(CHAINS, st.integers(0, 255))
@example(["seq-compact"] * 500, 0).via("the limit")
@example(["seq-compact"] * 501, 0).via("one beyond")
@example(["seq-in-map"] * 60, 255).via("deep in block and flow, no deep line start")
@example(["map-indent-1"] * 246, 255).via("one beyond, through flow")
def test_a_text_is_refused_exactly_when_it_nests_too_deep(steps: list[str], flow: int) -> None:
    text, depth = block_text(steps, flow), expected_depth(steps, flow)
    # an ASCII text's deep lines are found in its shape, others' by a regex: the same lines
    assert guard._may_nest_deep(text, guard.shape_of(text)) == guard._may_nest_deep(text)
    if depth > guard.MAX_DEPTH:
        assert guard._may_nest_deep(text)  # the events pass runs for it ...
        with pytest.raises(ParseError) as raised:
            parse_text(text)
        assert raised.value.rule.id == "yaml-depth"  # ... and refuses it
    else:
        assert depth_of(parse_text(text)[0]) == depth
        assert depth_of(yaml_rs.loads(text)) == depth


#: lines of an ASCII text as the shape sees them: deep starts of every kind, short ones, others
LINES = st.lists(
    st.tuples(
        st.sampled_from([" ", "\t", "-", "?", ":", "a"]),
        st.integers(0, 130),
        st.sampled_from(["\n", "\r", "x\n"]),
    ),
    max_size=12,
)


@settings(max_examples=examples(200), deadline=None)
@given(LINES, st.integers(1, 400), st.booleans())
@example([(" ", 121, "\n")], 1, False).via("a deep first line, pieces of one character")
@example([("a", 100, "\n"), (" ", 121, "\n")], 150, False).via("a deep line across two pieces")
@example([("a", 5, "\n")], 3, True).via("a refused character in a later piece")
def test_a_shape_judged_in_pieces_is_the_whole_texts(
    lines: list[tuple[str, int, str]], piece: int, nul: bool
) -> None:
    text = "".join(char * count + end for char, count, end in lines) + ("\0" if nul else "")
    shape = guard.shape_of(text, piece)
    assert shape is not None
    whole = guard.shape_piece(text)  # the text translated at once
    assert shape.refused == (b"\0" in whole)
    assert shape.deep == (whole.startswith(guard._DEEP_SHAPE) or b"\n" + guard._DEEP_SHAPE in whole)
    assert shape.deep == guard._may_nest_deep(text)  # and what the regex finds in any text


def test_the_deepest_flow_the_parser_takes() -> None:
    """The bound assumes flow collections nest at most 255 deep (the parser refuses more)."""
    assert depth_of(yaml_rs.loads("[" * 255 + "x" + "]" * 255)) == 255
    with pytest.raises(yaml_rs.YAMLDecodeError):
        yaml_rs.loads("[" * 256 + "x" + "]" * 256)


def test_aliases_nest_as_deep_as_what_they_repeat() -> None:
    inner = "[" * 200 + "x" + "]" * 200
    text = f"a: &a {inner}\nb: &b [{'[' * 150}*a{']' * 150}]\n"
    assert depth_of(parse_text(text)[0]["b"]) == 351
    # the top-level mapping, 148 sequences and b's 351 levels: 500, allowed
    deeper = text + f"c: {'[' * 148}*b{']' * 148}\n"
    assert 1 + depth_of(parse_text(deeper)[0]["c"]) == 500
    with pytest.raises(ParseError) as raised:
        parse_text(text + f"c: {'[' * 149}*b{']' * 149}\n")
    assert (raised.value.rule.id, raised.value.position) == ("yaml-depth", (3, 153))  # the alias


def test_lines_broken_by_carriage_returns_alone_are_looked_at_too() -> None:
    text = "".join(" " * i + "k:\r" for i in range(501)) + " " * 501 + "x\r"
    assert guard._may_nest_deep(text) and guard._may_nest_deep(text, guard.shape_of(text))
    with pytest.raises(ParseError) as raised:
        parse_text(text)
    assert raised.value.rule.id == "yaml-depth"


def test_a_text_that_is_not_ascii_is_looked_at_by_the_regex() -> None:
    text = "# é\n" + "".join(" " * i + "k:\n" for i in range(501)) + " " * 501 + "x\n"
    assert guard.shape_of(text) is None and guard._may_nest_deep(text)
    with pytest.raises(ParseError) as raised:
        parse_text(text)
    assert (raised.value.rule.id, raised.value.position) == ("yaml-depth", (502, 501))
