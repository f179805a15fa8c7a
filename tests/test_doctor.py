"""tasgen doctor's decisions on plain data (generator/commands/doctor/checks.py): a small render
and a cluster written out as the API server would answer, one fault at a time. The real
control plane's answers are tested in tests/e2e/test_doctor.py."""

from __future__ import annotations

import copy
import http.server
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tasgen.commands.doctor import components
from tasgen.commands.doctor.checks import IN_USE_FINALIZER, Facts, engine_of, nfd_allows, run_checks
from tasgen.commands.doctor.expected import Ref, expected_of, read_render
from tasgen.commands.doctor.live import Live
from tasgen.commands.doctor.report import DoctorFinding
from tests.conftest import REPO, tasgen

KUEUE = "kueue.x-k8s.io/v1beta2"
ARGO = "argoproj.io/v1alpha1"
HEAD = "0123456789abcdef0123456789abcdef01234567"
HEALTH_KEY = "resource.customizations.health.kueue.x-k8s.io_ClusterQueue"


def _doc(api: str, kind: str, name: str, namespace: str | None = None, **rest: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": meta, **rest}


def _feature(node: str, labels: dict[str, str]) -> dict[str, Any]:
    doc = _doc("nfd.k8s-sigs.io/v1alpha1", "NodeFeature", f"tasgen.{node}", "node-feature-discovery")
    doc["metadata"]["labels"] = {"nfd.node.kubernetes.io/node-name": node}
    doc["spec"] = {"labels": labels}
    return doc


QUEUE_SPEC = {
    "resourceGroups": [
        {
            "coveredResources": ["cpu", "nvidia.com/gpu"],
            "flavors": [
                {
                    "name": "gpu",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "2000"},
                        {"name": "nvidia.com/gpu", "nominalQuota": 8},
                    ],
                }
            ],
        }
    ]
}
LABELS = {
    "gpu-1": {"topology.gpustack.ai/block": "b1", "infra.example.com/rack": "r1"},
    "gpu-2": {"topology.gpustack.ai/block": "b1", "infra.example.com/rack": "r2"},
}
RENDER: list[tuple[str, dict[str, Any]]] = [
    ("rendered/labels/nf.yaml", _feature(n, labels)) for n, labels in LABELS.items()
] + [
    ("rendered/kueue/t.yaml", _doc(KUEUE, "Topology", "topo", spec={"levels": []})),
    ("rendered/kueue/rf.yaml", _doc(KUEUE, "ResourceFlavor", "gpu", spec={"topologyName": "topo"})),
    ("rendered/queues/cq.yaml", _doc(KUEUE, "ClusterQueue", "training", spec=QUEUE_SPEC)),
    (
        "rendered/gate/p.yaml",
        _doc("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "tasgen-gate"),
    ),
    (
        "rendered/gate/b.yaml",
        _doc("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding", "tasgen-gate"),
    ),
    (
        "rendered/gate/cr.yaml",
        _doc(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "tasgen-gate",
            rules=[
                {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "update"]}
            ],
        ),
    ),
    ("rendered/gate/sa.yaml", _doc("v1", "ServiceAccount", "tasgen-gate", "tasgen-system")),
    (
        "rendered/argocd/appset.yaml",
        _doc(ARGO, "ApplicationSet", "tasgen", "argocd", spec={"strategy": {"type": "RollingSync"}}),
    ),
    (
        "rendered/argocd/cm.yaml",
        _doc("v1", "ConfigMap", "argocd-cm", "argocd", data={HEALTH_KEY: "return hs"}),
    ),
]
FEATURES = [
    Ref("NodeFeature", d["metadata"]["name"], d["metadata"]["namespace"], d["apiVersion"])
    for _, d in RENDER
    if d["kind"] == "NodeFeature"
]
SERVED = frozenset({"v1", KUEUE, "nfd.k8s-sigs.io/v1alpha1", ARGO, "admissionregistration.k8s.io/v1"})


