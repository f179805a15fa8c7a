"""The retire step's choice (pure) and its command on unusable input. On the real control
plane: tests/e2e/test_gate_retire.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.compile.gate_wiring import KEEP_KEY, RETIRE_RULES, keep_documents, retire_manifests
from tasgen.compile.gate_wiring import RENDER_ANNOTATION as COMPILER_RENDER_ANNOTATION
from tasgen.emit.yaml import documents
from tasgen.gate.retire import FLAVORS, RENDER_ANNOTATION, TOPOLOGIES, Keep, choose, read_keep
from tests.conftest import REPO
from tests.gate.test_command_errors import command

OURS = {"app.kubernetes.io/managed-by": "tasgen"}


def flavor(
    name: str, topology: str | None = None, labels: dict[str, str] = OURS, **meta: Any
) -> dict[str, Any]:
    spec = {"topologyName": topology} if topology else {}
    return {"metadata": {"name": name, "labels": labels, **meta}, "spec": spec}


def topology(name: str, labels: dict[str, str] = OURS) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {"levels": []}}


def queue(
    name: str, *flavors: str, busy: dict[str, str] | None = None, managed: bool = False
) -> dict[str, Any]:
    groups = [{"coveredResources": ["cpu"], "flavors": [{"name": f} for f in flavors]}] if flavors else []
    status = {
        "flavorsReservation": [
            {"name": f, "resources": [{"name": "cpu", "total": q, "borrowed": "0"}]}
            for f, q in (busy or {}).items()
        ]
    }
    meta = {"name": name, "labels": OURS if managed else {}}
    return {"metadata": meta, "spec": {"resourceGroups": groups}, "status": status}


KEEP = Keep("v1beta2", frozenset({"kept"}), frozenset({"t-kept"}))


def workload(name: str, *flavors: str, finished: bool = False) -> dict[str, Any]:
    """A Workload in namespace ns admitted (quota reserved) to queue q on ``flavors``."""
    assignments = [{"name": "main", "flavors": {"cpu": f}} for f in flavors]
    status: dict[str, Any] = {"admission": {"clusterQueue": "q", "podSetAssignments": assignments}}
    if finished:
        status["conditions"] = [{"type": "Finished", "status": "True"}]
    return {"metadata": {"name": name, "namespace": "ns"}, "status": status}


def verdict(
    flavors: list[dict[str, Any]],
    topologies: list[dict[str, Any]],
    queues: list[dict[str, Any]],
    workloads: list[dict[str, Any]] | None = None,
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, bool]]]:
    """What goes, and what is held: why, and whether that use passes by itself."""
    found = choose(KEEP, flavors, topologies, queues, workloads or [])
    held = [(p, name, use.why, use.passing) for p, name, use in found.held]
    assert found.waiting == any(passing for *_, passing in held)
    return [(p, o["metadata"]["name"]) for p, o in found.delete], held


CASES = {
    "a retired flavor nobody names goes": (
        [flavor("old")],
        [],
        [queue("q", "kept")],
        [(FLAVORS, "old")],
        [],
    ),
    "a flavor of the render stays, used or not": ([flavor("kept")], [], [], [], []),
    "a flavor tasgen did not make is never touched": (
        [flavor("theirs", labels={"team": "x"}), flavor("bare", labels={})],
        [],
        [],
        [],
        [],
    ),
    "a flavor being deleted already is left to its finalizer": (
        [flavor("old", deletionTimestamp="2026-12-01T00:00:00Z")],
        [],
        [],
        [],
        [],
    ),
    "a retired flavor a queue still names is held, saying which": (
        [flavor("old")],
        [],
        [queue("theirs", "old")],
        [],
        [(FLAVORS, "old", "ClusterQueue theirs names it", False)],
    ),
    "a managed queue naming it lets go by itself (the gate switches it): worth waiting for": (
        [flavor("old")],
        [],
        [queue("mine", "old", managed=True)],
        [],
        [(FLAVORS, "old", "ClusterQueue mine names it", True)],
    ),
    "one lasting use among passing ones keeps it for good": (
        [flavor("old")],
        [],
        [queue("mine", "old", managed=True), queue("theirs", "old")],
        [],
        [(FLAVORS, "old", "ClusterQueue theirs names it", False)],
    ),
    "a retired flavor with stranded reservations is held": (
        [flavor("old")],
        [],
        [queue("q", "kept", busy={"old": "2"})],
        [],
        [(FLAVORS, "old", "ClusterQueue q reports reservations or usage on it", False)],
    ),
    "zero reservations do not hold it": (
        [flavor("old")],
        [],
        [queue("q", "kept", busy={"old": "0"})],
        [(FLAVORS, "old")],
        [],
    ),
    "a retired Topology waits for the retired flavor that names it to be gone": (
        [flavor("old", "t-old"), flavor("kept", "t-kept")],
        [topology("t-old"), topology("t-kept")],
        [],
        [(FLAVORS, "old")],
        [(TOPOLOGIES, "t-old", "ResourceFlavor old names it", True)],
    ),
    "... and goes in the next round": (
        [flavor("kept", "t-kept")],
        [topology("t-old"), topology("t-kept")],
        [],
        [(TOPOLOGIES, "t-old")],
        [],
    ),
    "a retired Topology a remaining flavor names is held": (
        [flavor("kept", "t-old"), flavor("old", "t-old")],
        [topology("t-old")],
        [queue("q", "old")],
        [],
        [
            (FLAVORS, "old", "ClusterQueue q names it", False),
            (TOPOLOGIES, "t-old", "ResourceFlavor kept names it", False),
        ],
    ),
    "a retired Topology waits with the retired flavor a managed queue still names": (
        [flavor("old", "t-old")],
        [topology("t-old")],
        [queue("mine", "old", managed=True)],
        [],
        [
            (FLAVORS, "old", "ClusterQueue mine names it", True),
            (TOPOLOGIES, "t-old", "ResourceFlavor old names it", True),
        ],
    ),
    "... but not with one a foreign queue names": (
        [flavor("old", "t-old")],
        [topology("t-old")],
        [queue("theirs", "old")],
        [],
        [
            (FLAVORS, "old", "ClusterQueue theirs names it", False),
            (TOPOLOGIES, "t-old", "ResourceFlavor old names it", False),
        ],
    ),
    "a Topology tasgen did not make is never touched": ([], [topology("t", labels={})], [], [], []),
    "a retired Topology waits for a flavor being deleted already, which goes by itself": (
        [flavor("old", "t-old", deletionTimestamp="2026-12-01T00:00:00Z")],
        [topology("t-old")],
        [],
        [],
        [(TOPOLOGIES, "t-old", "ResourceFlavor old names it", True)],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_choose(case: str) -> None:
    flavors, topologies, queues, delete, held = CASES[case]
    assert verdict(flavors, topologies, queues) == (delete, held)


def test_keep_list_holds_every_rendered_flavor_and_topology(tmp_path: Path) -> None:
    """Written as rendered/ writes it, read back by the retire command's reader."""
    objects = [
        *yaml.safe_load_all((REPO / "rendered" / "kueue" / "resourceflavors.yaml").read_text()),
        *yaml.safe_load_all((REPO / "rendered" / "kueue" / "topologies.yaml").read_text()),
    ]
    (tmp_path / KEEP_KEY).write_text(documents(keep_documents(objects)))
    keep = read_keep(tmp_path)
    assert keep.version == "v1beta2"
    assert keep.flavors == {o["metadata"]["name"] for o in objects if o["kind"] == "ResourceFlavor"}
    assert keep.topologies == {o["metadata"]["name"] for o in objects if o["kind"] == "Topology"}
    assert len(keep.flavors) == 4 and len(keep.topologies) == 5


