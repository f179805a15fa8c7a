"""The cluster a compiled inventory makes: its nodes with the labels they carry once the
rendered NodeFeatures apply (the profile and flavor labels, pins included, and the levels their
source states), and the rendered Kueue objects."""

from __future__ import annotations

from ..pipeline import Compilation
from .cluster import Cluster, NodeFacts, from_objects, node_facts


def cluster_of(compiled: Compilation) -> Cluster:
    """The compiled inventory's cluster (``compiled`` did not fail)."""
    ctx, rendering = compiled.context, compiled.rendering
    assert ctx is not None and rendering is not None and rendering.assignment is not None
    assignment = rendering.assignment
    stated: dict[str, dict[str, str]] = {}
    for source in ctx.loaded_sources():
        if ctx.expired(source):
            continue
        for node, values in ctx.hierarchy_values(source):
            if assignment.source_of.get(node.name) == source.name:
                stated[node.name] = values
    nodes: list[NodeFacts] = []
    for name, node in ctx.inventory.nodes.items():
        if node.unschedulable:
            continue  # Kueue's TAS cache leaves cordoned nodes out
        labels = dict(node.labels)
        labels.update(stated.get(name, {}))
        labels.update(rendering.pinned.rows.get(name, {}))
        nodes.append(node_facts(name, labels, node.allocatable, node.taints))
    return from_objects([m.body for m in rendering.manifests], nodes)
