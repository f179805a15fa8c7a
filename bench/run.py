"""Benchmark: wall time and peak memory of validate, cold render, no-change re-render and
`tasgen plan` of a large change on synthetic fleets (default 1k, 10k and 100k nodes). Each
measurement runs in a fresh process (start-up included, as a user sees it); peak RSS is that process's own.

    python bench/run.py                       # 1k, 10k, 100k; medians of 3 rounds
    python bench/run.py 1000 10000 --repeat 5 # chosen sizes and rounds
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402

NOW = "2026-11-30T00:00:00Z"


def installed_env(work: Path, **more: str) -> dict[str, str]:
    """The environment of a measured tasgen: its bytecode cached (under ``work``), as an
    installed tasgen runs (pip compiles it at install). This sandbox sets
    PYTHONDONTWRITEBYTECODE, under which every run compiled its modules from source first (a
    cost an installed tasgen does not pay)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(work / "pycache"), **more}


def measure(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one tasgen command in its own child process."""
    code = "import sys; from generator.cli import main; sys.argv = ['tasgen', *sys.argv[1:]]; main()"
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**env, "PYTHONPATH": str(HERE.parent)},
        cwd=cwd,
    )
    output = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"tasgen {' '.join(args)} failed:\n{output.decode()[-3000:]}")
    return elapsed, usage.ru_maxrss / 1024


def bench(n: int, work: Path, repeat: int) -> dict[str, float]:
    """Medians of ``repeat`` rounds: validate, cold render (rendered/ and memo removed),
    no-change re-render, and a re-render with --no-cache."""
    inventory, rendered = work / f"fleet-{n}", work / f"rendered-{n}"
    env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"))
    write_fleet(inventory, n)
    write_fleet(work / "warm-up", 100)  # its run writes the bytecode; not counted
    measure(["render", "-i", str(work / "warm-up"), "--now", NOW, "-o", str(work / "warm-up-out")], env)
    size = sum(p.stat().st_size for p in inventory.iterdir()) / 2**20
    common = ["-i", str(inventory), "--now", NOW]
    rounds = []
    for _ in range(repeat):
        shutil.rmtree(rendered, ignore_errors=True)
        shutil.rmtree(work / "memo", ignore_errors=True)
        rounds.append(
            [
                measure(["validate", *common], env),
                measure(["render", *common, "-o", str(rendered)], env),
                measure(["render", *common, "-o", str(rendered)], env),
                measure(["render", *common, "-o", str(rendered), "--no-cache"], env),
            ]
        )
    repo = _plan_repository(work / f"repo-{n}", n)
    plans = [
        measure(["plan", "--base", "HEAD", "-i", "inv", "--now", NOW, "--format", "markdown"], env, repo)
    ]
    plans += [
        measure(["plan", "--base", "HEAD", "-i", "inv", "--now", NOW, "--format", "markdown"], env, repo)
        for _ in range(repeat - 1)
    ]
    validate, cold, again, full = (
        (statistics.median(r[i][0] for r in rounds), max(r[i][1] for r in rounds)) for i in range(4)
    )
    plan = (statistics.median(p[0] for p in plans), max(p[1] for p in plans))
    return {
        "nodes": n,
        "inventory_mib": round(size, 1),
        "validate_s": validate[0],
        "cold_render_s": cold[0],
        "rerender_s": again[0],
        "rerender_full_s": full[0],
        "plan_s": plan[0],
        "peak_rss_mib": max(validate[1], cold[1], again[1], full[1], plan[1]),
    }


def _plan_repository(root: Path, n: int) -> Path:
    """A git repository whose commit holds the fleet and whose working tree holds the fleet's
    large change (bench/fleet.py): what `tasgen plan` is measured on."""
    write_fleet(root / "inv", n)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *args], cwd=root, check=True)
    write_fleet(root / "inv", n, changed=True)
    return root


def main() -> None:
    args = sys.argv[1:]
    repeat = int(args.pop(args.index("--repeat") + 1)) if "--repeat" in args else 3
    args = [a for a in args if a != "--repeat"]
    sizes = [int(a) for a in args] or [1_000, 10_000, 100_000]
    work = Path(tempfile.mkdtemp(prefix="tasgen-bench-"))
    try:
        rows = [bench(n, work, repeat) for n in sizes]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    header = (
        "nodes",
        "MiB in",
        "validate s",
        "cold s",
        "re-render s",
        "re/cold",
        "--no-cache s",
        "plan s",
        "plan/cold",
        "peak RSS MiB",
    )
    print(" ".join(f"{h:>12}" for h in header))
    for r in rows:
        cells = (
            r["nodes"],
            r["inventory_mib"],
            f"{r['validate_s']:.2f}",
            f"{r['cold_render_s']:.2f}",
            f"{r['rerender_s']:.2f}",
            f"{r['rerender_s'] / r['cold_render_s']:.2f}",
            f"{r['rerender_full_s']:.2f}",
            f"{r['plan_s']:.2f}",
            f"{r['plan_s'] / r['cold_render_s']:.2f}",
            f"{r['peak_rss_mib']:.0f}",
        )
        print(" ".join(f"{c:>12}" for c in cells))
    by_n = {r["nodes"]: r for r in rows}
    if 10_000 in by_n and 100_000 in by_n:
        ratio = by_n[100_000]["cold_render_s"] / by_n[10_000]["cold_render_s"]
        print(f"cold render 100k/10k time ratio: {ratio:.1f}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
