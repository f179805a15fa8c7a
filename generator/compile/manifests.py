"""The objects of rendered/, each with the file it belongs in.

Layout (one folder per sync step; each folder is one path an engine syncs, see sync_wiring):

- ``labels/`` or, with several shards, ``labels/shard-NNN/``: NFD NodeFeatures, one file per
  writing source and one for profiles in each (see shards.py for which node goes where)
- ``kueue/``: Topologies and ResourceFlavors
- ``gate/``: the drain gate Job and what it needs
- ``queues/``: ClusterQueues and their LocalQueues
- ``retire/``: the Job that deletes retired Topologies and flavors (see gate_wiring)

Few large files rather than one per object: writing 100k small files costs seconds, and a
reviewer reads one diff per source and shard.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from ..kube.quantities import stored_form
from ..model import (
    PROFILE_KEY,
    PROFILES_FEATURE_NAME,
    Inventory,
    KueueVersion,
    Manifest,
    Source,
    flavor_key,
)
from ..util.columns import group
from ..validate.labels import READ_ONLY_PARENTS
from .engines import (
    COMPARE_OPTIONS,
    FLUX_PRUNE,
    IGNORE_HEALTH,
    MANAGED_BY,
    SYNC_OPTIONS,
    WAVE,
)
from .profiles import Assignment
from .queues import Flavor, Queue, QueueFlavor
from .retention import RETIRING_PREFIX, Retained, since_text

NFD_API = "nfd.k8s-sigs.io/v1alpha1"
KUEUE_GROUP = "kueue.x-k8s.io"
NODE_NAME_LABEL = "nfd.node.kubernetes.io/node-name"
SOURCE_LABEL = "topology.gpustack.ai/source"
#: No engine deletes a NodeFeature: not by pruning (a node that moves between two labels shards
#: would lose its labels while one shard's prune ran before the other's apply), nor with its
#: Application. One the render no longer holds stays, kept out of the sync status, until it is
#: deleted on purpose (docs/reference/rendered.md, "Deletion").
NODE_FEATURE_ANNOTATIONS = {
    SYNC_OPTIONS: "Prune=false,Delete=false",
    COMPARE_OPTIONS: "IgnoreExtraneous",
    FLUX_PRUNE: "disabled",
}


def source_features(source: str) -> str:
    return f"nodefeatures-{source}.yaml"


PROFILE_FEATURES = source_features(PROFILES_FEATURE_NAME)


@dataclass(frozen=True)
class FeatureFile:
    """The NodeFeatures of one file of rendered/, as rows rather than objects: a large fleet
    has hundreds of thousands, alike but for their node and labels, and building an object
    per document only to write it cost a third of a render. ``manifests()`` gives the objects
    the rows stand for (the emit stage's fast writer is tested to write their bytes)."""

    file: str  # rendered/-relative
    namespace: str
    source: str | None  # the writing source whose labels these are; None: the profile labels
    rows: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)  # (node, labels)

    def name(self, node: str) -> str:
        return self.name_prefix + node

    @property
    def name_prefix(self) -> str:
        """What every NodeFeature name of the file starts with (the node's name follows)."""
        return f"tasgen.{self.source}." if self.source is not None else "tasgen-profile."

    def body(self, node: str, labels: Mapping[str, str]) -> dict[str, Any]:
        return _node_feature(self.name(node), self.namespace, node, dict(labels), self.source)

    def manifests(self) -> list[Manifest]:
        return [Manifest(self.file, self.body(node, labels)) for node, labels in self.rows]


def feature_files(
    inventory: Inventory,
    ready: Iterable[Source],
    profile_rows: Mapping[str, Mapping[str, str]],
    folder_of: Mapping[str, str],
) -> list[FeatureFile]:
    """Every NodeFeature file: per labels folder, one per Ready writing source and one of
    profiles; rows in node order. ``profile_rows``: node -> its profile and flavor labels
    (compile/pins.py)."""
    namespace = inventory.settings.node_feature_namespace
    files: list[FeatureFile] = []
    for source in ready:
        assert source.snapshot is not None
        rows = node_labels(source.snapshot.nodes)
        files += _by_folder(rows, folder_of, source_features(source.name), namespace, source.name)
    nodes = sorted(profile_rows)
    rows = zip(nodes, map(profile_rows.__getitem__, nodes), strict=True)
    return files + _by_folder(rows, folder_of, PROFILE_FEATURES, namespace, None)


def _by_folder(
    rows: Iterable[tuple[str, Mapping[str, str]]],
    folder_of: Mapping[str, str],
    name: str,
    namespace: str,
    source: str | None,
) -> list[FeatureFile]:
    """The file ``name`` of each labels folder, holding its nodes' rows in order."""
    rows = list(rows)
    by_folder = group(list(map(folder_of.__getitem__, map(itemgetter(0), rows))), rows)
    return [FeatureFile(f"{folder}/{name}", namespace, source, found) for folder, found in by_folder.items()]


