"""A small fleet for the plan tests, written as a user would write it, with the knobs each
scenario turns (a rack move, a level added or removed, an identity dropped, a quota change, an
expiry), and real git repositories to commit it to."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field, replace
from pathlib import Path

ZONE, BLOCK, RACK = "topology.kubernetes.io/zone", "topology.gpustack.ai/block", "topology.gpustack.ai/rack"
ROW = "topology.gpustack.ai/row"
H100 = [f"h-{i}" for i in range(8)]
L40S = ["l-0", "l-1"]


@dataclass(frozen=True)
class Fleet:
    racks: dict[str, str] = field(default_factory=lambda: {n: f"r{i // 2 + 1}" for i, n in enumerate(H100)})
    more: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> more labels it states
    levels: tuple[str, ...] = (ZONE, RACK)
    expires: str = "2027-06-30T00:00:00Z"
    training: tuple[str, ...] = ("H100", "L40S")  # identities of the training queue
    quota: str = "64"  # training's H100 GPUs
    prefix: str = ""  # of the queues' names (tests that share a cluster)
    selector: bool = True  # the queues set namespaceSelector
    cohort: str = ""  # training's cohortName
    local_queues: tuple[str, ...] = ()  # namespaces of training's LocalQueues
    source: str = "racks"  # the writing source's name
    stop_policy: str = ""  # training's stopPolicy (the default when empty)
    drop_policy: str = ""  # training's dropPolicy (the default when empty)
    l40s_taints: str = ""  # nodeTaints of training's L40S flavor, as YAML flow
    future: bool = False  # a queue whose identity no node has (rendered empty and held)
    cordoned: tuple[str, ...] = ()  # nodes marked unschedulable
    tainted: tuple[str, ...] = ()  # nodes with the taint maintenance=true:NoSchedule
    workloads: tuple[str, ...] = ()  # GeneratorConfig spec.workloads (a config.yaml when set)

    def but(self, **changes: object) -> Fleet:
        return replace(self, **changes)  # type: ignore[arg-type]

    def files(self) -> dict[str, str]:
        files = {"nodes.yaml": self._nodes(), "source.yaml": self._source(), "queues.yaml": self._queues()}
        if self.workloads:
            globs = "".join(f"    - {g!r}\n" for g in self.workloads)
            files["config.yaml"] = (
                "apiVersion: topology.gpustack.ai/v1alpha1\nkind: GeneratorConfig\n"
                f"metadata: {{name: config}}\nspec:\n  workloads:\n{globs}"
            )
        return files

    def _nodes(self) -> str:
        entries = [self._node(n, "H100", "z1" if i < 4 else "z2") for i, n in enumerate(H100)]
        entries += [self._node(n, "L40S", "z1") for n in L40S]
        entries = [self._state(e, n) for e, n in zip(entries, [*H100, *L40S], strict=True)]
        return (
            "apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\n"
            "metadata: {name: nodes}\nnodes:\n" + "".join(entries)
        )

    @staticmethod
    def _node(name: str, product: str, zone: str) -> str:
        return (
            f"  - name: {name}\n"
            f"    labels: {{kubernetes.io/hostname: {name}, {ZONE}: {zone}, "
            f"nvidia.com/gpu.product: {product}, pool: {product.lower()}}}\n"
            '    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8", pods: "110"}\n'
        )

    def _state(self, entry: str, name: str) -> str:
        if name in self.cordoned:
            entry += "    unschedulable: true\n"
        if name in self.tainted:
            entry += '    taints: [{key: maintenance, value: "true", effect: NoSchedule}]\n'
        return entry

    def _source(self) -> str:
        stated = "".join(self._stated(n) for n in H100)
        return (
            "apiVersion: topology.gpustack.ai/v1alpha1\nkind: TopologySource\n"
            f"metadata: {{name: {self.source}}}\n"
            f"spec:\n  nodeSelector: {{matchLabels: {{pool: h100}}}}\n  levels: [{', '.join(self.levels)}]\n"
            "  configMap: {namespace: topo, name: racks, key: snapshot.yaml}\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: topo, name: racks}\ndata:\n"
            f'  snapshot.yaml: |\n    revision: "r1"\n    expiresAt: "{self.expires}"\n    nodes:\n{stated}'
        )

    def _stated(self, node: str) -> str:
        labels = {RACK: self.racks[node]} if self.racks[node] else {}  # "": states no rack
        labels |= self.more.get(node, {})
        return f"      {node}: {{{', '.join(f'{k}: {v}' for k, v in labels.items())}}}\n"

    def _queues(self) -> str:
        taints = f"\n      nodeTaints: {self.l40s_taints}" if self.l40s_taints else ""
        hardware = {"H100": f'\n      nominalQuota: {{nvidia.com/gpu: "{self.quota}"}}', "L40S": taints}
        training = "".join(
            f"    - identity: {{nvidia.com/gpu.product: {p}}}{hardware[p]}\n" for p in self.training
        )
        if self.local_queues:
            training += "  localQueues:\n" + "".join(f"    - namespace: {n}\n" for n in self.local_queues)
        if self.stop_policy:
            training += f"  stopPolicy: {self.stop_policy}\n"
        if self.drop_policy:
            training += f"  dropPolicy: {self.drop_policy}\n"
        future = "---\n" + _queue("future", "    - identity: {nvidia.com/gpu.product: B200}\n", True)
        return (
            _queue(f"{self.prefix}training", training, self.selector, self.cohort)
            + "---\n"
            + _queue(
                f"{self.prefix}inference", "    - identity: {nvidia.com/gpu.product: H100}\n", self.selector
            )
            + (future if self.future else "")
        )


def _queue(name: str, hardware: str, selector: bool, cohort: str = "") -> str:
    settings = ["namespaceSelector: {}"] if selector else []
    settings += [f"cohortName: {cohort}"] if cohort else []
    return (
        f"apiVersion: topology.gpustack.ai/v1alpha1\nkind: ClusterQueuePlan\nmetadata: {{name: {name}}}\n"
        "spec:\n  coveredResources: [cpu, memory, nvidia.com/gpu]\n  hardware:\n"
        + hardware
        + (f"  clusterQueue: {{{', '.join(settings)}}}\n" if settings else "")
    )


class Repo:
    """A git repository in a temporary folder, with an inventories/ folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        # No user or system configuration: the same repository on every machine.
        env = {
            **os.environ,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        }
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def write(self, fleet: Fleet, folder: str = "inventories") -> None:
        target = self.root / folder
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.yaml"):
            old.unlink()
        for name, text in fleet.files().items():
            (target / name).write_text(text)

    def commit(self, fleet: Fleet, message: str) -> None:
        self.write(fleet)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)

    def commit_tree(self, message: str) -> None:
        """Commit the working tree as it is (a test wrote into it)."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