def _node(name: str, labels: Mapping[str, str], ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def _clean_objects() -> dict[Ref, dict[str, Any] | None]:
    """Every rendered object of the kinds doctor reads, as the API server holds it after a
    sync: Kueue's finalizer on flavors and Topologies (TopologyAwareScheduling on)."""
    objects: dict[Ref, dict[str, Any] | None] = {}
    for _file, doc in RENDER:
        if doc["kind"] in ("NodeFeature", "ConfigMap"):
            continue
        live = copy.deepcopy(doc)
        if doc["kind"] in ("Topology", "ResourceFlavor"):
            live["metadata"]["finalizers"] = [IN_USE_FINALIZER]
        meta = doc["metadata"]
        objects[Ref(doc["kind"], meta["name"], meta.get("namespace"), doc["apiVersion"])] = live
    return objects


def _application(revision: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "tasgen-labels",
            "ownerReferences": [{"kind": "ApplicationSet", "name": "tasgen"}],
        },
        "status": {"sync": {"revision": revision, "status": "Synced"}},
    }


def _facts(**change: Any) -> Facts:
    expected = expected_of(RENDER, ["gpu-1", "gpu-2"])
    live = Live(
        server="https://127.0.0.1:6443",
        served=SERVED,
        objects=_clean_objects(),
        nodes={n: _node(n, labels) for n, labels in LABELS.items()},
        deployments=(),
        config_maps={
            ("argocd", "argocd-cm"): {HEALTH_KEY: "return hs"},
            ("argocd", "argocd-cmd-params-cm"): {"applicationsetcontroller.enable.progressive.syncs": "true"},
        },
        applications=(_application(HEAD),),
        node_features=frozenset(FEATURES),
    )
    fields = {k: v for k, v in change.items() if k in Live.__dataclass_fields__}
    return Facts(expected=expected, live=Live(**{**live.__dict__, **fields}), head=change.get("head", HEAD))


def _found(facts: Facts) -> list[tuple[str, str, str]]:
    return [(f.check, f.level, f.subject) for f in run_checks(facts)]


def _with(objects: Mapping[Ref, Any], kind: str, change: Any) -> dict[Ref, Any]:
    return {r: (change(copy.deepcopy(o)) if r.kind == kind else o) for r, o in objects.items()}


def test_a_clean_cluster_has_no_finding() -> None:
    facts = _facts()
    assert engine_of(facts) == "argocd"
    assert _found(facts) == []


def test_topologies_without_kueues_finalizer_mean_the_tas_gate_is_off() -> None:
    facts = _facts()

    def bare(o: dict[str, Any]) -> dict[str, Any]:
        o["metadata"]["finalizers"] = []
        return o

    assert _found(_facts(objects=_with(facts.live.objects, "Topology", bare))) == [
        ("kueue-tas", "error", "Topology topo")
    ]
    # nothing reconciled at all: Kueue is not running (not the gate)
    both = _with(_with(facts.live.objects, "Topology", bare), "ResourceFlavor", bare)
    assert _found(_facts(objects=both)) == [("kueue-running", "error", "ResourceFlavor gpu")]


def _kueue_deployment(args: list[str], image: str = "registry.k8s.io/kueue/kueue:v0.17.0") -> dict[str, Any]:
    return {
        "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "manager", "image": image, "args": args}],
                    "volumes": [{"name": "config", "configMap": {"name": "kueue-manager-config"}}],
                }
            }
        },
    }


@pytest.mark.parametrize(
    ("args", "config", "off"),
    [
        (["--feature-gates=TopologyAwareScheduling=false"], {}, True),
        (["--feature-gates", "VisibilityOnDemand=false,TopologyAwareScheduling=false"], {}, True),
        (
            ["--feature-gates=TopologyAwareScheduling=false", "--feature-gates=TopologyAwareScheduling=true"],
            {},
            False,
        ),
        (
            ["--config=/controller_manager_config.yaml"],
            {"c.yaml": "featureGates:\n  TopologyAwareScheduling: false\n"},
            True,
        ),
        (["--config=/controller_manager_config.yaml"], {"c.yaml": "featureGates: {}\n"}, False),
    ],
)
def test_the_tas_gate_as_kueues_deployment_sets_it(
    args: list[str], config: dict[str, str], off: bool
) -> None:
    maps = {("kueue-system", "kueue-manager-config"): config, **_facts().live.config_maps}
    facts = _facts(deployments=(_kueue_deployment(args),), config_maps=maps)
    found = _found(facts)
    expected = [("kueue-tas", "error", "Deployment kueue-system/kueue-controller-manager")] if off else []
    assert found == expected


