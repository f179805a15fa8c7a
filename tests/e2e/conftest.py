"""Session fixtures of the end-to-end tests: a real control plane, the example fleet on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from tests.e2e import harness, kube
from tests.e2e.fleet import Fleet, Obj, load_fleet
from tests.gate.support import OWN_INSTALL_LABEL, Kueue

T = TypeVar("T")


@pytest.fixture(scope="session")
def fleet() -> Fleet:
    """The repository's example inventory and rendered output."""
    return load_fleet()


def _or_fail(step: Callable[[], T]) -> T:
    """Run a harness step; its ClusterError fails the test (never skips it: a skipped e2e
    suite looks like a green one), with the harness's message and no traceback."""
    try:
        return step()
    except harness.ClusterError as exc:
        failure = str(exc)
    pytest.fail(failure, pytrace=False)  # outside the except: no chained traceback


@pytest.fixture(scope="session")
def cluster_build() -> harness.Build:
    """The harness binaries, built once per pin (cached across runs)."""
    return _or_fail(harness.build)


@pytest.fixture(scope="session")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[harness.Cluster]:
    """etcd, kube-apiserver, Kueue and nfd-master on loopback, for the whole session."""
    yield from _running(cluster_build, tmp_path_factory.mktemp("cluster"), fleet.nfd_label_namespaces)


def _running(
    build: harness.Build,
    work: Path,
    label_namespaces: list[str],
    controllers: Sequence[str] = (),
    fair_sharing: bool = False,
) -> Iterator[harness.Cluster]:
    """A control plane for a fixture: started (a failure fails the test), yielded, stopped."""
    running = _or_fail(
        lambda: harness.start(build, work, label_namespaces, controllers, fair_sharing=fair_sharing)
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="session")
def api_client(cluster: harness.Cluster) -> Iterator[client.ApiClient]:
    """A `kubernetes` client for the cluster's admin user, built from its kubeconfig."""
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def dyn(api_client: client.ApiClient) -> DynamicClient:
    return DynamicClient(api_client)


@pytest.fixture(scope="session")
def fleet_nodes(api_client: client.ApiClient, fleet: Fleet) -> list[str]:
    """The NodeInventory's Nodes, created with their labels and reported Ready."""
    core = client.CoreV1Api(api_client)
    for node in fleet.nodes:
        kube.create_ready_node(core, node)
    return [node.name for node in fleet.nodes]


@pytest.fixture(scope="session")
def applied(dyn: DynamicClient, fleet: Fleet, fleet_nodes: list[str]) -> list[tuple[Obj, Obj | ApiException]]:
    """Every rendered object server-side applied in sync-wave order onto a cluster whose
    Nodes already exist (as in a real one): each object with the server's answer or error.

    NFD's installation owns the NodeFeature namespace, so it is created first, as NFD's
    deployment manifests would; the teams' namespaces of the LocalQueues exist before the sync
    too (tasgen does not create them), labelled as their ClusterQueue selects them."""
    core = client.CoreV1Api(dyn.client)
    kube.ensure_namespace(core, fleet.node_feature_namespace)
    for namespace, labels in sorted(fleet.local_queue_namespaces().items()):
        kube.ensure_namespace(core, namespace, labels=labels or None)
    results: list[tuple[Obj, Obj | ApiException]] = []
    for obj in fleet.rendered:
        try:
            results.append((obj, kube.apply(dyn, _beside_test_gates(obj))))
        except ApiException as exc:
            results.append((obj, exc))
    return results


@pytest.fixture(scope="session")
def synced(applied: list[tuple[Obj, Obj | ApiException]]) -> None:
    """For tests that build on a complete sync: fail early if any object was rejected."""
    rejected = [describe(obj) for obj, answer in applied if isinstance(answer, ApiException)]
    if rejected:
        pytest.fail(f"rendered objects were rejected: {rejected}", pytrace=False)


def _beside_test_gates(obj: Obj) -> Obj:
    """The example's gate policy binding, kept off the queues of the tests' own gate installs
    (tests/gate/support.py, OWN_INSTALL_LABEL); every other object as rendered."""
    if obj["kind"] != "ValidatingAdmissionPolicyBinding":
        return obj
    exclude = {"matchExpressions": [{"key": OWN_INSTALL_LABEL, "operator": "DoesNotExist"}]}
    return {**obj, "spec": {**obj["spec"], "matchResources": {"objectSelector": exclude}}}


def describe(obj: Obj) -> str:
    meta = obj["metadata"]
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj['kind']} {where}{meta['name']}"


@pytest.fixture(scope="module")
def job_cluster(
    tmp_path_factory: pytest.TempPathFactory, cluster_build: harness.Build, fleet: Fleet
) -> Iterator[harness.Cluster]:
    """A control plane of the module's own with kube-controller-manager's Job controllers
    (tests/e2e/kubelet.py plays the kubelet): for tests whose Jobs run and end."""
    work = tmp_path_factory.mktemp("job-cluster")
    yield from _running(cluster_build, work, fleet.nfd_label_namespaces, controllers=["job"])


@pytest.fixture(scope="module")
def api(job_cluster: harness.Cluster) -> Iterator[client.ApiClient]:
    """A client of the module's ``job_cluster``."""
    api = config.new_client_from_config(config_file=str(job_cluster.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def kueue(api_client: client.ApiClient) -> Iterator[Kueue]:
    """The Kueue objects of one test, removed after it."""
    k = Kueue(api_client)
    yield k
    k.close()
