"""The fit engine's domain index (compositions of node kinds, generator/fit/index.py) gives the
verdicts a plain walk over every node and domain gives, as Kueue's TAS computes them node by
node (pkg/cache/scheduler/tas_flavor_snapshot.go)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.fit import engine, index
from tasgen.fit.cluster import Cluster, Flavor, NodeFacts
from tasgen.fit.podsets import PodSet, TopologyRequest
from tasgen.model import HOSTNAME_KEY
from tests.conftest import examples

LEVELS = ("zone", "block", "rack")
TAINT = ("maintenance", "true", "NoSchedule")


@st.composite
def fleets(draw: Any) -> tuple[tuple[str, ...], list[NodeFacts]]:
    depth = draw(st.integers(1, 3))
    levels = (*LEVELS[-depth:], HOSTNAME_KEY) if draw(st.booleans()) else LEVELS[-depth:]
    nodes = []
    for i in range(draw(st.integers(0, 24))):
        labels = {level: f"{level[0]}{draw(st.integers(0, 2))}" for level in LEVELS[-depth:]}
        labels[HOSTNAME_KEY] = f"n{i}"
        gpus = draw(st.sampled_from([0, 2, 4, 8]))
        allocatable = {"nvidia.com/gpu": gpus, "cpu": draw(st.sampled_from([8000, 64000])), "pods": 110}
        taints = (TAINT,) if draw(st.integers(0, 4)) == 0 else ()
        nodes.append(NodeFacts(f"n{i}", labels, allocatable, taints))
    return levels, nodes


@st.composite
def podsets(draw: Any, levels: tuple[str, ...]) -> PodSet:
    kind = draw(st.sampled_from(["required", "preferred", "unconstrained", "none", "slice"]))
    level = draw(st.sampled_from(levels))
    request = None
    if kind == "required":
        request = TopologyRequest(required=level)
    elif kind == "preferred":
        request = TopologyRequest(preferred=level)
    elif kind == "unconstrained":
        request = TopologyRequest(unconstrained=True)
    elif kind == "slice":
        inner = draw(st.sampled_from(levels[levels.index(level) :]))
        request = TopologyRequest(required=level, slice_level=inner, slice_size=draw(st.integers(1, 3)))
    tolerations = ({"key": "maintenance", "operator": "Exists"},) if draw(st.booleans()) else ()
    requests = {
        "nvidia.com/gpu": draw(st.sampled_from([0, 1, 2, 4, 8])),
        "cpu": draw(st.sampled_from([0, 4000])),
    }
    return PodSet("main", draw(st.integers(1, 20)), requests, tolerations, topology=request)


def _blocking(taints: tuple[tuple[str, str, str], ...], tolerations: Any) -> tuple[str, str, str] | None:
    """The fleets' one taint, unless the PodSet's one toleration (key, Exists) covers it."""
    covered = {t["key"] for t in tolerations if t.get("operator") == "Exists"}
    return next((t for t in taints if t[0] not in covered), None)


def _pods_in(request: dict[str, int], capacity: Counter[str]) -> tuple[int, str]:
    """How many pods of ``request`` fit in ``capacity``, and the resource that runs out
    first (ties: the first by name); a resource asked for that the node lacks fits none."""
    best, short = 2**31 - 1, ""
    for name in sorted(request):
        if request[name] == 0:
            continue
        if name not in capacity:
            return 0, name
        if capacity[name] // request[name] < best:
            best, short = capacity[name] // request[name], name
    return best, short


def _leaf_states(
    levels: tuple[str, ...], nodes: list[NodeFacts], ps: PodSet
) -> tuple[dict[tuple[str, ...], int], Counter[str], int]:
    """Each leaf domain's pods, the nodes left out per reason, and the leaves."""
    node_level = levels[-1] == HOSTNAME_KEY
    leaves: dict[tuple[str, ...], Counter[str]] = {}
    excluded: Counter[str] = Counter()
    per_pod = dict(ps.requests) | {"pods": 1}
    states: dict[tuple[str, ...], int] = {}
    for n in nodes:
        leaves.setdefault(tuple(n.labels[k] for k in levels), Counter()).update(n.allocatable)
    taint_of = {tuple(n.labels[k] for k in levels): n.taints for n in nodes}
    for path, capacity in leaves.items():
        taint = _blocking(taint_of[path], ps.tolerations) if node_level else None
        if taint is not None:
            excluded[f'taint "{taint[0]}={taint[1]}:{taint[2]}"'] += 1
            states[path] = 0
            continue
        states[path], limiting = _pods_in(per_pod, capacity)
        if states[path] == 0 and limiting:
            excluded[f'resource "{limiting}"'] += 1
    return states, excluded, len(leaves)


