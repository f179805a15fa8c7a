"""fit's differential test accepts either resource where two are over a flavor's quota, as
Kueue names one of them in Go's map order, and only when fit's numbers for its own hold."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from kubernetes.utils import parse_quantity

from tests.e2e.fitcases import Case, Lane, kueue_causes, quota_swaps

B = "gpustack-nvidia-gen-b-326ea5-b0beebade068"
A = "gpustack-nvidia-gen-a-287c53-0d1717cd2d70"
TAINT = "untolerated taint {gen.example.com/reserved serve NoSchedule <nil>} in flavor " + A
# 6 pods of {gpu: 4, memory: 300Gi} on flavor B: over its GPU quota (24 > 4) and its memory (1800Gi > 1Ti)
CASE = Case("gen-16", "gen-serve", "gen-serve", 6, {"nvidia.com/gpu": "4", "memory": "300Gi"})
LANE = Lane(
    "gen",
    None,  # type: ignore[arg-type]  # the fleet is not read here
    Path("."),
    {},
    {"gen-serve": (B, A), "gen-train": (A, B)},
    {
        ("gen-serve", B): {"nvidia.com/gpu": Decimal(4), "memory": parse_quantity("1Ti")},
        ("gen-train", B): {"memory": parse_quantity("1Ti")},
    },
    {("gen-serve", "gen-serve"): "gen-serve"},
)


def quota(resource: str, request: str, maximum: str) -> str:
    return (
        f"insufficient quota for {resource} in flavor {B}, previously considered podsets requests (0) + "
        f"current podset request ({request}) > maximum capacity ({maximum}), {TAINT}"
    )


KUEUE = [kueue_causes(quota("nvidia.com/gpu", "24", "4"), LANE, "gen-serve")]


def test_the_other_resource_over_quota_is_kueues_answer_too() -> None:
    stated = kueue_causes(quota("memory", "1800Gi", "1Ti"), LANE, "gen-serve")
    assert stated not in KUEUE
    assert stated in quota_swaps(KUEUE, stated, LANE, "gen-serve", CASE)


@pytest.mark.parametrize(
    ("request_", "maximum"),
    [
        ("1700Gi", "1Ti"),  # not the PodSet's request of memory
        ("1800Gi", "512Gi"),  # below the queue's own nominal quota
        ("3Ti", "3Ti"),  # not over its maximum
    ],
)
def test_a_quota_cause_whose_numbers_do_not_hold_is_refused(request_: str, maximum: str) -> None:
    stated = kueue_causes(quota("memory", request_, maximum), LANE, "gen-serve")
    assert stated not in quota_swaps(KUEUE, stated, LANE, "gen-serve", CASE)


def test_a_maximum_beyond_the_cohorts_quota_is_refused() -> None:
    big = Case("gen-17", "gen-serve", "gen-serve", 8, {"nvidia.com/gpu": "4", "memory": "300Gi"})
    kueue = [kueue_causes(quota("nvidia.com/gpu", "32", "4"), LANE, "gen-serve")]
    assert kueue_causes(quota("memory", "2400Gi", "2Ti"), LANE, "gen-serve") in quota_swaps(
        kueue, kueue_causes(quota("memory", "2400Gi", "2Ti"), LANE, "gen-serve"), LANE, "gen-serve", big
    )
    stated = kueue_causes(quota("memory", "2400Gi", "2100Gi"), LANE, "gen-serve")
    assert stated not in quota_swaps(kueue, stated, LANE, "gen-serve", big)


def test_the_other_resource_on_two_flavors_at_once() -> None:
    """Kueue names GPU on both flavors, fit memory on both: each flavor's map order is its own."""
    both = Case("gen-18", "gen-serve", "gen-serve", 6, {"nvidia.com/gpu": "4", "memory": "300Gi"})
    lane = Lane(
        "gen",
        None,  # type: ignore[arg-type]  # the fleet is not read here
        Path("."),
        {},
        {"gen-serve": (B, A)},
        {
            ("gen-serve", B): {"nvidia.com/gpu": Decimal(4), "memory": parse_quantity("1Ti")},
            ("gen-serve", A): {"nvidia.com/gpu": Decimal(4), "memory": parse_quantity("1Ti")},
        },
        {("gen-serve", "gen-serve"): "gen-serve"},
    )

    def on(flavor: str, resource: str, request: str) -> str:
        maximum = "4" if "/" in resource else "1Ti"
        return (
            f"insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests "
            f"(0) + current podset request ({request}) > maximum capacity ({maximum})"
        )

    kueue = [
        kueue_causes(f"{on(B, 'nvidia.com/gpu', '24')}, {on(A, 'nvidia.com/gpu', '24')}", lane, "gen-serve")
    ]
    stated = kueue_causes(f"{on(B, 'memory', '1800Gi')}, {on(A, 'memory', '1800Gi')}", lane, "gen-serve")
    mixed = kueue_causes(f"{on(B, 'memory', '1800Gi')}, {on(A, 'nvidia.com/gpu', '24')}", lane, "gen-serve")
    assert len(stated) == 2
    assert stated in quota_swaps(kueue, stated, lane, "gen-serve", both)
    assert mixed in quota_swaps(kueue, mixed, lane, "gen-serve", both)


def test_a_taint_cause_ends_at_a_semicolon() -> None:
    """Kueue's message may go on after a flavor's name with "; " (seen for a LeaderWorkerSet whose
    leader is grouped with its workers): the name stops there."""
    causes = kueue_causes(f"{TAINT}; {TAINT}", LANE, "gen-serve")
    assert {c.flavors for c in causes} == {frozenset({A})}


def test_no_swap_without_a_quota_cause_of_kueue_on_that_flavor() -> None:
    stated = kueue_causes(quota("memory", "1800Gi", "1Ti"), LANE, "gen-serve")
    assert quota_swaps([kueue_causes(TAINT, LANE, "gen-serve")], stated, LANE, "gen-serve", CASE) == []


def test_a_fractional_quota_compares_with_whole_figures() -> None:
    """cpu quotas split across flavors can be fractions (319.5): the queue's own quota, the
    cohort's maximum and the request compare on one scale, as they do for seed 1355471758
    (cpu 672 over a cohort maximum of 639 where the queue's own is 319.5)."""
    cpu = Case("gen-16", "gen-serve", "gen-serve", 6, {"nvidia.com/gpu": "4", "cpu": "112"})
    lane = Lane(
        "gen",
        None,  # type: ignore[arg-type]  # the fleet is not read here
        Path("."),
        {},
        {"gen-serve": (B, A), "gen-train": (A, B)},
        {
            ("gen-serve", B): {"nvidia.com/gpu": Decimal(4), "cpu": Decimal("319.5")},
            ("gen-train", B): {"cpu": Decimal("319.5")},
        },
        {("gen-serve", "gen-serve"): "gen-serve"},
    )
    kueue = [kueue_causes(quota("nvidia.com/gpu", "24", "4"), lane, "gen-serve")]
    stated = kueue_causes(quota("cpu", "672", "639"), lane, "gen-serve")
    assert stated in quota_swaps(kueue, stated, lane, "gen-serve", cpu)
    below_own = kueue_causes(quota("cpu", "672", "319"), lane, "gen-serve")  # under its own 319.5
    assert below_own not in quota_swaps(kueue, below_own, lane, "gen-serve", cpu)
