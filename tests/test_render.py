"""Rendering rendered/: determinism, only-changed writes, removal, atomicity, drift, check."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from tests.conftest import NOW, REPO, render, tasgen, tree

EXAMPLE = REPO / "inventories"


def test_the_committed_example_is_current() -> None:
    run = tasgen("check", "-i", str(EXAMPLE), "-o", str(REPO / "rendered"), "--now", NOW)
    assert run.exit_code == 0, run.output


def test_the_example_tree(snapshot: SnapshotAssertion) -> None:
    """The layout of rendered/ as a reviewer reads it: each file's objects (the files' bytes
    are rendered/ itself, committed and checked above; a copy here would only repeat them)."""
    assert outline(REPO / "rendered") == snapshot


def outline(folder: Path) -> dict[str, list[str]]:
    """file -> 'Kind namespace/name' of each object, in file order."""
    found: dict[str, list[str]] = {}
    for path, text in tree(folder).items():
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        found[path] = [_object(d) for d in docs]
    return found


def _object(doc: dict[str, Any]) -> str:
    if "metadata" not in doc:  # a kustomization.yaml: what it lists
        return f"{doc['kind']}: {', '.join(doc['resources'])}"
    meta = doc["metadata"]
    named = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
    return f"{doc['kind']} {named}"


def test_same_inventory_same_bytes_wherever_it_is_rendered(inventory: Path, tmp_path: Path) -> None:
    assert render(inventory, tmp_path / "a")[0] == 0
    assert render(inventory, tmp_path / "b", "--no-cache")[0] == 0
    assert tree(tmp_path / "a") == tree(tmp_path / "b") == tree(REPO / "rendered")


def test_a_second_render_writes_nothing(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.yaml")}
    code, output = render(inventory, out, "--no-cache")
    assert code == 0 and "0 file(s) written" in output and "mutatedNodes: 0" in output
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.yaml")} == stamps


def test_the_memo_is_bypassed_when_rendered_was_edited(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    target = out / "kueue" / "topologies.yaml"
    original = target.read_text()
    target.write_text(original.replace("kubernetes.io/hostname", "kubernetes.io/hostnam"))
    code, output = render(inventory, out)
    assert code == 1 and "[immutable-field]" in output  # drift is reported, never patched
    target.unlink()
    assert render(inventory, out)[0] == 0
    assert target.read_text() == original


def test_objects_whose_inputs_disappeared_are_removed(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    (inventory / "sources" / "l40s-inventory.yaml").unlink()
    (inventory / "snapshots" / "l40s-inventory.json").unlink()
    code, output = render(inventory, out)
    assert code == 0
    assert not (out / "labels" / "nodefeatures-l40s-inventory.yaml").exists()
    assert "nodefeatures-l40s-inventory.yaml" not in (out / "labels" / "kustomization.yaml").read_text()
    assert "mutatedNodes: 4" in output  # the four L40S nodes lose a NodeFeature and change profile


def test_files_tasgen_did_not_write_are_kept(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    out.mkdir()
    (out / "README.md").write_text("ours\n")
    (out / "extra.yaml").write_text("kind: Mine\n")
    render(inventory, out)
    assert (out / "README.md").read_text() == "ours\n" and (out / "extra.yaml").exists()


def test_a_failed_write_leaves_rendered_as_it_was(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    (inventory / "queues" / "training.yaml").write_text(
        (inventory / "queues" / "training.yaml").read_text().replace('"120"', '"96"')
    )
    shutil.rmtree(out / "queues")
    (out / "queues").write_text("a file where a folder must go\n")  # writing queues/ will fail
    before = tree(out)
    code, output = render(inventory, out)
    assert code == 1 and "[output-unwritable]" in output
    assert tree(out) == before
    assert not [p for p in out.rglob(".*") if p.is_file()]  # no staged temporary left


def test_check_names_each_stale_file_and_line(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    queues = out / "queues" / "clusterqueues.yaml"
    lines = queues.read_text().splitlines()
    lines[30] = lines[30] + " # edited"
    queues.write_text("\n".join(lines) + "\n")
    (out / "labels" / "nodefeatures-h100-racks.yaml").unlink()
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 1
    stale = [line for line in run.output.splitlines() if "[stale-render]" in line]
    assert [line.split(": error")[0].rsplit("/", 2)[-2:] for line in stale] == [
        ["labels", "nodefeatures-h100-racks.yaml:1:1"],
        ["queues", "clusterqueues.yaml:31:1"],
    ]


def test_check_prints_the_unified_diff_of_an_edited_file(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    queues = out / "queues" / "clusterqueues.yaml"
    lines = queues.read_text().splitlines()
    edited = [*lines[:30], lines[30] + " # edited", *lines[31:]]
    queues.write_text("\n".join(edited) + "\n")
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 1
    shown = f"{out}/queues/clusterqueues.yaml"
    expected = [
        f"--- {shown} (as it is)",
        f"+++ {shown} (as 'tasgen render' writes it)",
        "@@ -28,7 +28,7 @@",
        *(f" {line}" for line in lines[27:30]),
        f"-{lines[30]} # edited",
        f"+{lines[30]}",
        *(f" {line}" for line in lines[31:34]),
    ]
    output = run.output.splitlines()
    start = output.index(expected[0])
    assert output[start - 1] == "" and output[start : start + len(expected)] == expected
    assert output[start + len(expected)] == ""  # then the summary: no other file differs


def test_check_bounds_its_diff_and_counts_the_rest(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    racks = out / "labels" / "nodefeatures-h100-racks.yaml"
    lines = racks.read_text().splitlines()
    assert len(lines) > 200  # the bound
    racks.unlink()
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 1
    output = run.output.splitlines()
    start = output.index("--- /dev/null")
    assert output[start + 1] == f"+++ {racks} (as 'tasgen render' writes it)"
    assert output[start + 2] == f"@@ -0,0 +1,{len(lines)} @@"
    # 200 lines shown: the two headers, the hunk's, and the file's first 197 lines
    assert output[start + 3 : start + 200] == [f"+{line}" for line in lines[:197]]
    hidden = len(lines) - 197
    assert output[start + 200] == (
        f"... {hidden} more line(s) of differences: run 'tasgen render' and 'git diff {out}' to see them all"
    )


def test_check_finds_a_file_render_would_remove(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    (out / "labels" / "nodefeatures-gone.yaml").write_text("# Generated by tasgen\n---\nkind: X\n")
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 1 and "nodefeatures-gone.yaml:1:1: error: tasgen no longer writes" in run.output


def test_expiry_follows_now(inventory: Path, tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    render(inventory, out)
    code, output = render(inventory, out, "--now", "2027-07-01T00:00:00Z")
    assert code == 0 and "[source-expired]" in output
    assert not (out / "labels" / "nodefeatures-h100-racks.yaml").exists()
    assert (
        tasgen(
            "render", "-i", str(inventory), "-o", str(out), "--now", "2027-07-01T00:00:00Z", "--strict"
        ).exit_code
        == 1
    )


def test_source_date_epoch_fixes_the_time(
    inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1814400000")  # 2027-07-01
    run = tasgen("validate", "-i", str(inventory))
    assert "[source-expired]" in run.output


def test_a_hand_edited_toleration_is_drift_not_a_patch(inventory: Path, tmp_path: Path) -> None:
    """Kueue refuses a tolerations update on a topology-aware flavor: under one name they never
    change, so a difference is an edit of rendered/."""
    out = tmp_path / "rendered"
    render(inventory, out)
    target = out / "kueue" / "resourceflavors.yaml"
    original = target.read_text()
    assert "operator: Exists" in original
    target.write_text(original.replace("operator: Exists", "operator: Equal"))
    code, output = render(inventory, out)
    assert code == 1 and "spec.tolerations" in output and "[immutable-field]" in output


def _plans(inventory: Path, count: int) -> None:
    """``count`` more ClusterQueuePlans, each the example's inference plan under a new name."""
    text = (inventory / "queues" / "inference.yaml").read_text()
    copies = [text.replace("name: inference", f"name: inference-{i:04d}") for i in range(count)]
    (inventory / "queues" / "many.yaml").write_text("\n---\n".join(copies))


