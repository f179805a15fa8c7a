"""The retire step on the real control plane (Kueue v0.17 with its resource-in-use finalizers),
run as the rendered ServiceAccount with a token: it deletes exactly the retired objects nothing
refers to, so none of them is left Terminating, and holds the rest until they are free."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import KEEP_KEY, RENDER_ANNOTATION, retire_manifests
from tasgen.gate.kube import Catalog, Conflict
from tests.conftest import REPO
from tests.e2e.test_gate_rbac import _token_client
from tests.gate.support import (
    GROUP,
    VERSION,
    Kueue,
    admitted_on,
    as_rendered,
    cluster_queue,
    kubeconfig_for,
    unique,
    wait_for,
)
from tests.gate.test_retire import retire

pytestmark = pytest.mark.cluster
OURS = {"app.kubernetes.io/managed-by": "tasgen"}


def _create(
    custom: client.CustomObjectsApi,
    plural: str,
    kind: str,
    name: str,
    spec: dict[str, Any],
    labels: dict[str, str],
) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }
    custom.create_cluster_custom_object(GROUP, VERSION, plural, body)


def exists(custom: client.CustomObjectsApi, plural: str, name: str) -> bool:
    try:
        custom.get_cluster_custom_object(GROUP, VERSION, plural, name)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


@pytest.fixture
def setup(api_client: client.ApiClient, kueue: Kueue, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Retired and kept flavors and Topologies of ours, one of someone else's, a foreign queue
    naming one retired flavor, and the rendered retire ServiceAccount and RBAC."""
    custom = client.CustomObjectsApi(api_client)
    n = {k: unique(f"retire-{k}") for k in ("free", "used", "kept", "theirs", "tfree", "tkept", "queue")}
    made: list[tuple[str, str]] = []
    for key in ("tfree", "tkept"):
        _create(
            custom,
            "topologies",
            "Topology",
            n[key],
            {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
            OURS,
        )
        made.append(("topologies", n[key]))
    for key, topo, labels in (
        ("free", n["tfree"], OURS),
        ("used", None, OURS),
        ("kept", n["tkept"], OURS),
        ("theirs", None, {}),
    ):
        _create(
            custom,
            "resourceflavors",
            "ResourceFlavor",
            n[key],
            {"topologyName": topo, "nodeLabels": {"pool": key}} if topo else {},
            labels,
        )
        made.append(("resourceflavors", n[key]))
    kueue.queue(n["queue"], {n["used"]: 2})
    namespace, name = unique("retire-sys"), unique("retire-sa")
    client.CoreV1Api(api_client).create_namespace({"metadata": {"name": namespace}})
    dyn = dynamic.DynamicClient(api_client)
    # The render this test plays holds its kept objects and, as the session's example fleet
    # shares the cluster, every other object already there: the command acts cluster-wide.
    retired = {n["free"], n["used"], n["tfree"]}
    keep_objects = [
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "metadata": {"name": obj["metadata"]["name"]}}
        for kind, plural in (("ResourceFlavor", "resourceflavors"), ("Topology", "topologies"))
        for obj in custom.list_cluster_custom_object(GROUP, VERSION, plural)["items"]
        if obj["metadata"]["name"] not in retired
    ]
    rbac = [
        as_rendered(m.body)
        for m in retire_manifests(keep_objects, namespace=namespace, image="i", name=name, serial=3)
    ]
    for body in rbac:
        if body["kind"] in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
            dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"]).create(
                body=body, namespace=body["metadata"].get("namespace")
            )
    (keep,) = [b["data"][KEEP_KEY] for b in rbac if b["kind"] == "ConfigMap"]
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / KEEP_KEY).write_text(keep)
    as_retire, token = _token_client(api_client, {"name": name, "namespace": namespace})
    as_retire.close()  # only its token is used: the command runs with a kubeconfig
    kubeconfig = kubeconfig_for(api_client, tmp_path / "kubeconfig", token)
    yield {"names": n, "custom": custom, "keep": tmp_path / "keep", "kubeconfig": kubeconfig}
    for plural, obj in made:
        _quietly(lambda p=plural, o=obj: custom.delete_cluster_custom_object(GROUP, VERSION, p, o))
    for body in rbac:
        if body["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            _quietly(
                lambda b=body: dyn.resources.get(api_version=b["apiVersion"], kind=b["kind"]).delete(
                    name=b["metadata"]["name"]
                )
            )
    _quietly(lambda: client.CoreV1Api(api_client).delete_namespace(namespace))


def _quietly(fn: Callable[[], Any]) -> None:
    with suppress(ApiException):
        fn()