def test_a_kueue_older_than_the_render_needs() -> None:
    old = _facts(deployments=(_kueue_deployment([], "registry.k8s.io/kueue/kueue:v0.16.2"),))
    assert _found(old) == [("kueue-version", "error", "Deployment kueue-system/kueue-controller-manager")]
    newer = _facts(deployments=(_kueue_deployment([], "registry.k8s.io/kueue/kueue:v0.19.2@sha256:ab"),))
    assert _found(newer) == []


def test_an_api_the_render_writes_that_the_server_does_not_serve() -> None:
    """One finding, not one per object that could not be read."""
    objects = {r: (None if r.group == "kueue.x-k8s.io" else o) for r, o in _facts().live.objects.items()}
    facts = _facts(served=SERVED - {KUEUE}, objects=objects)
    assert _found(facts) == [("kueue-api", "error", f"API {KUEUE}")]


@pytest.mark.parametrize(
    ("namespace", "extra", "deny", "allowed"),
    [
        ("topology.gpustack.ai", [], [], True),
        ("kubernetes.io", [], [], False),
        ("node.kubernetes.io", [], [], False),
        ("node.kubernetes.io", ["node.kubernetes.io"], [], True),
        ("feature.node.kubernetes.io", [], [], True),
        ("gpu.feature.node.kubernetes.io", [], [], True),
        ("profile.node.kubernetes.io", [], [], True),
        ("infra.example.com", [], ["infra.example.com"], False),
        ("infra.example.com", [], ["*.example.com"], False),
        ("example.com", [], ["*.example.com"], True),
        ("infra.example.com", ["infra.example.com"], ["*.example.com"], True),
    ],
)
def test_which_label_namespaces_nfd_master_allows(
    namespace: str, extra: list[str], deny: list[str], allowed: bool
) -> None:
    assert nfd_allows(namespace, extra, deny) is allowed


def _nfd_deployment(args: list[str]) -> dict[str, Any]:
    container = {
        "name": "nfd-master",
        "image": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0",
        "command": ["nfd-master"],
        "args": args,
    }
    return {
        "metadata": {"name": "nfd-master", "namespace": "node-feature-discovery"},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }


def test_nfd_masters_settings_refuse_a_namespace_of_the_render() -> None:
    facts = _facts(deployments=(_nfd_deployment(["-deny-label-ns=*.example.com"]),))
    found = run_checks(facts)
    assert [(f.check, f.subject) for f in found] == [
        ("nfd-label-namespace", "Deployment node-feature-discovery/nfd-master")
    ]
    assert "infra.example.com" in found[0].problem and "-extra-label-ns" in found[0].fix
    allowed = _facts(
        deployments=(_nfd_deployment(["-deny-label-ns=*.example.com", "-extra-label-ns=infra.example.com"]),)
    )
    assert _found(allowed) == []


def test_a_namespace_whose_labels_reach_no_node_is_one_finding_not_one_per_node() -> None:
    nodes = {
        n: _node(n, {k: v for k, v in labels.items() if not k.startswith("infra.")})
        for n, labels in LABELS.items()
    }
    found = run_checks(_facts(nodes=nodes))
    assert [(f.check, f.subject) for f in found] == [
        ("nfd-label-namespace", "label namespace infra.example.com")
    ]


