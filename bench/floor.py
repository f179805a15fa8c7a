"""The floor of a render, as a process of its own: parse every inventory file once with the
fastest parser here (yaml-rs; json for the JSON snapshot; a ConfigMap's embedded snapshot
too) and write the rendered bytes once.

    python bench/floor.py INVENTORY RENDERED SCRATCH

Prints the CPU seconds it spent reading RENDERED, which only supplies the bytes to write: the
caller takes the process's whole CPU as the render's is taken (``wait4``: start-up, imports, the
parse, the writes, the page faults of a fresh heap, the exit) and subtracts them. That also
leaves out the page faults of holding those bytes, which the render pays for its output
texts. It imports nothing beyond the standard library and yaml-rs,
and exits without freeing its objects, as tasgen does.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

import yaml_rs


def parse(inventory: Path) -> list[object]:
    kept: list[object] = []  # held to the end: tasgen does not free its data either
    for path in sorted(inventory.iterdir()):
        text = path.read_text()
        if path.suffix == ".json":
            kept.append(json.loads(text))
            continue
        for doc in yaml_rs.loads(text) if text.count("\n---") else [yaml_rs.loads(text)]:
            kept.append(doc)
            kept += [yaml_rs.loads(value) for value in (doc or {}).get("data", {}).values()]
    return kept


def write(texts: dict[Path, bytes], scratch: Path) -> None:
    for relative, data in texts.items():
        target = scratch / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def main() -> None:
    gc.disable()  # no cycle collections: tasgen runs without them too
    inventory, rendered, scratch = map(Path, sys.argv[1:4])
    before = time.process_time()
    texts = {p.relative_to(rendered): p.read_bytes() for p in rendered.rglob("*.yaml")}
    print(round(time.process_time() - before, 3), flush=True)
    kept = parse(inventory)  # noqa: F841 - held until the exit, as tasgen holds its data
    write(texts, scratch)
    os._exit(0)


if __name__ == "__main__":
    main()
