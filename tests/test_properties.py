"""Property tests over random inventories (hypothesis): never a traceback, every node gets
exactly one profile, quotas are conserved, the output does not depend on how the inventory
is laid out in files, a rejected render leaves rendered/ as it was, and every object is
accepted by the upstream Kueue and NFD CRDs."""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tasgen.emit import yaml
from tasgen.kube.quantities import parse
from tasgen.parse import parse_text
from tests.conformance.crds import assert_conforms
from tests.conftest import NOW, REPO, examples, tasgen, tree

API = "topology.gpustack.ai/v1alpha1"
PROFILE = "topology.gpustack.ai/profile"
SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Building the CEL environment raises the recursion limit (cel-python does that); do it
# before hypothesis runs a test, which objects to the limit changing under it.
assert_conforms(
    [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "warm-up"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }
    ]
)
label_value = st.sampled_from(["a", "b", "c", "r-1", "r 2", ""])  # "r 2" is not a valid label value


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 8))
    result = []
    for i in range(count):
        labels = {
            "kubernetes.io/hostname": f"n{i}",
            "pool": draw(st.sampled_from(["p1", "p2"])),
            "gpu": draw(st.sampled_from(["A", "B"])),
        }
        if draw(st.booleans()):
            labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(["z1", "z2"]))
        if draw(st.booleans()):
            labels["fabric.topograph.run/tier-1"] = draw(st.sampled_from(["l1", "l2"]))
        allocatable = {
            "cpu": draw(st.sampled_from(["8", "1500m", "0"])),
            "nvidia.com/gpu": draw(st.sampled_from(["8", "4"])),
        }
        result.append({"name": f"n{i}", "labels": labels, "allocatable": allocatable})
    return result


@st.composite
def sources(draw: st.DrawFn, node_names: list[str]) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for i in range(draw(st.integers(0, 3))):
        selector = draw(
            st.sampled_from([{}, {"matchLabels": {"pool": "p1"}}, {"matchLabels": {"pool": "p2"}}])
        )
        if draw(st.booleans()):
            levels = draw(
                st.sampled_from(
                    [
                        ["topology.kubernetes.io/zone", "fabric.topograph.run/tier-1"],
                        ["fabric.topograph.run/tier-1"],
                    ]
                )
            )
            documents.append(_source(f"s{i}", selector, levels, {"nodeLabels": {}}))
            continue
        levels = ["topology.kubernetes.io/zone", "topology.gpustack.ai/rack"]
        stated = {
            name: {"topology.gpustack.ai/rack": draw(label_value)}
            for name in draw(st.lists(st.sampled_from([*node_names, "ghost"]), unique=True, max_size=4))
        }
        snapshot = yaml.dump(
            {"revision": draw(st.sampled_from(["r1", ""])), "nodes": stated}
            if stated
            else {"revision": "r1", "nodes": {}}
        )
        documents.append(
            _source(
                f"s{i}", selector, levels, {"configMap": {"namespace": "t", "name": f"s{i}", "key": "s.yaml"}}
            )
        )
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"namespace": "t", "name": f"s{i}"},
                "data": {"s.yaml": snapshot},
            }
        )
    return documents


def _source(name: str, selector: dict[str, Any], levels: list[str], kind: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "TopologySource",
        "metadata": {"name": name},
        "spec": {"nodeSelector": selector, "levels": levels, **kind},
    }


