"""The engines' wiring: the Flux Kustomizations of rendered/flux/ and the Argo CD ApplicationSet
of rendered/argocd/, for one labels folder and for shards."""

from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from tasgen.compile.engines import SYNC_OPTIONS
from tasgen.compile.sync_wiring import (
    DEFAULT_RETRY,
    LAST_APPLIED_LIMIT,
    STEP_LABEL,
    Paths,
    Synced,
    application_set,
    flux_kustomizations,
    wiring,
)
from tasgen.emit import yaml as writer
from tasgen.emit.apply import applied_size, server_side_where_needed
from tasgen.model import Documents, Manifest
from tasgen.validate.schema import schema_of
from tests.conftest import NOW, REPO, Run, tasgen

SHARDS = ("labels/shard-0", "labels/shard-2", "labels/shard-1")
KUEUE_API = "kueue.x-k8s.io/v1beta2"


def flux(paths: Paths, **settings: Any) -> dict[str, dict[str, Any]]:
    return {m.body["metadata"]["name"]: m.body for m in flux_kustomizations(paths, settings, 600, KUEUE_API)}


@pytest.mark.parametrize(
    ("repo_path", "shown"),
    [("rendered", "./rendered"), ("./clusters/prod/rendered/", "./clusters/prod/rendered"), (".", ".")],
)
def test_flux_chain_of_one_labels_folder(repo_path: str, shown: str) -> None:
    found = flux(Paths.of(repo_path, ["labels"]))
    steps = ("labels", "kueue", "gate", "queues", "retire")
    chain = [found[f"tasgen-{f}"] for f in steps]
    assert [k["spec"]["path"] for k in chain] == [f"{shown}/{f}" for f in steps]
    assert [k["spec"].get("dependsOn") for k in chain] == [
        None,
        [{"name": "tasgen-labels"}],
        [{"name": "tasgen-kueue"}],
        [{"name": "tasgen-gate"}],
        [{"name": "tasgen-queues"}],
    ]
    assert all(k["spec"]["wait"] and k["spec"]["prune"] for k in chain)
    # A Kustomization that goes (deleted, renamed, a shard gone) leaves its objects in place.
    assert [k["spec"]["deletionPolicy"] for k in chain] == ["Orphan"] * 5
    # Only the queues' step holds Kueue's queues, whose health Flux checks by expressions.
    assert [bool(k["spec"].get("healthCheckExprs")) for k in chain] == [False, False, False, True, False]
    # The two Jobs are immutable: a new plan or keep list recreates them.
    assert [k["spec"].get("force", False) for k in chain] == [False, False, True, False, True]
    # ... and run once per change: their Kustomizations give each a TTL that never runs out.
    assert [bool(k["spec"].get("patches")) for k in chain] == [False, False, True, False, True]
    for k, job in ((chain[2], "tasgen-gate"), (chain[4], "tasgen-retire")):
        (patch,) = k["spec"]["patches"]
        assert json.loads(patch["patch"]) == [
            {"op": "add", "path": "/spec/ttlSecondsAfterFinished", "value": 2_147_483_647}
        ]
        assert patch["target"] == {"kind": "Job", "name": job}
    # Each runs as the ServiceAccount that rendered/flux/rbac.yaml grants.
    assert {k["spec"]["serviceAccountName"] for k in chain} == {"tasgen-flux"}
    # Flux waits for a Job as long as it may run: 2 pods x (timeout + 300 s start) + 60; the
    # gate's timeout is the config's (600 here), the retire step's 300.
    assert chain[2]["spec"]["timeout"] == "1860s"
    assert chain[4]["spec"]["timeout"] == "1260s"


def test_flux_shards_each_get_a_kustomization_and_kueue_waits_for_all() -> None:
    found = flux(Paths.of("rendered", SHARDS))
    shards = [found[f"tasgen-labels-shard-{i}"] for i in range(3)]
    assert [k["spec"]["path"] for k in shards] == [f"./rendered/labels/shard-{i}" for i in range(3)]
    assert all("dependsOn" not in k["spec"] for k in shards)
    assert found["tasgen-kueue"]["spec"]["dependsOn"] == [
        {"name": f"tasgen-labels-shard-{i}"} for i in range(3)
    ]
    assert set(found) == {
        *(f"tasgen-labels-shard-{i}" for i in range(3)),
        "tasgen-kueue",
        "tasgen-gate",
        "tasgen-queues",
        "tasgen-retire",
    }