def _message(fit: int, count: int, unit: str, leaves: int, excluded: Counter[str]) -> str:
    """Kueue's notFitMessage, written out from its Go source."""
    head = (
        f'topology "t" doesn\'t allow to fit any of {count} {unit}(s)'
        if fit == 0
        else f'topology "t" allows to fit only {fit} out of {count} {unit}(s)'
    )
    if not excluded:
        return head
    stats = ", ".join(sorted(f"{k}: {n}" for k, n in excluded.items()))
    return f"{head}. Total nodes: {leaves}; excluded: {stats}"


def _request(levels: tuple[str, ...], ps: PodSet, implied: bool) -> tuple[int, int, int] | str:
    """(level, slice level, slice size) of the PodSet's request, or Kueue's reason."""
    top = ps.topology
    if top is None or not (top.required or top.preferred or top.slice_level or top.unconstrained):
        key = levels[-1] if implied else None
    else:
        key = top.required or top.preferred or (levels[0] if top.slice_level else levels[-1])
    if key is None:
        return "topology level not specified"
    slice_key = (top.slice_level if top else None) or levels[-1]
    if levels.index(key) > levels.index(slice_key):
        return f"podset slice topology {slice_key} is above the podset topology {key}"
    size = top.slice_size if top and top.slice_level else 1
    return levels.index(key), levels.index(slice_key), size or 1


def plain(levels: tuple[str, ...], nodes: list[NodeFacts], ps: PodSet, implied: bool) -> tuple[Any, ...]:
    """Kueue's findLevelWithFitDomains over every domain, each node counted on its own:
    (fits, level, domains holding it whole) or (False, Kueue's reason)."""
    shape = _request(levels, ps, implied)
    if isinstance(shape, str):
        return (False, shape)
    level, slice_level, size = shape
    states, excluded, leaves = _leaf_states(levels, nodes, ps)
    depth = len(levels)

    def slices(path: tuple[str, ...]) -> int:
        """A domain's slices: at the slice level its pods // size, above it its children's."""
        if len(path) - 1 == slice_level:
            return sum(s for p, s in states.items() if p[: len(path)] == path) // size
        children = {p[: len(path) + 1] for p in states if p[: len(path)] == path}
        return sum(slices(c) for c in children) if len(path) < depth else 0

    count = ps.count // size
    unit = "slice" if size > 1 else "pod"
    top = ps.topology
    required = top is not None and top.required is not None
    unconstrained = implied or (top is not None and (bool(top.unconstrained) or top.slice_only))
    while True:
        domains = {p[: level + 1] for p in states}
        if not domains:
            return (False, f"no topology domains at level: {levels[level]}")
        per = [slices(d) for d in domains]
        whole = sum(s >= count for s in per)
        if whole:
            return (True, levels[level], whole)
        if required:
            return (False, _message(max(per), count, unit, leaves, excluded))
        if level > 0 and not unconstrained:
            level -= 1
            continue
        if sum(per) >= count:
            return (True, levels[level], 0)
        return (False, _message(sum(per), count, unit, leaves, excluded))


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_the_index_judges_as_a_walk_over_every_node_does(data: Any) -> None:
    levels, nodes = data.draw(fleets())
    ps = data.draw(podsets(levels))
    implied = ps.topology is None
    cluster = Cluster(nodes, {"f": Flavor("f", {}, topology="t")}, {"t": levels})
    idx = index.build(cluster, cluster.flavors["f"])
    assert idx is not None
    found = engine._find(idx, ps, implied=implied)
    judged = (True, found.level, found.domains) if found.fits else (False, found.reason)
    assert judged == plain(levels, nodes, ps, implied)
