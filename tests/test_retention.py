"""dropPolicy WaitForIdle: a flavor the plan drops stays in its queue at zero quota, after the
new flavors, until retainFor passes or the cluster shows it idle (render --kubeconfig); the
new flavors take the full quota at once; check and plan --base agree with render. The live
part against a real API server and Kueue: tests/e2e/test_cluster_retention.py."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.kube.quantities import parse
from tasgen.load.files import read_inventory
from tasgen.load.live import _no_quota
from tasgen.load.previous import carried_of
from tasgen.model import RETIRING_PREFIX
from tasgen.pipeline import compile_inventory
from tests.conftest import NOW, REPO, tasgen, tree
from tests.edits import RACK_SNAPSHOT, record_rack_b_r02

H100_5CE2 = "gpustack-nvidia-h100-80gb-hbm3-b46e62-5ce26b67c9cf"  # rack b-r02 not yet recorded
H100_7DE0 = "gpustack-nvidia-h100-80gb-hbm3-b46e62-7de0bea5615a"
LATER = "2026-12-01T06:00:00Z"


def _set_policy(inventory: Path, policy: str | None, retain_for: str | None = None) -> None:
    config = inventory / "config.yaml"
    text = config.read_text()
    gate = "    timeoutSeconds: 1800\n"
    more = (f"    dropPolicy: {policy}\n" if policy else "") + (
        f"    retainFor: {retain_for}\n" if retain_for else ""
    )
    assert gate in text
    config.write_text(text.replace(gate, gate + more))


def _render(inventory: Path, out: Path, now: str = NOW, *more: str) -> str:
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", now, *more)
    assert run.exit_code == 0, run.output
    return run.output


def _queues(out: Path) -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((out / "queues" / "clusterqueues.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs if d}


def _names(out: Path, file: str) -> list[str]:
    return [d["metadata"]["name"] for d in yaml.safe_load_all((out / file).read_text()) if d]


def _flavors(queue: dict[str, Any]) -> list[dict[str, Any]]:
    flavors: list[dict[str, Any]] = queue["spec"]["resourceGroups"][0]["flavors"]
    return flavors


def _retiring(queue: dict[str, Any]) -> dict[str, str]:
    annotations = queue["metadata"]["annotations"]
    return {k[len(RETIRING_PREFIX) :]: v for k, v in annotations.items() if k.startswith(RETIRING_PREFIX)}


@pytest.fixture
def example(tmp_path: Path) -> tuple[Path, Path]:
    """The example inventory, WaitForIdle, rendered once (before the rack edit)."""
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories", inventory)
    _set_policy(inventory, "WaitForIdle")
    out = tmp_path / "rendered"
    _render(inventory, out)
    return inventory, out


def _hold_and_drain(tmp_path: Path, inventory: Path) -> Path:
    """The same inventory under HoldAndDrain, rendered from scratch: what the new plan is."""
    other = tmp_path / "hold-and-drain"
    shutil.copytree(inventory, other / "inventory")
    config = other / "inventory" / "config.yaml"
    config.write_text(config.read_text().replace("dropPolicy: WaitForIdle", "dropPolicy: HoldAndDrain"))
    _render(other / "inventory", other / "rendered")
    return other / "rendered"


def test_hold_and_drain_is_the_default_and_renders_as_before(tmp_path: Path) -> None:
    """Unset, the policy is HoldAndDrain: a dropped flavor leaves the queue at once."""
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories", inventory)
    out = tmp_path / "rendered"
    shutil.copytree(REPO / "rendered", out)
    record_rack_b_r02(inventory)
    _render(inventory, out)
    for queue in _queues(out).values():
        assert H100_5CE2 not in [f["name"] for f in _flavors(queue)]
        assert _retiring(queue) == {}
    assert H100_5CE2 not in _names(out, "kueue/resourceflavors.yaml")


def _sums(queue: dict[str, Any], identity: str) -> dict[str, Any]:
    """Resource -> the nominal quotas of the queue's flavors of one identity, added up."""
    found: dict[str, Any] = {}
    for flavor in _flavors(queue):
        if identity in flavor["name"]:
            for r in flavor["resources"]:
                found[r["name"]] = found.get(r["name"], 0) + parse(r["nominalQuota"])
    return found


