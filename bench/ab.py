"""Interleaved A/B of two tasgen installs on one generated fleet: in each round a cold render by
each (fresh rendered/ and memo), then the floor (bench/sync.py). On a shared machine a round's
CPU seconds vary widely; rounds taken in turn expose both installs to the same load.

    git worktree add /tmp/old <the old revision>
    python bench/ab.py /tmp/old [NODES] [ROUNDS]      # a checkout: run with its code first on PYTHONPATH
                                                       # (its templates are still this install's)
    python bench/ab.py /tmp/venv/bin/tasgen [NODES] [ROUNDS]   # or another install's tasgen

Prints each round as it ends, then the least CPU of each install and of the floor (bench/floor.py,
a fresh process, as the renders are), and the median of the rounds' own this/other ratios (the
steadier figure on a loaded machine).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402
from bench.run import NOW, installed_env  # noqa: E402
from bench.sync import TASGEN, fresh_floor_s, timed, warm_up  # noqa: E402


def cold(tasgen: str, inventory: Path, work: Path, name: str) -> tuple[float, float]:
    """CPU seconds and peak RSS MiB of one cold render."""
    out, memo = work / f"out-{name}", work / f"memo-{name}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(memo, ignore_errors=True)
    env = _env(work, name, tasgen)
    _, _, cpu, rss = timed(
        [_command(tasgen), "render", "-i", str(inventory), "--now", NOW, "-o", str(out)], env
    )
    return round(cpu, 2), round(rss)


def _command(tasgen: str) -> str:
    """A checkout runs as this install's tasgen with the checkout's code (see _env)."""
    return TASGEN if Path(tasgen).is_dir() else tasgen


def _env(work: Path, name: str, tasgen: str) -> dict[str, str]:
    """Each install's own bytecode cache and memo; a checkout's code first on PYTHONPATH."""
    env = installed_env(work / name, TASGEN_CACHE_DIR=str(work / f"memo-{name}"))
    return env | {"PYTHONPATH": str(Path(tasgen).resolve())} if Path(tasgen).is_dir() else env


def main() -> None:
    other, nodes, rounds = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100_000, 5
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else rounds
    installs = {"other": other, "this": TASGEN}
    work = Path(tempfile.mkdtemp(prefix="tasgen-ab-"))
    try:
        write_fleet(work / "inventory", nodes)
        for name, tasgen in installs.items():
            warm_up(_command(tasgen), work / name, _env(work, name, tasgen))
        floor_env = _env(work, "this", TASGEN)  # its bytecode cache, warmed by this install's warm-up
        renders: dict[str, list[tuple[float, float]]] = {name: [] for name in installs}
        floors: list[float] = []
        for turn in range(rounds):
            # Each install goes first in every other round: what the first render leaves behind
            # (page cache, the floor's reads before it) then weighs on both alike.
            for name, tasgen in list(installs.items())[:: 1 if turn % 2 == 0 else -1]:
                renders[name].append(cold(tasgen, work / "inventory", work, name))
            shutil.rmtree(work / "scratch", ignore_errors=True)
            floor = fresh_floor_s(work / "inventory", work / "out-this", work / "scratch", floor_env)
            floors.append(round(floor, 2))
            print(json.dumps({"cpu_s_rss_mib": renders, "floor_cpu_s": floors}), flush=True)
        least = {name: min(cpu for cpu, _ in rounds_of) for name, rounds_of in renders.items()}
        ratio = round(least["this"] / least["other"], 2)
        # Each round's own ratio: both installs ran in it back to back, under much the same load,
        # so their median moves less with the machine than the least of each does.
        per_round = [t[0] / o[0] for t, o in zip(renders["this"], renders["other"], strict=True)]
        summary = {"least_cpu_s": least, "least_floor_cpu_s": min(floors), "this_over_other": ratio}
        summary["least_over_least_floor"] = {name: round(cpu / min(floors), 2) for name, cpu in least.items()}
        print(json.dumps({**summary, "median_round_ratio": round(statistics.median(per_round), 2)}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
