"""The fast rules and profiles against their node-by-node twins on wider fleets than
tests/test_fast_rules.py draws: nodeLabels and writing sources, levels a source may not
write and read-only parents (region, zone), expired snapshots, matchExpressions and
two-label selectors, node names that are also label values, hostname labels that differ from
the name or are missing, unicode, quantities of every YAML type; and queue plans with
quotas and limits, valid or not. On every such inventory the whole compilation must also end
in findings, never in an exception (a rule that parsed what a sibling rule had yet to report
once crashed: tests/cases/invalid/lending-limit-bad-allocatable)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.compile.profiles import assign, assign_one_by_one
from tasgen.emit import yaml
from tasgen.load.files import read_inventory
from tasgen.pipeline import compile_inventory
from tasgen.validate.checks import nodes
from tests.conftest import NOW, examples
from tests.test_fast_rules import API, at_once, context, node_by_node

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
RACK, BLOCK = "topology.gpustack.ai/rack", "topology.gpustack.ai/block"
HOST = "kubernetes.io/hostname"
LEVEL_KEYS = [REGION, ZONE, BLOCK, RACK, "kubernetes.io/os", "example.com/x"]
KEYS = [*LEVEL_KEYS, "pool", "a/b/c", "-x", "x" * 64, "Bad.Prefix/x"]
NAMES = ["n0", "n1", "n2", "a", "N3", "n_4", "é", "n5" + "x" * 62, "r-1", "z1"]
VALUES = ["a", "b", "r-1", "", "z1", "n0", "n_4", "N3", "é", "-a", "x" * 64, "a b"]
QUANTITIES = ["8", "1500m", "abc", "-1", "1e400", 8, 0.5, 10**20, "9223372036854775807", -3]
QUOTAS = ["8", "100", "1Ti", "0", "abc", "-1", "1e400"]
RESOURCES = ["cpu", "memory", "pods"]
PAST, FUTURE = "2026-01-01T00:00:00Z", "2027-06-01T00:00:00Z"

#: level values from a pool of two, so that racks repeat and may sit in two zones
VALUE = st.one_of(st.sampled_from(["a", "b"]), st.sampled_from(VALUES))
LABELS = st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=4)


@st.composite
def selectors(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["all", "labels", "two", "expression"]))
    if kind == "all":
        return {}
    if kind == "labels":
        return {"matchLabels": {"pool": draw(st.sampled_from(["a", "b", ""]))}}
    if kind == "two":
        return {"matchLabels": {"pool": "a", ZONE: draw(st.sampled_from(["a", "z1"]))}}
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    expression: dict[str, Any] = {"key": "pool", "operator": operator}
    if operator in ("In", "NotIn"):
        expression["values"] = ["a"]
    return {"matchExpressions": [expression]}


@st.composite
def fleet(draw: st.DrawFn) -> tuple[list[str], list[dict[str, Any]]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    entries = []
    for name in names:
        labels = draw(LABELS) | {key: draw(VALUE) for key in (ZONE, RACK, REGION) if draw(st.booleans())}
        hostname = draw(st.sampled_from(["same", "other", "none"]))
        if hostname != "none":
            labels[HOST] = name if hostname == "same" else draw(st.sampled_from(VALUES))
        entry: dict[str, Any] = {"name": name, "labels": labels}
        allocatable = draw(st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(QUANTITIES)))
        entries.append(entry | ({"allocatable": allocatable} if allocatable else {}))
    return names, entries


@st.composite
def source(draw: st.DrawFn, name: str, names: list[str]) -> list[dict[str, Any]]:
    """A nodeLabels source, or a configMap one with its ConfigMap (expired at times)."""
    levels = draw(
        st.one_of(
            st.just([ZONE, RACK]),
            st.just([REGION, ZONE, RACK]),
            st.lists(st.sampled_from(LEVEL_KEYS), min_size=1, max_size=4, unique=True),
        )
    )
    spec: dict[str, Any] = {"nodeSelector": draw(selectors()), "levels": levels}
    document = {"apiVersion": API, "kind": "TopologySource", "metadata": {"name": name}, "spec": spec}
    if draw(st.booleans()):
        return [document | {"spec": spec | {"nodeLabels": {}}}]
    spec["configMap"] = {"namespace": "t", "name": name, "key": "s.yaml"}
    stated = draw(
        st.dictionaries(
            st.sampled_from([*names, "ghost"]),
            st.dictionaries(st.sampled_from(LEVEL_KEYS), VALUE, max_size=3),
            max_size=5,
        )
    )
    snapshot: dict[str, Any] = {"revision": "r1", "nodes": stated}
    expires = draw(st.sampled_from([None, PAST, FUTURE]))
    if expires:
        snapshot["expiresAt"] = expires
    text = yaml.dump(snapshot) if stated else yaml.dump(snapshot).replace("nodes:", "nodes: {}")
    metadata = {"namespace": "t", "name": name}
    return [
        document,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"s.yaml": text}},
    ]


@st.composite
def plan(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A queue plan over some resources, each hardware entry with quotas and limits drawn
    from valid and invalid quantities, in a cohort or not."""
    covered = draw(st.lists(st.sampled_from(RESOURCES), min_size=1, max_size=3, unique=True))
    quantities = st.dictionaries(st.sampled_from(RESOURCES), st.sampled_from(QUOTAS), max_size=2)
    hardware = []
    for identity in draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True)):
        entry: dict[str, Any] = {"identity": {"pool": identity}}
        for field in ("nominalQuota", "borrowingLimit", "lendingLimit"):
            found = draw(quantities)
            if found:
                entry[field] = found
        hardware.append(entry)
    queue: dict[str, Any] = {"namespaceSelector": {}}
    if draw(st.booleans()):
        queue["cohortName"] = "fleet"
    spec = {"coveredResources": covered, "hardware": hardware, "clusterQueue": queue}
    return {"apiVersion": API, "kind": "ClusterQueuePlan", "metadata": {"name": name}, "spec": spec}


