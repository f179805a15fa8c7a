"""Instructions rather than seconds: a cold render and the floor (bench/floor.py) counted by
valgrind's cachegrind (no cache simulation; `apt-get install valgrind`).

    python bench/instructions.py [NODES] [--other CHECKOUT]    # default 100000 nodes

On a shared machine CPU seconds are too noisy to show a small change; instruction counts
repeat. ``--other`` counts another checkout's render too (an A/B of two commits). What counts
do not show: CONTRIBUTING.md, "Benchmarks".
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402
from bench.run import NOW, installed_env  # noqa: E402
from bench.sync import TASGEN, warm_up  # noqa: E402

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def counted(command: list[str], env: dict[str, str]) -> int:
    """Instructions of one process under cachegrind."""
    grind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    done = subprocess.run([*grind, *command], env=env, capture_output=True, text=True, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{' '.join(command)} failed under valgrind:\n{done.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def render(work: Path, inventory: Path, env: dict[str, str]) -> int:
    rendered = work / "rendered"
    shutil.rmtree(rendered, ignore_errors=True)
    shutil.rmtree(work / "memo", ignore_errors=True)
    return counted(
        [sys.executable, TASGEN, "render", "-i", str(inventory), "--now", NOW, "-o", str(rendered)], env
    )


def main() -> None:
    args = sys.argv[1:]
    other = Path(args[args.index("--other") + 1]).resolve() if "--other" in args else None
    n = next((int(a) for a in args if a.isdigit()), 100_000)
    work = Path(tempfile.mkdtemp(prefix="tasgen-instructions-"))
    try:
        inventory = work / "inventory"
        env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"), PYTHONHASHSEED="0")
        write_fleet(inventory, n)
        warm_up(TASGEN, work, env)
        counts: dict[str, int] = {}
        if other is not None:
            other_env = env | {"PYTHONPATH": str(other), "PYTHONPYCACHEPREFIX": str(work / "other-pycache")}
            warm_up(TASGEN, work, other_env)
            counts["other_render"] = render(work, inventory, other_env)
        counts["render"] = render(work, inventory, env)  # leaves rendered/: the bytes the floor writes
        floor = [
            sys.executable,
            str(HERE / "floor.py"),
            str(inventory),
            str(work / "rendered"),
            str(work / "scratch"),
        ]
        counts["floor"] = counted(floor, env)
        ratio = {"render_over_floor": round(counts["render"] / counts["floor"], 3)}
        if other is not None:
            ratio["render_over_other"] = round(counts["render"] / counts["other_render"], 4)
        print(json.dumps({"nodes": n, **counts, **ratio}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
