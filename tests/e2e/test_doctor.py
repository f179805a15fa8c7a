"""`tasgen doctor` on the real control plane: a cluster synced with the example render is
reported clean, and each of these is found, seeded one at a time: the admission policy
missing, Argo CD's progressive syncs off, a queue health check missing from argocd-cm, a
node of the inventory absent (on one control plane of this module), Kueue running with
TopologyAwareScheduling off, and nfd-master refusing a label namespace of the render (each
on a control plane of its own, whose Kueue or nfd-master binary is run with one more flag,
as a Deployment's arguments would set it)."""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tasgen.cli import cli
from tests.e2e import argocd, harness, kube
from tests.e2e.fleet import INVENTORY_DIR, RENDERED_DIR, Fleet

pytestmark = pytest.mark.cluster

IN_USE = "kueue.x-k8s.io/resource-in-use"
PROGRESSIVE = "applicationsetcontroller.enable.progressive.syncs"
#: the namespace of the admin label prefix of the example (inventories/config.yaml)
ADMIN_NS = "infra.example.com"
HEALTH = "resource.customizations.health."
READER = ("tasgen-doctor", "reader")  # namespace, ServiceAccount
HEALTH_KINDS = ("kueue.x-k8s.io_ClusterQueue", "kueue.x-k8s.io_LocalQueue")


@dataclass
class Env:
    cluster: harness.Cluster
    api: client.ApiClient
    dyn: DynamicClient


def _wrapped(build: harness.Build, work: Path, binary: str, extra: Sequence[str]) -> harness.Build:
    """The build with ``binary`` started with ``extra`` arguments after the harness's own (Go's
    flag packages keep the last value of a flag given twice)."""
    bin_dir = work / "bin"
    bin_dir.mkdir()
    for path in build.bin_dir.iterdir():
        (bin_dir / path.name).symlink_to(path)
    (bin_dir / binary).unlink()
    real = shlex.quote(str(build.bin_dir / binary))
    (bin_dir / binary).write_text(f'#!/bin/sh\nexec {real} "$@" {shlex.join(extra)}\n')
    (bin_dir / binary).chmod(0o755)
    return harness.Build(bin_dir=bin_dir, module_dirs=build.module_dirs)


def _labels_outside(fleet: Fleet, skip: str | None) -> dict[str, dict[str, str]]:
    """Node -> the rendered NodeFeature labels it must carry, but those of namespace ``skip``."""
    return {
        node: {k: v for k, v in labels.items() if skip is None or not k.startswith(f"{skip}/")}
        for node, labels in fleet.node_feature_labels().items()
    }


@contextlib.contextmanager
def _synced(
    build: harness.Build, work: Path, fleet: Fleet, *, tas: bool = True, unlabelled: str | None = None
) -> Iterator[Env]:
    """A control plane with the example's Nodes and every rendered object applied, once Kueue
    has reconciled the flavors (and the Topologies, when ``tas``) and nfd-master has labelled
    the Nodes (but for the namespace ``unlabelled``, which is left out of the harness's
    -extra-label-ns)."""
    work.mkdir(exist_ok=True)
    allowed = [ns for ns in fleet.nfd_label_namespaces if ns != unlabelled]
    cluster = harness.start(build, work, allowed)
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        dyn = DynamicClient(api)
        core = client.CoreV1Api(api)
        kube.ensure_namespace(core, "node-feature-discovery")
        for namespace, labels in sorted(fleet.local_queue_namespaces().items()):
            kube.ensure_namespace(core, namespace, labels=labels or None)
        for node in fleet.nodes:
            kube.create_ready_node(core, node)
        for obj in fleet.rendered:
            kube.apply(dyn, obj)
        kinds = ["ResourceFlavor", *(["Topology"] if tas else [])]
        for kind in kinds:
            for obj in fleet.of_kind(kind):
                name = obj["metadata"]["name"]
                kube.wait_for(
                    f"Kueue's finalizer on {kind} {name}",
                    lambda k=kind, n=name: (
                        IN_USE in (kube.get(dyn, kube.KUEUE_API, k, n)["metadata"].get("finalizers") or [])
                    ),
                )
        for labelled, want in _labels_outside(fleet, unlabelled).items():
            kube.wait_for(
                f"nfd-master to label Node {labelled}", lambda n=labelled, w=want: _carries(core, n, w)
            )
        yield Env(cluster, api, dyn)
    finally:
        api.close()
        cluster.stop()