def test_an_object_the_api_server_would_refuse_is_an_error(inventory: Path, tmp_path: Path) -> None:
    # The gate's plan holds every ClusterQueue in one ConfigMap: at 800 plans its data passes
    # the API server's 1 MiB, and the gate step (and every step after it) would never sync.
    out = tmp_path / "rendered"
    out.mkdir()
    _plans(inventory, 800)
    code, output = render(inventory, out, "--no-cache")
    assert code == 1 and list(out.iterdir()) == []
    assert "gate/configmap-plan.yaml:1:1: error: ConfigMap 'tasgen-gate-plan': its data is " in output
    assert "over the API server's 1,048,576" in output and "[object-size]" in output
    _plans(inventory, 600)  # under the bound: rendered, the plan applied server-side
    code, output = render(inventory, out, "--no-cache")
    assert code == 0, output
    assert "ServerSideApply=true" in (out / "gate" / "configmap-plan.yaml").read_text()


def test_rendered_elsewhere_in_the_repository_than_sync_path_is_a_warning(
    inventory: Path, tmp_path: Path
) -> None:
    # The engines sync GeneratorConfig sync.path: rendered/ written to another folder of the
    # repository would leave them syncing folders the repository does not have.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # a git work tree's root, as git marks it
    out = repo / "clusters" / "prod" / "rendered"
    config = inventory / "config.yaml"
    line = next(
        i for i, text in enumerate(config.read_text().splitlines(), 1) if text.strip().startswith("path:")
    )
    code, output = render(inventory, out, "--no-cache")
    assert code == 0 and (out / "flux" / "kueue.yaml").exists()
    assert f"config.yaml:{line}:" in output and "set sync.path: clusters/prod/rendered [sync-path]" in output
    config.write_text(config.read_text().replace("path: rendered", "path: clusters/prod/rendered"))
    code, output = render(inventory, out, "--no-cache")
    assert code == 0 and "[sync-path]" not in output
    assert "./clusters/prod/rendered/kueue" in (out / "flux" / "kueue.yaml").read_text()