def test_flux_files_keep_shards_together() -> None:
    files = [m.file for m in flux_kustomizations(Paths.of("rendered", SHARDS), {}, 60, KUEUE_API)]
    assert files == ["flux/labels.yaml"] * 3 + [
        f"flux/{s}.yaml" for s in ("kueue", "gate", "queues", "retire")
    ]


def test_flux_settings_come_from_the_config() -> None:
    found = flux(
        Paths.of("rendered", ["labels"]),
        namespace="gitops",
        interval="3m",
        sourceRef={"kind": "OCIRepository", "name": "fleet", "namespace": "sources"},
    )
    assert len(found) == 5  # labels, kueue, gate, queues, retire
    for kustomization in found.values():
        assert kustomization["metadata"]["namespace"] == "gitops"
        assert kustomization["spec"]["interval"] == "3m"
        assert kustomization["spec"]["sourceRef"] == {
            "kind": "OCIRepository",
            "name": "fleet",
            "namespace": "sources",
        }


def test_flux_defaults() -> None:
    labels = flux(Paths.of("rendered", ["labels"]))["tasgen-labels"]
    assert labels["metadata"]["namespace"] == "flux-system"
    assert labels["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "flux-system"}


ARGO = {"repoURL": "https://git.example.com/fleet.git"}


def test_argocd_is_rendered_only_when_configured() -> None:
    paths = Paths.of("rendered", ["labels"])
    synced = Synced.of([], "tasgen-system")
    assert {m.file for m in wiring(paths, {}, 60, synced, KUEUE_API)} == {
        f"flux/{s}.yaml" for s in ("labels", "kueue", "gate", "queues", "retire", "rbac")
    }
    argo = {m.file for m in wiring(paths, {"argocd": ARGO}, 60, synced, KUEUE_API)}
    assert {"argocd/applicationset.yaml", "argocd/appproject.yaml"} <= argo


def _rendered_objects(root: Path) -> list[dict[str, Any]]:
    """Every object of the synced paths of a rendered/ tree (not the engines' wiring)."""
    found = []
    for file in sorted(root.rglob("*.yaml")):
        if file.name == "kustomization.yaml" or file.relative_to(root).parts[0] in ("flux", "argocd"):
            continue
        found += [d for d in yaml.safe_load_all(file.read_text()) if d]
    return found


def test_the_app_project_permits_exactly_what_the_render_holds() -> None:
    """Namespaces and kinds read back from the committed rendered/: each object's kind is in the
    whitelist of its scope and its namespace among the destinations, and nothing else is."""
    rendered = REPO / "rendered"
    project = yaml.safe_load((rendered / "argocd" / "appproject.yaml").read_text().split("---\n", 1)[1])
    appset = yaml.safe_load((rendered / "argocd" / "applicationset.yaml").read_text().split("---\n", 1)[1])
    objects = _rendered_objects(rendered)
    cluster, namespaced, namespaces = set(), set(), set()
    for obj in objects:
        kind = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
        if obj["metadata"].get("namespace"):
            namespaced.add(kind)
            namespaces.add(obj["metadata"]["namespace"])
        else:
            cluster.add(kind)
    spec = project["spec"]
    assert {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"]} == cluster
    # Cluster-scoped objects by name, as Argo CD matches one (a glob): each object is matched
    # by an entry of its kind, each entry matches an object, and only flavors and Topologies
    # (named after the inventory's profiles) by a pattern.
    whitelist = spec["clusterResourceWhitelist"]
    scoped = [o for o in objects if not o["metadata"].get("namespace")]
    for obj in scoped:
        kind = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
        assert any(
            (e["group"], e["kind"]) == kind and fnmatch.fnmatchcase(obj["metadata"]["name"], e["name"])
            for e in whitelist
        ), obj["metadata"]["name"]
    for entry in whitelist:
        assert any(
            fnmatch.fnmatchcase(o["metadata"]["name"], entry["name"]) and o["kind"] == entry["kind"]
            for o in scoped
        )
        assert ("*" in entry["name"]) == (entry["kind"] in ("ResourceFlavor", "Topology")), entry
    assert {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]} == namespaced
    template = appset["spec"]["template"]["spec"]
    home = template["destination"]["namespace"]
    assert {d["namespace"] for d in spec["destinations"]} == namespaces | {home}
    assert all(d["server"] == template["destination"]["server"] for d in spec["destinations"])
    assert spec["sourceRepos"] == [template["source"]["repoURL"]]
    assert template["project"] == project["metadata"]["name"] != "default"
    assert project["metadata"]["namespace"] == appset["metadata"]["namespace"]
    # what the example renders: RBAC and the admission policy, never a kind of every kind
    assert ("rbac.authorization.k8s.io", "ClusterRoleBinding") in cluster and ("", "Secret") not in namespaced
    assert "kube-system" not in namespaces


def test_the_app_project_is_named_like_the_application_set_unless_configured() -> None:
    synced = Synced.of(
        [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x"}}], "home"
    )
    paths = Paths.of("rendered", ["labels"])
    for argo, name in (({**ARGO, "name": "gpu"}, "gpu"), ({**ARGO, "project": "fleet"}, "fleet")):
        found = {m.file: m.body for m in wiring(paths, {"argocd": argo}, 60, synced, KUEUE_API)}
        assert found["argocd/appproject.yaml"]["metadata"]["name"] == name
        assert found["argocd/applicationset.yaml"]["spec"]["template"]["spec"]["project"] == name
        destinations = found["argocd/appproject.yaml"]["spec"]["destinations"]
        assert [d["namespace"] for d in destinations] == ["home", "x"]


@pytest.mark.parametrize(
    ("repo_path", "labels", "pattern", "depth"),
    [
        ("rendered", ["labels"], "rendered/labels", 1),
        ("clusters/prod/rendered", SHARDS, "clusters/prod/rendered/labels/*", 3),
        (".", SHARDS, "labels/*", 0),
    ],
)
def test_argocd_generator_covers_every_synced_path(
    repo_path: str, labels: list[str], pattern: str, depth: int
) -> None:
    spec = application_set(Paths.of(repo_path, labels), ARGO, "tasgen-system")["spec"]
    prefix = "" if repo_path == "." else f"{repo_path}/"
    assert spec["generators"][0]["git"]["directories"] == [
        {"path": pattern},
        *({"path": f"{prefix}{step}"} for step in ("kueue", "gate", "queues", "retire")),
    ]
    # The step label is the path's first segment below rendered/.
    template = spec["template"]
    assert template["metadata"]["labels"][STEP_LABEL] == f"{{{{ index .path.segments {depth} }}}}"


def test_argocd_rolling_sync_steps_run_in_order() -> None:
    spec = application_set(Paths.of("rendered", ["labels"]), ARGO, "tasgen-system")["spec"]
    assert spec["strategy"]["type"] == "RollingSync"
    steps = spec["strategy"]["rollingSync"]["steps"]
    assert [s["matchExpressions"] for s in steps] == [
        [{"key": STEP_LABEL, "operator": "In", "values": [step]}]
        for step in ("labels", "kueue", "gate", "queues", "retire")
    ]
    # RollingSync triggers each sync with the template's prune setting.
    assert spec["template"]["spec"]["syncPolicy"]["automated"]["prune"] is True


def test_argocd_applications_going_delete_nothing() -> None:
    """No resources finalizer on the generated Applications (Argo CD adds it unless
    preserveResourcesOnDeletion), so that the controller may delete an Application whose path
    went (sync: create, update and delete) and nothing else goes with it."""
    spec = application_set(Paths.of("rendered", SHARDS), ARGO, "tasgen-system")["spec"]
    assert spec["syncPolicy"] == {"preserveResourcesOnDeletion": True, "applicationsSync": "sync"}
    assert "finalizers" not in spec["template"]["metadata"]


def test_argocd_settings_come_from_the_config() -> None:
    argo = {
        **ARGO,
        "targetRevision": "main",
        "namespace": "gitops",
        "name": "gpu",
        "project": "platform",
        "destination": {"name": "prod"},
    }
    appset = application_set(Paths.of("rendered", ["labels"]), argo, "tasgen-system")
    assert appset["metadata"]["namespace"] == "gitops"
    assert appset["metadata"]["name"] == "gpu"
    template = appset["spec"]["template"]
    assert template["metadata"]["name"].startswith("gpu-")
    assert template["spec"]["project"] == "platform"
    assert template["spec"]["destination"] == {"name": "prod", "namespace": "tasgen-system"}
    assert template["spec"]["source"]["targetRevision"] == "main"
    assert appset["spec"]["generators"][0]["git"]["revision"] == "main"


def test_argocd_retry_keeps_the_defaults_the_config_leaves_unset() -> None:
    def retry(configured: dict[str, Any] | None) -> dict[str, Any]:
        argo = {**ARGO, **({"retry": configured} if configured is not None else {})}
        appset = application_set(Paths.of("rendered", ["labels"]), argo, "tasgen-system")
        return dict(appset["spec"]["template"]["spec"]["syncPolicy"]["retry"])

    default = retry(None)
    assert default == {
        "limit": 5,
        "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
        "refresh": True,
    }
    assert retry({"limit": 10, "backoff": {"maxDuration": "30m"}}) == {
        "limit": 10,
        "backoff": {"duration": "10s", "factor": 2, "maxDuration": "30m"},
        "refresh": True,
    }
    assert retry({"limit": -1, "refresh": False}) == {**default, "limit": -1, "refresh": False}


def test_the_schema_documents_the_retry_defaults() -> None:
    sync = schema_of("GeneratorConfig")["properties"]["spec"]["properties"]["sync"]
    retry = sync["properties"]["argocd"]["properties"]["retry"]["properties"]
    backoff = {key: field["default"] for key, field in retry["backoff"]["properties"].items()}
    documented = {
        "limit": retry["limit"]["default"],
        "backoff": backoff,
        "refresh": retry["refresh"]["default"],
    }
    assert documented == DEFAULT_RETRY


RETRY_LINE = "      targetRevision: main\n"


def render_with_retry(tmp_path: Path, retry: str) -> tuple[Run, Path]:
    """The example rendered with ``retry:`` (flow YAML) under sync.argocd."""
    inventory, out = tmp_path / "inventories", tmp_path / "rendered"
    shutil.copytree(REPO / "inventories", inventory)
    config = inventory / "config.yaml"
    assert RETRY_LINE in config.read_text()
    config.write_text(config.read_text().replace(RETRY_LINE, f"{RETRY_LINE}      retry: {retry}\n"))
    return tasgen("render", "-i", str(inventory), "-o", str(out), "--now", NOW), out


def test_a_configured_retry_reaches_every_application(tmp_path: Path) -> None:
    run, out = render_with_retry(tmp_path, "{limit: 10, backoff: {maxDuration: 30m}}")
    assert run.exit_code == 0, run.output
    appset = yaml.safe_load((out / "argocd" / "applicationset.yaml").read_text())
    assert appset["spec"]["template"]["spec"]["syncPolicy"]["retry"] == {
        "limit": 10,
        "backoff": {"duration": "10s", "factor": 2, "maxDuration": "30m"},
        "refresh": True,
    }


def test_a_retry_the_schema_refuses_writes_nothing(tmp_path: Path) -> None:
    run, out = render_with_retry(tmp_path, "{limit: 5, backoff: {factor: 0}}")
    assert run.exit_code == 1
    line = (REPO / "inventories" / "config.yaml").read_text().splitlines().index(RETRY_LINE.rstrip("\n")) + 2
    assert f"config.yaml:{line}:" in run.output and "factor" in run.output and "[schema]" in run.output
    assert not out.exists()


def configmap(size: int, annotations: dict[str, str] | None = None) -> Manifest:
    meta: dict[str, Any] = {"name": "plan", **({"annotations": annotations} if annotations else {})}
    return Manifest(
        "gate/configmap-plan.yaml",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "x" * size}},
    )