@st.composite
def inventories(draw: st.DrawFn) -> list[dict[str, Any]]:
    fleet = draw(nodes())
    documents = [{"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "n"}, "nodes": fleet}]
    documents += draw(sources([n["name"] for n in fleet]))
    config = {
        "apiVersion": API,
        "kind": "GeneratorConfig",
        "metadata": {"name": "c"},
        "spec": {"hardwareIdentityKeys": ["gpu"]},
    }
    documents.append(config)
    # One identity, one setting (flavor-settings-conflict): tolerations drawn per identity.
    tolerations = {
        g: draw(st.sampled_from([[], [GPU_TOLERATION], [GPU_TOLERATION, DRAIN_TOLERATION]])) for g in "AB"
    }
    for q in range(draw(st.integers(1, 2))):
        hardware = [
            {"identity": {"gpu": g}}
            | (
                {"nominalQuota": {"nvidia.com/gpu": draw(st.sampled_from(["7", "100"]))}}
                if draw(st.booleans())
                else {}
            )
            | ({"tolerations": tolerations[g]} if tolerations[g] else {})
            | draw(
                st.sampled_from(
                    [{}, {"borrowingLimit": {"nvidia.com/gpu": "5"}}, {"lendingLimit": {"cpu": "1"}}]
                )
            )
            for g in draw(st.lists(st.sampled_from(["A", "B"]), unique=True, min_size=1))
        ]
        spec = {"coveredResources": ["cpu", "nvidia.com/gpu"], "hardware": hardware}
        spec["clusterQueue"] = {"cohortName": "fleet", "namespaceSelector": {}}
        spec["localQueues"] = [{"namespace": f"team-{q}"}]
        documents.append(
            {"apiVersion": API, "kind": "ClusterQueuePlan", "metadata": {"name": f"q{q}"}, "spec": spec}
        )
    return documents


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
DRAIN_TOLERATION = {"key": "example.com/drain", "operator": "Equal", "value": "x", "effect": "NoExecute"}


def write(folder: Path, documents: list[dict[str, Any]], *, layout: int) -> Path:
    """The same documents in a different layout: one file, a file each, or shuffled nodes."""
    folder.mkdir(parents=True)
    if layout == 0:
        (folder / "all.yaml").write_text("---\n".join(yaml.dump(d) for d in documents))
        return folder
    rng = random.Random(layout)
    for i, document in enumerate(documents):
        copy = dict(document)
        if copy["kind"] == "NodeInventory":
            copy["nodes"] = rng.sample(copy["nodes"], len(copy["nodes"]))
        subfolder = folder / f"{rng.randrange(10**6):06d}-{i}"  # a random order on disk
        subfolder.mkdir()
        (subfolder / "doc.yaml").write_text(yaml.dump(copy))
    return folder


def rendered_objects(folder: Path) -> list[dict[str, Any]]:
    return [
        d
        for path, text in tree(folder).items()
        if not path.endswith("kustomization.yaml")
        for d in parse_text(text)
        if isinstance(d, dict)
    ]


@SETTINGS
@given(inventories())
def test_random_inventories(documents: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        runs = [
            tasgen(
                "render",
                "-i",
                str(write(root / f"in{k}", documents, layout=k)),
                "-o",
                str(root / f"out{k}"),
                "--now",
                NOW,
                "--format",
                "json",
            )
            for k in range(3)
        ]
        assert {r.exit_code for r in runs} <= {0, 1} and len({r.exit_code for r in runs}) == 1
        rules = [Counter(p["rule"] for p in r.json()["problems"]) for r in runs]
        assert rules[0] == rules[1] == rules[2]
        assert tree(root / "out0") == tree(root / "out1") == tree(root / "out2")  # layout does not matter
        event("rendered" if runs[0].exit_code == 0 else "rejected")
        if runs[0].exit_code == 0:
            objects = rendered_objects(root / "out0")
            _every_node_has_one_profile(documents, objects)
            _quota_is_conserved(documents, objects)
            assert_conforms(objects)
        else:
            assert not (root / "out0").exists()


def _every_node_has_one_profile(documents: list[dict[str, Any]], objects: list[dict[str, Any]]) -> None:
    names = [n["name"] for d in documents if d["kind"] == "NodeInventory" for n in d["nodes"]]
    profiled = [
        o["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
        for o in objects
        if o["kind"] == "NodeFeature" and PROFILE in o["spec"]["labels"]
    ]
    assert sorted(profiled) == sorted(names)


def _quota_is_conserved(documents: list[dict[str, Any]], objects: list[dict[str, Any]]) -> None:
    fleet = [n for d in documents if d["kind"] == "NodeInventory" for n in d["nodes"]]
    flavors = {
        o["metadata"]["name"]: o["spec"]["nodeLabels"]["gpu"]
        for o in objects
        if o["kind"] == "ResourceFlavor"
    }
    queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
    for plan in (d for d in documents if d["kind"] == "ClusterQueuePlan"):
        groups = queues[plan["metadata"]["name"]]["spec"].get("resourceGroups", [{"flavors": []}])
        for hw in plan["spec"]["hardware"]:
            for resource in ("cpu", "nvidia.com/gpu"):
                given_ = sum(
                    (
                        parse(r["nominalQuota"])
                        for f in groups[0]["flavors"]
                        if flavors[f["name"]] == hw["identity"]["gpu"]
                        for r in f["resources"]
                        if r["name"] == resource
                    ),
                    Decimal(0),
                )
                matching = [n for n in fleet if n["labels"]["gpu"] == hw["identity"]["gpu"]]
                declared = hw.get("nominalQuota", {}).get(resource)
                expected = (
                    parse(declared)
                    if declared
                    else sum((parse(n["allocatable"][resource]) for n in matching), Decimal(0))
                )
                assert given_ == (expected if matching else 0)
                _limits_are_conserved(hw, groups[0]["flavors"], flavors, resource, bool(matching))


def _limits_are_conserved(
    hw: dict[str, Any],
    cq_flavors: list[dict[str, Any]],
    flavors: dict[str, str],
    resource: str,
    matched: bool,
) -> None:
    """Each limit's parts sum to the declared total; no flavor lends more than it has."""
    entries = [
        r
        for f in cq_flavors
        if flavors[f["name"]] == hw["identity"]["gpu"]
        for r in f["resources"]
        if r["name"] == resource
    ]
    for field in ("borrowingLimit", "lendingLimit"):
        declared = hw.get(field, {}).get(resource)
        parts = [parse(r[field]) for r in entries if field in r]
        assert sum(parts, Decimal(0)) == (parse(declared) if declared and matched else 0)
        assert len(parts) == (len(entries) if declared else 0)
    assert all(parse(r["lendingLimit"]) <= parse(r["nominalQuota"]) for r in entries if "lendingLimit" in r)


@SETTINGS
@given(inventories(), inventories())
def test_a_rejected_render_leaves_rendered_byte_identical(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        out = root / "out"
        done = tasgen("render", "-i", str(write(root / "a", first, layout=0)), "-o", str(out), "--now", NOW)
        if done.exit_code != 0:  # a rejected first inventory: start from the example's tree
            example = tasgen("render", "-i", str(REPO / "inventories"), "-o", str(out), "--now", NOW)
            assert example.exit_code == 0, example.output
        before = tree(out)
        assert before  # a tree the rejected render must leave as it is
        broken = [*second, {"apiVersion": API, "kind": "Mystery", "metadata": {"name": "x"}}]
        run = tasgen("render", "-i", str(write(root / "b", broken, layout=0)), "-o", str(out), "--now", NOW)
        assert run.exit_code == 1
        assert tree(out) == before


yaml_fragments = st.sampled_from(
    [
        "a: 1\n",
        "- x\n",
        "---\n",
        "key: [1, {b: 2}]\n",
        "&a [*a]\n",
        "a: &x 1\nb: *x\n",
        "? [a]\n: b\n",
        "kind: TopologySource\n",
        "apiVersion: v1\nkind: ConfigMap\n",
        "metadata: {name: x}\n",
        "data: {k: 1}\n",
        "nodes: [{name: n, labels: {}}]\n",
        "spec: {levels: [a]}\n",
        "!!binary aGk=\n",
        "'\n",
        '"\\x\n',
        "\t\n",
        "{{{{\n",
        "a: b: c\n",
        "%YAML 1.1\n",
        "...\n",
        "\ufeffa: 1\n",
    ]
)


@SETTINGS
@given(st.lists(st.one_of(yaml_fragments, st.text(max_size=30)), max_size=12), st.binary(max_size=40))
def test_arbitrary_files_never_raise(fragments: list[str], raw: bytes) -> None:
    """Whatever the files hold, validate answers with problems (exit 1) or none (exit 0)."""
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        (root / "text.yaml").write_text("".join(fragments))
        (root / "raw.yml").write_bytes(raw)
        (root / "doc.json").write_text("".join(fragments))
        run = tasgen("validate", "-i", str(root), "--now", NOW, "--format", "json")
        assert run.exit_code in (0, 1)
        assert all(p["line"] >= 1 and p["col"] >= 1 for p in run.json()["problems"])