def test_rendered_as_a_repository_of_its_own_syncs_from_its_root(inventory: Path, tmp_path: Path) -> None:
    """A deploy repository that is rendered/ itself: sync.path "." (the schema took no path
    for it, and the warning never looked at the output folder itself)."""
    out = tmp_path / "deploy"
    (out / ".git").mkdir(parents=True)
    config = inventory / "config.yaml"
    code, output = render(inventory, out, "--no-cache")
    assert code == 0 and "is '.' in the git repository" in output and "set sync.path: . [sync-path]" in output
    config.write_text(config.read_text().replace("path: rendered", 'path: "."'))
    code, output = render(inventory, out, "--no-cache")
    assert code == 0 and "[sync-path]" not in output, output
    assert 'path: "./kueue"' in (out / "flux" / "kueue.yaml").read_text()
    appset = yaml.safe_load((out / "argocd" / "applicationset.yaml").read_text())
    directories = appset["spec"]["generators"][0]["git"]["directories"]
    assert [d["path"] for d in directories] == ["labels", "kueue", "gate", "queues", "retire"]
    assert (out / ".git").is_dir()


def test_rendered_as_a_submodule_is_judged_in_the_outer_repository(inventory: Path, tmp_path: Path) -> None:
    """A submodule's .git is a file: Argo CD and Flux (recurseSubmodules) sync the outer
    repository, where rendered/ is at its path; sync.path "." would point at its root."""
    (tmp_path / ".git").mkdir()
    out = tmp_path / "rendered"
    out.mkdir()
    (out / ".git").write_text("gitdir: ../.git/modules/rendered\n")
    code, output = render(inventory, out, "--no-cache", "--strict")
    assert code == 0 and "[sync-path]" not in output, output
    # a worktree's .git is a file too, naming .git/worktrees/: a checkout of its own (even
    # when its repository sits in a folder named modules)
    for gitdir in ("../.git/worktrees/rendered", "/srv/modules/deploy/.git/worktrees/rendered"):
        (out / ".git").write_text(f"gitdir: {gitdir}\n")
        code, output = render(inventory, out, "--no-cache")
        assert code == 0 and "is '.' in the git repository" in output, output


def test_a_remembered_render_warns_once_a_repository_appears_around_it(
    inventory: Path, tmp_path: Path
) -> None:
    """The memo replays a render's findings; the sync-path warning depends on where rendered/
    sits in a git work tree, which the inventory's bytes do not tell, so the key holds it."""
    out = tmp_path / "deploy" / "out"
    assert "[sync-path]" not in render(inventory, out)[1]  # no repository yet: nothing to judge
    (tmp_path / ".git").mkdir()
    code, output = render(inventory, out)
    assert code == 0 and "set sync.path: deploy/out [sync-path]" in output, output
    assert "0 file(s) written" in output  # the same tree: nothing rewritten


def test_path_size_without_a_config_or_a_node_is_reported_at_the_plan(tmp_path: Path) -> None:
    """No GeneratorConfig and no node to place the warning at: it crashed (StopIteration)."""
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    namespaces = "".join(f"    - {{namespace: team-{i:04d}}}\n" for i in range(2001))
    (inventory / "queue.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: ClusterQueuePlan\nmetadata: {name: q}\n"
        "spec:\n  coveredResources: [cpu]\n  hardware:\n    - identity: {nvidia.com/gpu.product: H100}\n"
        f"  clusterQueue: {{namespaceSelector: {{}}}}\n  localQueues:\n{namespaces}"
    )
    run = tasgen("validate", "-i", str(inventory), "--now", NOW, "--format", "json")
    assert "internal error" not in run.output, run.output
    crowded = [p for p in run.json()["problems"] if p["rule"] == "path-size"]
    assert [(p["path"].endswith("queue.yaml"), p["line"]) for p in crowded] == [(True, 1)], run.output
    assert "queues/ would hold 2002 objects" in crowded[0]["message"]


def test_check_s_diff_escapes_control_characters(inventory: Path, tmp_path: Path) -> None:
    """A hand edit can hold an escape sequence: shown escaped, it cannot drive the terminal."""
    out = tmp_path / "rendered"
    render(inventory, out)
    queues = out / "queues" / "clusterqueues.yaml"
    queues.write_text(queues.read_text() + "# \x1b[31mred\n")
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 1 and "\x1b" not in run.output
    assert "-# \\x1b[31mred" in run.output.splitlines()
