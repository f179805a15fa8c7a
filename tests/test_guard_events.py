"""The guard's pre-filter (``_may_alias_or_tag``) decides whether a text's events are read for
tags and aliases at all: whenever libyaml finds an alias or an explicit tag in a text, the
pre-filter must have said yes, or yaml-rs (which ignores tags and expands aliases) gets the
text unchecked. Texts are drawn from the places a token can start: block and flow
collections, plain, quoted and flow keys, and values right after a key's ``:`` (YAML 1.2's
adjacent values, which the first pre-filter missed)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tasgen.parse import ParseError, guard, parse_text
from tests.conftest import examples

KEYS = st.sampled_from(["k", '"k"', "'k'", "[k]", "{k: v}", "? k"])
SEPARATORS = st.sampled_from([": ", ":", " : ", ":\t", ":\n  "])
VALUES = st.sampled_from(["v", "*a", "!t v", "!!str v", "&a v", "&a !t v", '"q"', "!<tag:x,1:y> v", "[*a]"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """An anchor first (so that aliases resolve), then entries in block or flow style."""
    entries = [draw(KEYS) + draw(SEPARATORS) + draw(VALUES) for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        return "a: &a x\nm: {" + ", ".join(entries) + "}\n"
    if draw(st.booleans()):
        return "a: &a x\nl: [" + ", ".join(entries) + "]\n"
    return "a: &a x\n" + "".join(f"{entry}\n" for entry in entries)


def _events_need_checking(text: str) -> bool:
    """Whether libyaml's events hold an alias or an explicit tag."""
    found = False
    for event in yaml.parse(text, Loader=yaml.CSafeLoader):
        found |= isinstance(event, yaml.AliasEvent) or getattr(event, "tag", None) is not None
    return found


@settings(max_examples=examples(400), deadline=None)
@given(texts())
def test_every_text_with_an_alias_or_a_tag_is_read_for_its_events(text: str) -> None:
    try:
        needed = _events_need_checking(text)
    except yaml.YAMLError:
        assume(False)  # not YAML: the parser refuses it anyway
        raise
    if needed:
        assert guard._may_alias_or_tag(text)


@pytest.mark.parametrize("separator", [": ", ":"])
def test_a_tag_right_after_a_quoted_key_is_refused(separator: str) -> None:
    with pytest.raises(ParseError) as raised:
        parse_text('labels: {"pool"' + separator + "!vendor gpu}\n")
    assert raised.value.rule.id == "yaml-tag"


@pytest.mark.parametrize("separator", [": ", ":"])
def test_an_alias_bomb_behind_quoted_keys_is_refused(separator: str) -> None:
    big = "x" * 10_000
    data = ", ".join([f'"k0"{separator}&a "{big}"'] + [f'"k{i}"{separator}*a' for i in range(1, 1000)])
    with pytest.raises(ParseError) as raised:
        parse_text("data: {" + data + "}\n")
    assert raised.value.rule.id == "yaml-alias-limit"
