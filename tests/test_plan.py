"""tasgen plan on real git repositories: a base commit, a changed working tree, and what the
report says a merge does (queues and drains, hierarchies, nodes, fit, warnings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from tasgen.commands.plan import formats
from tasgen.commands.plan.live import _live as live_figures
from tasgen.commands.plan.live import _usage as usage_of
from tasgen.commands.plan.shape import Drain, Report
from tasgen.util.typed_json import from_json
from tests.conftest import NOW, REPO, Run, tasgen, tree
from tests.plan.fleet import BLOCK, H100, RACK, ROW, ZONE, Fleet, Repo

SCHEMA = json.loads(resources.files("tasgen").joinpath("schemas", "plan-report.schema.json").read_text())


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    made = Repo(tmp_path / "repo")
    made.commit(Fleet(), "base")
    monkeypatch.chdir(made.root)
    return made


def plan(repo: Repo, fleet: Fleet, *args: str) -> Run:
    """The change committed on a branch, as a pull request's checkout has it."""
    if repo.git("branch", "--show-current").strip() == "main":
        repo.git("checkout", "-q", "-b", "change")
    repo.commit(fleet, "change")
    return tasgen("plan", "--base", "main", "--now", NOW, *args)


def report(repo: Repo, fleet: Fleet) -> dict[str, Any]:
    run = plan(repo, fleet, "--format", "json")
    assert run.exit_code == 0, run.output
    data = run.json()
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    return data


