"""The CRD checker itself: it accepts what the API server accepts and refuses what it refuses.

Every Kueue case runs against both supported releases' CRDs, downloaded from upstream.
"""

from __future__ import annotations

import copy
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import crds
from tests.conformance.crds import Catalog, CrdVersion, Problem

Obj = dict[str, Any]

KUEUE_API = "kueue.x-k8s.io/v1beta2"
HOSTNAME = "kubernetes.io/hostname"
BLOCK = "cloud.provider.com/topology-block"
RACK = "cloud.provider.com/topology-rack"

HOSTNAME_RULE = (
    "size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || "
    "self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'"
)
UNIQUE_RULE = "size(self.filter(i, size(self.filter(j, j == i)) > 1)) == 0"
RF_TOPOLOGY_RULE = "!has(self.topologyName) || self.nodeLabels.size() >= 1"
RF_TOPOLOGY_IMMUTABLE = (
    "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == oldSelf.topologyName)"
)
RF_LABELS_IMMUTABLE = (
    "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && "
    "(!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))"
)
CQ_COVERED_RULE = "self.flavors.all(x, size(x.resources) == size(self.coveredResources))"
CQ_PREFERENCE_RULE = (
    "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
    "self.whenCanPreempt == 'TryNextFlavor')"
)
CQ_RECLAIM_RULE = (
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
    "self.borrowWithinCohort.policy != 'Never')"
)


@pytest.fixture(params=crds.KUEUE_VERSIONS)
def cat(request: pytest.FixtureRequest) -> Catalog:
    """The CRDs of one Kueue release (with NFD's)."""
    return crds.catalog(request.param)


# ----------------------------------------------------------------------------------------------
# Known-good objects
# ----------------------------------------------------------------------------------------------


def topology(*labels: str) -> Obj:
    levels = [{"nodeLabel": label} for label in labels or (BLOCK, RACK, HOSTNAME)]
    return {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": "gpu-fabric"},
        "spec": {"levels": levels},
    }


def resource_flavor(**spec: Any) -> Obj:
    body = {"nodeLabels": {"node.kubernetes.io/instance-type": "h100-80gb"}} | {"topologyName": "gpu-fabric"}
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100", "labels": {"tasgen.io/fleet": "a"}},
        "spec": body | spec,
    }


def flavor(name: str, *resources: str) -> Obj:
    return {"name": name, "resources": [{"name": r, "nominalQuota": "8"} for r in resources]}


def cluster_queue(flavors: list[Obj] | None = None, **spec: Any) -> Obj:
    covered = ["cpu", "nvidia.com/gpu"]
    if flavors is None:
        flavors = [flavor("h100", *covered), flavor("a100", *covered)]
    body: Obj = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
    }
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": "training"},
        "spec": body | spec,
    }


def node_feature(**spec: Any) -> Obj:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeature",
        "metadata": {
            "name": "tasgen-node-001",
            "namespace": "node-feature-discovery",
            "labels": {"nfd.node.kubernetes.io/node-name": "node-001"},
        },
        "spec": {"labels": {BLOCK: "b1", RACK: "r07"}} | spec,
    }


