"""Every path of rendered/ that Argo CD or Flux syncs builds with real kustomize (built from
sigs.k8s.io/kustomize/kustomize/v5, tests/cluster/kustomize) into exactly the objects of its
files, within the bound on objects per path; for the example and for a generated sharded fleet.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.fleet import write_fleet
from tasgen.compile.gate_wiring import JOB_TTL_SECONDS
from tasgen.compile.shards import DEFAULT_MAX_OBJECTS
from tests import gobuild
from tests.conftest import NOW, REPO, tasgen
from tests.e2e.harness import ClusterError

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def kustomize() -> Path:
    try:
        return gobuild.kustomize()
    except ClusterError as exc:
        failure = str(exc)
    pytest.fail(failure, pytrace=False)


def kustomizations(root: Path) -> list[str]:
    """Every folder of rendered/ with a kustomization.yaml, relative to rendered/."""
    return sorted(p.parent.relative_to(root).as_posix() for p in root.rglob("kustomization.yaml"))


def engine_paths(root: Path, repo_path: str) -> tuple[set[str], set[str]]:
    """The folders the Flux Kustomizations and the Argo CD ApplicationSet name, relative to
    rendered/ (an ApplicationSet pattern is expanded as its git directory generator does)."""
    prefix = f"./{repo_path}/"
    flux = {
        doc["spec"]["path"].removeprefix(prefix)
        for path in (root / "flux").glob("*.yaml")
        if path.name != "kustomization.yaml"
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc["kind"] == "Kustomization"  # rbac.yaml: applied by an administrator
    }
    (appset,) = [d for d in yaml.safe_load_all((root / "argocd" / "applicationset.yaml").read_text()) if d]
    argo: set[str] = set()
    for entry in appset["spec"]["generators"][0]["git"]["directories"]:
        pattern = entry["path"].removeprefix(f"{repo_path}/")
        argo |= {p.relative_to(root).as_posix() for p in root.glob(pattern) if p.is_dir()}
    return flux, argo


def objects_of(folder: Path) -> list[Obj]:
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    return [d for name in listed for d in yaml.safe_load_all((folder / name).read_text()) if d]


def build(kustomize: Path, folder: Path) -> list[Obj]:
    done = subprocess.run([str(kustomize), "build", str(folder)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"kustomize build {folder}: {done.stderr}"
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def identity(obj: Obj) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]


def check_tree(kustomize: Path, root: Path, repo_path: str, empty: bool = False) -> dict[str, int]:
    """Build every path; return objects per synced path (``empty``: paths may hold none)."""
    folders = kustomizations(root)
    flux, argo = engine_paths(root, repo_path)
    synced = set(folders) - {"flux", "argocd"}
    assert flux == argo == synced, "the engines sync exactly the kustomizations of rendered/"
    counts: dict[str, int] = {}
    for folder in folders:
        built, expected = build(kustomize, root / folder), objects_of(root / folder)
        assert sorted(built, key=identity) == sorted(expected, key=identity), folder
        assert (0 if empty else 1) <= len(built) <= DEFAULT_MAX_OBJECTS, folder
        counts[folder] = len(built)
    return counts


def test_example_paths_build(kustomize: Path) -> None:
    counts = check_tree(kustomize, REPO / "rendered", "rendered")
    assert set(counts) == {"labels", "kueue", "gate", "queues", "retire", "flux", "argocd"}


@pytest.mark.parametrize("dropped", [("queues",), ("queues", "nodes.yaml", "sources", "snapshots")])
def test_every_synced_path_is_written_when_the_inventory_fills_none(
    kustomize: Path, tmp_path: Path, dropped: tuple[str, ...]
) -> None:
    # Flux syncs each step's path whatever the render holds: a missing folder would stall
    # its dependsOn chain (the queues step never Ready, retire never run, removed queues
    # never pruned).
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO / "inventories", inventory)
    for name in dropped:
        shutil.rmtree(inventory / name) if (inventory / name).is_dir() else (inventory / name).unlink()
    out = tmp_path / "rendered"
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW)
    assert run.exit_code == 0, run.output
    counts = check_tree(kustomize, out, "rendered", empty=True)
    assert {"labels", "kueue", "gate", "queues", "retire"} <= set(counts)
    assert counts["queues"] == 0


def test_generated_sharded_fleet_paths_build(kustomize: Path, tmp_path: Path) -> None:
    write_fleet(tmp_path / "inventory", 3000)
    config = tmp_path / "inventory" / "config.yaml"
    spec = yaml.safe_load(config.read_text())
    spec["spec"]["sync"] = {
        "path": "clusters/prod/rendered",
        "argocd": {"repoURL": "https://git.example.com/x.git"},
    }
    config.write_text(yaml.safe_dump(spec))
    out = tmp_path / "rendered"
    run = tasgen("render", "-i", str(tmp_path / "inventory"), "-o", str(out), "--now", NOW)
    assert run.exit_code == 0, run.output
    counts = check_tree(kustomize, out, "clusters/prod/rendered")
    shards = [f for f in counts if f.startswith("labels/shard-")]
    assert len(shards) > 1
    # 3,000 nodes, 1.7 NodeFeatures each: all of them, and nothing twice.
    assert sum(counts[f] for f in shards) == 5100


@pytest.mark.parametrize(("step", "argo_ttl"), [("gate", None), ("retire", JOB_TTL_SECONDS)])
def test_flux_patch_gives_only_the_step_s_job_a_lasting_ttl(
    kustomize: Path, tmp_path: Path, step: str, argo_ttl: int | None
) -> None:
    """kustomize-controller builds a path with its Kustomization's spec.patches added on top:
    Flux's gate and retire Jobs get a TTL of 2**31 - 1 s (the largest int32, what the API
    server takes), in place of none (the gate's file, for Argo CD) or the retire hook's short
    one; nothing else changes."""
    flux_file = REPO / "rendered" / "flux" / f"{step}.yaml"
    (body,) = [d for d in yaml.safe_load_all(flux_file.read_text()) if d]
    shutil.copytree(REPO / "rendered" / step, tmp_path / step)  # kustomize wants a relative base
    overlay = tmp_path / f"flux-{step}"
    overlay.mkdir()
    kustomization = {"resources": [f"../{step}"], "patches": body["spec"]["patches"]}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    plain = {identity(o): o for o in build(kustomize, REPO / "rendered" / step)}
    patched = {identity(o): o for o in build(kustomize, overlay)}
    assert set(patched) == set(plain)
    (job,) = [key for key in plain if key[1] == "Job"]
    assert plain[job]["spec"].get("ttlSecondsAfterFinished") == argo_ttl
    assert patched[job]["spec"]["ttlSecondsAfterFinished"] == 2_147_483_647
    rest = {k: v for k, v in patched[job]["spec"].items() if k != "ttlSecondsAfterFinished"}
    assert rest == {k: v for k, v in plain[job]["spec"].items() if k != "ttlSecondsAfterFinished"}
    assert {k: v for k, v in patched.items() if k != job} == {k: v for k, v in plain.items() if k != job}
