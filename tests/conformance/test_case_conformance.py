"""What tasgen renders for every valid case is accepted by the CRDs of each pinned Kueue release
that serves the case's Kueue API version (v1beta2: v0.17.0 and v0.19.2; v1beta1: v0.14.8, the
newest release serving v1beta1 only, and the two others, which serve it too), and the flavor
updates tasgen relies on are the ones those releases allow."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

from tasgen.model import FLAVOR_KEY_PREFIX, flavor_key
from tests.conformance import crds
from tests.conftest import NOW, tasgen

CASES = Path(__file__).resolve().parents[1] / "cases" / "valid"
VALID = sorted(p.name for p in CASES.iterdir())

Obj = dict[str, Any]


def rendered(case: str, out: Path, monkeypatch: pytest.MonkeyPatch) -> list[Obj]:
    monkeypatch.chdir(CASES / case)
    assert tasgen("render", "-i", "inventory", "-o", str(out), "--now", NOW).exit_code == 0
    objects: list[Obj] = []
    for path in sorted(out.rglob("*.yaml")):
        if path.name != "kustomization.yaml":
            objects += [d for d in crds.load_documents(path.read_text()) if isinstance(d, dict)]
    return objects


@pytest.mark.parametrize("case", VALID)
def test_case_output_conforms_to_every_release_serving_it(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kueue = [o for o in rendered(case, tmp_path / "out", monkeypatch) if o["apiVersion"].startswith("kueue")]
    assert kueue, "a case renders Kueue objects"
    [version] = {o["apiVersion"].rpartition("/")[2] for o in kueue}  # one target per render
    problems = crds.conformance_problems(kueue, [crds.catalog(v) for v in crds.SERVING[version]])
    assert problems == []


def test_the_v1beta1_case_is_checked_against_a_release_without_v1beta2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = rendered("kueue-v1beta1", tmp_path / "out", monkeypatch)
    old = crds.catalog(crds.KUEUE_V1BETA1_VERSION)
    queue = next(o for o in objects if o["kind"] == "ClusterQueue")
    assert old.crd_version("kueue.x-k8s.io/v1beta2", "ClusterQueue") is None
    assert queue["spec"]["cohort"] == "fleet" and "cohortName" not in queue["spec"]
    # v0.14 knows MayStopSearch as Borrow: the v1beta2 spelling would be refused there
    assert queue["spec"]["flavorFungibility"]["whenCanBorrow"] == "Borrow"
    v1beta2_spelling = copy.deepcopy(queue)
    v1beta2_spelling["spec"]["flavorFungibility"]["whenCanBorrow"] = "MayStopSearch"
    refused = [p.path for p in old.validate(v1beta2_spelling) if p.source == "schema"]
    assert refused == ["spec.flavorFungibility.whenCanBorrow"]


def _flavor(objects: list[Obj]) -> Obj:
    return next(o for o in objects if o["kind"] == "ResourceFlavor" and "tolerations" in o["spec"])


@pytest.mark.parametrize("version", crds.KUEUE_VERSIONS)
def test_a_tolerations_change_could_not_be_an_update(version: str) -> None:
    """Why a tolerations change gives a new flavor name: updating them is refused (until a
    Kueue release after v0.19.2), while nodeTaints may change in place from v0.17.0."""
    cat = crds.catalog(version)
    old: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {
            "nodeLabels": {"nvidia.com/gpu.product": "H100"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologyName": "t",
        },
    }
    retolerated = copy.deepcopy(old)
    retolerated["spec"]["tolerations"][0]["effect"] = "NoExecute"
    assert [p.message for p in cat.validate(retolerated, old=old)] == [
        "Invalid value: tolerations are immutable when topologyName is set"
    ]
    retainted = copy.deepcopy(old)
    retainted["spec"]["nodeTaints"] = [{"key": "example.com/reserved", "effect": "NoSchedule"}]
    assert cat.validate(retainted, old=old) == []


def test_on_the_v1beta1_release_no_flavor_field_changes_in_place() -> None:
    """v0.14 freezes a topology flavor's whole spec: the v1beta1 target renames on a nodeTaints
    change too."""
    cat = crds.catalog(crds.KUEUE_V1BETA1_VERSION)
    old: Obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {"nodeLabels": {"nvidia.com/gpu.product": "H100"}, "topologyName": "t"},
    }
    retainted = copy.deepcopy(old)
    retainted["spec"]["nodeTaints"] = [{"key": "example.com/reserved", "effect": "NoSchedule"}]
    assert [p.message for p in cat.validate(retainted, old=old)] == [
        "Invalid value: resourceFlavorSpec are immutable when topologyName is set"
    ]


def test_changing_tolerations_renames_the_flavor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = tmp_path / "case"
    shutil.copytree(CASES / "flavor-tolerations", case)
    before = _flavor(rendered_at(case, tmp_path / "a", monkeypatch))
    for name in ("queue.yaml", "queue-2.yaml"):
        path = case / "inventory" / name
        path.write_text(path.read_text().replace("tolerationSeconds: 300", "tolerationSeconds: 600"))
    after = _flavor(rendered_at(case, tmp_path / "b", monkeypatch))
    assert before["metadata"]["name"] != after["metadata"]["name"]
    # the same nodes but for the flavor label, each flavor's own (compile/pins.py)
    old, new = before["spec"]["nodeLabels"], after["spec"]["nodeLabels"]
    assert {k: v for k, v in old.items() if not k.startswith(FLAVOR_KEY_PREFIX)} == {
        k: v for k, v in new.items() if not k.startswith(FLAVOR_KEY_PREFIX)
    }
    assert old[flavor_key(before["metadata"]["name"])] == before["metadata"]["name"]
    assert new[flavor_key(after["metadata"]["name"])] == after["metadata"]["name"]
    assert flavor_key(after["metadata"]["name"]) not in old


def rendered_at(case: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> list[Obj]:
    monkeypatch.chdir(case)
    assert tasgen("render", "-i", "inventory", "-o", str(out), "--now", NOW).exit_code == 0
    return [
        d
        for p in sorted(out.rglob("*.yaml"))
        if p.name != "kustomization.yaml"
        for d in crds.load_documents(p.read_text())
        if isinstance(d, dict)
    ]


@pytest.mark.parametrize("version", ["v1beta2", "v1beta1"])
def test_changing_tolerations_and_taints_never_asks_for_a_refused_update(
    version: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every object that keeps its name across the change is an update each release serving
    the target accepts (CEL transition rules included); what Kueue would refuse got a new name."""
    case = tmp_path / "case"
    shutil.copytree(CASES / "flavor-tolerations", case)
    (case / "inventory" / "config.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: GeneratorConfig\nmetadata: {name: c}\n"
        f"spec: {{kueueAPIVersion: {version}}}\n"
    )
    before = _by_name(rendered_at(case, tmp_path / "a", monkeypatch))
    for name in ("queue.yaml", "queue-2.yaml"):
        path = case / "inventory" / name
        text = path.read_text().replace("tolerationSeconds: 300", "tolerationSeconds: 600")
        path.write_text(text.replace("value: training", "value: serving"))
    after = _by_name(rendered_at(case, tmp_path / "b", monkeypatch))
    kept = sorted(set(before) & set(after))
    assert ("ClusterQueue", "", "training") in kept  # the queues update in place...
    renamed = {k for k in before if k[0] == "ResourceFlavor"} - set(after)
    assert renamed  # ...the flavors do not
    for release in crds.SERVING[version]:
        cat = crds.catalog(release)
        problems = [f"{k}: {p}" for k in kept for p in cat.validate(after[k], old=before[k])]
        assert problems == [], release


def _by_name(objects: list[Obj]) -> dict[tuple[str, str, str], Obj]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["apiVersion"].startswith("kueue")
    }