def test_retire_objects_share_the_keep_list_and_its_hash() -> None:
    found = {m.file: m.body for m in retire_manifests([], namespace="ns", image="img:1")}
    assert set(found) == {
        "retire/serviceaccount.yaml",
        "retire/clusterrole.yaml",
        "retire/clusterrolebinding.yaml",
        "retire/configmap-keep.yaml",
        "retire/job.yaml",
    }
    assert found["retire/clusterrole.yaml"]["rules"] == RETIRE_RULES
    pod = found["retire/job.yaml"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "tasgen-retire" and pod["containers"][0]["image"] == "img:1"
    assert pod["containers"][0]["command"] == ["python", "-m", "tasgen.gate.retire"]
    assert pod["volumes"][0]["configMap"]["name"] == found["retire/configmap-keep.yaml"]["metadata"]["name"]
    other = retire_manifests(
        [flavor("x") | {"kind": "ResourceFlavor", "apiVersion": "v"}], namespace="ns", image="i"
    )
    hashes = [
        m["spec"]["template"]["metadata"]["annotations"]
        for m in (found["retire/job.yaml"], {m.file: m.body for m in other}["retire/job.yaml"])
    ]
    assert hashes[0] != hashes[1]  # a new keep list recreates the (immutable) Job


def retire(*args: str) -> tuple[int, list[dict[str, Any]], str]:
    return command("tasgen.gate.retire", *args)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("- a\n", "expected a mapping"),
        ("apiVersion: v1\n", "apiVersion must be"),
        (
            "apiVersion: kueue.x-k8s.io/v1beta2\nresourceFlavors: [1]\n",
            "resourceFlavors must be a list of names",
        ),
        ("apiVersion: kueue.x-k8s.io/v1beta2\ntopologies: x\n", "topologies must be a list of names"),
        ("a: [\n", ":1:4: invalid YAML: unclosed bracket '[' [yaml-syntax]"),
        (
            "a: " + "[" * 5000 + "]" * 5000 + "\n",
            ":1:259: invalid YAML: recursion limit exceeded [yaml-syntax]",
        ),
        ("a: 1\n---\nb: 2\n", "expected one YAML document, found 2"),
        ("apiVersion: kueue.x-k8s.io/v1beta2\nrender: zero\n", "render must be a positive integer"),
    ],
)
def test_an_unusable_keep_list_exits_2_and_deletes_nothing(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / KEEP_KEY).write_text(text)
    code, lines, stderr = retire("--keep", str(tmp_path), "--kubeconfig", str(tmp_path / "none"))
    assert code == 2 and "Traceback" not in stderr, stderr
    assert [line["event"] for line in lines] == ["error"] and said in lines[0]["message"]
    assert str(tmp_path / KEEP_KEY) in lines[0]["message"]