def test_labels_of_a_nodefeature_not_synced_are_not_blamed_on_nfd_master() -> None:
    """gpu-2's NodeFeature is missing and no node has an infra.example.com label: the missing
    NodeFeature and the nodes' labels are reported, not a namespace nfd-master refuses."""
    nodes = {
        "gpu-1": _node("gpu-1", {k: v for k, v in LABELS["gpu-1"].items() if not k.startswith("infra.")}),
        "gpu-2": _node("gpu-2", {}),
    }
    found = _found(_facts(nodes=nodes, node_features=frozenset(FEATURES[:1])))
    assert found == [
        ("nodefeature-missing", "error", "NodeFeatures in node-feature-discovery"),
        ("node-labels", "error", "Node gpu-1"),
        ("node-labels", "error", "Node gpu-2"),
    ]


def test_no_label_at_all_means_nfd_master_does_not_project() -> None:
    nodes = {n: _node(n, {}) for n in LABELS}
    assert _found(_facts(nodes=nodes)) == [("nfd-running", "error", "NodeFeature labels")]


def test_nodefeatures_missing_or_left_over() -> None:
    leftover = Ref("NodeFeature", "tasgen.gpu-9", "node-feature-discovery", "nfd.k8s-sigs.io/v1alpha1")
    found = run_checks(_facts(node_features=frozenset([FEATURES[0], leftover])))
    assert [(f.check, f.level, f.subject) for f in found] == [
        ("nodefeature-missing", "error", "NodeFeatures in node-feature-discovery"),
        ("nodefeature-leftover", "warning", "NodeFeatures in node-feature-discovery"),
    ]
    assert f"1 NodeFeature(s) of the render are not in the cluster ({FEATURES[1].name})" in found[0].problem
    assert "tasgen.gpu-9" in found[1].problem


def test_nodes_missing_not_ready_or_without_their_labels() -> None:
    nodes = {
        "gpu-1": _node("gpu-1", {**LABELS["gpu-1"], "infra.example.com/rack": "r9"}, ready="False"),
    }
    found = run_checks(_facts(nodes=nodes))
    assert [(f.check, f.level, f.subject) for f in found] == [
        ("node-not-ready", "warning", "Node gpu-1"),
        ("node-labels", "error", "Node gpu-1"),
        ("node-missing", "error", "Node gpu-2"),
    ]
    labels = next(f for f in found if f.check == "node-labels")
    assert "infra.example.com/rack=r1" in labels.problem


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        ("ValidatingAdmissionPolicy", "admission-policy"),
        ("ValidatingAdmissionPolicyBinding", "admission-policy"),
        ("ClusterRole", "rbac"),
        ("ServiceAccount", "rbac"),
        ("ClusterQueue", "kueue-objects"),
    ],
)
def test_a_rendered_object_missing_from_the_cluster(kind: str, check: str) -> None:
    objects = {r: (None if r.kind == kind else o) for r, o in _facts().live.objects.items()}
    found = run_checks(_facts(objects=objects))
    assert [(f.check, f.level) for f in found] == [(check, "error")]
    assert found[0].subject.startswith(kind) and "rendered/" in found[0].fix


@pytest.mark.parametrize(
    ("rules", "same"),
    [
        (
            [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["update", "get"]}],
            True,
        ),
        (
            [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues"],
                    "verbs": ["get"],
                    "resourceNames": [],
                }
            ],
            False,
        ),
        ([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}], False),
        ([], False),
    ],
)
def test_a_role_granting_other_rules_than_the_render(rules: list[Any], same: bool) -> None:
    def edit(o: dict[str, Any]) -> dict[str, Any]:
        o["rules"] = rules
        return o

    found = _found(_facts(objects=_with(_facts().live.objects, "ClusterRole", edit)))
    assert found == ([] if same else [("rbac", "error", "ClusterRole tasgen-gate")])


