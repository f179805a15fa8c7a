"""The rules that judge a fleet's distinct labels and quantities once (not node by node) find
exactly what judging node by node finds: same hits, same places, same order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.emit import yaml
from tasgen.load.files import load_files, read_inventory
from tasgen.model import Inventory, Node, Selector, Settings, Source, Where
from tasgen.validate import validate
from tasgen.validate.checks import Context, base, hierarchy, nodes, snapshots
from tasgen.validate.checks.snapshots import Verdict, label_problem, placed_labels
from tasgen.validate.hierarchy import stated_values
from tests.conftest import NOW, examples

API = "topology.gpustack.ai/v1alpha1"
ZONE, RACK = "topology.kubernetes.io/zone", "topology.gpustack.ai/rack"
KEYS = [ZONE, RACK, "pool", "a/b/c", "Bad.Prefix/x", "-x", "kubernetes.io/os", "x" * 64]
VALUES = ["a", "r-1", "", "r 2", "-a", "x" * 64, "z1"]
QUANTITIES = ["8", "1500m", "2Gi", "abc", "-1", "1e400", 8, 0.5]


@st.composite
def fleets(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A NodeInventory and two configMap sources that may state the same nodes, with valid
    and invalid label keys, values and quantities drawn from small pools (so they repeat)."""
    # names that are no DNS subdomain or too long, at times: a hostname label repeats its node's
    names = [
        draw(st.sampled_from([f"n{i}", f"N{i}", f"n_{i}", f"n{i}" + "x" * 63]))
        for i in range(draw(st.integers(1, 6)))
    ]
    fleet = [
        {
            "name": name,
            "labels": {"kubernetes.io/hostname": name}
            | draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)),
            "allocatable": draw(
                st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), st.sampled_from(QUANTITIES))
            ),
        }
        for name in names
    ]
    documents: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet}
    ]
    for source in ("s0", "s1"):
        stated = draw(
            st.dictionaries(
                st.sampled_from([*names, "ghost"]),  # a node the inventory lacks, at times
                st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3),
                max_size=4,
            )
        )
        documents += _configmap_source(source, stated)
        if source == "s1" and draw(st.booleans()):  # a selector, so that a stated node may be unselected
            documents[-2]["spec"]["nodeSelector"] = {"matchLabels": {"pool": "a"}}
    return documents


def _configmap_source(name: str, stated: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    source = {
        "apiVersion": API,
        "kind": "TopologySource",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {},
            "levels": [ZONE, RACK],
            "configMap": {"namespace": "t", "name": name, "key": "s.yaml"},
        },
    }
    snapshot = yaml.dump({"revision": "r1", "nodes": stated}) if stated else "revision: r1\nnodes: {}\n"
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "t", "name": name},
        "data": {"s.yaml": snapshot},
    }
    return [source, configmap]


def context(documents: list[dict[str, Any]], folder: Path) -> Context:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "all.yaml").write_text("---\n".join(yaml.dump(d) for d in documents))
    validation = validate(load_files(read_inventory(folder)), datetime.fromisoformat(NOW))
    assert validation.context is not None
    return validation.context


def node_by_node(ctx: Context) -> dict[str, list[Any]]:
    fleet = ctx.inventory.nodes.values()
    admin = ctx.inventory.settings.admin_label_prefix
    writers = [s for s in ctx.writing_sources() if not ctx.expired(s)]
    return {
        "labels": list(nodes.each_node_labels(fleet)),
        "quantities": list(nodes.each_node_quantities(fleet)),
        "stated": [
            found for src in ctx.writing_sources() for found in placed_labels(src, _judge(src, admin))
        ],
        "conflicts": list(hierarchy.contended(writers)),
        "unknown": list(snapshots.each_unknown_node(ctx)),
        "unselected": [
            hit for src in ctx.writing_sources() for hit in snapshots.each_unselected_node(ctx, src)
        ],
        "read-only": list(snapshots.each_read_only_parent(ctx)),
        "gaps": [
            hit for src in hierarchical(ctx) for hit in hierarchy.each_node_gap(src, each_stated(ctx, src))
        ],
        "parents": [
            hit
            for src in hierarchical(ctx)
            for hit in hierarchy.each_node_second_parent(src, each_stated(ctx, src))
        ],
    }


def hierarchical(ctx: Context) -> list[Source]:
    return [s for s in ctx.loaded_sources() if not (s.writes and s.snapshot is None)]


