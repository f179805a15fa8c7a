"""The warning retention-unbounded: WaitForIdle with neither GeneratorConfig gate.liveRefresh
nor gate.retainFor (its exact positions: tests/cases/invalid/retention-unbounded). Either way
out silences it; liveRefresh false does not; HoldAndDrain never warns; and what ``tasgen
init`` scaffolds, turned to WaitForIdle, stays warning-free."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import NOW, tasgen

CASE = Path(__file__).parent / "cases" / "invalid" / "retention-unbounded" / "inventory"
RULE = "[retention-unbounded]"


def _inventory(tmp_path: Path, gate: str) -> Path:
    """The case's inventory with GeneratorConfig's gate section replaced by ``gate``."""
    inventory = tmp_path / "inventory"
    shutil.copytree(CASE, inventory)
    config = inventory / "config.yaml"
    text = config.read_text()
    kept, count = re.subn(r"  gate:\n(    .*\n)+", "  gate:\n" + gate, text)
    assert count == 1, text
    config.write_text(kept)
    return inventory


def _warned(inventory: Path) -> list[str]:
    run = tasgen("validate", "-i", str(inventory), "--now", NOW)
    assert run.exit_code == 0, run.output
    return [line for line in run.output.splitlines() if line.endswith(RULE)]


@pytest.mark.parametrize(
    "gate",
    [
        "    dropPolicy: WaitForIdle\n    liveRefresh: true\n",
        "    dropPolicy: WaitForIdle\n    retainFor: 168h\n",
    ],
    ids=["liveRefresh", "retainFor"],
)
def test_either_way_out_silences_it(tmp_path: Path, gate: str) -> None:
    assert _warned(_inventory(tmp_path, gate)) == []


def test_live_refresh_false_still_warns_for_every_queue(tmp_path: Path) -> None:
    warned = _warned(_inventory(tmp_path, "    dropPolicy: WaitForIdle\n    liveRefresh: false\n"))
    assert len(warned) == 2, warned
    assert "queue 'spare'" in warned[0] and "queue 'main'" in warned[1], warned
    assert all("gate.liveRefresh: true" in w and "gate.retainFor" in w for w in warned), warned


def test_hold_and_drain_does_not_warn_for_the_queues_that_inherit_it(tmp_path: Path) -> None:
    warned = _warned(_inventory(tmp_path, "    dropPolicy: HoldAndDrain\n"))
    assert [w.split(": warning:")[0].rsplit(":", 2)[0] for w in warned] == [
        str(tmp_path / "inventory" / "queue.yaml")
    ], warned


def test_the_scaffolded_config_under_wait_for_idle_does_not_warn(tmp_path: Path) -> None:
    assert tasgen("init", str(tmp_path)).exit_code == 0
    config = tmp_path / "inventories" / "config.yaml"
    text = config.read_text()
    assert "    dropPolicy: HoldAndDrain\n" in text and "    liveRefresh: true\n" in text
    config.write_text(text.replace("    dropPolicy: HoldAndDrain\n", "    dropPolicy: WaitForIdle\n"))
    for name in ("nodes.yaml", "source.yaml", "queue.yaml"):
        shutil.copy(CASE / name, tmp_path / "inventories" / name)
    assert _warned(tmp_path / "inventories") == []
    config.write_text(config.read_text().replace("    liveRefresh: true\n", ""))
    assert len(_warned(tmp_path / "inventories")) == 2
