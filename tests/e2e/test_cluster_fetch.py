"""`tasgen fetch` reads the webhook's Secret from a real API server when no --secrets-dir is
given (the endpoint is an HTTPS server on 127.0.0.1 with a CA made in the test)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.conftest import NOW, tasgen
from tests.e2e import harness
from tests.fetch.conftest import TOKEN, ca, inventory, point_source, serve, snapshot  # noqa: F401
from tests.fetch.endpoints import Authority
from tests.fetch.test_fetch import Serve, answer

pytestmark = pytest.mark.cluster


def _secret(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    try:
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="gpu-topology")))
    except ApiException as e:
        if e.status != 409:
            raise
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="inventory-token", namespace="gpu-topology"),
        data={"token": base64.b64encode(TOKEN.encode()).decode()},
    )
    try:
        core.create_namespaced_secret("gpu-topology", body)
    except ApiException as e:
        if e.status != 409:
            raise


def test_fetch_reads_the_bearer_token_from_the_cluster(
    cluster: harness.Cluster,
    api_client: client.ApiClient,
    serve: Serve,  # noqa: F811
    ca: Authority,  # noqa: F811
    inventory: Path,  # noqa: F811
) -> None:
    _secret(api_client)
    endpoint = serve(answer(snapshot("inv-cluster")))
    point_source(inventory, endpoint.url(), ca)
    run = tasgen("fetch", "-i", str(inventory), "--kubeconfig", str(cluster.kubeconfig), "--now", NOW)
    assert run.exit_code == 0, run.output
    assert "l40s-inventory: updated (revision inv-cluster)" in run.output
    assert endpoint.seen.requests[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in run.output


def test_a_secret_missing_from_the_cluster_fails_the_source(
    cluster: harness.Cluster,
    serve: Serve,  # noqa: F811
    ca: Authority,  # noqa: F811
    inventory: Path,  # noqa: F811
) -> None:
    endpoint = serve(answer(snapshot()))
    point_source(inventory, endpoint.url(), ca, bearerTokenSecretRef={"namespace": "nowhere", "name": "none"})
    run = tasgen("fetch", "-i", str(inventory), "--kubeconfig", str(cluster.kubeconfig), "--now", NOW)
    assert run.exit_code == 1
    assert "l40s-inventory: failed: cannot read Secret nowhere/none: 404 Not Found" in run.output
    assert endpoint.seen.connections == 0