def test_server_side_apply_only_where_client_side_apply_cannot() -> None:
    small, large = configmap(1000), configmap(LAST_APPLIED_LIMIT, {"argocd.argoproj.io/sync-wave": "2"})
    server_side_where_needed([small, large])
    assert "annotations" not in small.body["metadata"]
    assert len(json.dumps(large.body)) > LAST_APPLIED_LIMIT
    assert large.body["metadata"]["annotations"] == {
        "argocd.argoproj.io/sync-wave": "2",
        SYNC_OPTIONS: "ServerSideApply=true",
    }


def test_server_side_apply_keeps_other_sync_options() -> None:
    large = configmap(LAST_APPLIED_LIMIT, {SYNC_OPTIONS: "PruneLast=true"})
    server_side_where_needed([large])
    assert large.body["metadata"]["annotations"][SYNC_OPTIONS] == "PruneLast=true,ServerSideApply=true"
    server_side_where_needed([large])  # once is enough, however often it is asked
    assert large.body["metadata"]["annotations"][SYNC_OPTIONS] == "PruneLast=true,ServerSideApply=true"


def _plan_configmap(queues: int) -> Manifest:
    """A gate plan ConfigMap holding one ClusterQueue document per queue, 20 flavors each."""
    flavor = {
        "name": "gpustack-h100-abcdef-0123456789ab",
        "resources": [{"name": "cpu", "nominalQuota": "8"}],
    }
    documents = tuple(
        {"kind": "ClusterQueue", "metadata": {"name": f"q{i}"}, "spec": {"flavors": [flavor] * 20}}
        for i in range(queues)
    )
    meta = {"name": "tasgen-gate-plan"}
    return Manifest(
        "gate/configmap-plan.yaml",
        {"kind": "ConfigMap", "metadata": meta, "data": {"plan": Documents(documents)}},
    )


