"""From parsed documents to the inventory: headers, schemas, identities, typed objects.

Every document is checked before anything is built, so that one run reports the schema
problems of every file. Objects are only built from documents that passed their schema;
semantic rules (:mod:`generator.validate.checks`) then run on the typed inventory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, count, repeat
from operator import contains, itemgetter
from typing import Any

from ..model import (
    Document,
    Finding,
    Hardware,
    LocalQueue,
    Node,
    QueuePlan,
    Requirement,
    Selector,
    Settings,
    Source,
    Taint,
    Where,
)
from ..rules.schema import (
    API_VERSION,
    DOCUMENT_HEADER,
    DUPLICATE_NODE,
    DUPLICATE_OBJECT,
    SINGLE_GENERATOR_CONFIG,
    UNKNOWN_KIND,
)
from ..sourcetypes import of_spec
from ..util.durations import duration
from . import schema
from .hierarchy import normalize_levels

#: v1beta1 spellings of ClusterQueue fields accepted in ``spec.clusterQueue``
_V1BETA1_NAMES = {"cohort": "cohortName", "admissionChecks": "admissionChecksStrategy"}
_V1BETA1_VALUES = {("whenCanBorrow", "Borrow"), ("whenCanPreempt", "Preempt")}


@dataclass
class Catalog:
    """The documents of an inventory that passed their checks, by kind."""

    by_kind: dict[str, list[Document]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: (kind, name) of documents that failed their checks: already reported, so objects that
    #: refer to them say nothing more
    rejected: set[tuple[str, str]] = field(default_factory=set)

    def of(self, kind: str) -> list[Document]:
        return self.by_kind.get(kind, [])


def catalog(documents: Iterable[Document]) -> Catalog:
    result = Catalog()
    seen: dict[tuple[str, str], Document] = {}
    for doc in documents:
        problems = _header(doc) or schema.check(doc.kind, doc.body, doc.where())
        if problems:
            result.findings.extend(problems)
            result.rejected.add((doc.kind, _identity(doc)))
            continue
        identity = (doc.kind, _identity(doc))
        if identity in seen:
            result.findings.append(_duplicate(doc, seen[identity]))
            continue
        seen[identity] = doc
        result.by_kind.setdefault(doc.kind, []).append(doc)
    return result


def _header(doc: Document) -> list[Finding]:
    api, kind = doc.body.get("apiVersion"), doc.body.get("kind")
    if not isinstance(api, str) or not isinstance(kind, str):
        missing = "apiVersion" if not isinstance(api, str) else "kind"
        return [DOCUMENT_HEADER(doc.where(), f"every document needs a string {missing}")]
    if kind not in schema.KINDS:
        known = ", ".join(sorted(schema.KINDS))
        return [UNKNOWN_KIND(doc.where("kind"), f"unknown kind {kind!r}; expected one of {known}")]
    if api != schema.KINDS[kind]:
        message = f"{kind} is written with apiVersion {schema.KINDS[kind]}, not {api!r}"
        return [API_VERSION(doc.where("apiVersion"), message)]
    return []


def _identity(doc: Document) -> str:
    meta = doc.body.get("metadata")
    namespace = meta.get("namespace", "") if isinstance(meta, dict) else ""
    return f"{namespace}/{doc.name}" if doc.kind == "ConfigMap" else doc.name


def _duplicate(doc: Document, first: Document) -> Finding:
    message = f"a second {doc.kind} named {_identity(doc)!r}; the first is in {first.file}"
    return DUPLICATE_OBJECT(doc.where("metadata", "name"), message)


# --- typed objects ----------------------------------------------------------------------


def settings(docs: list[Document]) -> tuple[Settings, list[Finding]]:
    findings = [
        SINGLE_GENERATOR_CONFIG(
            d.where("kind"),
            f"at most one GeneratorConfig; another is {docs[0].file} ({docs[0].name})",
        )
        for d in docs[1:]
    ]
    if not docs:
        return Settings(), findings
    spec: dict[str, Any] = docs[0].body["spec"]
    defaults = Settings()
    return Settings(
        hardware_identity_keys=tuple(spec.get("hardwareIdentityKeys", defaults.hardware_identity_keys)),
        admin_label_prefix=spec.get("adminLabelPrefix"),
        node_feature_namespace=spec.get("nodeFeatureNamespace", defaults.node_feature_namespace),
        gate=dict(spec.get("gate", {})),
        drop_policy=spec.get("gate", {}).get("dropPolicy", defaults.drop_policy),
        retain_for=duration(str(spec.get("gate", {}).get("retainFor", ""))),
        kueue_api_version=spec.get("kueueAPIVersion", defaults.kueue_api_version),
        output=dict(spec.get("output", {})),
        sync=dict(spec.get("sync", {})),
        expiry_warning_days=spec.get("expiryWarningDays", defaults.expiry_warning_days),
        volatile_label_keys=tuple(spec.get("volatileLabelKeys", defaults.volatile_label_keys)),
        workloads=tuple(spec.get("workloads", ())),
        where=docs[0].where("spec"),
    ), findings


def nodes(docs: list[Document]) -> tuple[dict[str, Node], list[Finding]]:
    found: dict[str, Node] = {}
    findings: list[Finding] = []
    for doc in docs:
        entries: list[dict[str, Any]] = doc.body["nodes"]
        names = list(map(itemgetter("name"), entries))
        made = list(_made(doc, entries, names))
        by_name = dict(zip(names, made, strict=True))
        if len(by_name) == len(names) and not found:
            found = by_name  # the usual single NodeInventory: not copied
        elif len(by_name) == len(names) and found.keys().isdisjoint(by_name):
            found.update(by_name)  # no name twice (every valid fleet): no Python step per node
        else:
            findings += _one_by_one(doc, names, made, found)
    return found, findings


def _made(doc: Document, entries: list[dict[str, Any]], names: list[str]) -> Iterable[Node]:
    """Each entry's Node, made by map (C speed) from columns of the entries."""
    labels, allocatable = map(itemgetter("labels"), entries), _allocatable_column(entries)
    return map(Node, names, labels, allocatable, repeat(doc.where()), count(), *_fields(entries))