GOOD: dict[str, Callable[[], Obj]] = {
    "topology-3-levels": topology,
    "topology-1-level": lambda: topology(HOSTNAME),
    "topology-without-hostname": lambda: topology(BLOCK, RACK),
    "resource-flavor": resource_flavor,
    "resource-flavor-without-topology": lambda: {
        **resource_flavor(),
        "spec": {"nodeLabels": {"a": "b"}},
    },
    "resource-flavor-null-topology-is-pruned": lambda: resource_flavor(topologyName=None),
    "cluster-queue": cluster_queue,
    "cluster-queue-int-quota": lambda: _with(
        cluster_queue(), "spec.resourceGroups.0.flavors.0.resources.1.nominalQuota", 64
    ),
    "cluster-queue-64-flavors": lambda: cluster_queue(
        [flavor(f"f{i}", "cpu", "nvidia.com/gpu") for i in range(64)]
    ),
    # Accepted only because defaulting fills whenCanPreempt=TryNextFlavor before the CEL rule.
    "cluster-queue-defaults-feed-cel": lambda: cluster_queue(
        flavorFungibility={
            "preference": "BorrowingOverPreemption",
            "whenCanBorrow": "TryNextFlavor",
        }
    ),
    # Accepted only because defaulting fills reclaimWithinCohort and borrowWithinCohort.policy.
    "cluster-queue-preemption-defaults": lambda: cluster_queue(
        preemption={"withinClusterQueue": "LowerPriority"}
    ),
    "node-feature": node_feature,
    "node-feature-null-label-is-pruned": lambda: node_feature(labels={BLOCK: "b1", RACK: None}),
    "node-feature-with-features": lambda: node_feature(
        features={
            "flags": {"cpu.cpuid": {"elements": {"AVX512F": {}}}},
            "attributes": {"kernel.version": {"elements": {"major": "6"}}},
            "instances": {"pci.device": {"elements": [{"attributes": {"vendor": "10de"}}]}},
        }
    ),
}


@pytest.mark.parametrize("make", GOOD.values(), ids=GOOD.keys())
def test_known_good_objects_are_accepted(cat: Catalog, make: Callable[[], Obj]) -> None:
    obj = make()
    before = copy.deepcopy(obj)
    assert cat.validate(obj) == []
    assert obj == before, "validation must not change the caller's object"


# ----------------------------------------------------------------------------------------------
# Known-bad objects
# ----------------------------------------------------------------------------------------------


def _levels(n: int) -> Obj:
    return topology(*[f"example.com/level-{i}" for i in range(n - 1)], HOSTNAME)


def _parent(obj: Obj, path: str) -> tuple[Any, Any]:
    """The container of dotted ``path`` in ``obj`` (numbers index lists) and the last key."""
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = obj
    for part in parents:
        node = node[part]
    return node, last


def _with(obj: Obj, path: str, value: Any) -> Obj:
    """A copy of ``obj`` with the value at ``path`` set to ``value``."""
    out = copy.deepcopy(obj)
    node, last = _parent(out, path)
    node[last] = value
    return out


def _without(obj: Obj, path: str) -> Obj:
    """A copy of ``obj`` without the value at ``path``."""
    out = copy.deepcopy(obj)
    node, last = _parent(out, path)
    del node[last]
    return out


def pattern(regex: str) -> str:
    return f"pattern: {json.dumps(regex)}"


