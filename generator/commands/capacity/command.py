"""From the command line's arguments to the printed report and its exit code (the command line
prints and exits)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from ...fit.capacity import FlavorSlots, Size, flavor_slots, gpu_resource, is_gpu, whole_node
from ...fit.capacity import Slots as Counted
from ...fit.cluster import Cluster
from ...fit.engine import Engine
from ...fit.inventory import cluster_of
from ...fit.kinds import workloads
from ...load.cluster import LiveError
from ...load.files import load_file, read_inventory
from ...load.git import GitError, read_globbed
from ...model import Problem
from ...pipeline import Compilation, compile_inventory
from ...util.folders import folder_problem
from ...util.gc import no_cycle_collection
from .formats import FORMATS
from .report import (
    CapacityReport,
    FlavorCapacity,
    LevelCapacity,
    ProblemData,
    QueueCapacity,
    Quota,
    SizeSlots,
    Slots,
)

EXIT_CLEAN, EXIT_PROBLEMS = 0, 1
#: sizes asked when neither --size nor the GeneratorConfig's workloads give any (and a whole node)
DEFAULT_GPUS = (1, 8)
_SIZE = re.compile(r"([1-9][0-9]{0,5})(?:x([1-9][0-9]{0,6}))?")


class UsageProblem(Exception):
    """An argument cannot be used (a usage error, exit 2)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option, self.message = option, message


def parse_sizes(given: str) -> tuple[Size, ...]:
    """``8,8x4``: pods of 8 GPUs; and 4 pods of 8 GPUs in one domain."""
    sizes = []
    for part in given.split(","):
        found = _SIZE.fullmatch(part.strip())
        if found is None:
            raise UsageProblem(
                "--size", f"{part.strip()!r} is not a size: GPUS (per pod) or GPUSxPODS, e.g. 8 or 8x4"
            )
        sizes.append(Size(int(found[1]), int(found[2] or 1)))
    return tuple(sorted(set(sizes)))


def execute(
    inventory: Path, sizes: str | None, kubeconfig: Path | None, format_: str, now: datetime
) -> tuple[str, int]:
    """The text to print and the exit code; raises :class:`UsageProblem`."""
    if problem := folder_problem(inventory):
        raise UsageProblem("-i / --inventory", problem)
    asked = parse_sizes(sizes) if sizes is not None else None
    report, problems = run(inventory, asked, kubeconfig, now)
    return FORMATS[format_](report, problems), EXIT_PROBLEMS if problems else EXIT_CLEAN


def run(
    inventory: Path, sizes: tuple[Size, ...] | None, kubeconfig: Path | None, now: datetime
) -> tuple[CapacityReport, list[Problem]]:
    """``sizes`` None: the sizes of the GeneratorConfig's workloads, else the defaults."""
    with no_cycle_collection():
        compiled = compile_inventory(read_inventory(inventory), now, node_features=False)
        if compiled.failed:
            problems = compiled.problems()
            return CapacityReport(live=False, queues=(), problems=_problem_data(problems)), problems
        cluster = cluster_of(compiled)
        if sizes is None:
            sizes = workload_sizes(inventory, compiled) or None
        live = _live(kubeconfig, cluster) if kubeconfig is not None else None
        return report_of(cluster, live, sizes), []


def report_of(
    cluster: Cluster, live: Cluster | None, sizes: Sequence[Size] | None, engine: Engine | None = None
) -> CapacityReport:
    """Every ClusterQueue's flavors (in its order), on the empty ``cluster`` and on ``live``
    (the same cluster with live usage). ``sizes`` None: :data:`DEFAULT_GPUS` and a whole node.
    ``engine``: one of ``cluster`` whose indexes are built already (bench/capacity.py)."""
    empty = engine if engine is not None else Engine(cluster)
    busy = Engine(live, with_usage=True) if live is not None else None
    queues = []
    for name in sorted(cluster.queues):
        queue = cluster.queues[name]
        flavors = []
        for flavor in dict.fromkeys(f for g in queue.groups for f, _ in g.flavors):
            asked = tuple(sizes) if sizes is not None else _defaults(empty, flavor)
            before = flavor_slots(empty, queue, flavor, asked)
            after = flavor_slots(busy, busy.cluster.queues[name], flavor, asked) if busy else None
            flavors.append(_flavor(before, after, asked))
        queues.append(QueueCapacity(name=name, cohort=queue.cohort, flavors=tuple(flavors)))
    return CapacityReport(live=live is not None, queues=tuple(queues), problems=())


def _defaults(engine: Engine, flavor: str) -> tuple[Size, ...]:
    """1 and 8 GPUs, and the GPUs most of the flavor's nodes have."""
    idx = engine.index(flavor)
    resource = gpu_resource(idx) if idx is not None else None
    whole = whole_node(idx, resource) if idx is not None and resource is not None else 0
    return tuple(sorted({*(Size(g) for g in DEFAULT_GPUS), *([Size(whole)] if whole else [])}))


def _flavor(before: FlavorSlots, after: FlavorSlots | None, sizes: Sequence[Size]) -> FlavorCapacity:
    quota = None
    if before.quota is not None:
        quota = Quota(empty=before.quota, now=after.quota if after is not None else None)
    levels = []
    for i, level in enumerate(before.levels):
        in_use = after.levels[i].slots if after is not None else None
        rows = tuple(
            SizeSlots(
                gpus_per_pod=size.gpus,
                pods=size.pods,
                empty=_slots(slots, size),
                now=_slots(in_use[k], size) if in_use is not None else None,
            )
            for k, (size, slots) in enumerate(zip(sizes, level.slots, strict=False))
        )
        levels.append(LevelCapacity(level=level.level, domains=level.domains, sizes=rows))
    return FlavorCapacity(
        name=before.flavor,
        topology=before.topology,
        resource=before.resource,
        nodes=before.nodes,
        quota=quota,
        levels=tuple(levels),
    )


def _slots(found: Counted, size: Size) -> Slots:
    return Slots(largest=found.largest, largest_gpus=found.largest * size.gpus, domains=found.holding)


def workload_sizes(inventory: Path, compiled: Compilation) -> tuple[Size, ...]:
    """The GPUs per pod and pods of every PodSet of the GeneratorConfig's workloads that asks
    for GPUs (manifests that cannot be read give none: ``tasgen fit`` says why)."""
    assert compiled.context is not None
    globs = compiled.context.inventory.settings.workloads
    try:
        files = read_globbed(inventory, globs) if globs else []
    except GitError as e:
        raise UsageProblem("-i / --inventory", f"GeneratorConfig spec.workloads: {e}") from e
    found, _ = workloads([d for f in files for d in load_file(f).documents])
    return tuple(
        sorted(
            {
                Size(amount, ps.count)
                for w in found
                for ps in w.podsets
                for r, amount in ps.requests.items()
                if is_gpu(r) and amount > 0 and ps.count > 0
            }
        )
    )


def _live(kubeconfig: Path, cluster: Cluster) -> Cluster:
    # The API client costs a second of start-up: imported only when asked for.
    from ...fit import usage  # noqa: PLC0415

    try:
        return usage.cluster_in_use(cluster, *usage.read_live(kubeconfig))
    except LiveError as e:
        raise UsageProblem("--kubeconfig", str(e)) from e


def _problem_data(problems: list[Problem]) -> tuple[ProblemData, ...]:
    return tuple(
        ProblemData(path=p.path, line=p.line, col=p.col, rule=p.rule, message=p.message, level=str(p.level))
        for p in problems
    )