def node_labels(stated: Mapping[str, dict[str, str]]) -> Iterable[tuple[str, Mapping[str, str]]]:
    """(node, the labels its NodeFeature sets) in node order: what a source states, sorted,
    but the read-only parent keys. No revision annotation: a new snapshot revision would then
    rewrite every shard, not only those of the racks that changed (the status summary reports
    revisions). Racks repeat one set of labels: each node's values become a row (a column
    per key, zipped), each distinct row is made a mapping once, and the nodes are mapped to
    theirs at C speed."""
    nodes = sorted(stated)
    mappings = list(map(stated.__getitem__, nodes))
    keys = sorted(set(chain.from_iterable(mappings)).difference(READ_ONLY_PARENTS))
    columns = [map(dict.get, mappings, repeat(key)) for key in keys]
    rows: list[tuple[str | None, ...]] = list(zip(*columns, strict=True)) if keys else [()] * len(nodes)
    made = {row: _labels(keys, row) for row in dict.fromkeys(rows)}
    return zip(nodes, map(made.__getitem__, rows), strict=True)


def _labels(keys: list[str], row: tuple[str | None, ...]) -> dict[str, str]:
    return {key: value for key, value in zip(keys, row, strict=True) if value is not None}


def _node_feature(
    name: str, namespace: str, node: str, labels: dict[str, str], source: str | None
) -> dict[str, Any]:
    meta_labels = {**MANAGED_BY, NODE_NAME_LABEL: node}
    if source is not None:
        meta_labels[SOURCE_LABEL] = source
    return {
        "apiVersion": NFD_API,
        "kind": "NodeFeature",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": meta_labels,
            "annotations": dict(NODE_FEATURE_ANNOTATIONS),
        },
        "spec": {"labels": labels},
    }


def _catalog_meta(name: str, wave: str) -> dict[str, Any]:
    """Topologies and flavors are never pruned by the engine: the retire step (rendered/retire/,
    after the queues) deletes a retired one once nothing refers to it. An engine's prune would
    come before the gate has switched the queues, and leave the object Terminating under Kueue's
    finalizer, where a revert during the drain cannot apply it again (docs/explanation/gate.md). Nor are they
    deleted with their Application (Argo CD's resources finalizer cascades, say when
    sync.argocd.name changes): a flavor deleted under its queues stays Terminating alike."""
    annotations = {
        WAVE: wave,
        SYNC_OPTIONS: "Prune=false,Delete=false",
        # ... and a retired one kept by Prune=false must not hold its Application OutOfSync
        # (Progressive Syncs would never reach the gate, queues and retire steps)
        COMPARE_OPTIONS: "IgnoreExtraneous",
        IGNORE_HEALTH: "true",
        FLUX_PRUNE: "disabled",
    }
    return {"name": name, "labels": dict(MANAGED_BY), "annotations": annotations}


def _kueue_meta(name: str, wave: str) -> dict[str, Any]:
    return {"name": name, "labels": dict(MANAGED_BY), "annotations": {WAVE: wave}}


def kueue_api(version: KueueVersion) -> str:
    return f"{KUEUE_GROUP}/{version}"


def topologies(
    assignment: Assignment,
    version: KueueVersion = "v1beta2",
    retained: Mapping[str, dict[str, Any]] | None = None,
) -> list[Manifest]:
    """One per profile, and those that retained flavors still name (``retained``: name ->
    spec as the previous render wrote it), in name order."""
    specs = {
        f"gpustack-{p.id}": {"levels": [{"nodeLabel": key} for key in p.keys]}
        for p in assignment.profiles().values()
    }
    specs |= {name: spec for name, spec in (retained or {}).items() if name not in specs}
    return [
        _catalog_object("kueue/topologies.yaml", "Topology", name, specs[name], version)
        for name in sorted(specs)
    ]


def resource_flavors(
    flavors: dict[str, Flavor],
    version: KueueVersion = "v1beta2",
    retained: Mapping[str, dict[str, Any]] | None = None,
    legacy: frozenset[str] = frozenset(),
) -> list[Manifest]:
    """The compiled flavors, and the retained ones the render no longer has (``retained``: name
    -> spec as the previous render wrote it), in name order. ``legacy``: compiled flavors
    written without their flavor label (the previous render's were, and Kueue keeps a
    topology-aware flavor's nodeLabels)."""
    specs = {name: _flavor_spec(f, name not in legacy) for name, f in flavors.items()}
    specs |= {name: spec for name, spec in (retained or {}).items() if name not in specs}
    return [
        _catalog_object("kueue/resourceflavors.yaml", "ResourceFlavor", name, specs[name], version)
        for name in sorted(specs)
    ]


def _catalog_object(file: str, kind: str, name: str, spec: dict[str, Any], version: KueueVersion) -> Manifest:
    body = {
        "apiVersion": kueue_api(version),
        "kind": kind,
        "metadata": _catalog_meta(name, "2"),
        "spec": spec,
    }
    return Manifest(file, body)