@pytest.mark.parametrize(
    ("params", "args", "off"),
    [
        ({}, None, True),
        ({"applicationsetcontroller.enable.progressive.syncs": "false"}, None, True),
        ({"applicationsetcontroller.enable.progressive.syncs": "true"}, None, False),
        (
            {"applicationsetcontroller.enable.progressive.syncs": "true"},
            ["--enable-progressive-syncs=false"],
            True,
        ),
        ({}, ["--enable-progressive-syncs"], False),
    ],
)
def test_progressive_syncs(params: dict[str, str], args: list[str] | None, off: bool) -> None:
    maps = {**_facts().live.config_maps, ("argocd", "argocd-cmd-params-cm"): params}
    deployments: tuple[dict[str, Any], ...] = ()
    if args is not None:
        container = {
            "name": "c",
            "image": "quay.io/argoproj/argocd:v3.5.3",
            "args": ["/usr/local/bin/argocd-applicationset-controller", *args],
        }
        deployments = (
            {
                "metadata": {"name": "argocd-applicationset-controller", "namespace": "argocd"},
                "spec": {"template": {"spec": {"containers": [container]}}},
            },
        )
    found = _found(_facts(config_maps=maps, deployments=deployments))
    assert [c for c, _, _ in found] == (["argocd-progressive-syncs"] if off else [])


def test_health_checks_missing_or_different() -> None:
    missing = {**_facts().live.config_maps, ("argocd", "argocd-cm"): {}}
    assert _found(_facts(config_maps=missing)) == [("argocd-health", "error", "ConfigMap argocd/argocd-cm")]
    other = {**_facts().live.config_maps, ("argocd", "argocd-cm"): {HEALTH_KEY: "return other"}}
    assert _found(_facts(config_maps=other)) == [("argocd-health", "warning", "ConfigMap argocd/argocd-cm")]


def test_health_checks_for_the_queue_kinds_of_the_render_when_it_carries_no_argocd_cm() -> None:
    """Without argocd-cm in the render, the keys are Argo CD's for the Kueue queue kinds the
    render holds, and any Lua is accepted."""
    local_queue = _doc(KUEUE, "LocalQueue", "training", "ml", spec={"clusterQueue": "training"})
    render = [(f, d) for f, d in RENDER if d["kind"] != "ConfigMap"] + [
        ("rendered/queues/lq.yaml", local_queue)
    ]
    base = _facts()
    keys = {
        "resource.customizations.health.kueue.x-k8s.io_ClusterQueue",
        "resource.customizations.health.kueue.x-k8s.io_LocalQueue",
    }

    def found(argocd_cm: dict[str, str]) -> list[tuple[str, str, str]]:
        maps = {**base.live.config_maps, ("argocd", "argocd-cm"): argocd_cm}
        live = Live(**{**base.live.__dict__, "config_maps": maps})
        checked = run_checks(Facts(expected=expected_of(render, ["gpu-1", "gpu-2"]), live=live, head=HEAD))
        return [(f.check, f.level, f.problem) for f in checked]

    assert found(dict.fromkeys(keys, "hs = {} return hs")) == []
    missing = found({"resource.customizations.health.kueue.x-k8s.io_ClusterQueue": "return x"})
    assert [(c, lvl) for c, lvl, _ in missing] == [("argocd-health", "error")]
    assert "kueue.x-k8s.io_LocalQueue" in missing[0][2]


def test_the_engines_revision_against_head() -> None:
    behind = _facts(applications=(_application("fedcba9876543210fedcba9876543210fedcba98"),))
    assert _found(behind) == [("engine-revision", "warning", "Application argocd/tasgen-labels")]
    assert _found(_facts(applications=())) == [("engine-revision", "warning", "ApplicationSet argocd/tasgen")]
    assert _found(_facts(head=None, applications=(_application("x"),))) == []  # no repository: no comparison


def test_no_engine_wiring_in_the_cluster() -> None:
    objects = {r: (None if r.kind == "ApplicationSet" else o) for r, o in _facts().live.objects.items()}
    facts = _facts(objects=objects)
    assert engine_of(facts) is None
    assert _found(facts) == [("engine-wiring", "warning", "ApplicationSet argocd/tasgen")]
    # without Argo CD's API: synced some other way, nothing to say about an engine
    assert _found(_facts(objects=objects, served=SERVED - {ARGO})) == []