@st.composite
def inventories(draw: st.DrawFn) -> list[dict[str, Any]]:
    names, entries = draw(fleet())
    documents: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": entries}
    ]
    for i in range(draw(st.integers(1, 3))):
        documents += draw(source(f"s{i}", names))
    return documents + [draw(plan(f"q{i}")) for i in range(draw(st.integers(0, 2)))]


@settings(max_examples=examples(200), deadline=None)
@given(inventories())
def test_wide_fleets_find_what_judging_each_node_finds(
    tmp_path_factory: Any, documents: list[dict[str, Any]]
) -> None:
    folder = tmp_path_factory.mktemp("inventory")
    ctx = context(documents, folder)
    assert at_once(ctx) == node_by_node(ctx)
    assert list(nodes._node_name(ctx)) == list(nodes.each_node_name(ctx.inventory.nodes.values()))
    fast, slow = assign(ctx), assign_one_by_one(ctx, [s for s in ctx.loaded_sources() if not ctx.expired(s)])
    assert list(fast.profile_of.items()) == list(slow.profile_of.items())
    assert (fast.source_of, fast.domain_of, fast.findings) == (slow.source_of, slow.domain_of, slow.findings)
    compile_inventory(read_inventory(folder), datetime.fromisoformat(NOW))  # findings, never an exception


def test_the_wide_comparison_sees_the_rules_the_narrow_one_never_reaches(tmp_path: Path) -> None:
    """Rack r1 in two zones (hierarchy-ambiguous-parent), a level no source may write
    (label-not-writable) and an expired source, which the wide fleets produce and the
    narrow ones do not."""
    entries = [
        {"name": name, "labels": {HOST: name, "pool": "a", ZONE: zone}}
        for name, zone in (("n0", "z1"), ("n1", "z2"))
    ]
    documents: list[dict[str, Any]] = [
        {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": entries}
    ]
    stated = {"n0": {RACK: "r1"}, "n1": {RACK: "r1", "kubernetes.io/os": "linux"}}
    for name, expires in (("s0", FUTURE), ("s1", PAST)):
        snapshot = {"revision": "r1", "expiresAt": expires, "nodes": stated}
        spec = {
            "nodeSelector": {"matchExpressions": [{"key": "pool", "operator": "Exists"}]},
            "levels": [ZONE, RACK, "kubernetes.io/os"],
            "configMap": {"namespace": "t", "name": name, "key": "s.yaml"},
        }
        documents += [
            {"apiVersion": API, "kind": "TopologySource", "metadata": {"name": name}, "spec": spec},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"namespace": "t", "name": name},
                "data": {"s.yaml": yaml.dump(snapshot)},
            },
        ]
    ctx = context(documents, tmp_path)
    found = at_once(ctx)
    assert found == node_by_node(ctx)
    assert {rule.id for rule, _ in found["stated"]} == {"label-not-writable"}
    assert len(found["parents"]) == 2  # r1 under z1 and z2, in each source
    assert [s.name for s in ctx.loaded_sources() if ctx.expired(s)] == ["s1"]
