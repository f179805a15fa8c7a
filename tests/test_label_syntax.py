"""Label syntax judged many values at once: the same verdict as one value at a time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from generator.validate.labels import label_value_error, label_values_valid
from tests.conftest import examples

values = st.one_of(
    st.from_regex(r"[A-Za-z0-9][-A-Za-z0-9_.]{0,70}", fullmatch=True),
    st.sampled_from(["", "a", "a-", "-a", "a\n", "\n", "a\nb", "x" * 63, "x" * 64, "a b", "é", "a_b.c"]),
    st.text(max_size=8),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sets(values, max_size=8))
def test_many_values_at_once_are_judged_as_each_alone(many: set[str]) -> None:
    assert label_values_valid(many) == all(label_value_error(v) is None for v in many)


def test_a_fleets_values_are_judged_at_once_and_one_bad_value_is_found() -> None:
    hostnames = {f"node-{i:06d}" for i in range(1000)}
    assert label_values_valid(hostnames)
    assert not label_values_valid(hostnames | {"node_"})
    assert not label_values_valid(hostnames | {"x" * 64})