def queue(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(q for q in data["queues"] if q["name"] == name)


def fit(data: dict[str, Any], queue: str, product: str, level: str) -> tuple[Any, Any]:
    row = next(
        f
        for f in data["fit"]
        if (f["queue"], f["identity"]["nvidia.com/gpu.product"], f["level"]) == (queue, product, level)
    )
    return row["before"], row["after"]


def slot(pods: int, *, by_quota: bool = False) -> dict[str, Any]:
    """A fit row's figure for pods of a whole H100 or L40S node (8 GPUs)."""
    return {"pods": pods, "gpus": 8 * pods, "gpusPerPod": 8, "byQuota": by_quota}


def rules(data: dict[str, Any]) -> list[str]:
    return [w["rule"] for w in data["warnings"]]


def test_no_change_reports_nothing_changed(repo: Repo) -> None:
    data = report(repo, Fleet())
    assert data["summary"] == {
        "queuesChanged": 0,
        "queuesAdded": 0,
        "queuesRemoved": 0,
        "flavorsAdded": 0,
        "flavorsRemoved": 0,
        "drains": [],
        "nodesChanged": 0,
        "fitChanged": 0,
        "workloadsChanged": 0,
        "neverFit": [],
        "warnings": 0,
        "stopped": [],
    }
    assert all(q["drain"]["action"] == "none" for q in data["queues"])


def test_a_rack_move_relabels_the_node_and_changes_the_fit(repo: Repo) -> None:
    moved = {**Fleet().racks, "h-3": "r1"}
    data = report(repo, Fleet(racks=moved))
    assert data["nodes"]["changed"] == 1
    assert data["nodes"]["changes"] == [
        {"node": "h-3", "labels": [{"key": RACK, "before": "r2", "after": "r1"}]}
    ]
    assert data["nodes"]["bySource"] == [{"source": "racks", "nodes": 1, "keys": {RACK: 1}}]
    assert data["nodes"]["byDomain"] == [{"level": ZONE, "domain": "z1", "nodes": 1}]
    assert fit(data, "training", "H100", RACK) == (slot(2), slot(3))
    assert fit(data, "training", "H100", ZONE) == (slot(4), slot(4))
    assert data["summary"]["queuesChanged"] == 0 and data["summary"]["drains"] == []


def test_a_renamed_source_relabels_no_node(repo: Repo) -> None:
    # The labels move from one source's NodeFeatures to another's and end as they were.
    data = report(repo, Fleet(source="cables"))
    assert data["nodes"]["changed"] == 0 and data["nodes"]["bySource"] == []
    assert data["summary"]["nodesChanged"] == 0


def test_a_renamed_source_that_moves_a_rack_relabels_that_node_under_its_new_name(repo: Repo) -> None:
    data = report(repo, Fleet(source="cables", racks={**Fleet().racks, "h-3": "r1"}))
    assert data["nodes"]["changes"] == [
        {"node": "h-3", "labels": [{"key": RACK, "before": "r2", "after": "r1"}]}
    ]
    assert data["nodes"]["bySource"] == [{"source": "cables", "nodes": 1, "keys": {RACK: 1}}]


def test_a_level_added_replaces_the_flavors_and_drains(repo: Repo) -> None:
    blocks = {n: {BLOCK: "b1" if i < 4 else "b2"} for i, n in enumerate(H100)}
    data = report(repo, Fleet(levels=(ZONE, BLOCK, RACK), more=blocks))
    training = queue(data, "training")
    (replaced,) = training["flavorsReplaced"]
    assert replaced["identity"] == {"nvidia.com/gpu.product": "H100"}
    assert replaced["from"] == training["flavorsRemoved"][0]["name"]
    assert replaced["to"] == training["flavorsAdded"][0]["name"]
    assert training["drain"]["action"] == "hold-and-drain"
    assert data["summary"]["drains"] == ["inference", "training"]
    # the same GPUs under a new name: each field leaves the old flavor and arrives on the new
    # one, as the two renders write them
    rows = {(d["flavor"], d["resource"], d["field"]): (d["before"], d["after"]) for d in training["quota"]}
    old, new = replaced["from"], replaced["to"]
    assert rows and {f for f, _, _ in rows} == {old, new}
    for (flavor, resource, field), (before, after) in rows.items():
        assert (before is None) == (flavor == new) and (after is None) == (flavor == old)
        assert rows[(old if flavor == new else new, resource, field)] in ((None, before), (after, None))
    (added,) = data["profiles"]["added"]
    assert added["levels"] == [ZONE, BLOCK, RACK, "kubernetes.io/hostname"] and added["nodes"] == 8
    assert data["profiles"]["moves"] == [
        {"from": data["profiles"]["removed"][0]["id"], "to": added["id"], "nodes": 8}
    ]
    assert data["nodes"]["bySource"][0] == {"source": "racks", "nodes": 8, "keys": {BLOCK: 8}}
    assert fit(data, "training", "H100", BLOCK) == (None, slot(4))


def test_a_level_added_that_some_nodes_lack_is_a_warning(repo: Repo) -> None:
    data = report(repo, Fleet(levels=(ZONE, RACK, ROW), more={"h-0": {ROW: "w1"}, "h-1": {ROW: "w1"}}))
    (warning,) = [w for w in data["warnings"] if w["rule"] == "level-added-uncarried"]
    assert "6 of the 8 nodes" in warning["message"]
    assert (warning["path"], warning["line"]) == ("inventories/source.yaml", 6)


def test_a_level_removed_is_a_warning_and_the_fit_goes(repo: Repo) -> None:
    data = report(repo, Fleet(levels=(RACK,)))
    assert "level-removed" in rules(data)
    assert fit(data, "training", "H100", ZONE) == (slot(4), None)
    assert queue(data, "training")["drain"]["action"] == "hold-and-drain"
    assert data["profiles"]["sources"] == [{"source": "racks", "before": [ZONE, RACK], "after": [RACK]}]


def test_an_identity_dropped_from_a_queue_removes_its_flavor_and_drains(repo: Repo) -> None:
    data = report(repo, Fleet(training=("H100",)))
    training = queue(data, "training")
    assert [f["identity"] for f in training["flavorsRemoved"]] == [{"nvidia.com/gpu.product": "L40S"}]
    assert training["flavorsAdded"] == [] and training["flavorsReplaced"] == []
    assert training["drain"]["action"] == "hold-and-drain"
    assert queue(data, "inference")["change"] == "unchanged"
    assert data["summary"]["drains"] == ["training"]


def rendered(repo: Repo, kind: str) -> list[dict[str, Any]]:
    """The objects of ``kind`` that `tasgen render` writes from the working tree."""
    out = repo.root.parent / f"rendered-{kind}"
    run = tasgen("render", "--now", NOW, "-o", str(out), "--no-cache")
    assert run.exit_code == 0, run.output
    docs = [d for p in sorted(out.rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text())]
    return [d for d in docs if d and d.get("kind") == kind]


def flavors_of(repo: Repo, name: str, product: str) -> list[str]:
    """The rendered queue's flavors of one product, in its order."""
    queue_ = next(q for q in rendered(repo, "ClusterQueue") if q["metadata"]["name"] == name)
    products = {
        f["metadata"]["name"]: f["spec"]["nodeLabels"].get("nvidia.com/gpu.product")
        for f in rendered(repo, "ResourceFlavor")
    }
    return [
        f["name"] for f in queue_["spec"]["resourceGroups"][0]["flavors"] if products[f["name"]] == product
    ]


def test_a_quota_change_is_a_delta_applied_in_place(repo: Repo) -> None:
    data = report(repo, Fleet(quota="48"))
    training = queue(data, "training")
    (h100,) = flavors_of(repo, "training", "H100")
    assert training["quota"] == [
        {
            "identity": {"nvidia.com/gpu.product": "H100"},
            "flavor": h100,
            "resource": "nvidia.com/gpu",
            "field": "nominalQuota",
            "before": "64",
            "after": "48",
        }
    ]
    assert training["drain"]["action"] == "none" and training["change"] == "changed"


def test_a_quota_smaller_than_the_domain_bounds_the_slot_and_says_so(repo: Repo) -> None:
    # 24 GPUs of quota: a zone's four H100 nodes hold four 8-GPU pods, the queue pays for three;
    # a rack's two nodes stay below the quota.
    run = plan(repo, Fleet(quota="24"), "--format", "json")
    data = run.json()
    jsonschema.validate(data, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert fit(data, "training", "H100", ZONE) == (slot(4), slot(3, by_quota=True))
    assert fit(data, "training", "H100", RACK) == (slot(2), slot(2))
    (h100,) = flavors_of(repo, "training", "H100")
    rows = [f for f in data["fit"] if f["queue"] == "training" and f["level"] == ZONE]
    assert [f["flavor"] for f in rows if f["identity"]["nvidia.com/gpu.product"] == "H100"] == [h100]
    text = plan(repo, Fleet(quota="24")).output
    line = f"fit training H100 {h100} at {ZONE}: largest 32 GPUs (4 pods of 8) -> 24 GPUs (3 pods of 8)"
    assert f"{line}, bounded by quota" in text


def test_quota_that_moves_between_the_flavors_of_an_identity_is_shown_per_flavor(repo: Repo) -> None:
    # Two H100 nodes without a rack make a second H100 flavor (zone only); racking one of
    # them moves quota between the two flavors, though the identity's total stays.
    unracked = Fleet(racks={**Fleet().racks, "h-6": "", "h-7": ""})
    repo.commit(unracked, "two nodes without a rack")
    data = report(repo, unracked.but(racks={**unracked.racks, "h-6": "r4"}))
    training = queue(data, "training")
    assert training["change"] == "changed" and data["summary"]["queuesChanged"] >= 1
    moved = {(d["flavor"], d["resource"]): (d["before"], d["after"]) for d in training["quota"]}
    racked, zoned = flavors_of(repo, "training", "H100")
    assert moved[(racked, "nvidia.com/gpu")] == ("48", "56")
    assert moved[(zoned, "nvidia.com/gpu")] == ("16", "8")


def test_flavors_listed_in_another_order_change_the_queue(repo: Repo) -> None:
    data = report(repo, Fleet(training=("L40S", "H100")))
    training = queue(data, "training")
    assert training["change"] == "changed" and training["flavorOrder"] is not None
    assert training["flavorOrder"]["after"] == list(reversed(training["flavorOrder"]["before"]))
    assert training["flavorOrder"]["after"] == flavors_of(repo, "training", "L40S") + flavors_of(
        repo, "training", "H100"
    )
    assert "flavor order:" in plan(repo, Fleet(training=("L40S", "H100"))).output


def test_a_flavor_whose_taints_change_changes_the_queue(repo: Repo) -> None:
    data = report(repo, Fleet(l40s_taints="[{key: reserved, value: research, effect: NoSchedule}]"))
    training = queue(data, "training")
    (l40s,) = flavors_of(repo, "training", "L40S")
    assert training["change"] == "changed"
    assert training["flavorsChanged"] == [{"name": l40s, "fields": ["nodeTaints"]}]
    assert queue(data, "inference")["change"] == "unchanged"


def test_a_stop_policy_that_drains_everything_is_reported_in_every_format(repo: Repo) -> None:
    head = Fleet(stop_policy="HoldAndDrain")
    data = report(repo, head)
    training = queue(data, "training")
    assert training["stopPolicy"] == {"before": "None", "after": "HoldAndDrain"}
    assert training["drain"]["action"] == "stopped" and data["summary"]["stopped"] == ["training"]
    assert "stopPolicy: None -> HoldAndDrain" in plan(repo, head).output
    markdown = plan(repo, head, "--format", "markdown").output
    assert "Kueue will evict every workload admitted by `training`" in markdown
    assert "stopPolicy: `None` → `HoldAndDrain`" in markdown


def test_a_stop_policy_hold_admits_nothing_new(repo: Repo) -> None:
    training = queue(report(repo, Fleet(stop_policy="Hold")), "training")
    assert training["drain"]["action"] == "held" and training["change"] == "changed"


def test_a_queue_that_stays_empty_is_no_drain(repo: Repo) -> None:
    repo.commit(Fleet(future=True), "a queue for hardware still to come")
    data = report(repo, Fleet(future=True, quota="48"))
    future = queue(data, "future")
    assert future["change"] == "unchanged" and future["drain"]["action"] == "none"
    assert data["summary"]["drains"] == []
    assert (
        "drain gate will hold"
        not in plan(repo, Fleet(future=True, quota="48"), "--format", "markdown").output
    )


def test_an_invalid_base_says_why(repo: Repo) -> None:
    (repo.root / "inventories" / "nodes.yaml").write_text("nodes: [\n")
    repo.commit_tree("a broken base")
    data = report(repo, Fleet())
    assert data["base"]["state"] == "invalid"
    (problem,) = data["base"]["problems"]
    assert (problem["path"], problem["line"], problem["rule"]) == (
        "main:inventories/nodes.yaml",
        1,
        "yaml-syntax",
    )
    assert "main:inventories/nodes.yaml:1:" in plan(repo, Fleet()).output


def test_cordoned_and_untolerated_nodes_hold_no_pod_in_the_fit(repo: Repo) -> None:
    # Kueue's TAS places no pod on a cordoned node nor on one with a NoSchedule taint the
    # flavor does not tolerate: zone z2 (h-4..h-7) is cordoned, h-0 and h-1 are tainted, so
    # the fullest zone keeps h-2 and h-3 only.
    data = report(repo, Fleet(cordoned=("h-4", "h-5", "h-6", "h-7"), tainted=("h-0", "h-1")))
    assert fit(data, "training", "H100", ZONE) == (slot(4), slot(2))
    assert fit(data, "training", "H100", RACK) == (slot(2), slot(2))


def test_a_flavor_with_no_usable_node_fits_nothing(repo: Repo) -> None:
    """Every H100 node cordoned or tainted against the flavor: the fit is zero at every level
    (it was an internal error: the allocatable shape of no node is empty)."""
    h100 = ("h-0", "h-1", "h-2", "h-3", "h-4", "h-5", "h-6", "h-7")
    data = report(repo, Fleet(cordoned=h100[:4], tainted=h100[4:]))
    for level, before in ((ZONE, slot(4)), (RACK, slot(2))):
        assert fit(data, "training", "H100", level) == (before, slot(0))
    assert plan(repo, Fleet(cordoned=h100[:4], tainted=h100[4:]), "--format", "markdown").exit_code == 0


def test_a_source_expiring_soon_is_a_warning_in_plan_and_validate(repo: Repo) -> None:
    soon = Fleet(expires="2026-12-05T00:00:00Z")
    data = report(repo, soon)
    assert rules(data) == ["source-expiring"]
    validate = tasgen("validate", "-i", "inventories", "--now", NOW, "--format", "json").json()
    assert [p["rule"] for p in validate["problems"]] == ["source-expiring"]


def test_a_queue_without_namespace_selector_is_a_warning(repo: Repo) -> None:
    data = report(repo, Fleet(selector=False))
    assert rules(data) == ["namespace-selector-missing", "namespace-selector-missing"]
    # and a change of each queue: its ClusterQueue loses the field
    assert data["summary"]["queuesChanged"] == 2
    assert [q["settingsChanged"] for q in data["queues"]] == [["namespaceSelector"]] * 2


def test_a_queue_whose_settings_or_local_queues_change_is_changed(repo: Repo) -> None:
    """Kueue applies a new cohort or LocalQueue in place, no drain; but the merge changes the
    queue, and the plan says how (it once called such a queue unchanged)."""
    repo.commit(Fleet(local_queues=("ml", "ops")), "local queues")
    data = report(repo, Fleet(cohort="fleet", local_queues=("ml", "research")))
    training = queue(data, "training")
    assert training["change"] == "changed" and training["drain"]["action"] == "none"
    assert training["settingsChanged"] == ["cohortName"]
    assert (training["localQueuesAdded"], training["localQueuesRemoved"]) == (
        ["research/training"],
        ["ops/training"],
    )
    assert queue(data, "inference")["change"] == "unchanged"
    assert data["summary"]["queuesChanged"] == 1
    text = plan(repo, Fleet(cohort="fleet", local_queues=("ml", "research"))).output
    assert (
        "  settings changed: cohortName\n  + LocalQueue research/training\n  - LocalQueue ops/training"
        in text
    )
    changed = Fleet(cohort="fleet", local_queues=("ml", "research"))
    markdown = plan(repo, changed, "--format", "markdown").output
    cell = (
        "changed<br>settings: `cohortName`"
        "<br>LocalQueue added: `research/training`<br>LocalQueue removed: `ops/training`"
    )
    assert f"| `training` | {cell} |" in markdown


def test_a_first_adoption_compares_with_no_inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "repo")
    (repo.root / "README").write_text("empty\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "empty")
    monkeypatch.chdir(repo.root)
    data = report(repo, Fleet())
    assert data["base"] == {"ref": "main", "state": "absent"}
    assert {q["drain"]["action"] for q in data["queues"]} == {"created"}
    # New queues are new, not "changed": nothing that runs changes
    summary = data["summary"]
    assert (summary["queuesChanged"], summary["queuesAdded"], summary["queuesRemoved"]) == (0, 2, 0)
    headline = plan(repo, Fleet()).output.splitlines()[0]
    assert headline.startswith(
        "tasgen plan against main (no inventory there): 0 queue(s) changed, 2 new queue(s), "
        "3 flavor(s) added,"
    ), headline


def test_an_invalid_base_is_reported_as_such(repo: Repo) -> None:
    (repo.root / "inventories" / "queues.yaml").write_text("kind: [\n")
    repo.git("commit", "-q", "-am", "broken")
    data = report(repo, Fleet())
    assert data["base"]["state"] == "invalid"


def test_an_invalid_working_tree_exits_1_with_validate_s_problems(repo: Repo) -> None:
    (repo.root / "inventories" / "queues.yaml").write_text("kind: [\n")
    run = tasgen("plan", "--base", "main", "--now", NOW)
    assert run.exit_code == 1
    assert "inventories/queues.yaml:1:7: error: invalid YAML" in run.output and "[yaml-syntax]" in run.output


def test_an_invalid_working_tree_s_problems_go_to_standard_error(repo: Repo) -> None:
    """`plan --format markdown > plan.md` in CI: the problems must reach the log, not the
    file meant for the pull-request comment."""
    (repo.root / "inventories" / "queues.yaml").write_text("kind: [\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "tasgen.cli",
            "plan",
            "--base",
            "main",
            "--now",
            NOW,
            "--format",
            "markdown",
        ],
        cwd=repo.root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.splitlines()[0] == (
        "inventories/queues.yaml:1:7: error: invalid YAML: unclosed bracket '[' [yaml-syntax]"
    )


@pytest.mark.parametrize("ref", ["no-such-branch", "--all", "main~5"])
def test_a_base_that_is_not_a_commit_is_a_usage_error(repo: Repo, ref: str) -> None:
    run = tasgen("plan", "--base", ref, "--now", NOW)
    assert run.exit_code == 2 and "is not a" in run.output


def test_plan_writes_nothing(repo: Repo) -> None:
    repo.write(Fleet(training=("H100",)))
    changed = tree(repo.root / "inventories")
    assert tasgen("plan", "--base", "main", "--now", NOW).exit_code == 0
    assert tree(repo.root / "inventories") == changed
    assert repo.git("status", "--porcelain", "--ignored") == " M inventories/queues.yaml\n"


def test_the_base_is_read_from_git_and_the_head_from_the_disk(repo: Repo) -> None:
    """An untracked file counts for the working tree only; the base is the commit's."""
    extra = Fleet(prefix="extra-").files()["queues.yaml"]
    (repo.root / "inventories" / "extra.yaml").write_text(extra)
    run = tasgen("plan", "--base", "main", "--now", NOW, "--format", "json")
    assert run.exit_code == 0, run.output
    changes = {q["name"]: q["change"] for q in run.json()["queues"]}
    assert changes == {
        "training": "unchanged",
        "inference": "unchanged",
        "extra-training": "added",
        "extra-inference": "added",
    }
    assert repo.git("status", "--porcelain") == "?? inventories/extra.yaml\n"


def test_plan_with_an_unreadable_cluster_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    run = tasgen("plan", "--base", "main", "--now", NOW, "--kubeconfig", str(config))
    assert run.exit_code == 2 and f"cannot reach the cluster of {config}:" in run.output


def test_the_three_formats(repo: Repo, snapshot: SnapshotAssertion) -> None:
    change = Fleet(training=("H100",), quota="48", racks={**Fleet().racks, "h-3": "r1"})
    outputs = {f: plan(repo, change, "--format", f) for f in ("text", "markdown", "json")}
    assert all(run.exit_code == 0 for run in outputs.values())
    assert outputs["markdown"].output.startswith("<!-- tasgen-plan -->\n")
    assert {f: run.output for f, run in outputs.items()} == snapshot


def test_plan_with_an_unusable_kubeconfig_is_a_usage_error(repo: Repo, tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\nclusters: []\nusers: []\ncontexts: []\n")
    run = tasgen("plan", "--base", "main", "--now", NOW, "--kubeconfig", str(config))
    assert run.exit_code == 2 and str(config) in run.output
    config.write_text("just a string\n")  # YAML, but no kubeconfig: the client's loader crashed on it
    run = tasgen("plan", "--base", "main", "--now", NOW, "--kubeconfig", str(config))
    assert run.exit_code == 2 and "not a kubeconfig" in run.output and "internal error" not in run.output


def test_the_report_does_not_depend_on_hash_order(repo: Repo) -> None:
    """Sets and dicts of node names are iterated in many places: the output is sorted anyway."""
    plan(repo, Fleet(levels=(RACK,), training=("H100",), racks={**Fleet().racks, "h-3": "r1"}))
    outputs = {
        subprocess.run(
            [sys.executable, "-m", "tasgen.cli", "plan", "--base", "main", "--now", NOW, "--format", f],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
        for f in ("json", "markdown")
    }
    assert len(outputs) == 2  # one JSON, one Markdown text, whatever the seed


def test_every_cut_list_says_how_much_it_left_out(repo: Repo) -> None:
    data = report(repo, Fleet(quota="48"))  # as the JSON has it, then typed: the formats' input
    fit_row = {**data["fit"][0], "changed": True}
    data["fit"] = [fit_row] * 250
    replaced = {"identity": {"p": "H100"}, "from": "a", "to": "b", "fromProfile": "x", "toProfile": "y"}
    queue(data, "training")["flavorsReplaced"] = [replaced] * 250
    data["profiles"]["moves"] = [{"nodes": 1, "from": "x", "to": "y"}] * 230
    data["nodes"]["changed"] = 250
    data["nodes"]["byDomain"] = [{"level": ZONE, "domain": f"z{i}", "nodes": 1} for i in range(250)]
    typed = from_json(Report, data)
    text = formats.text(typed)
    assert sum(line.startswith(f"  in {ZONE}=") for line in text.splitlines()) == formats.DOMAIN_ROWS
    assert f"... and {250 - formats.DOMAIN_ROWS} more domain(s)" in text
    assert sum(line.startswith("fit ") for line in text.splitlines()) == 200
    assert "... and 50 more fit figure(s)" in text and "... and 30 more move(s)" in text
    markdown = formats.markdown(typed)
    assert markdown.count(f"`{ZONE}=z") == formats.DOMAIN_ROWS
    shown = markdown.count("`a` → `b`")
    assert 0 < shown < 250 and f"_and {250 - shown} more replaced flavor(s)" in markdown


def test_a_live_plain_hold_of_an_empty_queue_is_held_not_a_drain() -> None:
    # The gate only sets the rendered Hold on a queue that has no flavor before or after:
    # nothing is evicted, so --kubeconfig must not turn the offline "none" into a drain.
    live = {"metadata": {"name": "q", "generation": 1}, "spec": {"stopPolicy": "None"}, "status": {}}
    desired = {"metadata": {"name": "q"}, "spec": {"stopPolicy": "Hold"}}
    drain = live_figures("q", Drain(action="none", reason="no flavor before or after"), live, desired, [])
    assert drain.action == "held"


def test_what_evicted_workloads_hold_is_summed_per_covered_resource() -> None:
    def workload(queue: str, **usage: str) -> dict[str, Any]:
        assignment = {
            "flavors": {"cpu": "f"},
            "resourceUsage": {k.replace("_", "/"): v for k, v in usage.items()},
        }
        return {"status": {"admission": {"clusterQueue": queue, "podSetAssignments": [assignment]}}}

    found = [workload("q", cpu="500m", memory="1Gi", nvidia_gpu="2"), workload("q", cpu="1", nvidia_gpu="3")]
    assert usage_of(found, ["cpu", "nvidia/gpu"]) == {"cpu": "1500m", "nvidia/gpu": "5"}  # memory not covered
