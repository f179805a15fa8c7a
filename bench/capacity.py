"""Benchmark of `tasgen capacity`: every queue, flavor, level and size of an N-node fleet
(bench/fleet.py), in a fresh process as a user runs it, and the counting alone in this process
(the compiled inventory's cluster built once). Target: 100,000 nodes in at most 5 s; the cost
must grow with domains, not nodes x sizes, which the rows with more sizes show.

    python bench/capacity.py                     # 100k and 10k nodes, 3 and 24 sizes
    python bench/capacity.py 100000:3 --repeat 5 # chosen NODES:SIZES pairs
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fit import timed  # noqa: E402
from bench.fleet import write_fleet  # noqa: E402
from bench.run import installed_env  # noqa: E402
from generator.commands.capacity.command import report_of  # noqa: E402
from generator.fit.capacity import Size  # noqa: E402
from generator.fit.inventory import cluster_of  # noqa: E402
from generator.load.files import read_inventory  # noqa: E402
from generator.pipeline import compile  # noqa: E402

DEFAULT = ["100000:3", "100000:24", "10000:3"]


def sizes(count: int) -> list[Size]:
    """``count`` sizes: GPUs per pod 1, 2, 4, 8 times 1 to 6 pods in one domain."""
    return [Size(g, p) for p in range(1, 7) for g in (1, 2, 4, 8)][:count]


def counting(inventory: Path, asked: list[Size], repeat: int) -> tuple[float, int, int]:
    """(median s of the counting alone, flavors x levels, domains) on the compiled cluster."""
    compiled = compile(read_inventory(inventory), datetime.now(UTC), node_features=False)
    cluster = cluster_of(compiled)
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        report = report_of(cluster, None, asked)
        rounds.append(time.perf_counter() - start)
    levels = [lv for q in report.queues for f in q.flavors for lv in f.levels]
    return statistics.median(rounds), len(levels), sum(lv.domains for lv in levels)


def bench(nodes: int, count: int, work: Path, repeat: int) -> dict[str, object]:
    inventory = work / f"fleet-{nodes}"
    if not inventory.exists():
        write_fleet(inventory, nodes, local_queues=True)
    asked = sizes(count)
    given = ",".join(f"{s.gpus}x{s.pods}" for s in asked)
    env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"))
    args = ["capacity", "-i", str(inventory), "--size", given, "--format", "json"]
    rounds = [timed(args, env) for _ in range(repeat)]
    alone, levels, domains = counting(inventory, asked, repeat)
    return {
        "nodes": nodes,
        "sizes": len(asked),
        "flavor_levels": levels,
        "domains": domains,
        "wall_s": round(statistics.median(r[0] for r in rounds), 2),
        "cpu_s": round(statistics.median(r[1] for r in rounds), 2),
        "peak_rss_mib": round(max(r[2] for r in rounds)),
        "counting_s": round(alone, 3),
    }


def main() -> None:
    args = sys.argv[1:]
    repeat = int(args.pop(args.index("--repeat") + 1)) if "--repeat" in args else 3
    args = [a for a in args if a != "--repeat"]
    pairs = [tuple(int(x) for x in a.split(":")) for a in (args or DEFAULT)]
    work = Path(tempfile.mkdtemp(prefix="tasgen-bench-capacity-"))
    try:
        write_fleet(work / "warm-up", 100, local_queues=True)  # writes the bytecode; not counted
        timed(["capacity", "-i", str(work / "warm-up")], installed_env(work))
        for nodes, count in pairs:
            print(json.dumps(bench(nodes, count, work, repeat)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
