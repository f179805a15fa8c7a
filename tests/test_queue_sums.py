"""A queue identity's allocatable sums (plan/queues.py ``_allocatable``), counted once as rows of
all the covered resources, are each resource's own column sum to the last Decimal digit: values
with more digits than Decimal's 28, on nodes that differ in another resource, included."""

from __future__ import annotations

import threading
from collections import Counter
from decimal import Decimal
from fractions import Fraction

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tasgen.compile.queues import _allocatable
from tasgen.kube.quantities import parse
from tests.conftest import examples

LONG = "0.05882352941176470588235294118"  # 1/17 to 29 digits: sums of it round at 28
QUANTITIES = st.sampled_from(
    [
        "8",
        "1500m",
        "2Gi",
        "110",
        "64",
        LONG,
        "3.333333333333333333333333333333",
        "1.0000000000000000000000000001",
    ]
)
RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "pods"]


def column_sum(stated: list[dict[str, str]], resource: str) -> Decimal:
    """One resource's sum the plain way: its values counted, each parsed and multiplied once."""
    counts = Counter(mapping.get(resource) for mapping in stated)
    return sum((parse(v) * n for v, n in counts.items() if v is not None), Decimal(0))


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(RESOURCES), QUANTITIES), max_size=60),
    st.lists(st.sampled_from(RESOURCES), min_size=1, unique=True),
)
@example(
    [{"nvidia.com/gpu": LONG, "pods": "110"}] * 361 + [{"nvidia.com/gpu": LONG, "pods": "64"}] * 268,
    ["nvidia.com/gpu", "pods"],
).via("one value split across two rows: added in parts, the sum would round to 37.00...01")
def test_counted_rows_sum_as_each_resources_column(
    stated: list[dict[str, str]], resources: list[str]
) -> None:
    found = _allocatable(stated, tuple(resources))
    assert [str(found[r]) for r in resources] == [str(column_sum(stated, r)) for r in resources]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(RESOURCES), QUANTITIES), max_size=60),
    st.lists(st.sampled_from(RESOURCES), min_size=1, unique=True),
)
@example([{"nvidia.com/gpu": "1.0000000000000000000000000001"}], ["nvidia.com/gpu"]).via(
    "29 significant digits: parsed at 28, it was 1"
)
def test_sums_are_exact(stated: list[dict[str, str]], resources: list[str]) -> None:
    """Against the exact sum, node by node, of each value's exact rational (no Decimal
    context involved): values with more digits than Decimal's default 28 are not rounded."""
    found = _allocatable(stated, tuple(resources))
    for resource in resources:
        exact = sum((_exact(m[resource]) for m in stated if resource in m), Fraction(0))
        assert Fraction(found[resource]) == exact


def _exact(quantity: str) -> Fraction:
    """A quantity of these tests (plain decimals, m, Gi) as an exact rational."""
    for suffix, factor in (("Gi", Fraction(2**30)), ("m", Fraction(1, 1000))):
        if quantity.endswith(suffix):
            return Fraction(quantity.removesuffix(suffix)) * factor
    return Fraction(quantity)


def test_sums_are_exact_in_a_thread_started_later() -> None:
    """A new thread's Decimal context is a copy of the default one, which is widened too."""
    value = "1.0000000000000000000000000001"
    found: list[dict[str, Decimal]] = []
    thread = threading.Thread(target=lambda: found.append(_allocatable([{"x": value}] * 3, ("x",))))
    thread.start()
    thread.join()
    assert Fraction(found[0]["x"]) == 3 * Fraction(value)
