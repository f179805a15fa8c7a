"""Benchmark: wall time and peak memory of validate, cold render and no-change re-render
on synthetic fleets (default 1k, 10k and 100k nodes). Each measurement runs in a fresh
process, so peak RSS is that command's own.

    python bench/run.py            # 1k, 10k, 100k
    python bench/run.py 1000 10000 # chosen sizes
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402

NOW = "2026-11-30T00:00:00Z"


def measure(args: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one tasgen command in a child process."""
    code = "import sys; from generator.cli import main; sys.argv = ['tasgen', *sys.argv[1:]]; main()"
    start = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"tasgen {' '.join(args)} failed:\n{child.stdout[-2000:]}{child.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return elapsed, peak


def bench(n: int, work: Path) -> dict[str, float]:
    inventory, rendered = work / f"fleet-{n}", work / f"rendered-{n}"
    write_fleet(inventory, n)
    size = sum(p.stat().st_size for p in inventory.iterdir()) / 2**20
    common = ["-i", str(inventory), "--now", NOW]
    validate = measure(["validate", *common])
    cold = measure(["render", *common, "-o", str(rendered)])
    again = measure(["render", *common, "-o", str(rendered)])
    return {
        "nodes": n,
        "inventory_mib": round(size, 1),
        "validate_s": validate[0],
        "cold_render_s": cold[0],
        "rerender_s": again[0],
        "peak_rss_mib": max(validate[1], cold[1], again[1]),
    }


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000]
    work = Path(tempfile.mkdtemp(prefix="tasgen-bench-"))
    try:
        rows = [bench(n, work) for n in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{'nodes':>8} {'MiB in':>7} {'validate s':>10} {'cold s':>8} {'re-render s':>11} {'re/cold':>7} {'peak RSS MiB':>12}"
    )
    for r in rows:
        print(
            f"{r['nodes']:>8} {r['inventory_mib']:>7} {r['validate_s']:>10.2f} {r['cold_render_s']:>8.2f} "
            f"{r['rerender_s']:>11.2f} {r['rerender_s'] / r['cold_render_s']:>7.2f} {r['peak_rss_mib']:>12.0f}"
        )
    by_n = {r["nodes"]: r for r in rows}
    if 10_000 in by_n and 100_000 in by_n:
        ratio = by_n[100_000]["cold_render_s"] / by_n[10_000]["cold_render_s"]
        print(f"cold render 100k/10k time ratio: {ratio:.1f}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