def _carries(core: client.CoreV1Api, node: str, want: Mapping[str, str]) -> bool:
    labels = core.read_node(node).to_dict()["metadata"]["labels"] or {}
    return all(labels.get(k) == v for k, v in want.items())


def doctor(env: Env, kubeconfig: Path | None = None) -> tuple[int, dict[str, Any]]:
    """``tasgen doctor --format json`` against the environment (as its admin, unless another
    kubeconfig is given): exit code and report."""
    shown = str(kubeconfig or env.cluster.kubeconfig)
    args = ["doctor", "-i", str(INVENTORY_DIR), "-o", str(RENDERED_DIR), "--kubeconfig", shown]
    result = CliRunner().invoke(cli, [*args, "--format", "json"], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def _errors(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(f["check"], f["subject"]) for f in report["findings"] if f["level"] == "error"]


@pytest.fixture(scope="module")
def variants(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[dict[str, Future[Env]]]:
    """The two control planes of a changed binary (Kueue's TopologyAwareScheduling off,
    nfd-master denying the admin label namespace), started and synced in the background from
    the module's start on: their starts and syncs overlap with each other and with the tests on
    ``env``. A test takes its own with ``.result()`` (a failure to start raises there)."""
    kueue_work = tmp_path_factory.mktemp("doctor-tas-off")
    kueue = _wrapped(
        cluster_build,
        kueue_work,
        "kueue",
        ["--feature-gates=TopologyAwareScheduling=false,VisibilityOnDemand=false"],
    )
    nfd_work = tmp_path_factory.mktemp("doctor-nfd-denied")
    nfd = _wrapped(cluster_build, nfd_work, "nfd-master", [f"-deny-label-ns={ADMIN_NS}"])
    # an ExitStack each, as each is entered in a thread of its own
    with (
        contextlib.ExitStack() as tas_off,
        contextlib.ExitStack() as denied,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        started = {
            "tas-off": pool.submit(
                tas_off.enter_context, _synced(kueue, kueue_work / "work", fleet, tas=False)
            ),
            "nfd-denied": pool.submit(
                denied.enter_context, _synced(nfd, nfd_work / "work", fleet, unlabelled=ADMIN_NS)
            ),
        }
        yield started  # leaving the pool waits for a start still under way; the stacks stop both


@pytest.fixture(scope="module")
def env(
    tmp_path_factory: pytest.TempPathFactory,
    cluster_build: harness.Build,
    fleet: Fleet,
    variants: dict[str, Future[Env]],
) -> Iterator[Env]:
    """The module's control plane; asks for ``variants`` so that they start beside it."""
    yield from harness.entered(_synced(cluster_build, tmp_path_factory.mktemp("doctor"), fleet))


def test_a_synced_cluster_is_clean(env: Env) -> None:
    code, report = doctor(env)
    assert report["findings"] == [] and code == 0, report["findings"]
    assert report["engine"] is None  # no engine's API is installed: applied by hand
    assert report["summary"] == {"errors": 0, "warnings": 0}


def test_doctor_needs_only_get_and_list(env: Env, tmp_path: Path) -> None:
    """As a ServiceAccount allowed get and list on everything and nothing more, the report is
    the admin's: doctor neither writes nor watches (either would be refused)."""
    core, rbac = client.CoreV1Api(env.api), client.RbacAuthorizationV1Api(env.api)
    kube.ensure_namespace(core, READER[0])
    core.create_namespaced_service_account(READER[0], {"metadata": {"name": READER[1]}})
    rule = {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list"]}
    rbac.create_cluster_role({"metadata": {"name": "tasgen-doctor-reader"}, "rules": [rule]})
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tasgen-doctor-reader"}
    subject = {"kind": "ServiceAccount", "namespace": READER[0], "name": READER[1]}
    binding = {"metadata": {"name": "tasgen-doctor-reader"}, "roleRef": role, "subjects": [subject]}
    rbac.create_cluster_role_binding(binding)
    kubeconfig = _token_kubeconfig(env, tmp_path, READER[1])
    reader = config.new_client_from_config(config_file=str(kubeconfig))
    try:  # the premise: this identity cannot write
        with pytest.raises(ApiException) as refused:
            client.CoreV1Api(reader).create_namespace({"metadata": {"name": "tasgen-doctor-write"}})
        assert refused.value.status == 403
    finally:
        reader.close()
    code, report = doctor(env, kubeconfig)
    assert (code, report["findings"]) == (0, [])
    assert report == doctor(env)[1]


def test_an_identity_that_may_not_read_is_one_line_and_exit_1(env: Env, tmp_path: Path) -> None:
    """A ServiceAccount with no role: the API server's discovery answers, the first LIST is
    refused."""
    core = client.CoreV1Api(env.api)
    kube.ensure_namespace(core, READER[0])
    core.create_namespaced_service_account(READER[0], {"metadata": {"name": "nobody"}})
    kubeconfig = _token_kubeconfig(env, tmp_path, "nobody")
    args = ["doctor", "-i", str(INVENTORY_DIR), "-o", str(RENDERED_DIR), "--kubeconfig", str(kubeconfig)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 1 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"tasgen doctor: cannot read the cluster of {kubeconfig}: GET /api")
    assert line.endswith("was answered 403 Forbidden")


def _token_kubeconfig(env: Env, folder: Path, account: str) -> Path:
    """A kubeconfig of the environment's cluster that authenticates as the ServiceAccount
    ``account`` of READER's namespace (a token from the TokenRequest API)."""
    core = client.CoreV1Api(env.api)
    token = core.create_namespaced_service_account_token(
        account, READER[0], {"spec": {"expirationSeconds": 3600}}
    )
    cfg = env.api.configuration
    kubeconfig = folder / f"{account}.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "sa",
                "clusters": [
                    {"name": "c", "cluster": {"server": cfg.host, "certificate-authority": cfg.ssl_ca_cert}}
                ],
                "users": [{"name": "sa", "user": {"token": token.status.token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
            }
        )
    )
    return kubeconfig


def _deployment(namespace: str, name: str, container: dict[str, Any], config_map: str) -> dict[str, Any]:
    """A Deployment as a controller's manifests write it: with no Deployment controller here,
    an object only, which is all doctor reads of it."""
    labels = {"app": name}
    volume = {"name": "config", "configMap": {"name": config_map}}
    spec = {"containers": [{**container, "name": "manager"}], "volumes": [volume]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def test_the_controllers_deployments_versions_and_settings(env: Env) -> None:
    """Kueue's and nfd-master's Deployments and the configuration files they mount are read:
    an old Kueue, then its gate off in its configuration, then nfd-master's configuration
    denying a namespace of the render, one at a time."""
    core, apps = client.CoreV1Api(env.api), client.AppsV1Api(env.api)
    kube.ensure_namespace(core, "kueue-system")
    kube.ensure_namespace(core, "node-feature-discovery")
    kueue_config = {
        "metadata": {"name": "kueue-manager-config"},
        "data": {"controller_manager_config.yaml": "{}"},
    }
    core.create_namespaced_config_map("kueue-system", kueue_config)
    manager = {
        "image": "registry.k8s.io/kueue/kueue:v0.16.2",
        "args": ["--config=/controller_manager_config.yaml"],
    }
    kueue_deployment = _deployment(
        "kueue-system", "kueue-controller-manager", manager, "kueue-manager-config"
    )
    apps.create_namespaced_deployment("kueue-system", kueue_deployment)
    nfd_config = {"metadata": {"name": "nfd-master-conf"}, "data": {"nfd-master.conf": "extraLabelNs: []\n"}}
    core.create_namespaced_config_map("node-feature-discovery", nfd_config)
    master = {"image": "registry.k8s.io/nfd/node-feature-discovery:v0.19.0", "command": ["nfd-master"]}
    apps.create_namespaced_deployment(
        "node-feature-discovery",
        _deployment("node-feature-discovery", "nfd-master", master, "nfd-master-conf"),
    )
    kueue_at = "Deployment kueue-system/kueue-controller-manager"
    try:
        code, report = doctor(env)
        assert code == 1 and _errors(report) == [("kueue-version", kueue_at)]
        assert report["components"] == [
            {"name": "kueue", "version": "v0.16.2", "deployment": "kueue-system/kueue-controller-manager"},
            {"name": "nfd-master", "version": "v0.19.0", "deployment": "node-feature-discovery/nfd-master"},
        ]
        newer = {"name": "manager", "image": "registry.k8s.io/kueue/kueue:v0.17.0"}
        patch = {"spec": {"template": {"spec": {"containers": [newer]}}}}
        apps.patch_namespaced_deployment("kueue-controller-manager", "kueue-system", patch)
        gate_off = "featureGates:\n  TopologyAwareScheduling: false\n"
        core.patch_namespaced_config_map(
            "kueue-manager-config", "kueue-system", {"data": {"controller_manager_config.yaml": gate_off}}
        )
        code, report = doctor(env)
        assert code == 1 and _errors(report) == [("kueue-tas", kueue_at)]
        core.patch_namespaced_config_map(
            "kueue-manager-config", "kueue-system", {"data": {"controller_manager_config.yaml": "{}"}}
        )
        denied = f"denyLabelNs: [{ADMIN_NS}]\n"
        core.patch_namespaced_config_map(
            "nfd-master-conf", "node-feature-discovery", {"data": {"nfd-master.conf": denied}}
        )
        code, report = doctor(env)
        assert code == 1 and _errors(report) == [
            ("nfd-label-namespace", "Deployment node-feature-discovery/nfd-master")
        ]
        assert ADMIN_NS in report["findings"][0]["problem"]
    finally:
        apps.delete_namespaced_deployment("kueue-controller-manager", "kueue-system")
        apps.delete_namespaced_deployment("nfd-master", "node-feature-discovery")
    assert doctor(env)[1]["findings"] == []


def test_the_gates_role_changed(env: Env, fleet: Fleet) -> None:
    role = fleet.of_kind("ClusterRole")[0]
    name = role["metadata"]["name"]
    rbac = client.RbacAuthorizationV1Api(env.api)
    rbac.patch_cluster_role(name, {"rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})
    try:
        code, report = doctor(env)
        assert code == 1 and _errors(report) == [("rbac", f"ClusterRole {name}")]
    finally:
        rbac.patch_cluster_role(name, {"rules": role["rules"]})
    assert doctor(env)[1]["findings"] == []


def test_a_nodefeature_the_render_no_longer_holds(env: Env, fleet: Fleet) -> None:
    """Left behind on purpose by the engines (they never delete NodeFeatures): a warning."""
    kept = fleet.of_kind("NodeFeature")[0]
    name = f"{kept['metadata']['name']}-old"
    leftover = {**kept, "metadata": {**kept["metadata"], "name": name}}
    kube.apply(env.dyn, leftover)
    try:
        code, report = doctor(env)
        found = [(f["check"], f["level"]) for f in report["findings"]]
        assert code == 0 and found == [("nodefeature-leftover", "warning")]
        assert name in report["findings"][0]["problem"]
    finally:
        env.dyn.resources.get(api_version=kept["apiVersion"], kind="NodeFeature").delete(
            name=name, namespace=kept["metadata"]["namespace"]
        )


def test_the_admission_policy_missing(env: Env, fleet: Fleet) -> None:
    policy = fleet.of_kind("ValidatingAdmissionPolicy")[0]
    name = policy["metadata"]["name"]
    client.AdmissionregistrationV1Api(env.api).delete_validating_admission_policy(name)
    try:
        code, report = doctor(env)
        assert code == 1
        assert _errors(report) == [("admission-policy", f"ValidatingAdmissionPolicy {name}")]
    finally:
        kube.apply(env.dyn, policy)
    code, report = doctor(env)
    assert (code, report["findings"]) == (0, [])


def test_progressive_syncs_off(env: Env) -> None:
    """Argo CD's API and configuration as its installation leaves them, and the render's
    ApplicationSet (RollingSync) and AppProject applied: no controller runs, so its Applications
    are never generated (a warning); the applicationset controller's setting is read."""
    argocd.install(env.dyn)
    for path in sorted((RENDERED_DIR / "argocd").glob("*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if obj and path.name != "kustomization.yaml":
                kube.apply(env.dyn, obj)
    core = client.CoreV1Api(env.api)
    # the health checks of the queue kinds, as tasgen init's bootstrap adds them (any Lua will do)
    checks = {f"{HEALTH}{kind}": 'hs = {status = "Healthy"}\nreturn hs' for kind in HEALTH_KINDS}
    core.patch_namespaced_config_map("argocd-cm", argocd.NAMESPACE, {"data": checks})
    subject = ("argocd-progressive-syncs", f"ConfigMap {argocd.NAMESPACE}/argocd-cmd-params-cm")
    for value in ("false", None):
        core.patch_namespaced_config_map(
            "argocd-cmd-params-cm", argocd.NAMESPACE, {"data": {PROGRESSIVE: value}}
        )
        code, report = doctor(env)
        assert report["engine"] == "argocd"
        assert code == 1 and _errors(report) == [subject], (value, report["findings"])
    core.patch_namespaced_config_map(
        "argocd-cmd-params-cm", argocd.NAMESPACE, {"data": {PROGRESSIVE: "true"}}
    )
    code, report = doctor(env)
    assert code == 0 and _errors(report) == []
    # what remains is the warning that no controller generated the Applications
    assert [(f["check"], f["level"]) for f in report["findings"]] == [("engine-revision", "warning")]


def test_argocd_without_a_queue_health_check(env: Env) -> None:
    """After test_progressive_syncs_off: Argo CD installed, configured as tasgen needs."""
    core = client.CoreV1Api(env.api)
    dropped = f"{HEALTH}{HEALTH_KINDS[1]}"
    kept = core.read_namespaced_config_map("argocd-cm", argocd.NAMESPACE).data[dropped]
    core.patch_namespaced_config_map("argocd-cm", argocd.NAMESPACE, {"data": {dropped: None}})
    try:
        code, report = doctor(env)
        assert code == 1 and _errors(report) == [("argocd-health", f"ConfigMap {argocd.NAMESPACE}/argocd-cm")]
        assert HEALTH_KINDS[1] in report["findings"][0]["problem"]
    finally:
        core.patch_namespaced_config_map("argocd-cm", argocd.NAMESPACE, {"data": {dropped: kept}})


def test_a_node_of_the_inventory_absent(env: Env, fleet: Fleet) -> None:
    gone = fleet.nodes[0].name
    client.CoreV1Api(env.api).delete_node(gone)
    kube.wait_for(f"Node {gone} deleted", lambda: gone not in _node_names(env))
    code, report = doctor(env)
    assert code == 1 and _errors(report) == [("node-missing", f"Node {gone}")]


def _node_names(env: Env) -> set[str]:
    return {n.metadata.name for n in client.CoreV1Api(env.api).list_node().items}


def test_kueue_with_topology_aware_scheduling_off(variants: dict[str, Future[Env]], fleet: Fleet) -> None:
    code, report = doctor(variants["tas-off"].result())
    topologies = [t["metadata"]["name"] for t in fleet.of_kind("Topology")]
    assert code == 1 and _errors(report) == [("kueue-tas", f"Topology {topologies[0]}")]
    finding = report["findings"][0]
    assert (
        all(t in finding["problem"] for t in topologies) and "TopologyAwareScheduling=true" in finding["fix"]
    )


def test_an_nfd_label_namespace_not_allowed(variants: dict[str, Future[Env]], fleet: Fleet) -> None:
    """nfd-master v0.19 writes a namespace outside kubernetes.io unless -deny-label-ns names it
    (and -extra-label-ns does not allow it back): the admin prefix's namespace, denied."""
    assert any(
        k.startswith(f"{ADMIN_NS}/") for labels in fleet.node_feature_labels().values() for k in labels
    )
    code, report = doctor(variants["nfd-denied"].result())
    assert code == 1 and _errors(report) == [("nfd-label-namespace", f"label namespace {ADMIN_NS}")]
    assert "-extra-label-ns" in report["findings"][0]["fix"]
