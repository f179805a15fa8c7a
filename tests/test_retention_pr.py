"""Time never turns a pull request into a drain: under WaitForIdle with gate.retainFor, a change
that does not touch the topology, made and checked after the retention's retainFor has passed,
keeps the kept flavor where it was and passes `check` (expiry is the scheduled refresh's job,
docs/explanation/gate.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO, tasgen, tree
from tests.edits import record_rack_b_r02

KEPT = "gpustack-nvidia-h100-80gb-hbm3-b46e62-5ce26b67c9cf"  # rack b-r02 before it is recorded
RETIRING = "retiring.topology.gpustack.ai/"
START, EDITED = "2026-11-30T00:00:00Z", "2026-12-01T06:00:00Z"
EXPIRED = "2026-12-03T06:00:00Z"  # EDITED + retainFor 48h
LATER = "2026-12-10T00:00:00Z"


def _render(inventory: Path, out: Path, now: str) -> None:
    run = tasgen("render", "-i", str(inventory), "-o", str(out), "--now", now)
    assert run.exit_code == 0, run.output


def _queues(out: Path) -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((out / "queues" / "clusterqueues.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs if d}


def _kept(queue: dict[str, Any]) -> dict[str, str]:
    annotations = queue["metadata"].get("annotations") or {}
    return {k[len(RETIRING) :]: v for k, v in annotations.items() if k.startswith(RETIRING)}


def _flavors(queue: dict[str, Any]) -> list[str]:
    return [f["name"] for g in queue["spec"]["resourceGroups"] for f in g["flavors"]]


def _unrelated_change(inventory: Path) -> None:
    """A second LocalQueue for the serving team: no node, flavor or quota changes."""
    plan = inventory / "queues" / "inference.yaml"
    text = plan.read_text()
    entry = "  localQueues:\n    - namespace: ml-serving\n"
    assert entry in text
    plan.write_text(text.replace(entry, entry + "    - {namespace: ml-serving, name: inference-batch}\n"))


def test_an_unrelated_change_after_retain_for_keeps_the_flavor_and_checks_green(tmp_path: Path) -> None:
    inventory, out = tmp_path / "inventories", tmp_path / "rendered"
    shutil.copytree(REPO / "inventories", inventory)
    config = inventory / "config.yaml"
    gate = "    timeoutSeconds: 1800\n"
    config.write_text(
        config.read_text().replace(gate, gate + "    dropPolicy: WaitForIdle\n    retainFor: 48h\n")
    )
    _render(inventory, out, START)
    record_rack_b_r02(inventory)
    _render(inventory, out, EDITED)  # the rack edit, merged: KEPT is retained in both queues
    retained = {name: _kept(q) for name, q in _queues(out).items()}
    assert retained == {"training": {KEPT: EDITED}, "inference": {KEPT: EDITED}}

    # retainFor has passed; nobody touched the topology. The main branch still checks green.
    run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", LATER)
    assert run.exit_code == 0, run.output

    # A pull request that adds a LocalQueue, rendered by its author after the expiry.
    _unrelated_change(inventory)
    before = {name: _flavors(q) for name, q in _queues(out).items()}
    _render(inventory, out, LATER)
    queues = _queues(out)
    assert {name: _kept(q) for name, q in queues.items()} == retained
    assert {name: _flavors(q) for name, q in queues.items()} == before
    localqueues = [d for d in yaml.safe_load_all((out / "queues" / "localqueues.yaml").read_text()) if d]
    assert "inference-batch" in [lq["metadata"]["name"] for lq in localqueues]
    written = tree(out)
    for now in (EXPIRED, LATER):
        run = tasgen("check", "-i", str(inventory), "-o", str(out), "--now", now)
        assert run.exit_code == 0, run.output
    assert tree(out) == written
