"""The render serial stamped on Topologies and ResourceFlavors and written in the retire step's
keep list: the same while a render holds the same set of them (a render of the same inventory
writes the same bytes), one more when the set changes, carried from render to render through
rendered/ (docs/explanation/gate.md, "Ordering"). The retire step deletes only what an older
render stamped: tests/gate/test_retire.py, tests/e2e/test_gate_retire.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tasgen.compile.gate_wiring import RENDER_ANNOTATION, RenderStamp, render_serial
from tests.conftest import NOW, REPO, tasgen

MINIMAL = REPO / "tests" / "cases" / "valid" / "minimal" / "inventory"
LEVELS = "  levels: [topology.kubernetes.io/zone, topology.gpustack.ai/rack]\n"


def test_the_serial_grows_only_when_the_set_changes() -> None:
    names = frozenset({"f", "t"})
    assert render_serial(None, names) == 1
    assert render_serial(RenderStamp(4, names), names) == 4
    assert render_serial(RenderStamp(4, names), frozenset({"f", "t2"})) == 5
    assert render_serial(RenderStamp(0, names), names) == 1  # a keep list from before stamps


def _stamps(out: Path) -> tuple[int, set[str]]:
    """The keep list's serial and every stamp on the rendered Topologies and flavors."""
    configmap = next(d for d in yaml.safe_load_all((out / "retire" / "configmap-keep.yaml").read_text()) if d)
    keep = yaml.safe_load(configmap["data"]["keep.yaml"])
    stamps = {
        d["metadata"]["annotations"][RENDER_ANNOTATION]
        for f in sorted((out / "kueue").glob("*.yaml"))
        if f.name != "kustomization.yaml"
        for d in yaml.safe_load_all(f.read_text())
        if d
    }
    return keep["render"], stamps


def test_renders_carry_the_serial_through_rendered(tmp_path: Path) -> None:
    inventory, out = tmp_path / "inventory", tmp_path / "rendered"
    shutil.copytree(MINIMAL, inventory)

    def render() -> None:
        assert tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW).exit_code == 0

    render()
    assert _stamps(out) == (1, {"1"})
    before = {p: p.read_bytes() for p in out.rglob("*.yaml")}
    render()
    render()  # ... and with nothing changed, the same bytes (no memo in between: --no-cache below)
    assert {p: p.read_bytes() for p in out.rglob("*.yaml")} == before
    source = inventory / "source.yaml"
    assert LEVELS in source.read_text()
    source.write_text(source.read_text().replace(LEVELS, "  levels: [topology.gpustack.ai/rack]\n"))
    render()  # a level less: other Topologies and flavors
    assert _stamps(out) == (2, {"2"})
    assert tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW, "--no-cache").exit_code == 0
    assert _stamps(out) == (2, {"2"})
    assert tasgen("check", "-i", str(inventory), "-o", str(out), "--now", NOW).exit_code == 0
    source.write_text(source.read_text().replace("  levels: [topology.gpustack.ai/rack]\n", LEVELS))
    render()  # back to the first set: a new render all the same, never an older stamp
    assert _stamps(out) == (3, {"3"})