def test_a_dropped_flavor_stays_at_its_quota_after_the_new_ones(
    example: tuple[Path, Path], tmp_path: Path
) -> None:
    inventory, out = example
    before = _queues(out)
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    new = _queues(_hold_and_drain(tmp_path, inventory))
    for name, queue in _queues(out).items():
        flavors = _flavors(queue)
        # the new plan's flavors first, in HoldAndDrain's order
        assert [f["name"] for f in flavors[:-1]] == [f["name"] for f in _flavors(new[name])]
        assert flavors[-1]["name"] == H100_5CE2
        cohort = "cohortName" in queue["spec"]
        limits = {"borrowingLimit": "0", "lendingLimit": "0"} if cohort else {}
        # offline, the retained flavor keeps the quota it had, no borrowing, no lending
        (old,) = [f for f in _flavors(before[name]) if f["name"] == H100_5CE2]
        had = {r["name"]: r["nominalQuota"] for r in old["resources"]}
        covered = queue["spec"]["resourceGroups"][0]["coveredResources"]
        assert flavors[-1]["resources"] == [{"name": r, "nominalQuota": had[r], **limits} for r in covered]
        # and the new flavors of its identity give up as much: the identity's total is the plan's
        assert _sums(queue, "h100") == _sums(new[name], "h100")
        assert any(parse(v) > 0 for v in had.values())
        assert _retiring(queue) == {H100_5CE2: LATER}
        assert H100_5CE2 in [f["name"] for f in _flavors(before[name])]
    # its ResourceFlavor and Topology stay, and the retire step keeps them
    assert H100_5CE2 in _names(out, "kueue/resourceflavors.yaml")
    assert "gpustack-5ce26b67c9cf" in _names(out, "kueue/topologies.yaml")
    keep = (out / "retire" / "configmap-keep.yaml").read_text()
    assert H100_5CE2 in keep and "gpustack-5ce26b67c9cf" in keep
    # the gate's plan holds the retained flavor too: it sees no drop
    plan = (out / "gate" / "configmap-plan.yaml").read_text()
    assert plan.count(H100_5CE2) == 2


def _gpu_sum(queue: dict[str, Any]) -> int:
    return sum(
        int(r["nominalQuota"])
        for f in _flavors(queue)
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    )


def test_quota_is_conserved(example: tuple[Path, Path]) -> None:
    inventory, out = example
    before = {name: _gpu_sum(q) for name, q in _queues(out).items()}
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    assert {name: _gpu_sum(q) for name, q in _queues(out).items()} == before


def test_a_re_render_carries_the_time_and_changes_nothing(example: tuple[Path, Path]) -> None:
    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    first = tree(out)
    output = _render(inventory, out, "2026-12-20T00:00:00Z", "--no-cache")
    assert tree(out) == first
    assert "0 file(s) written" in output
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", "2027-03-01T00:00:00Z")
    assert run.exit_code == 0, run.output


def test_retain_for_never_ends_a_retention_offline(example: tuple[Path, Path]) -> None:
    """Time alone never turns a render into a drain: after retainFor, check stays green and an
    offline render still keeps the flavor (the memo reused: the result does not change)."""
    inventory, out = example
    _set_policy(inventory, None, "48h")
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    before = tree(out)
    assert all(_retiring(q) == {H100_5CE2: LATER} for q in _queues(out).values())
    expired = "2026-12-09T06:00:00Z"
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", expired)
    assert run.exit_code == 0, run.output
    _render(inventory, out, expired)
    assert tree(out) == before
    _render(inventory, out, expired, "--no-cache")
    assert tree(out) == before