def each_stated(ctx: Context, src: Source) -> list[tuple[Node, dict[str, str]]]:
    """stated_values node by node (what Context.stated makes in C-speed passes)."""
    return [(node, stated_values(src, node)) for node in ctx.selected[src.name]]


def _judge(src: Source, admin: str | None) -> Callable[[tuple[str, str]], Verdict]:
    return lambda pair: label_problem(src, pair[0], pair[1], admin)


def at_once(ctx: Context) -> dict[str, list[Any]]:
    return {
        "labels": list(nodes._node_labels(ctx)),
        "quantities": list(nodes._node_quantities(ctx)),
        "stated": snapshots._judge_labels(ctx),
        "conflicts": list(hierarchy.conflicts(ctx)),
        "unknown": list(snapshots._unknown_node(ctx)),
        "unselected": list(snapshots._unselected_node(ctx)),
        "read-only": list(snapshots._read_only_parents(ctx)),
        "gaps": list(hierarchy._parent_chain(ctx)),
        "parents": list(hierarchy._single_parent(ctx)),
    }


@settings(max_examples=examples(150), deadline=None)
@given(fleets())
def test_judging_distinct_values_finds_what_judging_each_node_finds(
    tmp_path_factory: Any, documents: list[dict[str, Any]]
) -> None:
    ctx = context(documents, tmp_path_factory.mktemp("inventory"))
    assert at_once(ctx) == node_by_node(ctx)


def test_the_comparison_sees_every_kind_of_problem(tmp_path: Path) -> None:
    """The property above compares real findings, not two empty lists."""
    fleet = [
        {"name": "n0", "labels": {"pool": "r 2"}, "allocatable": {"cpu": "abc"}},
        {"name": "n1", "labels": {"-x": "a", ZONE: "z1"}, "allocatable": {"cpu": "8"}},
        {"name": "n2", "labels": {ZONE: "z2"}},
    ]
    documents = [{"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet}]
    # s0 names a node the inventory lacks, and repeats n1's zone wrongly
    documents += _configmap_source("s0", {"n0": {RACK: "r 2"}, "n1": {"pool": "a", ZONE: "z2"}, "ghost": {}})
    # n0 has racks but no zone (a gap in both sources); rack r9 sits in two zones
    documents += _configmap_source("s1", {"n0": {RACK: "r1"}, "n1": {RACK: "r9"}, "n2": {RACK: "r9"}})
    found = at_once(context(documents, tmp_path))
    assert found == node_by_node(context(documents, tmp_path))
    kinds = ("labels", "quantities", "stated", "conflicts", "gaps", "parents", "unknown", "read-only")
    assert [len(found[k]) for k in kinds] == [2, 1, 2, 1, 2, 1, 1, 1]


#: a node's labels, or a selector's matchLabels
LABELS = st.dictionaries(st.sampled_from(["pool", "zone", "x"]), st.sampled_from(["a", "b"]), max_size=3)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(LABELS, max_size=8),
    st.lists(LABELS, max_size=4),  # matchLabels: the first key grouped, the others filtered
)
def test_selecting_by_groups_of_a_labels_value_is_selecting_node_by_node(
    labels: list[dict[str, str]], selectors: list[dict[str, str]]
) -> None:
    fleet = [Node(f"n{i}", mapping, {}, Where("f", 0), i) for i, mapping in enumerate(labels)]
    by_key: dict[str, dict[str | None, list[Node]]] = {}  # shared, as the sources of one fleet share it
    for match_labels in selectors:
        selector = Selector(tuple(sorted(match_labels.items())))
        assert base._select(selector, fleet, by_key) == [n for n in fleet if selector.selects(n.labels)]


@settings(max_examples=examples(200), deadline=None)
@given(st.permutations([f"n{i}" for i in range(6)]), st.integers(0, 6))
def test_the_nodes_in_name_order_are_those_looked_up_by_name(order: list[str], kept: int) -> None:
    """Context.ordered_nodes takes an inventory already in name order as it is, and looks the
    nodes up by name otherwise: both give the nodes of sorted(names)."""
    nodes = {name: Node(name, {}, {}, Where("f", 0), i) for i, name in enumerate(order[:kept])}
    ctx = Context(Inventory(Settings(), nodes, {}, {}), datetime.fromisoformat(NOW))
    assert ctx.ordered_nodes == [nodes[name] for name in sorted(nodes)]
    assert [n.name for n in ctx.ordered_nodes] == ctx.node_names
