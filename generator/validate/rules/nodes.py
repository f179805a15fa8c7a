"""Rules on the node facts of NodeInventory documents."""

from __future__ import annotations

from collections.abc import Iterable

from generator.model import HOSTNAME_KEY, Finding
from generator.validate.labels import is_dns_subdomain, label_key_error, label_value_error
from generator.validate.quantities import quantity_error
from generator.validate.rules.base import Context, Rule


def _node_name(ctx: Context) -> Iterable[Finding]:
    for node in ctx.inventory.nodes.values():
        if not is_dns_subdomain(node.name):
            message = (
                f"node name {node.name!r} is not a DNS-1123 subdomain "
                "(lowercase letters, digits, '-' and '.')"
            )
            yield Finding(node.where.at("name"), "node-name", message)
        elif len(node.name) > 63:
            message = (
                f"node name {node.name!r} is {len(node.name)} characters; NFD targets a "
                "NodeFeature by a label value of at most 63"
            )
            yield Finding(node.where.at("name"), "node-name", message)


def _node_hostname(ctx: Context) -> Iterable[Finding]:
    for node in ctx.inventory.nodes.values():
        if HOSTNAME_KEY not in node.labels:
            message = f"node {node.name!r} has no {HOSTNAME_KEY} label (every hierarchy ends with it)"
            yield Finding(node.where.at("labels"), "node-hostname", message)


def _node_labels(ctx: Context) -> Iterable[Finding]:
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
                yield Finding(
                    node.where.key_of("labels", key), "label-syntax", f"label key {key!r}: {problem}"
                )
            problem = label_value_error(value)
            if problem:
                yield Finding(
                    node.where.at("labels", key), "label-syntax", f"label {key}={value!r}: {problem}"
                )


def _node_quantities(ctx: Context) -> Iterable[Finding]:
    for node in ctx.inventory.nodes.values():
        for resource, value in node.allocatable.items():
            problem = quantity_error(value)
            if problem:
                yield Finding(node.where.at("allocatable", resource), "quantity", f"{resource}: {problem}")


RULES = (
    Rule("node-name", "Node names are DNS-1123 subdomains of at most 63 characters.", _node_name),
    Rule("node-hostname", "Every node has a kubernetes.io/hostname label.", _node_hostname),
    Rule("label-syntax", "Label keys and values follow Kubernetes syntax.", _node_labels),
    Rule(
        "quantity", "Allocatable and quota values are non-negative Kubernetes quantities.", _node_quantities
    ),
)