# name -> (object, path, rule, source)
BAD: dict[str, tuple[Callable[[], Obj], str, str, str]] = {
    "hostname-not-last": (
        lambda: topology(HOSTNAME, BLOCK, RACK),
        "spec.levels",
        HOSTNAME_RULE,
        "cel",
    ),
    "duplicate-levels": (
        lambda: topology(BLOCK, BLOCK, HOSTNAME),
        "spec.levels",
        UNIQUE_RULE,
        "cel",
    ),
    "17-levels": (lambda: _levels(17), "spec.levels", "maxItems: 16", "schema"),
    "no-levels": (
        lambda: topology() | {"spec": {"levels": []}},
        "spec.levels",
        "minItems: 1",
        "schema",
    ),
    "level-label-not-a-label": (
        lambda: topology("Not A Label", HOSTNAME),
        "spec.levels[0].nodeLabel",
        pattern(
            r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        ),
        "schema",
    ),
    "topology-without-spec-levels": (
        lambda: _without(topology(), "spec.levels"),
        "spec.levels",
        "required",
        "schema",
    ),
    "topology-unknown-spec-field": (
        lambda: _with(topology(), "spec.colour", "blue"),
        "spec.colour",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "topology-unknown-level-field": (
        lambda: _with(topology(), "spec.levels.0.weight", 3),
        "spec.levels[0].weight",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "topology-unknown-top-level-field": (
        lambda: _with(topology(), "status", {}),
        "status",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "level-label-wrong-type": (
        lambda: _with(topology(), "spec.levels.0.nodeLabel", 5),
        "spec.levels[0].nodeLabel",
        'type: "string"',
        "schema",
    ),
    "levels-wrong-type": (
        lambda: _with(topology(), "spec.levels", {"nodeLabel": HOSTNAME}),
        "spec.levels",
        'type: "array"',
        "schema",
    ),
    "flavor-topology-without-node-labels": (
        lambda: _without(resource_flavor(), "spec.nodeLabels"),
        "spec",
        RF_TOPOLOGY_RULE,
        "cel",
    ),
    "flavor-topology-with-empty-node-labels": (
        lambda: resource_flavor(nodeLabels={}),
        "spec",
        RF_TOPOLOGY_RULE,
        "cel",
    ),
    "flavor-too-many-node-labels": (
        lambda: resource_flavor(nodeLabels={f"k{i}": "v" for i in range(9)}),
        "spec.nodeLabels",
        "maxProperties: 8",
        "schema",
    ),
    "flavor-node-label-value-not-string": (
        lambda: resource_flavor(nodeLabels={"gpu": 8}),
        "spec.nodeLabels[gpu]",
        'type: "string"',
        "schema",
    ),
    "flavor-bad-topology-name": (
        lambda: resource_flavor(topologyName="Gpu_Fabric"),
        "spec.topologyName",
        pattern(crds.DNS1123_SUBDOMAIN),
        "schema",
    ),
    "flavor-bad-taint-effect": (
        lambda: resource_flavor(nodeTaints=[{"key": "gpu", "effect": "Sometimes"}]),
        "spec.nodeTaints",
        "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "cel",
    ),
    "queue-65-flavors": (
        lambda: cluster_queue([flavor(f"f{i}", "cpu", "nvidia.com/gpu") for i in range(65)]),
        "spec.resourceGroups[0].flavors",
        "maxItems: 64",
        "schema",
    ),
    "queue-flavor-resources-mismatch": (
        lambda: cluster_queue([flavor("h100", "cpu", "nvidia.com/gpu"), flavor("a100", "cpu")]),
        "spec.resourceGroups[0]",
        CQ_COVERED_RULE,
        "cel",
    ),
    "queue-duplicate-flavor-names": (
        lambda: cluster_queue([flavor("h100", "cpu", "nvidia.com/gpu")] * 2),
        "spec.resourceGroups[0].flavors[1]",
        'x-kubernetes-list-type: "map"',
        "list-type",
    ),
    "queue-duplicate-resource-names": (
        lambda: cluster_queue([flavor("h100", "cpu", "cpu")]),
        "spec.resourceGroups[0].flavors[0].resources[1]",
        'x-kubernetes-list-type: "map"',
        "list-type",
    ),
    "queue-quota-not-a-quantity": (
        lambda: _with(cluster_queue(), "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota", "8 GPUs"),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        pattern(
            r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
            r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
        ),
        "schema",
    ),
    "queue-quota-wrong-type": (
        lambda: _with(cluster_queue(), "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota", True),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        'type: ["integer", "string"]',
        "schema",
    ),
    "queue-missing-quota": (
        lambda: _without(cluster_queue(), "spec.resourceGroups.0.flavors.0.resources.0.nominalQuota"),
        "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
        "required",
        "schema",
    ),
    "queue-bad-enum": (
        lambda: cluster_queue(queueingStrategy="FIFO"),
        "spec.queueingStrategy",
        "enum",
        "schema",
    ),
    "queue-preference-needs-try-next": (
        lambda: cluster_queue(flavorFungibility={"preference": "BorrowingOverPreemption"}),
        "spec.flavorFungibility",
        CQ_PREFERENCE_RULE,
        "cel",
    ),
    "queue-borrow-within-cohort-needs-reclaim": (
        lambda: cluster_queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}}),
        "spec.preemption",
        CQ_RECLAIM_RULE,
        "cel",
    ),
    "node-feature-label-not-string": (
        lambda: node_feature(labels={BLOCK: 1}),
        f"spec.labels[{BLOCK}]",
        'type: "string"',
        "schema",
    ),
    "node-feature-without-spec": (
        lambda: _without(node_feature(), "spec"),
        "spec",
        "required",
        "schema",
    ),
    "node-feature-unknown-field": (
        lambda: node_feature(taints=[]),
        "spec.taints",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "node-feature-flag-element-not-empty": (
        lambda: node_feature(features={"flags": {"f": {"elements": {"x": {"value": 1}}}}}),
        "spec.features.flags[f].elements[x].value",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "metadata-name-not-dns": (
        lambda: _with(topology(), "metadata.name", "GPU_Fabric"),
        "metadata.name",
        pattern(crds.DNS1123_SUBDOMAIN),
        "schema",
    ),
    "metadata-without-name": (
        lambda: _with(topology(), "metadata", {}),
        "metadata.name",
        "ObjectMeta",
        "metadata",
    ),
    "metadata-bad-label-key": (
        lambda: _with(topology(), "metadata.labels", {"-bad/key": "x"}),
        "metadata.labels[-bad/key]",
        "label keys are qualified names",
        "metadata",
    ),
    "metadata-bad-label-value": (
        lambda: _with(topology(), "metadata.labels", {"ok": "not ok"}),
        "metadata.labels[ok]",
        pattern(crds.LABEL_VALUE),
        "schema",
    ),
    "metadata-unknown-field": (
        lambda: _with(topology(), "metadata.tags", ["a"]),
        "metadata.tags",
        "unknown fields are rejected (fieldValidation=Strict)",
        "strict",
    ),
    "wrong-version": (
        lambda: topology() | {"apiVersion": "kueue.x-k8s.io/v1"},
        "apiVersion",
        "CRD lookup",
        "catalog",
    ),
    "wrong-kind": (
        lambda: topology() | {"kind": "Topologies"},
        "apiVersion",
        "CRD lookup",
        "catalog",
    ),
}


def _find(problems: list[Problem], path: str, rule: str, source: str) -> Problem | None:
    for problem in problems:
        same_rule = problem.rule == rule or (rule == "enum" and problem.rule.startswith("enum: "))
        if problem.path == path and same_rule and problem.source == source:
            return problem
    return None


@pytest.mark.parametrize(("make", "path", "rule", "source"), BAD.values(), ids=BAD.keys())
def test_known_bad_objects_are_rejected_for_the_right_reason(
    cat: Catalog, make: Callable[[], Obj], path: str, rule: str, source: str
) -> None:
    problems = cat.validate(make())
    found = _find(problems, path, rule, source)
    assert found is not None, "\n".join(map(str, problems)) or "accepted"
    assert found.message and str(found).startswith(path)


def test_cel_messages_come_from_the_crd(cat: Catalog) -> None:
    problems = cat.validate(topology(HOSTNAME, BLOCK, RACK))
    assert [p.message for p in problems] == [
        "Invalid value: the kubernetes.io/hostname label can only be used at the lowest level of topology"
    ]
    [empty] = cat.validate(resource_flavor(nodeLabels={}))
    assert empty.message == "Invalid value: at least one nodeLabel is required when topology is set"


def test_cel_is_skipped_after_a_blocking_schema_error(cat: Catalog) -> None:
    """Like the API server: a type/maxItems/... error means the CEL rules are not run."""
    problems = cat.validate(_with(topology(HOSTNAME, BLOCK, BLOCK), "spec.levels.0.nodeLabel", 7))
    assert {p.source for p in problems} == {"schema", "cel"}
    assert [p.rule for p in problems if p.source == "cel"] == ["x-kubernetes-validations"]
    # Unknown fields do not block CEL: the rule still runs on the pruned object.
    problems = cat.validate(_with(topology(HOSTNAME, BLOCK), "spec.levels.0.extra", 1))
    assert sorted(p.rule for p in problems) == sorted(
        [HOSTNAME_RULE, "unknown fields are rejected (fieldValidation=Strict)"]
    )


# ----------------------------------------------------------------------------------------------
# Updates: transition rules
# ----------------------------------------------------------------------------------------------


def test_flavor_topology_name_is_immutable(cat: Catalog) -> None:
    old = resource_flavor()
    new = resource_flavor(topologyName="other-fabric")
    assert cat.validate(new) == [], "a transition rule must not run on create"
    assert cat.validate(new, old=old) != []
    assert _find(cat.validate(new, old=old), "spec", RF_TOPOLOGY_IMMUTABLE, "cel") is not None
    assert cat.validate(copy.deepcopy(old), old=old) == []


def test_flavor_node_labels_are_immutable_once_topology_is_set(cat: Catalog) -> None:
    old = resource_flavor()
    new = resource_flavor(nodeLabels={"node.kubernetes.io/instance-type": "b200"})
    assert _find(cat.validate(new, old=old), "spec", RF_LABELS_IMMUTABLE, "cel") is not None
    untopologied = _without(old, "spec.topologyName")
    assert cat.validate(_without(new, "spec.topologyName"), old=untopologied) == []


def test_topology_levels_are_immutable(cat: Catalog) -> None:
    old = topology()
    problems = cat.validate(topology(RACK, HOSTNAME), old=old)
    assert [(p.path, p.rule, p.message) for p in problems] == [
        ("spec.levels", "self == oldSelf", "Invalid value: field is immutable")
    ]


# ----------------------------------------------------------------------------------------------
# The two Kueue releases differ, and the CRDs come from upstream
# ----------------------------------------------------------------------------------------------


def test_each_release_is_checked_against_its_own_crds() -> None:
    """concurrentAdmissionPolicy exists in v0.19.2's ClusterQueue, not in v0.17.0's."""
    obj = cluster_queue(concurrentAdmissionPolicy={"migration": {"mode": "RetainFirstAdmission"}})
    assert crds.catalog("v0.19.2").validate(obj) == []
    [problem] = crds.catalog("v0.17.0").validate(obj)
    assert (problem.path, problem.source) == ("spec.concurrentAdmissionPolicy", "strict")


@pytest.mark.parametrize("version", crds.KUEUE_VERSIONS)
def test_crds_come_from_the_upstream_go_modules(version: str) -> None:
    kueue = crds.kueue_crd_paths(version)
    nfd = crds.nfd_crd_paths(crds.NFD_VERSION)
    names = {p.name for p in kueue}
    assert {"kueue.x-k8s.io_topologies.yaml", "kueue.x-k8s.io_clusterqueues.yaml"} <= names
    for path in [*kueue, *nfd]:
        assert "/work/shared" not in str(path)
        assert path.is_relative_to(crds.go_module_dir(crds.KUEUE_MODULE, version).parent)
    assert kueue[0].parents[4].name == f"kueue@{version}"
    assert nfd[0].parents[3].name == f"node-feature-discovery@{crds.NFD_VERSION}"


def test_missing_go_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(crds.CRDSourceError, match="`go` is not on PATH"):
        crds.go_module_dir.__wrapped__(crds.KUEUE_MODULE, "v0.19.2")


def test_failing_go_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho 'module lookup disabled' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(crds.CRDSourceError, match=r"exit 1.*module lookup disabled"):
        crds.go_module_dir.__wrapped__(crds.KUEUE_MODULE, "v0.19.2")


# ----------------------------------------------------------------------------------------------
# The schema conversion and CEL evaluation, on a CRD made for the purpose
# ----------------------------------------------------------------------------------------------

WIDGET_SPEC: Obj = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "format": "int32", "minimum": 0, "exclusiveMinimum": True},
        "size": {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": "^[0-9]+Gi$",
            "x-kubernetes-int-or-string": True,
        },
        "note": {"type": "string", "nullable": True},
        "mode": {"type": "string", "enum": ["A", "B"], "default": "A"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "dash-name": {"type": "string"},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(p, p.port > 0)",
                    "messageExpression": "'ports must be positive, got ' + string(size(self))",
                }
            ],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [
                    {"rule": "self.port == oldSelf.port", "message": "port is immutable"}
                ],
            },
        },
    },
    "x-kubernetes-validations": [
        {"rule": "self.mode == 'A' || has(self.note)", "message": "B needs a note"},
        {
            "rule": "!has(self.dash__dash__name) || self.dash__dash__name.lowerAscii() != 'x'",
            "fieldPath": ".dash-name",
        },
    ],
}