def test_retain_for_ends_the_retention_in_a_live_render(example: tuple[Path, Path]) -> None:
    """In a live render (the cluster read: here what it showed, a busy flavor), retainFor ends
    the retention: the flavor leaves the queues (the gate drains it), its nodes stay pinned."""
    inventory, out = example
    _set_policy(inventory, None, "48h")
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    texts = {p.relative_to(out).as_posix(): p.read_text() for p in out.rglob("*.yaml")}
    files = read_inventory(inventory)
    busy = {"training": {H100_5CE2: {"nvidia.com/gpu": "4"}}, "inference": {}}
    shown = replace(carried_of(texts), usage=busy, idle={q: frozenset() for q in ("training", "inference")})
    for moment, kept in (("2026-12-03T05:59:59Z", True), ("2026-12-03T06:00:00Z", False)):
        result = compile_inventory(
            files, datetime.fromisoformat(moment.replace("Z", "+00:00")), carried=shown
        )
        assert result.rendering is not None and not result.failed
        queues = [m.body for m in result.rendering.manifests if m.kind == "ClusterQueue"]
        for queue in queues:
            names = [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]]
            assert (H100_5CE2 in names) is kept, (moment, names)


def test_a_flavor_that_comes_back_is_a_flavor_again(example: tuple[Path, Path]) -> None:
    inventory, out = example
    original = tree(out)
    source = (inventory / RACK_SNAPSHOT).read_text()
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    (inventory / RACK_SNAPSHOT).write_text(source)
    _render(inventory, out, "2026-12-02T00:00:00Z")
    assert tree(out) == original


def test_a_second_drop_keeps_the_first_time_and_order(example: tuple[Path, Path]) -> None:
    """Two retirements in turn: each keeps its own time, in the previous render's order."""
    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    # a new toleration on the H100s gives them new flavors: 7de0 is dropped in its turn
    toleration = "        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    added = toleration + "        - {key: example.com/maintenance, operator: Exists, effect: NoSchedule}\n"
    for name in ("training", "inference"):
        plan = inventory / "queues" / f"{name}.yaml"
        assert toleration in plan.read_text()
        plan.write_text(plan.read_text().replace(toleration, added))
    second = "2026-12-02T00:00:00Z"
    _render(inventory, out, second)
    training = _queues(out)["training"]
    names = [f["name"] for f in _flavors(training)]
    assert names[1] == "gpustack-nvidia-gb200-70b043-72853e2042c3"
    assert names[0].startswith("gpustack-nvidia-h100-80gb-hbm3-") and names[0] not in (H100_7DE0, H100_5CE2)
    assert names[2:] == [H100_7DE0, H100_5CE2]
    assert _retiring(training) == {H100_7DE0: second, H100_5CE2: LATER}
    # each keeps the quota it had; the new H100 flavor holds the rest of the identity's quota
    gpus = {
        f["name"]: r["nominalQuota"]
        for f in _flavors(training)
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    }
    assert gpus[H100_5CE2] == "30" and gpus[H100_7DE0] == "90"
    assert gpus[names[0]] == "0"  # 120 declared, all held by the retained flavors offline