def _one_by_one(doc: Document, names: list[str], made: list[Node], found: dict[str, Node]) -> list[Finding]:
    """Each node into ``found`` unless its name is there already (a finding then)."""
    findings: list[Finding] = []
    for i, (name, node) in enumerate(zip(names, made, strict=True)):
        if name in found:
            message = f"node {name!r} is listed twice; the first is in {found[name].where.file}"
            findings.append(DUPLICATE_NODE(doc.where("nodes", i, "name"), message))
        else:
            found[name] = node
    return findings


def _allocatable_column(entries: list[dict[str, Any]]) -> Iterable[dict[str, str]]:
    """Each entry's allocatable: the parsed mappings themselves when their quantities are all
    strings already (judged at once, at C speed), else each made of strings."""
    raw = list(map(dict.get, entries, repeat("allocatable"), repeat({})))
    strings = set(map(type, chain.from_iterable(map(dict.values, raw)))) <= {str}
    return raw if strings else map(_allocatable, entries)


def _fields(entries: list[dict[str, Any]]) -> tuple[Iterable[Any], ...]:
    """The columns of taints and unschedulable, none when no entry has them (most fleets)."""
    if not any(map(contains, entries, repeat("taints"))) and not any(
        map(contains, entries, repeat("unschedulable"))
    ):
        return ()
    return tuple(zip(*map(_node_fields, entries), strict=True))


def _allocatable(entry: dict[str, Any]) -> dict[str, str]:
    """Quantities as strings: the parsed mapping itself when they are (no copy per node)."""
    raw: dict[str, Any] = entry.get("allocatable", {})
    if all(type(value) is str for value in raw.values()):
        return raw
    return {k: str(v) for k, v in raw.items()}