def test_quantities_kueue_stores_in_another_form() -> None:
    def stored(cpu: str) -> Any:
        def change(o: dict[str, Any]) -> dict[str, Any]:
            o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = cpu
            return o

        return change

    objects = _facts().live.objects
    canonical = run_checks(_facts(objects=_with(objects, "ClusterQueue", stored("2k"))))
    assert [(f.check, f.level, f.subject) for f in canonical] == [
        ("quantity-form", "warning", "ClusterQueue training gpu/cpu/nominalQuota")
    ]
    assert "'2000'" in canonical[0].problem and "'2k'" in canonical[0].problem
    drifted = _found(_facts(objects=_with(objects, "ClusterQueue", stored("3"))))
    assert drifted == [("queue-drift", "warning", "ClusterQueue training gpu/cpu/nominalQuota")]


def test_flux_kustomizations_their_readiness_and_revision() -> None:
    flux_api = "kustomize.toolkit.fluxcd.io/v1"
    kustomization = _doc(
        flux_api, "Kustomization", "tasgen-labels", "flux-system", spec={"healthCheckExprs": [{}]}
    )
    render = [(f, d) for f, d in RENDER if d["kind"] not in ("ApplicationSet", "ConfigMap")]
    render.append(("rendered/flux/labels.yaml", kustomization))
    expected = expected_of(render, ["gpu-1", "gpu-2"])
    ref = Ref("Kustomization", "tasgen-labels", "flux-system", flux_api)
    base = _facts()
    objects = {r: o for r, o in base.live.objects.items() if r.kind != "ApplicationSet"}

    def facts(live_kustomization: Any, deployments: tuple[Any, ...] = ()) -> Facts:
        live = Live(
            **{
                **base.live.__dict__,
                "served": SERVED | {flux_api},
                "objects": {**objects, ref: live_kustomization},
                "deployments": deployments,
            }
        )
        return Facts(expected=expected, live=live, head=HEAD)

    ready = {
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "lastAppliedRevision": f"main@sha1:{HEAD}",
        }
    }
    assert engine_of(facts(ready)) == "flux" and _found(facts(ready)) == []
    behind = {"status": {**ready["status"], "lastAppliedRevision": "main@sha1:fedcba98"}}
    assert _found(facts(behind)) == [
        ("engine-revision", "warning", "Kustomization flux-system/tasgen-labels")
    ]
    failing = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "message": "boom"}],
            "lastAppliedRevision": f"main@sha1:{HEAD}",
        }
    }
    assert _found(facts(failing)) == [("flux-ready", "warning", "Kustomization flux-system/tasgen-labels")]
    old = {
        "metadata": {"name": "kustomize-controller", "namespace": "flux-system"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "m", "image": "ghcr.io/fluxcd/kustomize-controller:v1.4.0"}]}
            }
        },
    }
    assert _found(facts(ready, (old,))) == [
        ("flux-version", "error", "Deployment flux-system/kustomize-controller")
    ]


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (["--a=1"], "1"),
        (["-a=1", "--a=2"], "2"),
        (["--a", "3"], "3"),
        (["--a"], "true"),
        (["--a", "--b"], "true"),
        (["--ab=1"], None),
    ],
)
def test_a_flag_as_gos_flag_packages_read_it(args: list[str], value: str | None) -> None:
    assert components.flag(args, "a") == value


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("v0.17.0", (0, 17, 0)),
        ("0.19.2-rc.1", (0, 19, 2)),
        ("v1.5", (1, 5, 0)),
        ("latest", None),
        (None, None),
    ],
)
def test_versions_of_image_tags(text: str | None, version: tuple[int, int, int] | None) -> None:
    assert components.version_tuple(text) == version


