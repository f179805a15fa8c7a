"""generator.util.columns.group: what a loop per item makes, at C speed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasgen.util.columns import group


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.integers())))
def test_group_is_a_loop_per_item(pairs: list[tuple[str, int]]) -> None:
    expected: dict[str, list[int]] = {}
    for key, item in pairs:
        expected.setdefault(key, []).append(item)
    found = group([k for k, _ in pairs], [i for _, i in pairs])
    assert found == expected
    assert list(found) == list(expected)  # keys in first-seen order


def test_group_refuses_keys_and_items_of_different_lengths() -> None:
    with pytest.raises(ValueError):
        group(["a", "b"], [1])
