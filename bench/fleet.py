"""Synthetic fleets for the benchmark: N nodes, two writing sources (a configMap and a
webhook source), one Topograph nodeLabels source, three ClusterQueuePlans.

Files are written the way a real fleet's would be: the NodeInventory as `tasgen
import-nodes` writes it (YAML), the configMap snapshot as YAML inside a ConfigMap block
scalar, the webhook snapshot as the JSON its endpoint answers.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

from tasgen.emit import yaml

RACK_SIZE = 16
API = "topology.gpustack.ai/v1alpha1"


def _pool(i: int, n: int) -> str:
    share = i * 10 // n  # 50% H100 (configMap), 20% L40S (webhook), 30% GB200 (Topograph)
    return "h100" if share < 5 else "l40s" if share < 7 else "gb200"


def _node(i: int, n: int) -> dict[str, object]:
    name = f"node-{i:06d}"
    pool, rack = _pool(i, n), i // RACK_SIZE
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/zone": f"zone-{(rack // 8) % 4}",
        "fleet.example.com/pool": pool,
        "nvidia.com/gpu.product": {"h100": "NVIDIA-H100", "l40s": "NVIDIA-L40S", "gb200": "NVIDIA-GB200"}[
            pool
        ],
    }
    if pool == "gb200":
        labels |= {
            "fabric.topograph.run/tier-2": f"spine-{rack // 32}",
            "fabric.topograph.run/tier-1": f"leaf-{rack // 4}",
            "accelerator.topograph.run/nvlink-domain": f"nvl-{rack}",
        }
    allocatable = {"cpu": "191500m", "memory": "2003Gi", "nvidia.com/gpu": "8", "pods": "110"}
    return {"name": name, "labels": dict(sorted(labels.items())), "allocatable": allocatable}


def shards_for(n: int) -> int:
    """The labels shard count a fleet of n nodes needs: ~1.7 NodeFeatures per node here,
    about 1,000 per shard on average (hashing spreads racks unevenly), a power of two."""
    return 1 << max(0, math.ceil(math.log2(n * 1.7 / 1000))) if n > 600 else 1


def write_fleet(
    root: Path,
    n: int,
    shards: int | None = None,
    *,
    changed: bool = False,
    sync: Mapping[str, object] | None = None,
    local_queues: bool = False,
) -> None:
    """The fleet's inventory in root; a GeneratorConfig with ``shards`` labels shards
    (default: shards_for(n)) and ``sync`` as its sync section (the end-to-end tests name their
    git server there). ``changed``: the change `tasgen plan` is benchmarked on, a large
    one: the H100 source drops its block level (every H100 node changes profile and both H100
    queues swap flavors) and every 16th L40S node moves to the next rack. ``local_queues``:
    each queue gets a LocalQueue of its name in the namespace of its name (what workloads
    name, for `tasgen fit`)."""
    root.mkdir(parents=True, exist_ok=True)
    spec: dict[str, object] = {"output": {"nodeFeatureShards": shards or shards_for(n)}}
    if sync is not None:
        spec["sync"] = dict(sync)
    config = {"apiVersion": API, "kind": "GeneratorConfig", "metadata": {"name": "bench"}, "spec": spec}
    (root / "config.yaml").write_text(yaml.dump(config))
    nodes = [_node(i, n) for i in range(n)]
    inventory = {"apiVersion": API, "kind": "NodeInventory", "metadata": {"name": "fleet"}, "nodes": nodes}
    (root / "nodes.yaml").write_text(yaml.dump(inventory))
    h100 = {
        n["name"]: {
            "topology.kubernetes.io/zone": n["labels"]["topology.kubernetes.io/zone"],
            **(
                {}
                if changed
                else {"topology.gpustack.ai/block": f"blk-{int(n['name'][5:]) // (RACK_SIZE * 8)}"}
            ),
            "topology.gpustack.ai/rack": f"rack-{int(n['name'][5:]) // RACK_SIZE}",
        }
        for n in nodes
        if n["labels"]["fleet.example.com/pool"] == "h100"
    }
    snapshot = yaml.dump({"revision": "bench-1", "nodes": h100})
    docs = [
        _source(
            "h100",
            [
                "topology.kubernetes.io/zone",
                *([] if changed else ["topology.gpustack.ai/block"]),
                "topology.gpustack.ai/rack",
            ],
            {"configMap": {"namespace": "topo", "name": "h100", "key": "snapshot.yaml"}},
        ),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"namespace": "topo", "name": "h100"},
            "data": {"snapshot.yaml": snapshot},
        },
        _source(
            "l40s",
            ["topology.gpustack.ai/rack"],
            {
                "webhook": {
                    "url": "https://inventory.example.com/l40s",
                    "snapshotPath": "l40s.json",
                    "bearerTokenSecretRef": {"namespace": "topo", "name": "token"},
                }
            },
        ),
        _source(
            "gb200",
            [
                "fabric.topograph.run/tier-1",
                "fabric.topograph.run/tier-2",
                "accelerator.topograph.run/nvlink-domain",
            ],
            {"nodeLabels": {}},
        ),
    ]
    (root / "sources.yaml").write_text("---\n".join(yaml.dump(d) for d in docs))
    l40s = {
        n["name"]: {"topology.gpustack.ai/rack": f"rack-{_l40s_rack(int(n['name'][5:]), changed)}"}
        for n in nodes
        if n["labels"]["fleet.example.com/pool"] == "l40s"
    }
    (root / "l40s.json").write_text(json.dumps({"revision": "inv-1", "nodes": l40s}))
    (root / "queues.yaml").write_text("---\n".join(yaml.dump(q) for q in _queues(local_queues)))


def _l40s_rack(i: int, changed: bool) -> int:
    """The rack of an L40S node; in the changed fleet every 16th node moves to the next one."""
    return i // RACK_SIZE + (1 if changed and i % 16 == 0 else 0)


def _source(pool: str, levels: list[str], kind: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": API,
        "kind": "TopologySource",
        "metadata": {"name": pool},
        "spec": {"nodeSelector": {"matchLabels": {"fleet.example.com/pool": pool}}, "levels": levels, **kind},
    }


def _queues(local_queues: bool = False) -> list[dict[str, object]]:
    covered = ["cpu", "memory", "nvidia.com/gpu"]
    products = {
        "training": ["NVIDIA-H100", "NVIDIA-GB200"],
        "inference": ["NVIDIA-L40S"],
        "batch": ["NVIDIA-H100"],
    }
    return [
        {
            "apiVersion": API,
            "kind": "ClusterQueuePlan",
            "metadata": {"name": name},
            "spec": {
                "coveredResources": covered,
                "hardware": [{"identity": {"nvidia.com/gpu.product": p}} for p in products[name]],
                "clusterQueue": {"namespaceSelector": {}},  # else every queue is a warning
                **({"localQueues": [{"namespace": name}]} if local_queues else {}),
            },
        }
        for name in products
    ]