def test_the_example_render_is_read_whole() -> None:
    """Every object kind doctor compares, from the committed render (counted with grep-like
    reading of the files, not with doctor's reader); not rendered/flux/rbac.yaml, which an
    administrator applies (its ServiceAccount is checked as flux-service-account)."""
    expected = read_render(REPO / "rendered", ["x"])
    rendered = REPO / "rendered"
    texts = {p: p.read_text() for p in rendered.rglob("*.yaml") if p != rendered / "flux" / "rbac.yaml"}

    def count(kind: str) -> int:
        return sum(t.count(f"\nkind: {kind}\n") for t in texts.values())

    assert len(expected.topologies) == count("Topology")
    assert len(expected.flavors) == count("ResourceFlavor")
    assert len(expected.queues) == count("ClusterQueue")
    assert len(expected.policies) == count("ValidatingAdmissionPolicy") + count(
        "ValidatingAdmissionPolicyBinding"
    )
    assert sum(1 for _ in expected.node_labels) == len(
        {
            line.split(":", 1)[1].strip()
            for t in texts.values()
            for line in t.splitlines()
            if "nfd.node.kubernetes.io/node-name:" in line
        }
    )
    assert expected.application_set is not None and expected.rolling_sync
    assert len(expected.kustomizations) == sum(
        t.count("\nkind: Kustomization\n")
        for p, t in texts.items()
        if p.parent.name == "flux" and p.name != "kustomization.yaml"
    )


def test_an_unreachable_cluster_is_a_message_and_exit_1(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    run = tasgen(
        "doctor",
        "-i",
        str(REPO / "inventories"),
        "-o",
        str(REPO / "rendered"),
        "--kubeconfig",
        str(kubeconfig),
    )
    assert run.exit_code == 1
    assert "tasgen doctor: cannot reach the cluster of" in run.output and "Traceback" not in run.output


def test_a_server_that_is_no_api_server_is_a_message_and_exit_1(tmp_path: Path) -> None:
    """A web page where the API server should be (a proxy's login page, say), served on
    127.0.0.1."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html>sign in</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
            f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        )
        args = [
            "-i",
            str(REPO / "inventories"),
            "-o",
            str(REPO / "rendered"),
            "--kubeconfig",
            str(kubeconfig),
        ]
        run = tasgen("doctor", *args)
    finally:
        server.shutdown()
        server.server_close()
    assert run.exit_code == 1
    assert (
        "tasgen doctor: cannot read the cluster of" in run.output
        and "not an API server's answer" in run.output
    )
    assert "Traceback" not in run.output


def test_usage_errors(tmp_path: Path) -> None:
    run = tasgen("doctor", "-i", str(tmp_path / "none"))
    assert run.exit_code == 2 and run.output.splitlines()[-1] == (
        f"Error: Invalid value for '-i' / '--inventory': {tmp_path / 'none'} does not exist"
    )
    garbage = tmp_path / "kubeconfig"
    garbage.write_text("- not\n- a kubeconfig\n")
    run = tasgen(
        "doctor", "-i", str(REPO / "inventories"), "-o", str(REPO / "rendered"), "--kubeconfig", str(garbage)
    )
    assert run.exit_code == 2 and "not a kubeconfig" in run.output and "Traceback" not in run.output
    run = tasgen("doctor", "-i", str(REPO / "inventories"), "-o", str(tmp_path / "none"))
    assert run.exit_code == 2 and run.output.splitlines()[-1] == (
        f"Error: Invalid value for '-o' / '--output': {tmp_path / 'none'} does not exist: render first "
        f"(tasgen render -o {tmp_path / 'none'})"
    )


def test_findings_are_printed_with_where_and_fix() -> None:
    from tasgen.commands.doctor.formats import text  # noqa: PLC0415
    from tasgen.commands.doctor.report import DoctorReport, summary_of  # noqa: PLC0415

    findings = (DoctorFinding("node-missing", "error", "Node gpu-2", "absent", "join it"),)
    report = DoctorReport(1, "https://x", None, None, (), ("nodes",), findings, summary_of(findings))
    lines = text(report).splitlines()
    assert "error: Node gpu-2: absent [node-missing]" in lines and "  fix: join it" in lines
    assert lines[-1].startswith("1 check(s): 1 error(s), 0 warning(s)")


def test_doctor_explains_itself_with_an_example() -> None:
    run = tasgen("doctor", "--help")
    assert run.exit_code == 0 and "Example" in run.output and "Read-only" in run.output