def test_a_missing_keep_list_exits_2(tmp_path: Path) -> None:
    code, lines, stderr = retire("--keep", str(tmp_path / "absent.yaml"))
    assert code == 2 and "Traceback" not in stderr
    assert "absent.yaml" in lines[0]["message"]


WORKLOAD_CASES = {
    "a retired flavor an admitted Workload names is held, and its Topology with it": (
        [flavor("old", "t-old"), flavor("gone")],
        [topology("t-old")],
        [workload("w1", "kept"), workload("w2", "old"), workload("w3", "old")],
        [(FLAVORS, "gone")],
        [
            (FLAVORS, "old", "Workload ns/w2 is admitted on it", False),
            (TOPOLOGIES, "t-old", "ResourceFlavor old names it", False),
        ],
    ),
    "a finished Workload holds nothing": (
        [flavor("old")],
        [],
        [workload("w", "old", finished=True)],
        [(FLAVORS, "old")],
        [],
    ),
    "a Workload outlasts a managed queue that lets go": (
        [flavor("old")],
        [],
        [workload("w", "old")],
        [],
        [(FLAVORS, "old", "Workload ns/w is admitted on it", False)],
    ),
}


@pytest.mark.parametrize("case", WORKLOAD_CASES, ids=list(WORKLOAD_CASES))
def test_choose_with_workloads(case: str) -> None:
    flavors, topologies, workloads, delete, held = WORKLOAD_CASES[case]
    queues = [queue("mine", "old", managed=True)] if "managed queue" in case else []
    assert verdict(flavors, topologies, queues, workloads) == (delete, held)


def test_the_retire_role_lists_workloads() -> None:
    """Catalog.workloads lists them in every namespace: the ClusterRole must allow it."""
    assert any("workloads" in r["resources"] and r["verbs"] == ["list"] for r in RETIRE_RULES)


def stamped(name: str, serial: int | None) -> dict[str, Any]:
    annotations = {RENDER_ANNOTATION: str(serial)} if serial is not None else {}
    return flavor(name, annotations=annotations)


def test_only_what_an_older_render_stamped_is_retired() -> None:
    keep = Keep("v1beta2", frozenset({"kept"}), frozenset(), render=5)
    flavors = [stamped("older", 4), stamped("same", 5), stamped("newer", 6), stamped("unstamped", None)]
    found = choose(keep, flavors, [], [])
    assert [o["metadata"]["name"] for _, o in found.delete] == ["older", "unstamped"]
    assert {name: (use.why, use.passing) for _, name, use in found.held} == {
        "same": ("render 5 wrote it, not one older than this render (5)", False),
        "newer": ("render 6 wrote it, not one older than this render (5)", False),
    }
    # a keep list of a tasgen that stamped nothing: no limit, as before
    legacy = choose(Keep("v1beta2", frozenset({"kept"}), frozenset()), flavors, [], [])
    assert len(legacy.delete) == 4


def test_the_retire_step_and_the_compiler_name_the_stamp_alike() -> None:
    assert RENDER_ANNOTATION == COMPILER_RENDER_ANNOTATION


@pytest.mark.parametrize(("text", "render"), [("render: 7\n", 7), ("", None)])
def test_the_keep_list_carries_the_render_serial(tmp_path: Path, text: str, render: int | None) -> None:
    (tmp_path / KEEP_KEY).write_text("apiVersion: kueue.x-k8s.io/v1beta2\n" + text)
    assert read_keep(tmp_path).render == render