def test_gate_retire_deletes_what_nothing_uses_and_holds_the_rest(setup: dict[str, Any]) -> None:
    n, custom = setup["names"], setup["custom"]
    code, lines, stderr = retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))
    assert code == 0, (lines, stderr)
    retired = {(ln["kind"], ln["name"]) for ln in lines if ln["event"] == "retired"}
    assert retired == {("resourceflavors", n["free"]), ("topologies", n["tfree"])}
    held = {(ln["kind"], ln["name"]): ln["why"] for ln in lines if ln["event"] == "held"}
    assert held == {("resourceflavors", n["used"]): f"ClusterQueue {n['queue']} names it"}
    # Gone when the command ends: nothing named them, so Kueue's finalizers let them go (the
    # Topology once its flavor was gone), and no revert can meet them Terminating.
    assert not exists(custom, "resourceflavors", n["free"]) and not exists(custom, "topologies", n["tfree"])
    for plural, key in (
        ("resourceflavors", "used"),
        ("resourceflavors", "kept"),
        ("resourceflavors", "theirs"),
        ("topologies", "tkept"),
    ):
        assert exists(custom, plural, n[key]), key


def test_gate_retire_takes_a_held_flavor_once_its_queue_lets_go(setup: dict[str, Any], kueue: Kueue) -> None:
    n, custom = setup["names"], setup["custom"]
    assert retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))[0] == 0
    assert exists(custom, "resourceflavors", n["used"])
    kueue.patch_spec(n["queue"], {"resourceGroups": []})
    code, lines, _ = retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))
    assert code == 0 and [(ln["kind"], ln["name"]) for ln in lines if ln["event"] == "retired"] == [
        ("resourceflavors", n["used"])
    ]
    assert not exists(custom, "resourceflavors", n["used"])


def test_gate_retire_dry_run_deletes_nothing(setup: dict[str, Any]) -> None:
    n, custom = setup["names"], setup["custom"]
    code, lines, _ = retire(
        "--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]), "--dry-run"
    )
    assert code == 0
    # The first round only: the Topology waits for its flavor, which a dry run does not delete.
    assert {ln["name"] for ln in lines if ln["event"] == "retire"} == {n["free"]}
    assert {ln["name"]: ln["why"] for ln in lines if ln["event"] == "held"} == {
        n["used"]: f"ClusterQueue {n['queue']} names it",
        n["tfree"]: f"ResourceFlavor {n['free']} names it",
    }
    assert exists(custom, "resourceflavors", n["free"]) and exists(custom, "topologies", n["tfree"])


def test_gate_retire_never_deletes_an_object_changed_since_it_was_read(
    api_client: client.ApiClient, setup: dict[str, Any]
) -> None:
    """A revert re-applying the flavor between the read and the delete: the delete carries the
    read's uid and resourceVersion, the API server refuses it, and the object stays."""
    n, custom = setup["names"], setup["custom"]
    catalog = Catalog(api_client)
    (read,) = [f for f in catalog.list("resourceflavors") if f["metadata"]["name"] == n["free"]]
    custom.patch_cluster_custom_object(
        GROUP, VERSION, "resourceflavors", n["free"], {"metadata": {"annotations": {"reapplied": "yes"}}}
    )
    with pytest.raises(Conflict):
        catalog.delete("resourceflavors", read)
    assert exists(custom, "resourceflavors", n["free"])
    fresh = custom.get_cluster_custom_object(GROUP, VERSION, "resourceflavors", n["free"])
    assert catalog.delete("resourceflavors", fresh)
    wait_for("the flavor gone", lambda: not exists(custom, "resourceflavors", n["free"]) or None)


def test_gate_retire_waits_while_a_managed_queue_is_being_switched(
    setup: dict[str, Any], kueue: Kueue
) -> None:
    """Under Argo CD the retire step can start before the gate has switched the queues: a
    retired flavor that a queue tasgen manages still names is waited for, and retired as soon
    as the gate's switch lets go of it (played here by the patch the gate would write)."""
    n, custom = setup["names"], setup["custom"]
    mine = unique("retire-mine")
    kueue.queue(mine, {n["free"]: 2}, managed=True)
    command = [sys.executable, "-m", "tasgen.gate.retire", "--keep", str(setup["keep"])]
    command += ["--kubeconfig", str(setup["kubeconfig"]), "--timeout", "120"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO) as run:
        assert run.stdout is not None
        before = [json.loads(run.stdout.readline()) for _ in range(2)]  # start, then waiting
        assert [ln["event"] for ln in before] == ["start", "waiting"], before
        assert f"resourceflavors/{n['free']}" in before[1]["objects"]
        assert exists(custom, "resourceflavors", n["free"])
        kueue.patch_spec(mine, {"resourceGroups": []})  # the gate's switch
        out, _ = run.communicate(timeout=120)
    lines = [json.loads(line) for line in out.splitlines()]
    assert run.returncode == 0, lines
    retired = {(ln["kind"], ln["name"]) for ln in lines if ln["event"] == "retired"}
    assert {("resourceflavors", n["free"]), ("topologies", n["tfree"])} <= retired
    assert not exists(custom, "resourceflavors", n["free"])


