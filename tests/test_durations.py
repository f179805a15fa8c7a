"""Go-style durations for gate.retainFor: Go's grammar and units, exact sums, Go's range."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasgen.util.durations import MAX_NANOSECONDS, UNITS, duration, nanoseconds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("168h", 168 * 3600 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("1.5h", 5400 * 10**9),
        (".5s", 5 * 10**8),
        ("1.s", 10**9),
        ("300ms", 3 * 10**8),
        ("2us", 2000),
        ("2µs", 2000),
        ("1ns", 1),
        ("1m1m", 120 * 10**9),  # Go adds repeated units
        ("2562047h47m16.854775807s", MAX_NANOSECONDS),
    ],
)
def test_go_durations_parse_to_their_nanoseconds(text: str, expected: int) -> None:
    assert nanoseconds(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "7d", "1", "h", "-1h", "+1h", "1h ", " 1h", "1H", "1.h.5", "1h-30m", "2562047h47m16.854775808s"],
)
def test_what_go_refuses_or_cannot_hold_is_none(text: str) -> None:
    assert nanoseconds(text) is None
    assert duration(text) is None


def test_a_duration_is_its_timedelta_to_the_microsecond() -> None:
    assert duration("168h") == timedelta(days=7)
    assert duration("1500ns") == timedelta(microseconds=1)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(sorted(UNITS))), min_size=1, max_size=5))
def test_a_sum_of_parts_is_the_sum_of_their_values(parts: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in parts)
    total = sum(n * UNITS[unit] for n, unit in parts)
    # Go's Duration holds at most MAX_NANOSECONDS (about 2,562,047h): past it, nothing
    assert nanoseconds(text) == (total if total <= MAX_NANOSECONDS else None)
