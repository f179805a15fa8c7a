"""The gate's rendered RBAC on the real API server: enough for the gate, nothing beyond it.

The objects come from gate_manifests (what rendered/gate/ holds); the gate's ServiceAccount gets
a token through the TokenRequest API, and a client built with that token tries what the gate
needs and what it must not do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import gate_manifests
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    as_rendered,
    cluster_queue,
    condition,
    flavors_of,
    kubeconfig_for,
    run_gate,
    unique,
    wait_for,
    write_plan,
)

pytestmark = pytest.mark.cluster


@pytest.fixture
def rendered_gate(api_client: client.ApiClient, kueue: Kueue) -> Iterator[dict[str, Any]]:
    """Two queues; the gate's objects rendered for the first only, created on the server."""
    flavor = kueue.flavor(unique("gate-rbac"))
    mine, other = unique("gate-mine"), unique("gate-other")
    kueue.queue(mine, {flavor: 4})
    kueue.queue(other, {flavor: 4})
    namespace, events, name = unique("gate-sys"), "default", unique("gate-sa")
    manifests = gate_manifests(
        [cluster_queue(mine, {flavor: 8})],
        namespace=namespace,
        image="example.invalid/tasgen:test",
        timeout_seconds=60,
        event_namespace=events,
        name=name,
    )
    dyn = dynamic.DynamicClient(api_client)
    created: list[tuple[Any, dict[str, Any]]] = []
    for m in manifests:
        if m.file.startswith("gate/"):
            body = as_rendered(m.body)
            resource = dyn.resources.get(api_version=body["apiVersion"], kind=m.kind)
            resource.create(body=body, namespace=body["metadata"].get("namespace"))
            created.append((resource, body))
    yield {
        "mine": mine,
        "other": other,
        "flavor": flavor,
        "namespace": namespace,
        "events": events,
        "name": name,
    }
    for resource, body in reversed(created):
        meta = body["metadata"]
        _quietly(lambda r=resource, m=meta: r.delete(name=m["name"], namespace=m.get("namespace")))


def _quietly(fn: Callable[[], Any]) -> None:
    with suppress(ApiException):
        fn()


def _token_client(admin: client.ApiClient, g: dict[str, Any]) -> tuple[client.ApiClient, str]:
    request = client.CoreV1Api(admin).create_namespaced_service_account_token(
        g["name"],
        g["namespace"],
        {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600},
        },
    )
    token = request.status.token
    cfg = client.Configuration()
    cfg.host = admin.configuration.host
    cfg.ssl_ca_cert = admin.configuration.ssl_ca_cert
    cfg.verify_ssl = admin.configuration.verify_ssl
    cfg.api_key = {"authorization": f"Bearer {token}"}
    return client.ApiClient(cfg), token


def _status(fn: Callable[[], Any]) -> int:
    try:
        fn()
    except ApiException as err:
        return int(err.status)
    return 200


def test_gate_rbac_token_reaches_only_the_managed_queue(
    api_client: client.ApiClient, rendered_gate: dict[str, Any]
) -> None:
    g = rendered_gate
    tok, _ = _token_client(api_client, g)
    cq = client.CustomObjectsApi(tok)
    mine = wait_for(
        "RBAC to allow the managed queue",
        lambda: (
            _status(lambda: cq.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", g["mine"])) == 200
        ),
    )
    assert mine
    live = cq.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", g["mine"])
    assert (
        _status(
            lambda: cq.replace_cluster_custom_object(
                GROUP, VERSION, "clusterqueues", g["mine"], live, dry_run="All"
            )
        )
        == 200
    )
    # Workloads' admissions say which flavors are idle: listed, never written.
    assert _status(lambda: cq.list_cluster_custom_object(GROUP, VERSION, "workloads")) == 200

    other = client.CustomObjectsApi(api_client).get_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", g["other"]
    )
    forbidden = {
        "get another queue": lambda: cq.get_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", g["other"]
        ),
        "update another queue": lambda: cq.replace_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", g["other"], other, dry_run="All"
        ),
        "patch another queue's status": lambda: cq.patch_cluster_custom_object_status(
            GROUP, VERSION, "clusterqueues", g["other"], {"status": {}}, dry_run="All"
        ),
        "list queues": lambda: cq.list_cluster_custom_object(GROUP, VERSION, "clusterqueues"),
        "delete the managed queue": lambda: cq.delete_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", g["mine"], dry_run="All"
        ),
        "create a queue": lambda: cq.create_cluster_custom_object(
            GROUP, VERSION, "clusterqueues", cluster_queue(unique("gate-new"), {}), dry_run="All"
        ),
        "touch a flavor": lambda: cq.get_cluster_custom_object(
            GROUP, VERSION, "resourceflavors", g["flavor"]
        ),
        "delete workloads": lambda: cq.delete_collection_namespaced_custom_object(
            GROUP, VERSION, g["namespace"], "workloads", dry_run="All"
        ),
        "create events elsewhere": lambda: cq.create_namespaced_custom_object(
            "events.k8s.io", "v1", "kube-system", "events", {"metadata": {"generateName": "x"}}, dry_run="All"
        ),
        "read secrets": lambda: client.CoreV1Api(tok).list_namespaced_secret(g["namespace"]),
    }
    assert {what: _status(call) for what, call in forbidden.items()} == dict.fromkeys(forbidden, 403)


def test_gate_rbac_is_enough_for_the_gate(
    api_client: client.ApiClient, kueue: Kueue, rendered_gate: dict[str, Any], tmp_path: Path
) -> None:
    g = rendered_gate
    _, token = _token_client(api_client, g)
    kubeconfig = kubeconfig_for(api_client, tmp_path / "sa.kubeconfig", token=token)
    wait_for("Kueue's status for the queue", lambda: kueue.current(g["mine"]))
    plan = write_plan(tmp_path / "plan.yaml", [cluster_queue(g["mine"], {g["flavor"]: 8})])
    run = run_gate(kubeconfig, plan, "--event-namespace", g["events"], "--timeout", "60")
    assert run.code == 0, run
    assert not [ln for ln in run.lines if ln["event"] in ("error", "report_failed")], run
    live = kueue.get(g["mine"])
    assert flavors_of(live) == {g["flavor"]: "8"}
    cond = condition(live, "TopologyReady")
    assert cond and cond["status"] == "True", live
    events = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
        "events.k8s.io", "v1", g["events"], "events"
    )["items"]
    assert [e["reason"] for e in events if e["regarding"]["name"] == g["mine"]] == ["AppliedInPlace"]