def test_the_64_flavor_limit_counts_retained_flavors(example: tuple[Path, Path], tmp_path: Path) -> None:
    """A change that would need a 65th flavor beside the retained ones is an error naming the
    queue, and nothing is written."""
    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    # 63 more GB200 identities for training: 2 of its own + 63 + 1 retained = 66 > 64
    nodes = yaml.safe_load((inventory / "nodes.yaml").read_text())
    gb200 = next(n for n in nodes["nodes"] if n["labels"].get("nvidia.com/gpu.product") == "NVIDIA-GB200")
    for i in range(63):
        clone = yaml.safe_load(yaml.safe_dump(gb200))
        clone["name"] = f"extra-{i:02d}"
        clone["labels"]["kubernetes.io/hostname"] = clone["name"]
        clone["labels"]["nvidia.com/gpu.product"] = f"EXTRA-{i:02d}"
        nodes["nodes"].append(clone)
    (inventory / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    plan = inventory / "queues" / "training.yaml"
    text = plan.read_text()
    anchor = "    - identity:\n        nvidia.com/gpu.product: NVIDIA-GB200\n"
    assert anchor in text
    extra = "".join(f"    - identity: {{nvidia.com/gpu.product: EXTRA-{i:02d}}}\n" for i in range(63))
    plan.write_text(text.replace(anchor, anchor + extra))
    before = tree(out)
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", "2026-12-02T00:00:00Z")
    assert run.exit_code == 1
    assert "[flavor-limit]" in run.output and "'training'" in run.output
    assert "1 retained until idle" in run.output
    assert tree(out) == before


def test_a_previous_render_is_read_back_as_written(example: tuple[Path, Path]) -> None:
    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    previous = carried_of(tree(out))
    assert previous.queues["training"][-1] == H100_5CE2
    assert {q: {f: t.isoformat() for f, t in s.items()} for q, s in previous.since.items()} == {
        "inference": {H100_5CE2: "2026-12-01T06:00:00+00:00"},
        "training": {H100_5CE2: "2026-12-01T06:00:00+00:00"},
    }
    assert previous.flavors[H100_5CE2]["topologyName"] == "gpustack-5ce26b67c9cf"
    assert previous.idle is None


def test_a_hand_edited_or_broken_previous_render_carries_nothing_on() -> None:
    assert carried_of({"queues/clusterqueues.yaml": "a: [\n"}).queues == {}
    weird = "kind: ClusterQueue\nmetadata: {name: q, annotations: {" + RETIRING_PREFIX + "f: yesterday}}\n"
    weird += "spec: {resourceGroups: [{flavors: [{name: f}, 3]}]}\n"
    previous = carried_of({"queues/clusterqueues.yaml": weird})
    assert previous.queues == {"q": ("f",)} and previous.since == {}


def test_a_flavor_the_cluster_shows_idle_leaves_the_queue(example: tuple[Path, Path]) -> None:
    """With the cluster's word (Carried.idle), an idle retained flavor is dropped; the rest of
    the render is what the offline one is."""
    from tasgen.load.files import read_inventory  # noqa: PLC0415
    from tasgen.pipeline import compile_inventory  # noqa: PLC0415

    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, LATER)
    files = read_inventory(inventory)
    previous = carried_of(tree(out))
    now = previous.since["training"][H100_5CE2]
    kept = compile_inventory(files, now, carried=previous)
    idle = compile_inventory(files, now, carried=replace(previous, idle={"training": frozenset({H100_5CE2})}))
    assert kept.rendering is not None and idle.rendering is not None

    def flavors(rendering: Any) -> dict[str, list[str]]:
        return {
            m.name: [f["name"] for f in m.body["spec"]["resourceGroups"][0]["flavors"]]
            for m in rendering.manifests
            if m.kind == "ClusterQueue"
        }

    assert flavors(kept.rendering)["training"][-1] == H100_5CE2
    assert flavors(idle.rendering)["training"] == flavors(kept.rendering)["training"][:-1]
    assert flavors(idle.rendering)["inference"] == flavors(kept.rendering)["inference"]  # still busy there
    names = [m.name for m in idle.rendering.manifests if m.kind == "ResourceFlavor"]
    assert H100_5CE2 in names  # inference keeps it


@pytest.mark.parametrize(
    ("resources", "cohort", "expected"),
    [
        ([{"name": "gpu", "nominalQuota": "0"}], False, True),
        ([{"name": "gpu", "nominalQuota": "0Gi"}], False, True),
        ([{"name": "gpu", "nominalQuota": "2"}], False, False),
        ([{"name": "gpu", "nominalQuota": "0"}], True, False),  # in a cohort it may still borrow
        ([{"name": "gpu", "nominalQuota": "0", "borrowingLimit": "0"}], True, True),
        ([{"name": "gpu", "nominalQuota": "0", "borrowingLimit": "4"}], True, False),
        ([{"name": "cpu", "nominalQuota": "0"}, {"name": "gpu", "nominalQuota": "1"}], False, False),
    ],
)
def test_a_live_flavor_admits_nothing_only_at_zero_quota(
    resources: list[dict[str, str]], cohort: bool, expected: bool
) -> None:
    spec: dict[str, Any] = {"resourceGroups": [{"flavors": [{"name": "f", "resources": resources}]}]}
    if cohort:
        spec["cohortName"] = "c"
    assert _no_quota({"spec": spec}, "f") is expected
    assert _no_quota({"spec": spec}, "other") is True  # not in the live queue: nothing admitted there
    assert _no_quota(None, "f") is True  # no live queue


