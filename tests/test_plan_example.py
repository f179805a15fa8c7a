"""tasgen plan on the repository's own example (inventories/), committed to a real git
repository: recording rack b-r02 for its four H100 nodes (a four-line snapshot edit) moves them
into the full H100 profile, so the short profile's flavor leaves `training` and `inference` and its
quota moves onto the other H100 flavor. The plan shows every per-flavor quota and limit that
changes in the rendered queues, and says that a drain evicts every workload the queue admitted."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tasgen.kube.quantities import parse
from tests.conftest import NOW, REPO, tasgen
from tests.edits import RACK_SNAPSHOT, record_rack_b_r02
from tests.plan.fleet import Repo

Quotas = dict[tuple[str, str, str], str]  # (flavor, resource, field) -> quantity


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """The example committed on main, and the rack recorded in the working tree."""
    repo = Repo(tmp_path_factory.mktemp("example") / "repo")
    shutil.copytree(REPO / "inventories", repo.root / "inventories")
    repo.commit_tree("the example")
    record_rack_b_r02(repo.root / "inventories")
    assert repo.git("diff", "--numstat") == f"4\t4\tinventories/{RACK_SNAPSHOT}\n"
    return repo


def _plan(repo: Repo, format_: str) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo.root)
        run = tasgen("plan", "--base", "main", "--now", NOW, "--format", format_)
    assert run.exit_code == 0, run.output
    return run.output


def _rendered_queues(inventory: Path, out: Path) -> dict[str, dict[str, Any]]:
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW, "--no-cache")
    assert run.exit_code == 0, run.output
    docs = yaml.safe_load_all((out / "queues" / "clusterqueues.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs if d}


def _quotas(queue: dict[str, Any]) -> Quotas:
    return {
        (f["name"], r["name"], field): str(value)
        for f in queue["spec"]["resourceGroups"][0]["flavors"]
        for r in f["resources"]
        for field, value in r.items()
        if field != "name"
    }


def _values(changes: dict[Any, tuple[str | None, str | None]]) -> dict[Any, tuple[Decimal | None, ...]]:
    return {k: tuple(None if v is None else parse(v) for v in pair) for k, pair in changes.items()}


def test_recording_a_rack_shows_every_quota_that_moves(example: Repo, tmp_path: Path) -> None:
    before = _rendered_queues(REPO / "inventories", tmp_path / "before")
    after = _rendered_queues(example.root / "inventories", tmp_path / "after")
    report = yaml.safe_load(_plan(example, "json"))
    for name in ("training", "inference"):
        old, new = _quotas(before[name]), _quotas(after[name])
        changed = {k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        queue = next(q for q in report["queues"] if q["name"] == name)
        shown = {(d["flavor"], d["resource"], d["field"]): (d["before"], d["after"]) for d in queue["quota"]}
        # each change of the rendered queue, nothing else; compared as quantities (the render
        # writes them as Kueue stores them, "3k", the plan as people read them, "3000")
        assert _values(shown) == _values(changed) and changed, name
        (dropped,) = queue["flavorsRemoved"]
        assert dropped["name"].endswith("-5ce26b67c9cf") and queue["flavorsAdded"] == []
    training = next(q for q in report["queues"] if q["name"] == "training")
    gpus = {
        d["flavor"][-12:]: (d["before"], d["after"])
        for d in training["quota"]
        if d["resource"] == "nvidia.com/gpu" and d["field"] == "nominalQuota"
    }
    assert gpus == {"7de0bea5615a": ("90", "120"), "5ce26b67c9cf": ("30", None)}


def test_recording_a_rack_says_what_the_drain_evicts_in_every_format(example: Repo) -> None:
    sentence = "every workload admitted to {} is evicted, not only those on the dropped flavors"
    text = _plan(example, "text")
    assert sentence.format("training") in text and sentence.format("inference") in text
    kept = "gpustack-nvidia-h100-80gb-hbm3-b46e62-7de0bea5615a"
    assert f"quota NVIDIA-H100-80GB-HBM3 {kept} nvidia.com/gpu nominalQuota: 90 -> 120" in text
    markdown = _plan(example, "markdown")
    assert sentence.format("`training`") in markdown and sentence.format("`inference`") in markdown
    alert = "The drain gate will hold and drain `inference`, `training`: " + sentence.format("any of them")
    assert alert in markdown
    assert f"`{kept}` nvidia.com/gpu nominalQuota: 90 → 120" in markdown
    report = yaml.safe_load(_plan(example, "json"))
    reasons = {q["name"]: q["drain"]["reason"] for q in report["queues"]}
    assert sentence.format("training") in reasons["training"]


@pytest.fixture(scope="module")
def waiting(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """The same rack edit with both queues under dropPolicy WaitForIdle, and the base's render
    committed (what the cluster runs: the flavors it admits on are the ones retained)."""
    repo = Repo(tmp_path_factory.mktemp("waiting") / "repo")
    shutil.copytree(REPO / "inventories", repo.root / "inventories")
    for name in ("training", "inference"):
        path = repo.root / "inventories" / "queues" / f"{name}.yaml"
        text, count = re.subn(r"^spec:$", "spec:\n  dropPolicy: WaitForIdle", path.read_text(), flags=re.M)
        assert count == 1
        path.write_text(text)
    _rendered_queues(repo.root / "inventories", repo.root / "rendered")
    repo.commit_tree("the example, retaining dropped flavors")
    record_rack_b_r02(repo.root / "inventories")
    return repo


def test_waitforidle_retains_the_flavor_and_evicts_nothing_in_every_format(waiting: Repo) -> None:
    report = yaml.safe_load(_plan(waiting, "json"))
    text, markdown = _plan(waiting, "text"), _plan(waiting, "markdown")
    for name in ("training", "inference"):
        queue = next(q for q in report["queues"] if q["name"] == name)
        (retained,) = queue["flavorsRetained"]
        assert retained.endswith("-5ce26b67c9cf") and queue["flavorsRemoved"] == []
        assert queue["dropPolicy"] == "WaitForIdle" and queue["drain"]["action"] == "retain"
        sentence = "no eviction; {} kept until idle at the quota its Workloads hold"
        assert sentence.format(retained) in queue["drain"]["reason"]
        assert "evicted" not in queue["drain"]["reason"]
        assert (
            f"queue {name} (changed): drain retain: dropPolicy WaitForIdle: " + sentence.format(retained)
            in text
        )
        assert f"  = {retained}: retained until idle at the quota its Workloads hold" in text
        row = next(line for line in markdown.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"**retain**<br>{sentence.format(f'`{retained}`')}" in row
        assert f"`{retained}` (retained until idle at the quota its Workloads hold)" in row
        # offline the retained flavor keeps its quota: no nominalQuota change listed for it
        assert not [d for d in queue["quota"] if d["flavor"] == retained and d["field"] == "nominalQuota"]
    assert report["summary"]["drains"] == []
    assert "evicted" not in text and "hold and drain" not in markdown


def _profile_rows(out: Path) -> dict[str, dict[str, str]]:
    """Node -> the profile and flavor labels the tree's profile NodeFeatures write."""
    found: dict[str, dict[str, str]] = {}
    for path in sorted((out / "labels").rglob("nodefeatures-profiles.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                node = doc["metadata"]["labels"]["nfd.node.kubernetes.io/node-name"]
                found[node] = doc["spec"]["labels"]
    return found


def test_waitforidle_shows_the_pinned_nodes_and_quota_as_the_render_writes_them(
    waiting: Repo, tmp_path: Path
) -> None:
    """The render keeps the four nodes on their flavor (it carries the committed rendered/ on):
    the plan lists them as pins, not as moves, and its quota rows are the rendered queues'
    difference, field by field."""
    carried = tmp_path / "carried"
    shutil.copytree(waiting.root / "rendered", carried)
    base_queues = {
        d["metadata"]["name"]: d
        for d in yaml.safe_load_all((carried / "queues" / "clusterqueues.yaml").read_text())
        if d
    }
    after = _rendered_queues(waiting.root / "inventories", carried)  # carrying the base on
    _rendered_queues(waiting.root / "inventories", tmp_path / "fresh")  # as planned: a first render
    written, planned = _profile_rows(carried), _profile_rows(tmp_path / "fresh")
    profile = "topology.gpustack.ai/profile"
    expected = {n: (written[n][profile], planned[n][profile]) for n in written if written[n] != planned[n]}
    assert sorted(expected) == [f"h100-1b-r2-0{i}" for i in range(1, 5)]
    report = yaml.safe_load(_plan(waiting, "json"))
    shown = {n: (p["profile"], p["plannedProfile"]) for p in report["nodes"]["pins"] for n in p["names"]}
    assert shown == expected
    assert all(p["flavors"] for p in report["nodes"]["pins"])
    assert report["profiles"]["moves"] == []  # pinned nodes do not move
    # profiles are counted by the labels the trees write: the pinned nodes keep theirs written
    before = Counter(row[profile] for row in _profile_rows(waiting.root / "rendered").values())
    now = Counter(row[profile] for row in written.values() if profile in row)
    assert {p["id"] for p in report["profiles"]["removed"]} == set(before) - set(now)
    assert {p["id"] for p in report["profiles"]["added"]} == set(now) - set(before)
    assert {(p["id"], p["nodesBefore"], p["nodesAfter"]) for p in report["profiles"]["changed"]} == {
        (p, before[p], now[p]) for p in set(before) & set(now) if before[p] != now[p]
    }
    for name in ("training", "inference"):
        old, new = _quotas(base_queues[name]), _quotas(after[name])
        changed = {k: (old.get(k), new.get(k)) for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        queue = next(q for q in report["queues"] if q["name"] == name)
        rows = {(d["flavor"], d["resource"], d["field"]): (d["before"], d["after"]) for d in queue["quota"]}
        assert _values(rows) == _values(changed) and changed, name
    ((old_profile, new_profile),) = set(expected.values())
    text, markdown = _plan(waiting, "text"), _plan(waiting, "markdown")
    nodes = ", ".join(sorted(expected))
    flavor = f"gpustack-nvidia-h100-80gb-hbm3-b46e62-{old_profile}"
    assert (
        f"  {nodes}: kept on profile {old_profile} (flavor {flavor}) until idle, then profile {new_profile}"
        in text
    )
    assert "### Pinned nodes" in markdown
    assert f"kept on profile `{old_profile}` (flavor `{flavor}`) until idle" in markdown