def test_gate_retire_exits_1_when_the_managed_queue_keeps_it_past_the_timeout(
    setup: dict[str, Any], kueue: Kueue
) -> None:
    """... and exits 1 at its timeout, so that the engine retries the step (Argo CD's retry
    policy, Flux's next reconciliation); the flavor stays."""
    n, custom = setup["names"], setup["custom"]
    mine = unique("retire-mine")
    kueue.queue(mine, {n["free"]: 2}, managed=True)
    code, lines, _ = retire(
        "--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]), "--timeout", "3"
    )
    assert code == 1
    held = [ln for ln in lines if ln["event"] == "held" and ln["name"] == n["free"]]
    assert [(ln["why"], ln["passing"]) for ln in held] == [(f"ClusterQueue {mine} names it", True)]
    assert exists(custom, "resourceflavors", n["free"])


def test_gate_retire_keeps_a_flavor_that_an_admitted_workload_holds(
    setup: dict[str, Any], kueue: Kueue
) -> None:
    """A Workload admitted on a flavor its queue no longer names (dropped while it looked idle,
    or by hand): no queue names the flavor or reports it, Kueue's finalizer would let it go,
    and only the Workload's status.admission still says it is in use. Retire keeps the flavor
    for as long as the Workload holds it (the Topology of such a flavor waits for the flavor:
    tests/gate/test_retire.py)."""
    n, custom = setup["names"], setup["custom"]
    held_on = unique("retire-held")  # ours, and not in the keep list: retired
    _create(custom, "resourceflavors", "ResourceFlavor", held_on, {}, OURS)
    kueue.on_cleanup(lambda: custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", held_on))
    queue = unique("retire-wl")
    kueue.queue(queue, {held_on: 2, n["theirs"]: 2})
    ns = kueue.namespace(queue)
    kueue.workload(ns, "serve")
    wait_for(
        "the workload admitted on the flavor",
        lambda: any(admitted_on(w) == held_on for w in kueue.workloads(ns)),
    )
    groups = cluster_queue(queue, {n["theirs"]: 2})["spec"]["resourceGroups"]
    kueue.patch_spec(queue, {"resourceGroups": groups})
    wait_for(
        "Kueue's status without the flavor",
        lambda: (cq := kueue.current(queue)) is not None and held_on not in str(cq["status"]),
    )
    assert any(admitted_on(w) == held_on for w in kueue.workloads(ns))  # Kueue did not evict it

    code, lines, stderr = retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))
    assert code == 0, (lines, stderr)
    held = {(ln["kind"], ln["name"]): ln["why"] for ln in lines if ln["event"] == "held"}
    assert held.get(("resourceflavors", held_on)) == f"Workload {ns}/serve is admitted on it", held
    assert exists(custom, "resourceflavors", held_on)

    kueue.release(ns, "serve")  # the Workload ends: now nothing holds it
    code, lines, _ = retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))
    retired = {(ln["kind"], ln["name"]) for ln in lines if ln["event"] == "retired"}
    assert code == 0 and ("resourceflavors", held_on) in retired, lines
    assert not exists(custom, "resourceflavors", held_on)


def test_gate_retire_never_deletes_what_a_newer_render_wrote(setup: dict[str, Any], kueue: Kueue) -> None:
    """An engine still running an older commit's retire step (Argo CD retrying its revision)
    while a newer commit's kueue step has applied a new flavor, which no queue names yet: the
    flavor carries the newer render's stamp, and this step's keep list the older one's. Only
    what an older render stamped (or an unstamped one, from before stamps) is retired."""
    custom = setup["custom"]
    keep = yaml.safe_load((setup["keep"] / KEEP_KEY).read_text())
    serial = keep["render"]
    stamped = {
        "newer": str(serial + 1),  # the newer commit's
        "same": str(serial),  # a render of this serial (another branch's): not older
        "older": str(serial - 1),
        "unstamped": None,  # from a tasgen before stamps: older than any stamped render
    }
    names = {k: unique(f"retire-{k}") for k in stamped}
    for key, stamp in stamped.items():
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceFlavor",
            "metadata": {
                "name": names[key],
                "labels": OURS,
                "annotations": {RENDER_ANNOTATION: stamp} if stamp is not None else {},
            },
            "spec": {},
        }
        custom.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", body)
        kueue.on_cleanup(
            lambda n=names[key]: custom.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", n)
        )
    code, lines, stderr = retire("--keep", str(setup["keep"]), "--kubeconfig", str(setup["kubeconfig"]))
    assert code == 0, (lines, stderr)
    held = {ln["name"]: ln["why"] for ln in lines if ln["event"] == "held"}
    assert held[names["newer"]] == f"render {serial + 1} wrote it, not one older than this render ({serial})"
    assert held[names["same"]] == f"render {serial} wrote it, not one older than this render ({serial})"
    assert exists(custom, "resourceflavors", names["newer"]) and exists(
        custom, "resourceflavors", names["same"]
    )
    assert ("resourceflavors", names["older"]) in {
        (ln["kind"], ln["name"]) for ln in lines if ln["event"] == "retired"
    }
    assert not exists(custom, "resourceflavors", names["older"])
