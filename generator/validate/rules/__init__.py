"""The registry of semantic rules, in the order they run (and are listed in the catalogue).

A rule is a small function over the typed inventory (:class:`Context`) that yields findings
with its own rule ID. Load-stage and plan-stage rule IDs are listed in :data:`OTHER_RULES`
so that the catalogue is complete.
"""

from __future__ import annotations

from generator.validate.rules import (
    hierarchy,
    limits,
    localqueues,
    nodes,
    plans,
    risks,
    snapshots,
    sources,
    taints,
)
from generator.validate.rules.base import Context, Rule

RULES: tuple[Rule, ...] = (
    *sources.RULES,
    *nodes.RULES,
    *snapshots.RULES,
    *hierarchy.RULES,
    *plans.RULES,
    *limits.RULES,
    *taints.RULES,
    *localqueues.RULES,
    *risks.RULES,
)

#: the warnings about valid inventories that are probably not meant (judged after every other rule)
RISKS = frozenset(rule.id for rule in risks.RULES)

#: rule ID -> summary, for rules reported outside this registry (loading, schema, planning,
#: writing)
OTHER_RULES: dict[str, str] = {
    "file-unreadable": "An inventory file is readable UTF-8 text.",
    "yaml-syntax": "A file is valid YAML.",
    "json-syntax": "A .json file is valid JSON.",
    "duplicate-key": "A mapping has each key once.",
    "yaml-alias-limit": "YAML aliases do not expand beyond a bounded size (no alias bombs).",
    "document-shape": "Every document is a mapping.",
    "document-header": "Every document has a string apiVersion and kind.",
    "unknown-kind": "A document's kind is one of the inventory kinds.",
    "api-version": "A document's apiVersion is the one of its kind.",
    "schema": "A document (or snapshot) conforms to its kind's JSON Schema (tasgen schema KIND).",
    "duplicate-object": "No two objects share kind and name (namespace/name for ConfigMaps).",
    "single-generator-config": "An inventory has at most one GeneratorConfig.",
    "duplicate-node": "A node is listed once across NodeInventories.",
    "snapshot-missing": "A configMap source's ConfigMap and key, or a webhook's snapshot file, exist.",
    "snapshot-path": "A webhook snapshotPath stays inside the inventory folder.",
    "snapshot-shape": "A snapshot is one YAML or JSON mapping.",
    "snapshot-expiry": "A snapshot's expiresAt is an RFC 3339 time.",
    "node-ambiguous": "A node selected by several Ready sources falls back to hostname-only (warning).",
    "profile-collision": "Two different hierarchies never hash to one profile ID.",
    "identity-unmatched": "A hardware identity that matches no node gives no flavor (warning).",
    "quota-unplaceable": "A declared quota has matching nodes with allocatable of that resource.",
    "flavor-limit": "A ClusterQueue has at most 64 flavors (hardware identities x profiles).",
    "queue-empty": "A ClusterQueue with no flavor stays held (warning).",
    "immutable-field": "A render never changes an immutable field of an object already in rendered/.",
    "stale-render": "rendered/ is what 'tasgen render' would write (tasgen check).",
    "output-unwritable": "rendered/ can be written.",
    # tasgen plan compares two revisions: these need the base revision (generator/diff/risks.py)
    "level-removed": "A level of the base revision's hierarchy stays for the nodes that had it (warning).",
    "level-added-uncarried": "A level added since the base is on every node its source selects (warning).",
}

__all__ = ["OTHER_RULES", "RISKS", "RULES", "Context", "Rule"]
