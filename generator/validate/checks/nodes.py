"""Rules on the node facts of NodeInventory documents."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain, repeat
from operator import attrgetter, contains

from ...kube.quantities import quantity_error
from ...model import HOSTNAME_KEY, Node
from ...rules import Hit, Rule
from ...rules.semantic import LABEL_SYNTAX, NODE_HOSTNAME, NODE_NAME, NODE_TAINT, QUANTITY
from ..labels import (
    dns_names_valid,
    is_dns_subdomain,
    label_key_error,
    label_value_error,
    label_values_valid,
)
from .base import Check, Context


def _node_name(ctx: Context) -> Iterable[Hit]:
    if not names_valid(ctx):
        yield from each_node_name(ctx.inventory.nodes.values())


def names_valid(ctx: Context) -> bool:
    """Whether every node name is a DNS subdomain of at most 63 characters (judged in one match
    at C speed, once: label-syntax asks too, since such a name is a valid label value)."""
    return ctx.memo("names-valid", lambda ctx: dns_names_valid(ctx.inventory.nodes.keys(), longest=63))


def each_node_name(nodes: Iterable[Node]) -> Iterable[Hit]:
    """NODE_NAME node by node (what _node_name finds, the slow way)."""
    for node in nodes:
        if not is_dns_subdomain(node.name):
            message = (
                f"node name {node.name!r} is not a DNS-1123 subdomain "
                "(lowercase letters, digits, '-' and '.')"
            )
            yield Hit(node.where.at("name"), message)
        elif len(node.name) > 63:
            message = (
                f"node name {node.name!r} is {len(node.name)} characters; NFD targets a "
                "NodeFeature by a label value of at most 63"
            )
            yield Hit(node.where.at("name"), message)


def _node_hostname(ctx: Context) -> Iterable[Hit]:
    labels = map(attrgetter("labels"), ctx.inventory.nodes.values())
    if all(map(contains, labels, repeat(HOSTNAME_KEY))):
        return  # every node has one (the usual fleet), found at C speed
    for node in ctx.inventory.nodes.values():
        if HOSTNAME_KEY not in node.labels:
            message = f"node {node.name!r} has no {HOSTNAME_KEY} label (every hierarchy ends with it)"
            yield Hit(node.where.at("labels"), message)


def _node_labels(ctx: Context) -> Iterable[Hit]:
    nodes = ctx.inventory.nodes.values()
    # A fleet has few distinct keys and values: judge those (at C speed) before any node.
    labels = list(map(attrgetter("labels"), nodes))
    keys = set(chain.from_iterable(labels))
    values = set(chain.from_iterable(map(dict.values, labels)))
    if names_valid(ctx):  # a fleet's hostnames are its node names, judged valid already
        values.difference_update(ctx.inventory.nodes)
    if any(map(label_key_error, keys)) or not label_values_valid(values):
        yield from each_node_labels(nodes)


def each_node_labels(nodes: Iterable[Node]) -> Iterable[Hit]:
    """LABEL_SYNTAX node by node (what _node_labels finds, the slow way)."""
    for node in nodes:
        for key, value in node.labels.items():
            problem = label_key_error(key)
            if problem:
                yield Hit(node.where.key_of("labels", key), f"label key {key!r}: {problem}")
            problem = label_value_error(value)
            if problem:
                yield Hit(node.where.at("labels", key), f"label {key}={value!r}: {problem}")


def _node_taints(ctx: Context) -> Iterable[Hit]:
    """Kubernetes' syntax for a taint's key and value (the schema checks the effect): a
    NodeInventory written by hand is not import-nodes', and a taint's text reaches the
    flavors' nodeTaints and every report."""
    nodes = ctx.inventory.nodes.values()
    stated = set(chain.from_iterable(map(attrgetter("taints"), nodes)))  # a fleet has few
    if any(_taint_error(key, value) for key, value, _ in stated):
        for node in nodes:
            for j, (key, value, _) in enumerate(node.taints):
                if problem := _taint_error(key, value):
                    yield Hit(node.where.at("taints", j), f"node {node.name!r}: {problem}")


def _taint_error(key: str, value: str) -> str | None:
    if problem := label_key_error(key):
        return f"taint key {key!r}: {problem}"
    if value and (problem := label_value_error(value)):
        return f"taint {key} value {value!r}: {problem}"
    return None


def _node_quantities(ctx: Context) -> Iterable[Hit]:
    nodes = ctx.inventory.nodes.values()
    # Fleets repeat a few allocatable values: judge each once before looking at any node.
    stated = set(chain.from_iterable(map(dict.items, map(attrgetter("allocatable"), nodes))))
    if any(quantity_error(value, resource) for resource, value in stated):
        yield from each_node_quantities(nodes)


def each_node_quantities(nodes: Iterable[Node]) -> Iterable[Hit]:
    """QUANTITY node by node (what _node_quantities finds, the slow way)."""
    for node in nodes:
        for resource, value in node.allocatable.items():
            problem = quantity_error(value, resource)
            if problem:
                yield Hit(node.where.at("allocatable", resource), f"{resource}: {problem}")


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (NODE_NAME, _node_name),
    (NODE_HOSTNAME, _node_hostname),
    (LABEL_SYNTAX, _node_labels),
    (NODE_TAINT, _node_taints),
    (QUANTITY, _node_quantities),
)
