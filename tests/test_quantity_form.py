"""Quotas are written in the form Kueue stores them: Go's resource.Quantity canonical text,
which Kueue's webhook writes back when it decodes a queue."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasgen.kube.quantities import format_units, parse, stored_form

#: (text as parsed, canonical text) from k8s.io/apimachinery v0.35.3 pkg/api/resource's own
#: tests (TestQuantityString, TestQuantityParseEmit), restricted to the forms tasgen writes,
#: and the two the Kueue webhook was seen to rewrite ("2000" -> "2k", "12000m" -> "12")
GO_CANONICAL = [
    ("1000000000", "1G"),
    ("1000M", "1G"),
    ("3000", "3k"),
    ("1080m", "1080m"),
    ("80m", "80m"),
    ("1m", "1m"),
    ("1234567000000", "1234567M"),
    ("1234567m", "1234567m"),
    ("300000000", "300M"),
    ("1000000000000", "1T"),
    ("1025", "1025"),
    ("5", "5"),
    ("5000m", "5"),
    ("0", "0"),
    ("1Gi", "1Gi"),
    ("1001Gi", "1001Gi"),
    ("300Mi", "300Mi"),
    ("2000", "2k"),
    ("12000m", "12"),
]


@pytest.mark.parametrize(("written", "stored"), [(w, s) for w, s in GO_CANONICAL if w != "1000M"])
def test_quotas_are_written_as_go_prints_them(written: str, stored: str) -> None:
    assert stored_form(written) == stored


@given(
    st.integers(min_value=0, max_value=2**53),
    st.sampled_from([1, 1000]),
    st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]),
)
def test_the_stored_form_keeps_the_value_and_is_stable(units: int, scale: int, resource: str) -> None:
    written = format_units(units, scale, resource)
    stored = stored_form(written)
    assert parse(stored) == parse(written) == Decimal(units) / scale
    assert stored_form(stored) == stored
    # canonical: the number before a decimal suffix (or none, or milli) is whole and, but
    # for 0, not a multiple of 1000 (a larger suffix would keep it whole)
    number, suffix = stored.rstrip("kMGTPEKim"), stored.lstrip("0123456789")
    assert number.isdigit()
    if suffix in ("", "k", "M", "G", "T", "m") and number != "0":
        assert int(number) % 1000 != 0, stored
