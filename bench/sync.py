"""Benchmark of what Argo CD and Flux face: a generated fleet rendered cold, then every path
they sync built with real kustomize (built from tests/cluster/kustomize), then a change of one
rack re-rendered.

    python bench/sync.py                # 100k nodes
    python bench/sync.py 300000 --render-only

What it reports and how each figure is taken: CONTRIBUTING.md, "Benchmarks".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import floor  # noqa: E402
from bench.fleet import write_fleet  # noqa: E402
from bench.run import NOW, installed_env  # noqa: E402
from tasgen.util.gc import no_cycle_collection  # noqa: E402
from tests.gobuild import kustomize  # noqa: E402

RACK = "rack-3"
TASGEN = str(Path(sys.executable).parent / "tasgen")


def warm_up(tasgen: str, work: Path, env: dict[str, str]) -> None:
    """One render of a small fleet, not measured: it writes the bytecode of every module a
    render imports, so the measured renders load it as an installed tasgen does."""
    write_fleet(work / "warm-up", 100)
    timed([tasgen, "render", "-i", str(work / "warm-up"), "--now", NOW, "-o", str(work / "warm-up-out")], env)


def fresh_floor_s(inventory: Path, rendered: Path, scratch: Path, env: dict[str, str]) -> float:
    """The floor as a process of its own (bench/floor.py): measured as the render is, less the
    reading of the rendered bytes it writes."""
    command = [sys.executable, str(HERE / "floor.py"), str(inventory), str(rendered), str(scratch)]
    reading, _, cpu, _ = timed(command, env)
    return cpu - float(reading)


def floor_s(inventory: Path, rendered: Path, scratch: Path) -> float:
    """Parse every inventory file once (the ConfigMap's embedded snapshot too) and write the
    rendered bytes once: what no compiler of this inventory into this output can beat. Timed
    inside this process (the earlier method: its heap is warm, so its page faults are fewer
    than a fresh process's)."""
    texts = {p.relative_to(rendered): p.read_bytes() for p in rendered.rglob("*.yaml")}
    with no_cycle_collection():  # tasgen parses without cycle collections too
        return _floor(inventory, texts, scratch)


def _floor(inventory: Path, texts: dict[Path, bytes], scratch: Path) -> float:
    start = time.process_time()  # CPU seconds, like the render's figure
    floor.parse(inventory)  # (what it returns is freed here: this floor pays for that)
    floor.write(texts, scratch)
    return time.process_time() - start


def synced_paths(rendered: Path) -> list[Path]:
    return sorted(p.parent for p in rendered.rglob("kustomization.yaml"))


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[str, float, float, float]:
    """(stdout, wall seconds, CPU seconds, peak RSS MiB) of a child process: on a shared
    machine its CPU time is the figure that does not depend on what else runs."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env)
        out = child.stdout.read() if child.stdout else b""
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(command)} failed:\n{err.read().decode()[-3000:]}")
    return out.decode(), wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def build_all(binary: Path, rendered: Path) -> list[dict[str, Any]]:
    rows = []
    for folder in synced_paths(rendered):
        out, wall, cpu, _ = timed([str(binary), "build", str(folder)])
        objects = sum(1 for line in out.splitlines() if line.startswith("apiVersion:"))
        rows.append(
            {"path": folder.relative_to(rendered).as_posix(), "wall": wall, "cpu": cpu, "objects": objects}
        )
    return rows


def move_rack(inventory: Path) -> None:
    """Re-cable one rack of the configMap source into a new block (the snapshot is YAML in
    the ConfigMap's block scalar, one line per node)."""
    path = inventory / "sources.yaml"
    lines = path.read_text().splitlines(keepends=True)
    changed = 0
    for i, line in enumerate(lines):
        if f"topology.gpustack.ai/rack: {RACK}\n" in line or f'topology.gpustack.ai/rack: "{RACK}"' in line:
            lines[i - 1] = lines[i - 1].replace("blk-0", "blk-moved")
            changed += 1
    assert changed, f"no node of {RACK} found"
    path.write_text("".join(lines))


#: cold renders and floors, taken in turn: on a shared machine a round's CPU seconds vary
#: with what else runs; the least of each is the figure least disturbed
ROUNDS = 3


def cold_and_floor(
    work: Path, inventory: Path, common: list[str], env: dict[str, str]
) -> tuple[list[tuple[float, float, float]], list[float], list[float]]:
    """(wall, CPU, peak RSS) of each cold render (rendered/ and the memo removed first), and
    each round's floor, in a fresh process and in this one."""
    cold, fresh, floor = [], [], []
    rendered = Path(common[common.index("-o") + 1])
    for _ in range(ROUNDS):
        shutil.rmtree(rendered, ignore_errors=True)
        shutil.rmtree(work / "memo", ignore_errors=True)
        _, wall, cpu, rss = timed([TASGEN, "render", *common], env)
        cold.append((wall, cpu, rss))
        shutil.rmtree(work / "scratch", ignore_errors=True)
        fresh.append(fresh_floor_s(inventory, rendered, work / "scratch", env))
        shutil.rmtree(work / "scratch", ignore_errors=True)
        floor.append(floor_s(inventory, rendered, work / "scratch"))
    return cold, fresh, floor


def with_previous(
    work: Path, inventory: Path, common: list[str], env: dict[str, str]
) -> list[tuple[float, float, float]]:
    """(wall, CPU, peak RSS) of renders that read the previous rendered/ back (its queues,
    flavors, Topologies and every node's row, for retention and pins) after one rack moved,
    the memo removed first so that nothing is reused: a pull request's render. Each round
    starts again from a cold render of the unchanged inventory."""
    rounds = []
    rendered = Path(common[common.index("-o") + 1])
    original = (inventory / "sources.yaml").read_text()
    for _ in range(ROUNDS):
        (inventory / "sources.yaml").write_text(original)
        shutil.rmtree(rendered, ignore_errors=True)
        shutil.rmtree(work / "memo", ignore_errors=True)
        timed([TASGEN, "render", *common], env)
        move_rack(inventory)
        shutil.rmtree(work / "memo", ignore_errors=True)
        _, wall, cpu, rss = timed([TASGEN, "render", *common], env)
        rounds.append((wall, cpu, rss))
    (inventory / "sources.yaml").write_text(original)
    return rounds


def bench(n: int, render_only: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tasgen-sync-bench-"))
    try:
        inventory, rendered = work / "inventory", work / "rendered"
        env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"))
        write_fleet(inventory, n)
        warm_up(TASGEN, work, env)
        common = ["-i", str(inventory), "--now", NOW, "-o", str(rendered)]
        cold, fresh, floor = cold_and_floor(work, inventory, common, env)
        files = [p for p in rendered.rglob("*.yaml")]
        result: dict[str, Any] = {
            "nodes": n,
            "cold_render_wall_s": round(min(c[0] for c in cold), 2),
            "cold_render_cpu_s": round(min(c[1] for c in cold), 2),
            "cold_render_cpu_s_rounds": [round(c[1], 2) for c in cold],
            "floor_cpu_s": round(min(fresh), 2),
            "floor_cpu_s_rounds": [round(f, 2) for f in fresh],
            "cold_cpu_over_floor": round(min(c[1] for c in cold) / min(fresh), 2),
            "in_process_floor_cpu_s": round(min(floor), 2),
            "in_process_floor_cpu_s_rounds": [round(f, 2) for f in floor],
            "cold_cpu_over_in_process_floor": round(min(c[1] for c in cold) / min(floor), 2),
            "peak_rss_mib": round(max(c[2] for c in cold)),
            "files": len(files),
            "largest_file_mib": round(max(p.stat().st_size for p in files) / 2**20, 2),
        }
        previous = with_previous(work, inventory, common, env)
        result |= {
            "previous_render_cpu_s": round(min(r[1] for r in previous), 2),
            "previous_render_cpu_s_rounds": [round(r[1], 2) for r in previous],
            "previous_render_wall_s": round(min(r[0] for r in previous), 2),
            "previous_render_peak_rss_mib": round(max(r[2] for r in previous)),
        }
        if render_only:
            return result
        rows = build_all(kustomize(), rendered)
        result |= {
            "synced_paths": len(rows),
            "slowest_build_wall_s": round(max(r["wall"] for r in rows), 2),
            "slowest_build_cpu_s": round(max(r["cpu"] for r in rows), 2),
            "most_objects": max(r["objects"] for r in rows),
            "sum_build_wall_s": round(sum(r["wall"] for r in rows), 1),
            "sum_build_cpu_s": round(sum(r["cpu"] for r in rows), 1),
            "sum_objects": sum(r["objects"] for r in rows),
        }
        move_rack(inventory)
        out, _, _, _ = timed([TASGEN, "render", *common, "--format", "json"], env)
        written = json.loads(out)["written"]
        result["one_rack_change_rewrote"] = written
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    args = sys.argv[1:]
    render_only = "--render-only" in args
    sizes = [int(a) for a in args if a.isdigit()] or [100_000]
    for n in sizes:
        print(json.dumps(bench(n, render_only)), flush=True)


if __name__ == "__main__":
    main()
