"""The source-expiring warning (generator/validate/checks/risks.py) as the scheduled refresh relies
on it: its window is configurable, it names the date, and a recorded render does not outlive
the moment the warning starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import NOW, REPO, tasgen

CASE = REPO / "tests" / "cases" / "valid" / "expired-source-falls-back" / "inventory"
EXPIRES = "2026-12-10T12:00:00Z"  # ten and a half days after NOW
CONFIG = """apiVersion: topology.gpustack.ai/v1alpha1
kind: GeneratorConfig
metadata: {name: fleet}
spec: {expiryWarningDays: DAYS}
"""


def inventory_with_window(tmp_path: Path, days: int) -> Path:
    folder = tmp_path / "inventory"
    shutil.copytree(CASE, folder)
    source = folder / "source.yaml"
    source.write_text(
        source.read_text().replace('expiresAt: "2026-01-01T00:00:00Z"', f'expiresAt: "{EXPIRES}"')
    )
    (folder / "config.yaml").write_text(CONFIG.replace("DAYS", str(days)))
    return folder


@pytest.mark.parametrize(("days", "warned"), [(7, False), (10, False), (11, True), (14, True)])
def test_the_warning_window_is_configurable_and_names_the_date(
    tmp_path: Path, days: int, warned: bool
) -> None:
    run = tasgen("validate", "-i", str(inventory_with_window(tmp_path, days)), "--now", NOW)
    assert run.exit_code == 0
    assert ("[source-expiring]" in run.output) is warned
    assert ("expires at 2026-12-10T12:00:00+00:00" in run.output) is warned


def test_zero_days_turns_the_warning_off_and_expiry_still_warns(tmp_path: Path) -> None:
    folder = inventory_with_window(tmp_path, 0)
    assert "[source-expiring]" not in tasgen("validate", "-i", str(folder), "--now", NOW).output
    after = tasgen("validate", "-i", str(folder), "--now", "2026-12-11T00:00:00Z").output
    assert "[source-expired]" in after and "[source-expiring]" not in after


def test_a_recorded_render_does_not_hide_a_warning_that_starts_later(tmp_path: Path) -> None:
    folder, out = inventory_with_window(tmp_path, 7), str(tmp_path / "rendered")
    first = tasgen("render", "-i", str(folder), "-o", out, "--now", NOW)
    assert first.exit_code == 0 and "[source-expiring]" not in first.output
    later = tasgen("render", "-i", str(folder), "-o", out, "--now", "2026-12-05T00:00:00Z")
    assert "[source-expiring]" in later.output


def test_a_strict_check_fails_on_it_so_the_refresh_comes_first(tmp_path: Path) -> None:
    run = tasgen("validate", "-i", str(inventory_with_window(tmp_path, 14)), "--now", NOW, "--strict")
    assert run.exit_code == 1 and "[source-expiring]" in run.output


@pytest.mark.parametrize(
    ("written", "taken"),
    [
        ("2026-12-31T00:00:00Z", True),
        ("2026-12-31t00:00:00.5z", True),
        ("2026-12-31T00:00:00.123456789+01:00", True),
        ("2026-W53-4T00Z", False),  # ISO 8601 week date: fromisoformat takes it, RFC 3339 does not
        ("20261231T000000Z", False),  # basic format
        ("2026-12-31T00Z", False),  # no minutes
        ("2026-12-31T00:00+01", False),  # no seconds, an offset without minutes
        ("2026-12-31T00:00:00,5Z", False),  # a decimal comma
        ("2026-12-31T00:00:00", False),  # no offset
        ("2026-13-01T00:00:00Z", False),  # no such month
    ],
)
def test_expires_at_is_an_rfc_3339_time(tmp_path: Path, written: str, taken: bool) -> None:
    folder = tmp_path / "inventory"
    shutil.copytree(CASE, folder)
    source = folder / "source.yaml"
    source.write_text(source.read_text().replace('"2026-01-01T00:00:00Z"', f'"{written}"'))
    run = tasgen("validate", "-i", str(folder), "--now", NOW)
    assert ("[snapshot-expiry]" in run.output) is not taken, run.output
    assert run.exit_code == (0 if taken else 1)
