"""Edit distance and did-you-mean (generator/util/names.py), against a brute-force oracle."""

from __future__ import annotations

from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from tasgen.util.names import distance, nearest


def brute(a: str, b: str) -> int:
    """The distance by its definition, recursively (small strings only)."""

    @cache
    def d(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (a[i - 1] != b[j - 1]))

    return d(len(a), len(b))


@given(st.text("abc", max_size=7), st.text("abc", max_size=7))
def test_distance_is_the_levenshtein_distance(a: str, b: str) -> None:
    assert distance(a, b) == brute(a, b)


def test_nearest_names_the_closest_within_reach() -> None:
    assert nearest("trainng", ["training", "inference", "train"]) == ["training"]
    assert nearest("infra.example.com/blok", ["infra.example.com/block", "topology.gpustack.ai/rack"]) == [
        "infra.example.com/block"
    ]
    assert nearest("a", ["b", "c", "abc"]) == ["b", "c"]  # ties, in name order
    assert nearest("zone", ["rack", "block"]) == []  # nothing within two edits
    assert nearest("same", ["same"]) == []  # the name itself is no suggestion