def _flavor_spec(flavor: Flavor, keyed: bool = True) -> dict[str, Any]:
    labels = {**dict(flavor.identity), PROFILE_KEY: flavor.profile.id}
    if keyed:
        labels[flavor_key(flavor.name)] = flavor.name
    spec: dict[str, Any] = {"nodeLabels": dict(sorted(labels.items()))}
    if flavor.node_taints:
        spec["nodeTaints"] = [dict(t) for t in flavor.node_taints]
    if flavor.tolerations:
        spec["tolerations"] = [dict(t) for t in flavor.tolerations]
    spec["topologyName"] = f"gpustack-{flavor.profile.id}"
    return spec


def cluster_queues(queues: list[Queue], version: KueueVersion = "v1beta2") -> list[Manifest]:
    return [Manifest("queues/clusterqueues.yaml", cluster_queue(q, version)) for q in queues]


def local_queues(queues: list[Queue], version: KueueVersion = "v1beta2") -> list[Manifest]:
    """The LocalQueues each plan lists; their namespaces are not tasgen's (docs/reference/inventory.md)."""
    found = [(lq.namespace, lq.name, q.plan.name) for q in queues for lq in q.plan.local_queues]
    return [
        Manifest(
            "queues/localqueues.yaml",
            {
                "apiVersion": kueue_api(version),
                "kind": "LocalQueue",
                "metadata": _local_meta(namespace, name),
                "spec": {"clusterQueue": cluster},
            },
        )
        for namespace, name, cluster in sorted(found)
    ]


def _local_meta(namespace: str, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, **_kueue_meta(name, "4")}


def cluster_queue(queue: Queue, version: KueueVersion = "v1beta2") -> dict[str, Any]:
    plan = queue.plan
    spec: dict[str, Any] = spelled(plan.cluster_queue, version)
    if queue.flavors or queue.retained:
        cohort = bool(plan.cluster_queue.get("cohortName"))
        spec["resourceGroups"] = [
            {
                "coveredResources": list(plan.covered_resources),
                "flavors": [
                    *(
                        {"name": qf.flavor.name, "resources": _resources(qf, plan.covered_resources)}
                        for qf in queue.flavors
                    ),
                    *(
                        {
                            "name": r.name,
                            "resources": _retained_resources(plan.covered_resources, cohort, r),
                        }
                        for r in queue.retained
                    ),
                ],
            }
        ]
    # An emptied plan stays held: Kueue would still admit workloads that request nothing.
    spec["stopPolicy"] = plan.stop_policy if queue.flavors else "Hold"
    metadata = _kueue_meta(plan.name, "4")
    metadata["annotations"] |= {f"{RETIRING_PREFIX}{r.name}": since_text(r.since) for r in queue.retained}
    return {"apiVersion": kueue_api(version), "kind": "ClusterQueue", "metadata": metadata, "spec": spec}


def _retained_resources(covered: tuple[str, ...], cohort: bool, retained: Retained) -> list[dict[str, str]]:
    """What its Workloads hold, no more: Kueue admits nothing new there and, the usage being
    within nominal, no peer reclaims it (Kueue preempts across queues only where usage is above
    nominal); in a cohort nothing is borrowed onto it or lent from it either (without a cohort
    Kueue allows no limits, and there is no one to borrow from)."""
    limits = {"borrowingLimit": "0", "lendingLimit": "0"} if cohort else {}
    return [{"name": r, "nominalQuota": retained.quota.get(r, "0"), **limits} for r in covered]


def _resources(qf: QueueFlavor, covered: tuple[str, ...]) -> list[dict[str, str]]:
    result = []
    for r in covered:
        entry = {"name": r, "nominalQuota": stored_form(qf.quota[r])}
        if r in qf.borrowing_limit:
            entry["borrowingLimit"] = stored_form(qf.borrowing_limit[r])
        if r in qf.lending_limit:
            entry["lendingLimit"] = stored_form(qf.lending_limit[r])
        result.append(entry)
    return result


#: v1beta2 values of flavorFungibility that v1beta1 (before v0.17) spells differently
_V1BETA1_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}


def spelled(fields: dict[str, Any], version: KueueVersion) -> dict[str, Any]:
    """The pass-through ClusterQueue fields (held in v1beta2 spelling) as ``version`` spells
    them: v1beta1 names cohortName ``cohort``, and Kueue v0.14 knows MayStopSearch as Borrow
    and Preempt (later releases convert those to MayStopSearch)."""
    if version == "v1beta2":
        return dict(sorted(fields.items()))
    result = {("cohort" if k == "cohortName" else k): v for k, v in fields.items()}
    fungibility = result.get("flavorFungibility")
    if isinstance(fungibility, dict):
        result["flavorFungibility"] = {
            k: (_V1BETA1_FUNGIBILITY[k] if v == "MayStopSearch" and k in _V1BETA1_FUNGIBILITY else v)
            for k, v in fungibility.items()
        }
    return dict(sorted(result.items()))
