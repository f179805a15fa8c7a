"""Benchmark of `tasgen fetch`: wall time and peak memory of polling the synthetic fleet's
webhook source (20% of the nodes) from an HTTPS server on 127.0.0.1, when the answer is new
(download, whole-inventory validation, canonical write) and when the server answers 304.
Each run is a fresh process (start-up included). Needs the test extras (a CA is made here).

    python bench/fetch.py                 # 1k, 10k, 100k; medians of 3 rounds
    python bench/fetch.py 10000 --repeat 5
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.fleet import write_fleet  # noqa: E402
from bench.run import NOW, measure  # noqa: E402
from tests.fetch.endpoints import Authority, Endpoint, server_tls  # noqa: E402


def _serve(answer: bytes, ca: Authority, work: Path) -> Endpoint:
    def respond(handler: object) -> tuple[int, dict[str, str], bytes]:
        if getattr(handler, "headers", {}).get("If-None-Match") == '"bench"':
            return 304, {"ETag": '"bench"'}, b""
        return 200, {"ETag": '"bench"', "Content-Type": "application/json"}, answer

    return Endpoint(respond, server_tls(ca, folder=work))


def bench(n: int, work: Path, repeat: int, ca: Authority) -> dict[str, float]:
    inventory = work / f"fleet-{n}"
    write_fleet(inventory, n)
    committed = (inventory / "l40s.json").read_text()
    answer = json.loads(committed)
    answer["revision"] = "inv-2"
    endpoint = _serve(json.dumps(answer).encode(), ca, work)
    sources = (inventory / "sources.yaml").read_text()
    example_url = 'url: "https://inventory.example.com/l40s"'
    if example_url not in sources:  # never poll the example host: only 127.0.0.1
        raise SystemExit(f"bench/fleet.py no longer writes {example_url}; update bench/fetch.py")
    hook = f"url: {endpoint.url('/l40s')}\n    caBundle: {json.dumps(ca.pem.decode())}"
    (inventory / "sources.yaml").write_text(sources.replace(example_url, hook))
    token = work / "secrets" / "topo" / "token" / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text("bench-token")
    args = ["fetch", "-i", str(inventory), "--secrets-dir", str(work / "secrets"), "--now", NOW]
    env = {**os.environ}
    rounds = []
    try:
        for _ in range(repeat):
            (inventory / "l40s.json").write_text(committed)
            (inventory / "l40s.json.etag").unlink(missing_ok=True)
            rounds.append([measure(args, env), measure(args, env)])
    finally:
        endpoint.close()
    new, unchanged = (
        (statistics.median(r[i][0] for r in rounds), max(r[i][1] for r in rounds)) for i in range(2)
    )
    answer_mib = len(json.dumps(answer)) / 2**20
    return {
        "nodes": n,
        "answer_mib": round(answer_mib, 2),
        "new_s": new[0],
        "304_s": unchanged[0],
        "peak_rss_mib": max(new[1], unchanged[1]),
    }


def main() -> None:
    args = sys.argv[1:]
    repeat = int(args.pop(args.index("--repeat") + 1)) if "--repeat" in args else 3
    args = [a for a in args if a != "--repeat"]
    sizes = [int(a) for a in args] or [1_000, 10_000, 100_000]
    ca = Authority("tasgen bench CA")
    with tempfile.TemporaryDirectory(prefix="tasgen-bench-fetch-") as folder:
        rows = [bench(n, Path(folder), repeat, ca) for n in sizes]
    print(" ".join(f"{h:>12}" for h in ("nodes", "answer MiB", "new s", "304 s", "peak RSS MiB")))
    for r in rows:
        cells = (
            r["nodes"],
            r["answer_mib"],
            f"{r['new_s']:.2f}",
            f"{r['304_s']:.2f}",
            f"{r['peak_rss_mib']:.0f}",
        )
        print(" ".join(f"{c:>12}" for c in cells))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
