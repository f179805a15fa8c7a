"""Label syntax judged many values at once: the same verdict as one value at a time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.validate.labels import dns_names_valid, is_dns_subdomain, label_value_error, label_values_valid
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


names = st.one_of(
    st.from_regex(r"[a-z0-9][-a-z0-9.]{0,70}", fullmatch=True),
    st.sampled_from(["a", "a-", "-a", "a.", "a..b", "a.b-c", "a\n", "a\nb", "A", "x" * 64, "a_b", ""]),
    st.text(max_size=6),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sets(names, max_size=8))
def test_many_node_names_at_once_are_judged_as_each_alone(many: set[str]) -> None:
    each = all(is_dns_subdomain(n) and len(n) <= 63 for n in many)
    assert dns_names_valid(many, longest=63) == each


def test_a_fleets_node_names_are_judged_at_once_and_one_bad_name_is_found() -> None:
    fleet = {f"node-{i:06d}.rack-{i % 40}" for i in range(2000)}
    assert dns_names_valid(fleet, longest=63)
    assert not dns_names_valid(fleet | {"Node-1"}, longest=63)
    assert not dns_names_valid(fleet | {"n" * 64}, longest=63)
    assert not dns_names_valid(fleet | {"a\nb"}, longest=63)