def test_a_value_of_documents_is_measured_as_the_text_it_is_written_as() -> None:
    """The documents' own JSON is about two thirds of their JSON-escaped YAML text, which is
    what the last-applied annotation holds: a plan between the two sizes must be marked."""
    found = next(
        plan
        for plan in map(_plan_configmap, range(1, 400))
        if len(json.dumps(plan.body, separators=(",", ":"), default=lambda d: list(d.items)))
        <= LAST_APPLIED_LIMIT
        < applied_size(plan.body)
    )
    text = {**found.body, "data": {"plan": writer.documents(found.body["data"]["plan"])}}
    assert applied_size(found.body) == len(json.dumps(text, separators=(",", ":")))
    server_side_where_needed([found])
    assert found.body["metadata"]["annotations"] == {SYNC_OPTIONS: "ServerSideApply=true"}


def test_go_escapes_are_counted() -> None:
    assert applied_size({"a": "<&>"}) == len('{"a":"\\u003c\\u0026\\u003e"}')


# --- Flux's health of Kueue's queues, evaluated as kustomize-controller does (CEL) ------------

STOPPED = "Can't admit new workloads: is stopped."
#: (an Active condition as Kueue v0.17 writes it, or None for a queue Kueue has not looked at)
#: -> whether the ClusterQueue counts as current; messages are Kueue's (inactiveReason)
CLUSTER_QUEUE_CASES = [
    (None, False),
    ({"status": "True", "reason": "Ready", "message": "Can admit new workloads"}, True),
    ({"status": "False", "reason": "Stopped", "message": STOPPED}, True),
    (
        {
            "status": "False",
            "reason": "Stopped",
            "message": "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): a.",
        },
        False,
    ),
    (
        {
            "status": "False",
            "reason": "FlavorNotFound",
            "message": "Can't admit new workloads: references missing ResourceFlavor(s): a.",
        },
        False,
    ),
    ({"status": "False", "reason": "TopologyNotFound", "message": 'there is no Topology "t"'}, False),
    (
        {"status": "False", "reason": "Terminating", "message": "Can't admit new workloads; terminating"},
        False,
    ),
]
LOCAL_QUEUE_CASES = [
    (None, False),
    ({"status": "True", "reason": "Ready", "message": "Can submit new workloads to localQueue"}, True),
    ({"status": "False", "reason": "Stopped", "message": "LocalQueue is stopped"}, True),
    ({"status": "False", "reason": "ClusterQueueIsInactive", "message": "Can't submit"}, True),
    ({"status": "False", "reason": "ClusterQueueDoesNotExist", "message": "Can't submit"}, False),
]


