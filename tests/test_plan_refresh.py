"""The plan of a scheduled live refresh's pull request: rendered/ changes, inventories/ does not.
The plan carries on each side's own rendered/ (the base revision's, the working tree's), so it
states what the live render wrote: released nodes that move, flavors whose retention ends (in
place when found idle, a drain when gate.retainFor passed), and the quotas. The oracle reads the
two committed trees, never the plan's code (docs/explanation/plan.md, "A live refresh")."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.emit.tree import render_tree
from tasgen.kube.quantities import parse
from tasgen.load.files import read_inventory
from tasgen.load.previous import carried_of
from tasgen.model import LiveNodes
from tasgen.pipeline import compile_inventory
from tests.conftest import NOW, REPO, tasgen, tree
from tests.e2e.scene import RACK_B_R02, set_gate
from tests.edits import record_rack_b_r02
from tests.plan.fleet import Repo

LATER = "2026-11-30T00:30:00Z"  # before retainFor (1h) passes
EXPIRED = "2026-11-30T02:00:00Z"  # after
PROFILE = "topology.gpustack.ai/profile"
OLD = "gpustack-nvidia-h100-80gb-hbm3-b46e62-5ce26b67c9cf"  # rack b-r02's flavor before the edit


@pytest.fixture
def merged(tmp_path: Path) -> Repo:
    """The example under WaitForIdle (retainFor 1h) with rack b-r02 recorded and rendered
    offline (the flavor retained, the nodes pinned), committed on main."""
    repo = Repo(tmp_path / "repo")
    shutil.copytree(REPO / "inventories", repo.root / "inventories")
    set_gate(repo.root / "inventories", "WaitForIdle", "1h")
    _render(repo, NOW)
    repo.commit_tree("the example")
    record_rack_b_r02(repo.root / "inventories")
    _render(repo, NOW)
    repo.commit_tree("rack b-r02 recorded")
    return repo


def _render(repo: Repo, now: str) -> None:
    run = tasgen(
        "render", "-i", str(repo.root / "inventories"), "-o", str(repo.root / "rendered"), "--now", now
    )
    assert run.exit_code == 0, run.output


def _live_refresh(repo: Repo, now: str, **live: Any) -> None:
    """What `tasgen render --kubeconfig` writes, given what the cluster shows (``live``:
    Carried's idle, usage and live fields), into the working tree's rendered/."""
    out = repo.root / "rendered"
    carried = dataclasses.replace(carried_of(tree(out)), **live)
    compiled = compile_inventory(
        read_inventory(repo.root / "inventories"), datetime.fromisoformat(now), carried=carried
    )
    assert not compiled.failed, compiled.problems()
    assert compiled.rendering is not None
    files = render_tree(
        compiled.rendering.manifests, compiled.rendering.features, compiled.rendering.synced
    ).files
    shutil.rmtree(out)
    for path, text in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    assert repo.git("status", "--porcelain", "--", "inventories") == ""  # the refresh's PR


def _plan(repo: Repo, now: str, format_: str = "json") -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo.root)
        run = tasgen("plan", "--base", "main", "--now", now, "--format", format_)
    assert run.exit_code == 0, run.output
    return run.output


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def _queues(texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _docs(texts["queues/clusterqueues.yaml"])}


def _flavors(queue: dict[str, Any]) -> set[str]:
    return {f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]}


def _quota_rows(queue: dict[str, Any]) -> dict[tuple[str, str, str], Any]:
    return {
        (f["name"], r["name"], field): parse(str(value))
        for f in queue["spec"]["resourceGroups"][0]["flavors"]
        for r in f["resources"]
        for field, value in r.items()
        if field != "name"
    }


def _profiles(texts: dict[str, str]) -> dict[str, str | None]:
    found = {}
    for path, text in texts.items():
        if path.startswith("labels/") and path.endswith("nodefeatures-profiles.yaml"):
            for doc in _docs(text):
                found[doc["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]] = doc["spec"][
                    "labels"
                ].get(PROFILE)
    return found


def _assert_states_the_trees(report: dict[str, Any], before: dict[str, str], after: dict[str, str]) -> None:
    """Flavors removed and quota rows of each queue, and the profile moves: the two trees'."""
    old_queues, new_queues = _queues(before), _queues(after)
    for queue in report["queues"]:
        name = queue["name"]
        removed = _flavors(old_queues[name]) - _flavors(new_queues[name])
        assert {f["name"] for f in queue["flavorsRemoved"]} == removed, name
        old, new = _quota_rows(old_queues[name]), _quota_rows(new_queues[name])
        expected = {k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        shown = {
            (d["flavor"], d["resource"], d["field"]): tuple(
                None if v is None else parse(v) for v in (d["before"], d["after"])
            )
            for d in queue["quota"]
        }
        assert shown == expected, name
    was, now = _profiles(before), _profiles(after)
    moved = sum(1 for n in was if was[n] != now.get(n))
    assert sum(m["nodes"] for m in report["profiles"]["moves"]) == moved


def test_a_refresh_that_finds_the_flavor_idle_releases_the_nodes_and_removes_it_in_place(
    merged: Repo,
) -> None:
    before = tree(merged.root / "rendered")
    idle = {"training": frozenset({OLD}), "inference": frozenset({OLD})}
    _live_refresh(merged, LATER, idle=idle, usage={}, live=LiveNodes())
    after = tree(merged.root / "rendered")
    report = yaml.safe_load(_plan(merged, LATER))
    assert report["summary"]["queuesChanged"] == 2  # it said 0 when the plan compiled the head offline
    _assert_states_the_trees(report, before, after)
    for queue in report["queues"]:
        assert [f["name"] for f in queue["flavorsRemoved"]] == [OLD]
        assert queue["drain"]["action"] == "in-place"
        assert f"the retention of {OLD} ends" in queue["drain"]["reason"]
    assert report["summary"]["drains"] == []
    assert report["nodes"]["pins"] == []  # released
    assert {m["from"]: m["nodes"] for m in report["profiles"]["moves"]} == {OLD[-12:]: 4}


def test_a_refresh_after_retain_for_is_a_drain_that_names_the_flavor(merged: Repo) -> None:
    before = tree(merged.root / "rendered")
    busy = RACK_B_R02[0]
    usage = {"training": {OLD: {"cpu": "10", "memory": "100Gi", "nvidia.com/gpu": "8"}}}
    _live_refresh(merged, EXPIRED, idle={}, usage=usage, live=LiveNodes(busy=frozenset({busy})))
    after = tree(merged.root / "rendered")
    report = yaml.safe_load(_plan(merged, EXPIRED))
    _assert_states_the_trees(report, before, after)
    training = next(q for q in report["queues"] if q["name"] == "training")
    assert [f["name"] for f in training["flavorsRemoved"]] == [OLD]
    assert training["drain"]["action"] == "hold-and-drain"
    assert f"gate.retainFor (1h) has passed for the retained {OLD}" in training["drain"]["reason"]
    assert "training" in report["summary"]["drains"]
    # the busy node stays on its flavor's labels; the idle ones move
    (pin,) = report["nodes"]["pins"]
    assert pin["names"] == [busy] and pin["profile"] == OLD[-12:]
    text = _plan(merged, EXPIRED, "text")
    assert "gate.retainFor (1h) has passed" in text and f"{busy}: kept on profile {OLD[-12:]}" in text
    markdown = _plan(merged, EXPIRED, "markdown")
    assert "The drain gate will hold and drain" in markdown and "`training`" in markdown
