"""Profiles, Topograph normalization and the quota split, as units."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasgen.compile.profiles import Profile, _collisions, profile_id
from tasgen.compile.queues import flavor_name, largest_remainder
from tasgen.load.files import read_inventory
from tasgen.model import Inventory, Level, Selector, Settings, Source, Where
from tasgen.pipeline import compile_inventory
from tasgen.validate.checks import Context
from tasgen.validate.hierarchy import normalize_levels
from tests.conftest import NOW

# The profile ID is a published contract (it names Topologies and flavors in clusters):
# these values must never change between releases.
STABLE_IDS = {
    ("kubernetes.io/hostname",): "3218df278c5e",
    ("topology.gpustack.ai/rack", "kubernetes.io/hostname"): "e0d45ebe4c49",
}


@pytest.mark.parametrize(("keys", "expected"), STABLE_IDS.items())
def test_profile_ids_are_stable(keys: tuple[str, ...], expected: str) -> None:
    assert profile_id(keys) == expected


def test_profile_ids_are_valid_label_values_and_name_parts() -> None:
    value = profile_id(("a/b", "kubernetes.io/hostname"))
    assert len(value) == 12 and value.isalnum() and value == value.lower()


@pytest.mark.parametrize(
    ("declared", "normalized"),
    [
        (
            ("fabric.topograph.run/tier-1", "fabric.topograph.run/tier-2", "fabric.topograph.run/tier-3"),
            ("fabric.topograph.run/tier-3", "fabric.topograph.run/tier-2", "fabric.topograph.run/tier-1"),
        ),
        (
            (
                "zone",
                "fabric.topograph.run/tier-1",
                "fabric.topograph.run/tier-10",
                "accelerator.topograph.run/d",
            ),
            (
                "zone",
                "fabric.topograph.run/tier-10",
                "fabric.topograph.run/tier-1",
                "accelerator.topograph.run/d",
            ),
        ),
        # not contiguous: each run is ordered on its own, the others stay put
        (
            ("fabric.topograph.run/tier-1", "x/rack", "fabric.topograph.run/tier-2"),
            ("fabric.topograph.run/tier-1", "x/rack", "fabric.topograph.run/tier-2"),
        ),
        (("a/zone", "a/rack"), ("a/zone", "a/rack")),
    ],
)
def test_topograph_tiers_are_ordered_coarsest_first(
    declared: tuple[str, ...], normalized: tuple[str, ...]
) -> None:
    assert normalize_levels(declared) == normalized


def test_a_profile_collision_is_an_error() -> None:
    ctx = Context(Inventory(Settings(), {}, {}, {}), datetime(2026, 1, 1, tzinfo=UTC))
    ctx.inventory.sources["s"] = Source(
        "s", Selector(), ("a/b",), ("a/b",), "nodeLabels", {}, Where("s.yaml")
    )
    found = list(
        _collisions(
            ctx,
            [
                Profile("abc", ("x", "kubernetes.io/hostname")),
                Profile("abc", ("y", "kubernetes.io/hostname")),
            ],
        )
    )
    assert [f.rule for f in found] == ["profile-collision"]
    assert not list(_collisions(ctx, [Profile("abc", ("x",)), Profile("abd", ("y",))]))


@given(st.integers(0, 10**9), st.lists(st.integers(0, 10**6), min_size=1, max_size=70))
def test_largest_remainder_conserves_the_total(total: int, weights: list[int]) -> None:
    parts = largest_remainder(total, weights)
    if sum(weights) == 0:
        assert parts is None if total > 0 else parts == [0] * len(weights)
        return
    assert parts is not None and sum(parts) == total
    for part, weight in zip(parts, weights, strict=True):
        exact = total * weight / sum(weights)
        assert exact - 1 < part < exact + 1  # within one unit of its exact share
        assert weight or part == 0


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.lists(st.integers(0, 10**4), min_size=1, max_size=20).filter(lambda w: sum(w) > 0),
)
def test_a_lending_split_never_exceeds_the_nominal_split(a: int, b: int, weights: list[int]) -> None:
    """Kueue requires lendingLimit <= nominalQuota of each flavor: the lending split is capped
    by the nominal parts, and still sums exactly to its total."""
    nominal_total, lending_total = max(a, b), min(a, b)
    nominal = largest_remainder(nominal_total, weights)
    assert nominal is not None
    lending = largest_remainder(lending_total, weights, nominal)
    assert lending is not None and sum(lending) == lending_total
    assert all(part <= cap for part, cap in zip(lending, nominal, strict=True))


def test_an_uncapped_smaller_total_can_outgrow_a_part_of_a_larger_one() -> None:
    """The Alabama paradox, and the capped split that avoids it."""
    nominal = largest_remainder(4, [1, 3, 3])
    assert nominal == [0, 2, 2]
    assert largest_remainder(3, [1, 3, 3]) == [1, 1, 1]  # 1 > 0: Kueue would refuse it
    assert largest_remainder(3, [1, 3, 3], nominal) == [0, 2, 1]


def test_largest_remainder_gives_ties_to_the_earlier_flavor() -> None:
    assert largest_remainder(10, [1, 1, 1]) == [4, 3, 3]
    assert largest_remainder(120, [96, 32]) == [90, 30]


def test_flavor_names_are_dns_subdomains_and_embed_the_profile() -> None:
    name = flavor_name((("nvidia.com/gpu.product", "NVIDIA_H100 80GB (SXM)"),), "0123456789ab")
    digest = hashlib.sha256(b'[["nvidia.com/gpu.product","NVIDIA_H100 80GB (SXM)"]]').hexdigest()[:6]
    assert (
        name
        == f"gpustack-nvidia-h100-80gb-sxm-{digest}-0123456789ab"
        == ("gpustack-nvidia-h100-80gb-sxm-f8b4c7-0123456789ab")
    )  # a contract, like the profile ID
    assert flavor_name((("k", "a"),), "p") != flavor_name((("k", "A"),), "p")  # the hash tells them apart


def test_flavor_names_hash_the_tolerations_when_there_are_any() -> None:
    identity = (("nvidia.com/gpu.product", "H100"),)
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    plain, tolerant = flavor_name(identity, "p"), flavor_name(identity, "p", (toleration,))
    digest = hashlib.sha256(
        b'[[["nvidia.com/gpu.product","H100"]],[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]]'
    ).hexdigest()[:6]
    assert tolerant == f"gpustack-h100-{digest}-p" != plain  # a contract, like the profile ID
    assert plain == flavor_name(identity, "p", ())  # no tolerations: the name of earlier releases


#: two GPU products whose flavor names agree (readable part lowercased, 24-bit hash): found by a
#: search over letter cases (tests/test_profiles.py history)
COLLIDING = ("h100sxMgPUaBcDeF", "H100SXmGpUabCDEF")


def test_a_flavor_name_collision_is_an_error(tmp_path: Path) -> None:
    """Two identities whose flavor names agree (readable part and hash) are reported, not one
    flavor silently given to both."""
    key = "nvidia.com/gpu.product"
    assert flavor_name(((key, COLLIDING[0]),), "p") == flavor_name(((key, COLLIDING[1]),), "p")
    nodes = "".join(
        f"  - name: n{i}\n    labels: {{kubernetes.io/hostname: n{i}, {key}: {product}}}\n"
        f'    allocatable: {{cpu: "8", nvidia.com/gpu: "8"}}\n'
        for i, product in enumerate(COLLIDING)
    )
    hardware = "".join(f"    - identity: {{{key}: {product}}}\n" for product in COLLIDING)
    (tmp_path / "nodes.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\n"
        f"metadata: {{name: n}}\nnodes:\n{nodes}"
    )
    (tmp_path / "queue.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: ClusterQueuePlan\nmetadata: {name: q}\n"
        f"spec:\n  coveredResources: [cpu, nvidia.com/gpu]\n  hardware:\n{hardware}"
        "  clusterQueue: {namespaceSelector: {}}\n"
    )
    found = [
        f
        for f in compile_inventory(read_inventory(tmp_path), datetime.fromisoformat(NOW)).findings
        if f.rule == "flavor-collision"
    ]
    assert found and all(f.level is Level.ERROR and "gets the flavor name" in f.message for f in found)