def _node_fields(entry: dict[str, Any]) -> tuple[tuple[Taint, ...], bool]:
    """Taints and unschedulable (most nodes have neither)."""
    if "taints" not in entry and "unschedulable" not in entry:
        return (), False
    taints = tuple((t["key"], t.get("value", ""), t["effect"]) for t in entry.get("taints", ()))
    return taints, bool(entry.get("unschedulable", False))


def source(doc: Document) -> Source:
    spec = doc.body["spec"]
    declared = tuple(spec["levels"])
    return Source(
        name=doc.name,
        selector=selector(spec["nodeSelector"]),
        levels=normalize_levels(declared),
        declared_levels=declared,
        type=of_spec(spec),
        spec=spec,
        where=doc.where(),
    )


def selector(raw: dict[str, Any]) -> Selector:
    expressions = tuple(
        Requirement(e["key"], e["operator"], frozenset(e.get("values", ())))
        for e in raw.get("matchExpressions", ())
    )
    return Selector(tuple(sorted(raw.get("matchLabels", {}).items())), expressions)


def queue_plan(doc: Document) -> QueuePlan:
    spec = doc.body["spec"]
    hardware = tuple(_hardware(h, doc.where("spec", "hardware", i)) for i, h in enumerate(spec["hardware"]))
    local_queues = tuple(
        LocalQueue(q["namespace"], q.get("name", doc.name), doc.where("spec", "localQueues", i))
        for i, q in enumerate(spec.get("localQueues", ()))
    )
    return QueuePlan(
        name=doc.name,
        covered_resources=tuple(spec["coveredResources"]),
        hardware=hardware,
        cluster_queue=cluster_queue_fields(spec.get("clusterQueue", {})),
        stop_policy=spec.get("stopPolicy", "None"),
        drop_policy=spec.get("dropPolicy"),
        where=doc.where(),
        local_queues=local_queues,
        spec=spec,
    )


def _hardware(raw: dict[str, Any], where: Where) -> Hardware:
    return Hardware(
        dict(raw["identity"]),
        _quota(raw.get("nominalQuota")),
        where,
        borrowing_limit=_quota(raw.get("borrowingLimit")) or {},
        lending_limit=_quota(raw.get("lendingLimit")) or {},
        tolerations=_canonical(raw.get("tolerations", ()), _TOLERATION_FIELDS),
        node_taints=_canonical(raw.get("nodeTaints", ()), _TAINT_FIELDS),
    )


#: field order of a Toleration and a Taint as Kubernetes writes them
_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")
_TAINT_FIELDS = ("key", "value", "effect")


def _canonical(entries: Iterable[dict[str, Any]], fields: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """Entries with their fields in Kubernetes' order, sorted and without repeats: the order
    of a list of tolerations means nothing, so reordering it changes no flavor."""
    unique = {json.dumps([[f, e[f]] for f in fields if f in e]): e for e in entries}
    return tuple({f: unique[k][f] for f in fields if f in unique[k]} for k in sorted(unique))


def _quota(raw: dict[str, Any] | None) -> dict[str, str] | None:
    return None if raw is None else {k: str(v) for k, v in raw.items()}


def cluster_queue_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """The pass-through ClusterQueue fields in their v1beta2 spelling."""
    fields = {k: v for k, v in raw.items() if k not in _V1BETA1_NAMES}
    if "cohort" in raw:
        fields.setdefault("cohortName", raw["cohort"])
    if "admissionChecks" in raw:
        checks = [{"name": name} for name in raw["admissionChecks"]]
        fields.setdefault("admissionChecksStrategy", {"admissionChecks": checks})
    fungibility = fields.get("flavorFungibility")
    if isinstance(fungibility, dict):
        # v1beta1's Borrow and Preempt are v1beta2's MayStopSearch (Kueue's own conversion)
        fields["flavorFungibility"] = {
            k: "MayStopSearch" if (k, v) in _V1BETA1_VALUES else v for k, v in fungibility.items()
        }
    return fields
