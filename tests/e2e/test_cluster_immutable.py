"""The API server refuses a change of an immutable field of a generated object under its
name: the reason tasgen embeds the profile in the names of Topologies and ResourceFlavors."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e.fleet import Fleet, Obj
from tests.e2e.kube import KUEUE_API, apply, get

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("synced")]

UNPROCESSABLE = 422


def _rejected(dyn: DynamicClient, original: Obj, change: Callable[[Obj], None]) -> str:
    """Apply `original` changed by `change`; return the server's refusal, and check that
    the stored object still has its original spec."""
    changed = copy.deepcopy(original)
    change(changed["spec"])
    assert changed["spec"] != original["spec"]
    with pytest.raises(ApiException) as refused:
        apply(dyn, changed)
    assert refused.value.status == UNPROCESSABLE, refused.value.body
    stored = get(dyn, KUEUE_API, original["kind"], original["metadata"]["name"])
    assert all(stored["spec"][key] == value for key, value in original["spec"].items())
    return str(refused.value.body)


def _drop_coarsest_level(spec: Obj) -> None:
    levels = spec["levels"]
    # A one-level (hostname-only) Topology gains a level instead: any change counts.
    spec["levels"] = levels[1:] if len(levels) > 1 else [{"nodeLabel": "topology.gpustack.ai/rack"}, *levels]


def test_changing_the_levels_of_a_topology_is_rejected(dyn: DynamicClient, fleet: Fleet) -> None:
    for topology in fleet.of_kind("Topology"):
        body = _rejected(dyn, topology, _drop_coarsest_level)
        assert "field is immutable" in body


def test_changing_the_node_labels_of_a_resourceflavor_is_rejected(dyn: DynamicClient, fleet: Fleet) -> None:
    def other_profile(spec: Obj) -> None:
        spec["nodeLabels"]["topology.gpustack.ai/profile"] = "000000000000"

    for flavor in fleet.of_kind("ResourceFlavor"):
        body = _rejected(dyn, flavor, other_profile)
        assert "nodeLabels are immutable when topologyName is set" in body


def test_changing_the_topology_of_a_resourceflavor_is_rejected(dyn: DynamicClient, fleet: Fleet) -> None:
    others = {t["metadata"]["name"] for t in fleet.of_kind("Topology")}
    for flavor in fleet.of_kind("ResourceFlavor"):
        other = sorted(others - {flavor["spec"]["topologyName"]})[0]

        def retarget(spec: Obj, other: str = other) -> None:
            spec["topologyName"] = other

        body = _rejected(dyn, flavor, retarget)
        assert "topologyName is immutable when topologyName is set" in body