def widget_crd(spec: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                            },
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def widget() -> CrdVersion:
    crd = widget_crd(WIDGET_SPEC)
    return CrdVersion(crd, crd["spec"]["versions"][0])


def widget_obj(**spec: Any) -> Obj:
    body = {
        "count": 1,
        "size": "5Gi",
        "when": "2026-11-30T01:02:03Z",
        "tags": ["a", "b"],
        "extra": {"anything": {"goes": [1, 2]}},
        "dash-name": "y",
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
    }
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": body | spec,
    }


WIDGET_GOOD: dict[str, Obj] = {
    "full": widget_obj(),
    "int-size": widget_obj(size=5),
    "mode-null-is-defaulted": widget_obj(mode=None),
    "mode-b-with-note": widget_obj(mode="B", note="why"),
    "nullable-null": widget_obj(note=None),
    "max-int32": widget_obj(count=2**31 - 1),
    "date-time-with-offset": widget_obj(when="2026-11-30T01:02:03.5+01:00"),
}


@pytest.mark.parametrize("obj", WIDGET_GOOD.values(), ids=WIDGET_GOOD.keys())
def test_widget_accepted(widget: CrdVersion, obj: Obj) -> None:
    assert widget.validate(obj) == []


WIDGET_BAD: dict[str, tuple[Obj, str, str]] = {
    "exclusive-minimum": (widget_obj(count=0), "spec.count", "exclusiveMinimum: 0"),
    "int32-overflow": (widget_obj(count=2**31), "spec.count", 'format: "int32"'),
    "size-pattern": (widget_obj(size="5G"), "spec.size", 'pattern: "^[0-9]+Gi$"'),
    "size-type": (widget_obj(size=5.5), "spec.size", 'type: ["integer", "string"]'),
    "enum": (widget_obj(mode="C"), "spec.mode", 'enum: ["A", "B"]'),
    "date-time": (widget_obj(when="yesterday"), "spec.when", 'format: "date-time"'),
    "date-time-no-such-day": (
        widget_obj(when="2026-02-30T00:00:00Z"),
        "spec.when",
        'format: "date-time"',
    ),
    "duplicate-set-item": (
        widget_obj(tags=["a", "a"]),
        "spec.tags[1]",
        'x-kubernetes-list-type: "set"',
    ),
    "duplicate-map-key": (
        widget_obj(ports=[{"name": "a", "port": 1}, {"name": "a", "port": 2}]),
        "spec.ports[1]",
        'x-kubernetes-list-type: "map"',
    ),
    "null-in-non-nullable-list": (widget_obj(tags=[None]), "spec.tags[0]", 'type: "string"'),
    "cel-on-list": (
        widget_obj(ports=[{"name": "a", "port": 0}]),
        "spec.ports",
        "self.all(p, p.port > 0)",
    ),
    "cel-root-with-default": (widget_obj(mode="B"), "spec", "self.mode == 'A' || has(self.note)"),
    "cel-escaped-name-and-field-path": (
        widget_obj(**{"dash-name": "X"}),
        "spec.dash-name",
        "!has(self.dash__dash__name) || self.dash__dash__name.lowerAscii() != 'x'",
    ),
}


