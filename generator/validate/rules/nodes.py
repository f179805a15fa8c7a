"""Rules on the node facts of NodeInventory documents."""

from __future__ import annotations

from collections.abc import Iterable

from generator.model import HOSTNAME_KEY
from generator.rules import Hit, Rule
from generator.rules.semantic import LABEL_SYNTAX, NODE_HOSTNAME, NODE_NAME, QUANTITY
from generator.validate.labels import is_dns_subdomain, label_key_error, label_value_error
from generator.validate.quantities import quantity_error
from generator.validate.rules.base import Check, Context


def _node_name(ctx: Context) -> Iterable[Hit]:
    for node in ctx.inventory.nodes.values():
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
    for node in ctx.inventory.nodes.values():
        if HOSTNAME_KEY not in node.labels:
            message = f"node {node.name!r} has no {HOSTNAME_KEY} label (every hierarchy ends with it)"
            yield Hit(node.where.at("labels"), message)


def _node_labels(ctx: Context) -> Iterable[Hit]:
    nodes = ctx.inventory.nodes.values()
    # A fleet has few distinct keys and values: judge those (at C speed) before any node.
    keys = set().union(*(n.labels.keys() for n in nodes))
    values = set().union(*(n.labels.values() for n in nodes))
    if not any(map(label_key_error, keys)) and not any(map(label_value_error, values)):
        return
    for node in nodes:
        for key, value in node.labels.items():
            problem = label_key_error(key)
            if problem:
                yield Hit(node.where.key_of("labels", key), f"label key {key!r}: {problem}")
            problem = label_value_error(value)
            if problem:
                yield Hit(node.where.at("labels", key), f"label {key}={value!r}: {problem}")


def _node_quantities(ctx: Context) -> Iterable[Hit]:
    for node in ctx.inventory.nodes.values():
        for resource, value in node.allocatable.items():
            problem = quantity_error(value, resource)
            if problem:
                yield Hit(node.where.at("allocatable", resource), f"{resource}: {problem}")


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (NODE_NAME, _node_name),
    (NODE_HOSTNAME, _node_hostname),
    (LABEL_SYNTAX, _node_labels),
    (QUANTITY, _node_quantities),
)
