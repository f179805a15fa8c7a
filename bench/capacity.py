"""Benchmark of `tasgen capacity`: every queue, flavor, level and size of an N-node fleet
(bench/fleet.py), in a fresh process as a user runs it; and in this process, on the compiled
cluster, fit's domain index apart from the counting over it. Target: 100,000 nodes in at most 5 s; the cost
must grow with domains, not nodes x sizes, which the rows with more sizes show.

    python bench/capacity.py                     # 100k and 10k nodes, 3 and 24 sizes
    python bench/capacity.py 100000:3 --repeat 5 # chosen NODES:SIZES pairs
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402
from bench.run import installed_env  # noqa: E402
from tasgen.commands.capacity.command import report_of  # noqa: E402
from tasgen.fit.capacity import Size  # noqa: E402
from tasgen.fit.engine import Engine  # noqa: E402
from tasgen.fit.inventory import cluster_of  # noqa: E402
from tasgen.load.files import read_inventory  # noqa: E402
from tasgen.pipeline import compile_inventory  # noqa: E402

DEFAULT = ["100000:3", "100000:24", "10000:3"]


#: the command, reporting its own peak RSS (VmHWM of its memory after exec) as it exits (the
#: CLI ends with os._exit): the ru_maxrss wait4 gives a child counts the memory of the parent it
#: was forked from, large here
_CODE = (
    "import sys\n"
    "from generator import cli\n"
    "def _exit(code, _exit_now=cli._exit_now):\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write('peak-kib ' + line.split()[1] + '\\n')\n"
    "    sys.stderr.flush()\n"
    "    _exit_now(code)\n"
    "cli._exit_now = _exit\n"
    "sys.argv = ['tasgen', *sys.argv[1:]]\n"
    "cli.main()\n"
)


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MiB) of one tasgen command in a fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", _CODE, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**env, "PYTHONPATH": str(HERE.parent)},
    )
    err = child.stderr.read().decode() if child.stderr else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"tasgen {' '.join(args)} failed:\n{err[-3000:]}")
    (peak,) = [int(line.split()[1]) for line in err.splitlines() if line.startswith("peak-kib ")]
    return wall, usage.ru_utime + usage.ru_stime, peak / 1024


def sizes(count: int) -> list[Size]:
    """``count`` sizes: GPUs per pod 1, 2, 4, 8 times 1 to 6 pods in one domain."""
    return [Size(g, p) for p in range(1, 7) for g in (1, 2, 4, 8)][:count]


def counting(inventory: Path, asked: list[Size], repeat: int) -> dict[str, object]:
    """On the compiled cluster, CPU seconds (medians): indexing every flavor's domains (fit's
    index, a pass over the nodes), then the counting alone over the built indexes; and how
    many flavor levels and domains were counted."""
    compiled = compile_inventory(read_inventory(inventory), datetime.now(UTC), node_features=False)
    cluster = cluster_of(compiled)
    indexing, counted = [], []
    for _ in range(repeat):
        engine = Engine(cluster)
        start = time.process_time()
        for flavor in cluster.flavors:
            engine.index(flavor)
        indexing.append(time.process_time() - start)
        start = time.process_time()
        report = report_of(cluster, None, asked, engine)
        counted.append(time.process_time() - start)
    levels = [lv for q in report.queues for f in q.flavors for lv in f.levels]
    return {
        "flavor_levels": len(levels),
        "domains": sum(lv.domains for lv in levels),
        "index_cpu_s": round(statistics.median(indexing), 3),
        "counting_cpu_s": round(statistics.median(counted), 3),
    }


def bench(nodes: int, count: int, work: Path, repeat: int) -> dict[str, object]:
    inventory = work / f"fleet-{nodes}"
    if not inventory.exists():
        write_fleet(inventory, nodes, local_queues=True)
    asked = sizes(count)
    given = ",".join(f"{s.gpus}x{s.pods}" for s in asked)
    env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"))
    args = ["capacity", "-i", str(inventory), "--size", given, "--format", "json"]
    rounds = [timed(args, env) for _ in range(repeat)]
    return {
        "nodes": nodes,
        "sizes": len(asked),
        "wall_s": round(statistics.median(r[0] for r in rounds), 2),
        "cpu_s": round(statistics.median(r[1] for r in rounds), 2),
        "peak_rss_mib": round(max(r[2] for r in rounds)),
        **counting(inventory, asked, repeat),
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