@pytest.mark.parametrize(("obj", "path", "rule"), WIDGET_BAD.values(), ids=WIDGET_BAD.keys())
def test_widget_rejected(widget: CrdVersion, obj: Obj, path: str, rule: str) -> None:
    problems = widget.validate(obj)
    assert any(p.path == path and p.rule == rule for p in problems), problems


def test_message_expression_and_default_message(widget: CrdVersion) -> None:
    [bad_port] = widget.validate(widget_obj(ports=[{"name": "a", "port": -1}]))
    assert bad_port.message == "Invalid value: ports must be positive, got 1"
    [dash] = widget.validate(widget_obj(**{"dash-name": "x"}))
    assert dash.message.startswith("Invalid value: failed rule: !has(self.dash__dash__name)")


def test_transition_rules_correlate_list_map_items_by_key(widget: CrdVersion) -> None:
    old = widget_obj(ports=[{"name": "a", "port": 1}, {"name": "b", "port": 2}])
    moved = widget_obj(ports=[{"name": "b", "port": 2}, {"name": "a", "port": 1}])
    assert widget.validate(moved, old=old) == []
    changed = widget_obj(ports=[{"name": "b", "port": 3}, {"name": "c", "port": 9}])
    problems = widget.validate(changed, old=old)
    assert [(p.path, p.message) for p in problems] == [("spec.ports[0]", "Invalid value: port is immutable")]


