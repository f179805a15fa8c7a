"""Benchmark of `tasgen fit`: W workload manifests (one batch/v1 Job a file, of every kind of
topology request) judged against the queues of an N-node fleet (bench/fleet.py), in a fresh
process as a user runs it. Target: 1,000 workloads against 100,000 nodes in at most 10 s and
1.5 GiB; the cost must not grow with workloads x nodes, which the other sizes show.

    python bench/fit.py                          # 100k nodes x 1,000 workloads, and the scaling rows
    python bench/fit.py 100000:1000 10000:1000   # chosen NODES:WORKLOADS pairs
    python bench/fit.py --repeat 5
"""

from __future__ import annotations

import json
import os
import random
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
from bench.run import installed_env  # noqa: E402
from tasgen.emit import yaml  # noqa: E402

GPU = "nvidia.com/gpu"
#: queue -> the levels its flavors' Topologies have (bench/fleet.py), and one none has
LEVELS = {
    "training": [
        "topology.kubernetes.io/zone",
        "topology.gpustack.ai/block",
        "topology.gpustack.ai/rack",
        "fabric.topograph.run/tier-2",
        "fabric.topograph.run/tier-1",
        "accelerator.topograph.run/nvlink-domain",
        "kubernetes.io/hostname",
    ],
    "inference": ["topology.gpustack.ai/rack", "kubernetes.io/hostname"],
    "batch": ["topology.gpustack.ai/block", "topology.gpustack.ai/rack", "kubernetes.io/hostname"],
}
MISSING = "topology.gpustack.ai/no-such-level"
DEFAULT = ["100000:1000", "100000:100", "10000:1000"]


def write_workloads(folder: Path, count: int, seed: int = 0) -> None:
    """count Jobs, one a file: 1 to 512 pods of 1 to 8 GPUs (some with CPU and memory),
    required, preferred or no topology request, a few naming a level no flavor has."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        queue = rng.choice(sorted(LEVELS))
        pods = rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 512])
        requests = {GPU: str(rng.choice([1, 2, 4, 8]))}
        if rng.random() < 0.5:
            requests |= {"cpu": rng.choice(["4", "16", "48"]), "memory": rng.choice(["16Gi", "200Gi"])}
        template: dict[str, object] = {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "example.com/train:1",
                        "resources": {"requests": requests, "limits": {GPU: requests[GPU]}},
                    }
                ],
            }
        }
        mode = rng.choice(["required", "preferred", None])
        if mode:
            level = MISSING if rng.random() < 0.05 else rng.choice(LEVELS[queue])
            template["metadata"] = {"annotations": {f"kueue.x-k8s.io/podset-{mode}-topology": level}}
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"job-{i:05d}",
                "namespace": queue,
                "labels": {"kueue.x-k8s.io/queue-name": queue},
            },
            "spec": {"parallelism": pods, "completions": pods, "template": template},
        }
        (folder / f"job-{i:05d}.yaml").write_text(yaml.dump(job))


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, float, bytes]:
    """(wall s, CPU s, peak RSS MiB, stdout) of one tasgen command in a fresh process; exit 1
    (a workload that never fits) is an answer, not a failure."""
    code = "import sys; from generator.cli import main; sys.argv = ['tasgen', *sys.argv[1:]]; main()"
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            env={**env, "PYTHONPATH": str(HERE.parent)},
        )
        out = child.stdout.read() if child.stdout else b""
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            err.seek(0)
            raise SystemExit(f"tasgen {' '.join(args)} failed:\n{err.read().decode()[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def bench(nodes: int, workloads: int, work: Path, repeat: int) -> dict[str, object]:
    inventory, manifests = work / f"fleet-{nodes}", work / f"workloads-{workloads}"
    if not inventory.exists():
        write_fleet(inventory, nodes, local_queues=True)
    if not manifests.exists():
        write_workloads(manifests, workloads)
    env = installed_env(work, TASGEN_CACHE_DIR=str(work / "memo"))
    args = ["fit", "-i", str(inventory), "--format", "json", str(manifests)]
    rounds = [timed(args, env) for _ in range(repeat)]
    report = json.loads(rounds[-1][3])
    podsets = [p for w in report["workloads"] for p in w["podSets"]]
    return {
        "nodes": nodes,
        "workloads": len(report["workloads"]),
        "fits": sum(1 for p in podsets if p["fits"]),
        "never": sum(1 for p in podsets if not p["fits"]),
        "wall_s": round(statistics.median(r[0] for r in rounds), 2),
        "cpu_s": round(statistics.median(r[1] for r in rounds), 2),
        "least_cpu_s": round(min(r[1] for r in rounds), 2),
        "peak_rss_mib": round(max(r[2] for r in rounds)),
    }


def main() -> None:
    args = sys.argv[1:]
    repeat = int(args.pop(args.index("--repeat") + 1)) if "--repeat" in args else 3
    args = [a for a in args if a != "--repeat"]
    pairs = [tuple(int(x) for x in a.split(":")) for a in (args or DEFAULT)]
    work = Path(tempfile.mkdtemp(prefix="tasgen-bench-fit-"))
    try:
        write_fleet(work / "warm-up", 100, local_queues=True)  # writes the bytecode; not counted
        write_workloads(work / "warm-up-workloads", 10)
        timed(["fit", "-i", str(work / "warm-up"), str(work / "warm-up-workloads")], installed_env(work))
        for nodes, workloads in pairs:
            print(json.dumps(bench(nodes, workloads, work, repeat)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
