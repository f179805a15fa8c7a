"""The profiles assigned in C-speed passes (no node selected by two Ready sources, the usual
fleet) are exactly those assigned node by node: same profiles, rack paths and sources, in
the same order; and the level values gathered in columns equal stated_values of each node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.compile.profiles import assign, assign_disjoint, assign_one_by_one
from tasgen.rules.compile import NODE_AMBIGUOUS
from tasgen.validate.checks import Context
from tasgen.validate.hierarchy import stated_values
from tests.conftest import examples
from tests.test_fast_rules import API, RACK, ZONE, _configmap_source, context

BLOCK = "topology.gpustack.ai/block"
POOLS = ["a", "b", "c"]
#: a nodeLabels source reading zone > rack from the nodes of pool c
POOL_C_SOURCE = {
    "apiVersion": API,
    "kind": "TopologySource",
    "metadata": {"name": "c"},
    "spec": {"nodeSelector": {"matchLabels": {"pool": "c"}}, "levels": [ZONE, RACK], "nodeLabels": {}},
}


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Nodes in pools; a configMap source per pool (zone > block > rack, a level may be
    missing) and a nodeLabels source reading zone > rack from the nodes of pool c."""
    names = [f"n{i}" for i in range(draw(st.integers(1, 12)))]
    pool = {name: draw(st.sampled_from(POOLS)) for name in names}
    zone = st.sampled_from(["z1", "z2"])
    fleet = [
        {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "pool": pool[name]}
            | ({ZONE: draw(zone)} if draw(st.booleans()) else {})
            | (
                {RACK: draw(st.sampled_from(["r1", "r2"]))}
                if pool[name] == "c" and draw(st.booleans())
                else {}
            ),
        }
        for name in names
    ]
    documents: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet}
    ]
    selects_twice = draw(st.booleans())  # pool a's source also selects pool b: ambiguous nodes
    for source in ("a", "b"):
        stated = {
            name: draw(st.dictionaries(st.sampled_from([BLOCK, RACK]), st.sampled_from(["x", "y"])))
            for name in names
            if pool[name] == source or (selects_twice and source == "a" and pool[name] == "b")
        }
        documents += _configmap_source(source, stated)
        spec = documents[-2]["spec"]
        spec["levels"] = [ZONE, BLOCK, RACK]
        if not (selects_twice and source == "a"):
            spec["nodeSelector"] = {"matchLabels": {"pool": source}}
    documents.append(POOL_C_SOURCE)
    return documents


def ready(ctx: Context) -> list[Any]:
    return [s for s in ctx.loaded_sources() if not ctx.expired(s)]


def shape(assignment: Any) -> list[Any]:
    """Everything an assignment holds, with the order of the profiles (the sources and rack
    paths are looked up by node, in any order)."""
    return [
        list(assignment.profile_of.items()),
        assignment.source_of,
        assignment.domain_of,
        assignment.findings,
    ]


@settings(max_examples=examples(150), deadline=None)
@given(fleets())
def test_profiles_assigned_at_once_equal_those_assigned_node_by_node(
    tmp_path_factory: Any, documents: list[dict[str, Any]]
) -> None:
    ctx = context(documents, tmp_path_factory.mktemp("inventory"))
    for source in ctx.loaded_sources():
        each = [(node, stated_values(source, node)) for node in ctx.selected[source.name]]
        assert ctx.hierarchy_values(source) == each
    slow = assign_one_by_one(ctx, ready(ctx))
    assert shape(assign(ctx)) == shape(slow)
    if not any(f.rule == NODE_AMBIGUOUS.id for f in slow.findings):
        assert shape(assign_disjoint(ctx, ready(ctx))) == shape(slow)


def test_the_comparison_sees_sources_profiles_and_rack_paths(tmp_path: Path) -> None:
    """The property above compares real assignments: three sources, three profiles."""
    fleet = [
        {"name": "n0", "labels": {"kubernetes.io/hostname": "n0", "pool": "a", ZONE: "z1"}},
        {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "pool": "c", ZONE: "z1", RACK: "r1"}},
        {"name": "n2", "labels": {"kubernetes.io/hostname": "n2", "pool": "b"}},
    ]
    documents: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet}
    ]
    for source, stated in (("a", {"n0": {BLOCK: "x", RACK: "y"}}), ("b", {})):
        documents += _configmap_source(source, stated)
        documents[-2]["spec"] |= {
            "levels": [ZONE, BLOCK, RACK],
            "nodeSelector": {"matchLabels": {"pool": source}},
        }
    documents.append(POOL_C_SOURCE)
    ctx = context(documents, tmp_path)
    fast = assign_disjoint(ctx, ready(ctx))
    assert shape(fast) == shape(assign_one_by_one(ctx, ready(ctx)))
    assert len({p.id for p in fast.profile_of.values()}) == 3
    assert fast.source_of == {"n0": "a", "n1": "c", "n2": "b"}
    assert fast.domain_of["n0"] == f"{ZONE}=z1\n{BLOCK}=x\n{RACK}=y\n"


def test_both_ways_find_two_profiles_with_one_id(tmp_path: Path, monkeypatch: Any) -> None:
    """A collision of profile IDs is found from every profile made, on either path (the
    C-speed one once looked only at one profile per ID, where no collision can show)."""
    fleet = [
        {"name": "n0", "labels": {"kubernetes.io/hostname": "n0", "pool": "c", ZONE: "z1"}},
        {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "pool": "c", ZONE: "z1", RACK: "r1"}},
    ]
    documents = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet},
        POOL_C_SOURCE,
    ]
    ctx = context(documents, tmp_path)
    assert not assign(ctx).findings  # two profiles, two IDs
    monkeypatch.setattr("tasgen.compile.profiles.profile_id", lambda keys: "one-id")
    for assigned in (assign_disjoint(ctx, ready(ctx)), assign_one_by_one(ctx, ready(ctx))):
        assert [f.rule for f in assigned.findings] == ["profile-collision"]