def test_root_rules_see_only_name_and_generate_name_of_metadata() -> None:
    crd = widget_crd(WIDGET_SPEC)
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["x-kubernetes-validations"] = [
        {
            "rule": "self.metadata.name.startsWith('w') && !has(self.metadata.labels)",
            "reason": "FieldValueForbidden",
            "message": "w only",
        }
    ]
    version = CrdVersion(crd, crd["spec"]["versions"][0])
    assert version.validate(_with(widget_obj(), "metadata.labels", {"a": "b"})) == []
    [problem] = version.validate(_with(widget_obj(), "metadata.name", "x"))
    assert (problem.path, problem.message) == ("", "Forbidden: w only")


def test_a_rule_that_cannot_be_evaluated_fails_loudly() -> None:
    for rule in ("quantity(self.size).isGreaterThan(quantity('1'))", "self.url().getHost() == ''"):
        spec = copy.deepcopy(WIDGET_SPEC)
        spec["x-kubernetes-validations"] = [{"rule": rule}]
        crd = widget_crd(spec)
        with pytest.raises(crds.UnsupportedRuleError, match="cannot be checked faithfully"):
            CrdVersion(crd, crd["spec"]["versions"][0])
    with pytest.raises(crds.UnsupportedRuleError, match="does not parse"):
        crds.compile_cel("self.a ==")


