"""The source-expiring warning over time: its horizon is configurable, and a recorded render is
not reused once a source enters it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, tasgen

CASE = REPO / "tests" / "cases" / "invalid" / "source-expiring" / "inventory"  # expires 2026-12-05
CONFIG = "apiVersion: topology.gpustack.ai/v1alpha1\nkind: GeneratorConfig\nmetadata: {name: c}\nspec: {%s}\n"


def rules(*args: str) -> list[str]:
    run = tasgen(*args, "--format", "json")
    return [p["rule"] for p in run.json()["problems"]]


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    shutil.copytree(CASE, tmp_path / "inventory")
    return tmp_path / "inventory"


@pytest.mark.parametrize(
    ("config", "now", "expected"),
    [
        ("", "2026-11-20T23:59:59Z", []),  # just over 14 days before
        ("", "2026-11-21T00:00:00Z", ["source-expiring"]),  # 14 days before: inside
        ("expiryWarningDays: 30", "2026-11-06T00:00:00Z", ["source-expiring"]),
        ("expiryWarningDays: 0", "2026-12-04T00:00:00Z", []),
        ("", "2026-12-05T00:00:00Z", ["source-expired"]),  # expired: the other warning
    ],
)
def test_the_horizon(inventory: Path, config: str, now: str, expected: list[str]) -> None:
    if config:
        (inventory / "config.yaml").write_text(CONFIG % config)
    assert rules("validate", "-i", str(inventory), "--now", now) == expected


def test_a_recorded_render_is_not_reused_inside_the_horizon(inventory: Path, tmp_path: Path) -> None:
    output = str(tmp_path / "rendered")
    assert rules("render", "-i", str(inventory), "-o", output, "--now", "2026-11-01T00:00:00Z") == []
    later = rules("render", "-i", str(inventory), "-o", output, "--now", "2026-11-30T00:00:00Z")
    assert later == ["source-expiring"]