def _current(kind: str, condition: dict[str, str] | None) -> bool:
    (check,) = [
        e
        for e in flux(Paths.of("rendered", ["labels"]))["tasgen-queues"]["spec"]["healthCheckExprs"]
        if e["kind"] == kind
    ]
    assert check["apiVersion"] == KUEUE_API and set(check) == {"apiVersion", "kind", "current"}
    status: dict[str, Any] = {}
    if condition is not None:
        other = {"type": "Other", "status": "True", "reason": "X", "message": "x"}
        status["conditions"] = [other, {"type": "Active", **condition}]
    env = celpy.Environment()
    program = env.program(env.compile(check["current"]))
    return bool(program.evaluate({"status": celpy.json_to_cel(status)}))


@pytest.mark.parametrize(("condition", "current"), CLUSTER_QUEUE_CASES)
def test_flux_cluster_queue_health(condition: dict[str, str] | None, current: bool) -> None:
    assert _current("ClusterQueue", condition) is current


@pytest.mark.parametrize(("condition", "current"), LOCAL_QUEUE_CASES)
def test_flux_local_queue_health(condition: dict[str, str] | None, current: bool) -> None:
    assert _current("LocalQueue", condition) is current


def rbac_of(rendered: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((rendered / "flux" / "rbac.yaml").read_text()) if d]


def allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str, name: str) -> bool:
    """RBAC's reading of a rule list (no wildcard is rendered, which this does not read)."""
    return any(
        group in r["apiGroups"]
        and resource in r["resources"]
        and verb in r["verbs"]
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )


def test_flux_rbac_grants_the_render_s_objects_and_nothing_wider() -> None:
    """rendered/flux/rbac.yaml (the example's): the ServiceAccount may apply every object the
    synced paths hold, cluster-scoped ones by name where they do not follow the inventory,
    binds only the render's roles, holds no wildcard, ``escalate`` or ``impersonate``; its
    RoleBindings are in the namespaces the render writes to; and rendered/flux/ does not sync
    the file."""
    rendered = REPO / "rendered"
    found = rbac_of(rendered)
    (role,) = [d for d in found if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "tasgen-flux"]
    (spread,) = [
        d for d in found if d["kind"] == "ClusterRole" and d["metadata"]["name"] == "tasgen-flux-namespaced"
    ]
    every = [r for d in found if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]
    assert not [r for r in every if "*" in json.dumps(r) or {"escalate", "impersonate"} & set(r["verbs"])]
    namespaces = {d["metadata"]["namespace"] for d in found if d["kind"] == "RoleBinding"}
    plurals = {"Topology": "topologies", "ValidatingAdmissionPolicy": "validatingadmissionpolicies"}
    for path in sorted(rendered.glob("*/*.yaml")) + sorted(rendered.glob("labels/*/*.yaml")):
        if path.parent.name in ("flux", "argocd") or path.name == "kustomization.yaml":
            continue
        for obj in (d for d in yaml.safe_load_all(path.read_text()) if d):
            group = obj["apiVersion"].rpartition("/")[0]
            resource = plurals.get(obj["kind"], obj["kind"].lower() + "s")
            name, namespace = obj["metadata"]["name"], obj["metadata"].get("namespace")
            rules = spread["rules"] if namespace else role["rules"]
            for verb in ("get", "create", "patch", "delete"):
                assert allows(rules, group, resource, verb, name), (verb, path.name, name)
            assert namespace is None or namespace in namespaces, (path.name, namespace)
    # Not another binding nor role: what a commit would add to take the cluster.
    assert not allows(
        role["rules"], "rbac.authorization.k8s.io", "clusterrolebindings", "create", "tasgen-gate-admin"
    )
    assert not allows(role["rules"], "rbac.authorization.k8s.io", "clusterroles", "bind", "cluster-admin")
    assert not allows(spread["rules"], "rbac.authorization.k8s.io", "clusterroles", "bind", "cluster-admin")
    assert not allows(role["rules"], "", "secrets", "get", "anything")
    assert not allows(spread["rules"], "", "secrets", "get", "anything")
    assert (
        "rbac.yaml" not in yaml.safe_load((rendered / "flux" / "kustomization.yaml").read_text())["resources"]
    )