def test_an_unreadable_cluster_is_an_error_writing_nothing(
    example: tuple[Path, Path], tmp_path: Path
) -> None:
    inventory, out = example
    record_rack_b_r02(inventory)
    before = tree(out)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")
    run = tasgen(
        "render", "-i", str(inventory), "-o", str(out), "--now", LATER, "--kubeconfig", str(kubeconfig)
    )
    assert run.exit_code == 1
    assert f"{kubeconfig}:1:1: error: cannot use {kubeconfig}" in run.output
    assert "[cluster-unreadable]" in run.output
    assert tree(out) == before
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--kubeconfig", str(tmp_path / "absent"))
    assert run.exit_code == 1 and "[cluster-unreadable]" in run.output
    assert tree(out) == before


def test_plan_base_carries_on_the_base_revision_s_retention(tmp_path: Path) -> None:
    """plan --base compiles the head with the base revision's rendered/ as the previous render:
    the dropped flavor is kept, so no queue drains: the plan says it retains the flavor."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "inventories", root / "inventories")
    shutil.copytree(REPO / "rendered", root / "rendered")
    _set_policy(root / "inventories", "WaitForIdle")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    record_rack_b_r02(root / "inventories")
    run = tasgen("plan", "--base", "main", "-i", str(root / "inventories"), "-o", str(root / "rendered"),
                 "--now", LATER, "--format", "json")  # fmt: skip
    assert run.exit_code == 0, run.output
    report = run.json()
    queues = {q["name"]: q for q in report["queues"]}
    assert set(queues) == {"inference", "training"}
    for queue in queues.values():
        assert queue["drain"]["action"] == "retain" and queue["flavorsRemoved"] == [], queue
        assert queue["flavorsRetained"] == [H100_5CE2]
        assert (
            f"no eviction; {H100_5CE2} kept until idle at the quota its Workloads hold"
            in queue["drain"]["reason"]
        )
    # what render writes from the same base is what plan compared
    out = root / "rendered"
    _render(root / "inventories", out, LATER)
    assert all(_retiring(q) == {H100_5CE2: LATER} for q in _queues(out).values())


def test_the_time_is_written_in_utc_to_the_second(example: tuple[Path, Path]) -> None:
    inventory, out = example
    record_rack_b_r02(inventory)
    _render(inventory, out, "2026-12-01T08:00:00.750+02:00")
    assert all(_retiring(q) == {H100_5CE2: LATER} for q in _queues(out).values())


def test_an_unreadable_previous_render_under_wait_for_idle_is_a_warning(tmp_path: Path) -> None:
    """No silent fallback: a render that cannot read the rendered/ it replaces says what that
    means, at the queue's dropPolicy; the render after it (from what it wrote) does not."""
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "tests" / "cases" / "valid" / "minimal" / "inventory", inventory)
    plan = inventory / "queue.yaml"
    plan.write_text(plan.read_text().replace("\nspec:\n", "\nspec:\n  dropPolicy: WaitForIdle\n", 1))
    line = plan.read_text().splitlines().index("  dropPolicy: WaitForIdle") + 1
    out = tmp_path / "rendered"
    first = _render(inventory, out)
    assert f"queue.yaml:{line}:15: warning:" in first and "[previous-render-unread]" in first
    assert "rendered/queues/clusterqueues.yaml" in first
    assert "[previous-render-unread]" not in _render(inventory, out)
    (out / "kueue" / "resourceflavors.yaml").write_text("{ not: yaml")
    broken = _render(inventory, out)
    assert "[previous-render-unread]" in broken and "rendered/kueue/resourceflavors.yaml" in broken
    assert "rendered/queues/clusterqueues.yaml" not in broken
    # a queue that drops flavors the normal way needs no previous render
    plan.write_text(plan.read_text().replace("  dropPolicy: WaitForIdle\n", ""))
    assert "[previous-render-unread]" not in _render(inventory, tmp_path / "fresh")