def test_an_unchecked_format_fails_loudly() -> None:
    spec = copy.deepcopy(WIDGET_SPEC)
    spec["properties"]["url"] = {"type": "string", "format": "uri"}
    crd = widget_crd(spec)
    with pytest.raises(crds.UnsupportedRuleError, match="format 'uri'"):
        CrdVersion(crd, crd["spec"]["versions"][0])


def test_deprecated_versions_are_known(cat: Catalog) -> None:
    old = cat.crd_version("kueue.x-k8s.io/v1beta1", "Topology")
    new = cat.crd_version(KUEUE_API, "Topology")
    assert old is not None and old.deprecation == "This version is deprecated. Use v1beta2 instead."
    assert new is not None and new.deprecation is None
    assert cat.validate(topology() | {"apiVersion": "kueue.x-k8s.io/v1beta1"}) == []


def test_every_rule_of_the_checked_crds_compiles(cat: Catalog) -> None:
    """All CEL rules of the kinds tasgen writes compile, and use only supported functions."""
    for api_version, kind in [
        (KUEUE_API, "Topology"),
        (KUEUE_API, "ResourceFlavor"),
        (KUEUE_API, "ClusterQueue"),
        ("kueue.x-k8s.io/v1beta1", "ClusterQueue"),
        ("nfd.k8s-sigs.io/v1alpha1", "NodeFeature"),
    ]:
        assert cat.crd_version(api_version, kind) is not None, (api_version, kind)


# ----------------------------------------------------------------------------------------------
# assert_conforms, for property tests over generated output
# ----------------------------------------------------------------------------------------------


def test_assert_conforms_accepts_good_output_and_ignores_other_kinds() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "bogus": 1}}
    crds.assert_conforms([topology(), resource_flavor(), cluster_queue(), node_feature(), namespace])


def test_assert_conforms_names_the_object_and_release() -> None:
    with pytest.raises(AssertionError) as raised:
        crds.assert_conforms([topology(), topology(HOSTNAME, BLOCK)])
    text = str(raised.value)
    assert text.startswith("2 CRD conformance problem(s)")
    for version in crds.KUEUE_VERSIONS:
        assert f"Topology gpu-fabric ({KUEUE_API}) vs kueue {version}" in text
