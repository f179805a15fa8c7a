"""Real Argo CD (application-controller, repo-server and applicationset-controller v3.5.3) syncs
the example's rendered/ from a git repository on 127.0.0.1 through the generated ApplicationSet:
one Application per synced path, synced step by step by RollingSync; every object lands and the
queues become Active; a commit that drops a flavor syncs through every step."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import NAME as GATE_JOB
from tasgen.compile.gate_wiring import PLAN_HASH_ANNOTATION
from tests.e2e import argocd, busy, flux, harness, keeping, kube
from tests.e2e.conftest import describe
from tests.e2e.fleet import Fleet, load_fleet

pytestmark = pytest.mark.cluster

STEPS = ("labels", "kueue", "gate", "queues", "retire")
APPS = {f"tasgen-{step}": step for step in STEPS}  # the example has one labels path
GATE_NAMESPACE = "tasgen-system"
JOBS = ("batch", "v1", "jobs")
APPLICATIONS = ("argoproj.io", "v1alpha1", "applications")
SYNC_TIMEOUT_S = 420


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[argocd.ArgoEnv]:
    yield from harness.entered(argocd.example_env(tmp_path_factory.mktemp("argocd")))


@dataclass(frozen=True)
class First:
    """The example committed and synced once: its revision, the Applications then, and every
    version of the gate Job the API server wrote meanwhile (there may be several Jobs: each
    sync of the gate's Application recreates it)."""

    revision: str
    apps: dict[str, dict[str, Any]]
    gate_jobs: list[dict[str, Any]]
    gate_app: list[dict[str, Any]]  # every version of the gate's Application


@pytest.fixture(scope="module")
def first(env: argocd.ArgoEnv) -> First:
    revision = env.repo.render_and_commit("the example fleet")
    jobs = flux.History(env.api, JOBS, GATE_JOB, GATE_NAMESPACE)
    gate_app = flux.History(env.api, APPLICATIONS, "tasgen-gate", argocd.NAMESPACE)
    watches = (jobs, gate_app)
    for watch in watches:
        watch.start()
    try:
        assert all(w.listed.wait(60) for w in watches), "a watch did not list"
        wiring = argocd.apply_wiring(env)
        assert sorted(o["kind"] for o in wiring) == ["AppProject", "ApplicationSet"]
        apps = argocd.wait_synced(env.dyn, revision, set(APPS), env.controllers, SYNC_TIMEOUT_S)
        return First(revision, apps, jobs.versions(), gate_app.versions())
    finally:
        for watch in watches:
            watch.halt.set()
            watch.join(timeout=30)


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def started(app: dict[str, Any]) -> datetime:
    return stamp(app["status"]["operationState"]["startedAt"])


def finished(app: dict[str, Any]) -> datetime:
    return stamp(app["status"]["operationState"]["finishedAt"])


def objects_by_step(env: argocd.ArgoEnv) -> dict[str, list[dict[str, Any]]]:
    """What each step's Application syncs: the manifests of its path in the test's repository."""
    found: dict[str, list[dict[str, Any]]] = {}
    for step in STEPS:
        files = sorted((env.repo.work / "rendered" / step).glob("*.yaml"))
        found[step] = [
            d for f in files if f.name != "kustomization.yaml" for d in yaml.safe_load_all(f.read_text()) if d
        ]
    return found


def healthy_and_synced(app: dict[str, Any], revision: str) -> bool:
    status = app.get("status", {})
    sync = status.get("sync", {})
    healthy = status.get("health", {}).get("status") == "Healthy"
    return healthy and sync.get("status") == "Synced" and sync.get("revision") == revision


def lists_job(app: dict[str, Any]) -> bool:
    resources = app["status"].get("resources") or []
    return any(r["kind"] == "Job" and r["name"] == GATE_JOB for r in resources)


def completed(job: dict[str, Any]) -> bool:
    condition = kube.condition(job, "Complete")
    return bool(condition and condition["status"] == "True")


def test_argocd_applicationset_makes_one_application_per_path(env: argocd.ArgoEnv, first: First) -> None:
    apps = argocd.applications(env.dyn)
    assert set(apps) == set(APPS)
    for name, app in apps.items():
        assert app["metadata"]["labels"]["topology.gpustack.ai/sync-step"] == APPS[name]
        assert app["spec"]["source"]["path"] == f"rendered/{APPS[name]}"
        assert app["spec"]["source"]["repoURL"] == env.server.url("fleet")
        # RollingSync owns the syncs: it turned the template's automated sync off.
        assert app["spec"]["syncPolicy"]["automated"]["enabled"] is False
        initiator = app["status"]["operationState"]["operation"]["initiatedBy"]
        assert initiator["username"] == "applicationset-controller", name
        # in the rendered AppProject, which Argo CD found to permit every object it synced
        assert app["spec"]["project"] == "tasgen", name
        assert not [c for c in app["status"].get("conditions") or [] if "Error" in c["type"]], name


def test_argocd_first_sync_runs_the_steps_in_order(env: argocd.ArgoEnv, first: First) -> None:
    by_step: dict[str, list[datetime]] = {step: [] for step in STEPS}
    missing = []
    for step, objects in objects_by_step(env).items():
        for obj in objects:
            try:
                when = kube.created(env.dyn, obj)
            except ApiException:
                missing.append(describe(obj))
                continue
            if obj["kind"] != "Job":
                by_step[step].append(when)
    assert missing == []
    assert all(by_step.values())
    # RollingSync syncs a step once every Application of the step before is Healthy and Synced:
    # all of that step's objects exist by then. Not the Jobs, which each sync of their
    # Application creates afresh (the retire step's is a hook, the gate's is replaced), and
    # RollingSync may sync an Application again after its step (below).
    for before, after in itertools.pairwise(STEPS):
        assert min(by_step[after]) >= max(by_step[before]), (before, after)
    # The gate Job is a resource of the gate's Application, not a hook: that Application is
    # Progressing until the Job has completed, so the queues step came only after a gate run had
    # completed (the API server's times, to the second; with the Job a Sync hook, the queues were
    # created before it completed). Later runs are reruns by the syncs that RollingSync may
    # trigger twice: the gate is idempotent.
    done = [stamp(v["status"]["completionTime"]) for v in first.gate_jobs if completed(v)]
    assert done and min(by_step["queues"]) >= min(done)
    # Why, on every version the API server stored: the gate's Application reported Healthy and
    # Synced (what RollingSync waits for) only with its Job among its resources, so completed (an
    # Application is as healthy as its worst resource, a Job Progressing until it completes). A
    # hook Job is never among them: the Application reported Healthy and Synced without it.
    reported = [v for v in first.gate_app if healthy_and_synced(v, first.revision)]
    without_job = [v["metadata"]["resourceVersion"] for v in reported if not lists_job(v)]
    assert reported and without_job == []
    # And the gate's sync lasted until its Job had completed (its wave-4 ConfigMap came after
    # it), so that a failed Job fails the sync and syncPolicy.retry runs it again.
    assert finished(first.apps["tasgen-gate"]) >= max(done)
    # Both Jobs (the gate's and the retire hook) ran and succeeded (on a first sync the retire
    # step had nothing to delete), and their syncs waited for them. RollingSync may trigger a
    # step's sync twice (it sets the operation again while the Application is Pending), which
    # runs a Job again.
    assert set(env.runner.names.values()) == {"tasgen-gate", "tasgen-retire"}
    assert set(env.runner.done.values()) == {0}
    flux.assert_example_landed(env.api)


def test_argocd_syncs_a_commit_that_drops_a_flavor_through_every_step(
    env: argocd.ArgoEnv, first: First
) -> None:
    gb200 = [f for f in kube.queue_flavors(env.dyn, "training") if "gb200" in f]
    assert len(gb200) == 1
    env.repo.drop_hardware("training", "NVIDIA-GB200")
    runs = set(env.runner.done)
    revision = env.repo.render_and_commit("training drops GB200")
    apps = argocd.wait_synced(env.dyn, revision, set(APPS), env.controllers, SYNC_TIMEOUT_S)
    # Only Applications that were OutOfSync are synced again: the gate's (its plan changed) and
    # the retire step's (its keep list); the queues may already match by then.
    resynced = {s for s in STEPS if started(apps[f"tasgen-{s}"]) > finished(first.apps[f"tasgen-{s}"])}
    assert {"gate", "retire"} <= resynced
    assert kube.queue_flavors(env.dyn, "training") and gb200[0] not in kube.queue_flavors(env.dyn, "training")
    # The gate and the retire Job ran again.
    again = {env.runner.names[uid] for uid in set(env.runner.done) - runs}
    assert again == {"tasgen-gate", "tasgen-retire"}
    assert set(env.runner.done.values()) == {0}
    # RollingSync does not order a later commit (docs/reference/rendered.md, "Order"): when the
    # retire step sees the commit before the gate has switched the queue, its Job waits while
    # the managed queue training still names the flavor, and retires it once the gate has
    # switched: no further sync is needed.
    kube.wait_for(
        f"ResourceFlavor {gb200[0]} deleted",
        lambda: kube.gone(env.dyn, kube.KUEUE_API, "ResourceFlavor", gb200[0]),
    )
    kube.wait_for("training Active", lambda: kube.queue_active(env.dyn, "training"))


@pytest.fixture
def reservations(env: argocd.ArgoEnv) -> Iterator[busy.Reservations]:
    """The Workloads the test holds reservations with, deleted after it, passed or failed."""
    with busy.holding(env) as made:
        yield made


# --- a gate that times out ------------------------------------------------------------------

SHORT_GATE_S = 30  # the least the schema allows
ONE_QUICK_RETRY = {
    "limit": 1,
    "backoff": {"duration": "5s", "factor": 1, "maxDuration": "5s"},
    "refresh": True,
}
FAIL_TIMEOUT_S = 300


def configure(env: argocd.ArgoEnv, timeout_s: int, retry: dict[str, Any]) -> None:
    """The example's GeneratorConfig with another gate timeout and sync.argocd.retry."""
    path = env.repo.work / "inventories" / "config.yaml"
    text = path.read_text()
    timeout, revision = "    timeoutSeconds: 1800\n", "      targetRevision: main\n"
    assert timeout in text and revision in text
    text = text.replace(timeout, f"    timeoutSeconds: {timeout_s}\n")
    path.write_text(text.replace(revision, f"{revision}      retry: {json.dumps(retry)}\n"))


def retries(env: argocd.ArgoEnv, retry: dict[str, Any]) -> bool:
    return all(a["spec"]["syncPolicy"].get("retry") == retry for a in argocd.applications(env.dyn).values())


def failed_at(env: argocd.ArgoEnv, name: str, revision: str) -> dict[str, Any] | None:
    """The Application once its sync of the revision has failed, no retry is left, and its
    health says so (written by a refresh of its own, after the operation's state)."""
    app = argocd.applications(env.dyn)[name]
    status = app.get("status", {})
    state = status.get("operationState", {})
    done = "operation" not in app and state.get("phase") in ("Failed", "Error")
    degraded = status.get("health", {}).get("status") == "Degraded"
    return app if done and degraded and (state.get("syncResult") or {}).get("revision") == revision else None


def settled_at(app: dict[str, Any], revision: str) -> bool:
    """Healthy and Synced at the revision with no operation running, whatever its last sync
    did (a queues sync the admission policy refused leaves Failed behind, though the gate has
    since written the very plan it held)."""
    return "operation" not in app and healthy_and_synced(app, revision)


def sync_now(env: argocd.ArgoEnv, name: str, revision: str) -> None:
    """What `argocd app sync NAME --revision REV` asks of the application controller."""
    operation = {"initiatedBy": {"username": "platform-engineer"}, "sync": {"revision": revision}}
    resource = env.dyn.resources.get(api_version=argocd.ARGO_API, kind="Application")
    resource.patch(
        name=name,
        namespace=argocd.NAMESPACE,
        body={"operation": operation},
        content_type="application/merge-patch+json",
    )


def gate_runs(env: argocd.ArgoEnv, seen: set[str], plan: str) -> list[int]:
    """The exit codes of the gate's runs of one plan (by its hash) since ``seen``, in the order
    they ended: RollingSync or a refresh may still sync the revision before, whose gate passes."""
    with env.runner.lock:  # (its threads record runs as they end)
        done, names, notes = dict(env.runner.done), dict(env.runner.names), dict(env.runner.annotations)
    return [
        code
        for uid, code in done.items()
        if uid not in seen and names[uid] == GATE_JOB and notes[uid].get(PLAN_HASH_ANNOTATION) == plan
    ]


def rendered_plan(env: argocd.ArgoEnv) -> str:
    """The plan hash of the gate Job the working copy's rendered/ holds (the last commit's)."""
    job = busy.named(busy.rendered_objects(env, "Job", "gate"), GATE_JOB)
    plan: str = job["spec"]["template"]["metadata"]["annotations"][PLAN_HASH_ANNOTATION]
    return plan


def gate_runs_ended(env: argocd.ArgoEnv) -> set[str] | None:
    """Every run so far, once no gate run is going on (RollingSync may sync a step twice: a run
    of the revision before must not count as one of the next)."""
    with env.runner.lock:
        running = [u for u, job in env.runner.names.items() if job == GATE_JOB and u not in env.runner.done]
        return None if running else set(env.runner.done)


def test_argocd_a_gate_that_times_out_holds_the_queue_until_a_sync_after_the_drain(
    env: argocd.ArgoEnv, first: First, reservations: busy.Reservations
) -> None:
    configure(env, SHORT_GATE_S, ONE_QUICK_RETRY)
    revision = env.repo.render_and_commit("a short gate timeout and one quick retry")
    argocd.apply_wiring(env)  # as the user's Application of rendered/argocd/ applies it
    kube.wait_for(
        "the ApplicationSet to give every Application the retry", lambda: retries(env, ONE_QUICK_RETRY)
    )
    argocd.wait_synced(env.dyn, revision, set(APPS), env.controllers, SYNC_TIMEOUT_S)
    drop = busy.drop_of(env, *busy.INFERENCE_DROPS_L40S)
    held = reservations.hold(drop)
    seen = kube.wait_for("the gate's runs to end", lambda: gate_runs_ended(env))
    with flux.History(env.api, busy.CLUSTER_QUEUES, drop.queue) as cq:
        revision, plan = busy.commit_drop(env, drop), rendered_plan(env)
        # The workload never lets go: the gate gives up at its timeout, the sync fails with its
        # Job, the one retry recreates the Job, which gives up too; the gate's Application is
        # Degraded ...
        gate = kube.wait_for(
            "the gate's sync to fail and its retry too",
            lambda: failed_at(env, "tasgen-gate", revision),
            FAIL_TIMEOUT_S,
        )
        assert gate["status"]["operationState"]["retryCount"] == ONE_QUICK_RETRY["limit"]
        # Every run gave up (a sync and its retry, each recreating the Job; RollingSync may
        # have triggered the step's sync twice, which makes two more).
        failed_runs = gate_runs(env, seen, plan)
        assert len(failed_runs) >= 1 + ONE_QUICK_RETRY["limit"] and set(failed_runs) == {1}
        # ... and the queue still runs the flavor: RollingSync waits for a Healthy gate, and a
        # queues step it synced early on a stale status would have its switch refused by the
        # admission policy (either way, nothing switched it); the retire step deleted nothing.
        assert drop.flavor in busy.flavor_names(busy.queue(env, drop.queue))
        assert kube.get(env.dyn, kube.KUEUE_API, "ResourceFlavor", drop.flavor)
        held_versions = len(cq.versions())
        # Once the workload is gone, a sync of the gate's Application (a person's `argocd app
        # sync`) drains and switches the queue, and RollingSync syncs the steps after it.
        busy.release(env, drop, held)
        kube.wait_for(
            f"{drop.queue} to report no reservation on {drop.flavor}",
            lambda: busy.load(busy.queue(env, drop.queue), drop.flavor) == 0 or None,
        )
        runs = kube.wait_for("the gate's runs to end", lambda: gate_runs_ended(env))
        sync_now(env, "tasgen-gate", revision)
        kube.wait_for(
            f"every Application settled at {revision[:8]}",
            lambda: all(settled_at(a, revision) for a in argocd.applications(env.dyn).values()) or None,
            SYNC_TIMEOUT_S,
        )
        versions = cq.versions()
    assert all(drop.flavor in busy.flavor_names(v) for v in versions[:held_versions])
    assert drop.flavor not in busy.flavor_names(versions[-1]) and busy.flavor_names(versions[-1])
    assert set(gate_runs(env, runs, plan)) == {0}  # (RollingSync may sync the gate's step once more)
    kube.wait_for(
        f"ResourceFlavor {drop.flavor} retired",
        lambda: kube.gone(env.dyn, kube.KUEUE_API, "ResourceFlavor", drop.flavor),
    )
    kube.wait_for(f"{drop.queue} Active", lambda: kube.queue_active(env.dyn, drop.queue))


# --- a queue's health; what the fleet runs on stays ---------------------------------------------


def working_fleet(env: argocd.ArgoEnv) -> Fleet:
    """The fleet as the working copy renders it now (the tests above changed it)."""
    return load_fleet(env.repo.work / "inventories", env.repo.work / "rendered")


def kueue_api(fleet: Fleet) -> str:
    (api,) = {str(q["apiVersion"]) for q in fleet.of_kind("ClusterQueue")}
    return api


def synced_to(app: dict[str, Any], revision: str) -> bool:
    sync = app.get("status", {}).get("sync", {})
    return bool(sync.get("revision") == revision and sync.get("status") == "Synced")


def held_by_health(env: argocd.ArgoEnv, name: str, revision: str, queue: str) -> dict[str, Any] | None:
    """The Application once it synced the revision and its health is Degraded by the queue."""
    app = argocd.applications(env.dyn)[name]
    status = app.get("status", {})
    synced = (
        status.get("sync", {}).get("revision") == revision
        and status.get("sync", {}).get("status") == "Synced"
    )
    resources = {r["name"] for r in status.get("resources") or [] if r["kind"] == "ClusterQueue"}
    if synced and queue in resources and status.get("health", {}).get("status") == "Degraded":
        return app
    return None


def everything_settled(env: argocd.ArgoEnv, revision: str, names: set[str]) -> bool | None:
    apps = argocd.applications(env.dyn)
    return True if names <= set(apps) and all(settled_at(apps[n], revision) for n in names) else None


def permit_queues(env: argocd.ArgoEnv, names: list[str]) -> None:
    """What an administrator does to the live AppProject for queues the render does not hold."""
    resource = env.dyn.resources.get(api_version=argocd.ARGO_API, kind="AppProject")
    project = resource.get(name="tasgen", namespace=argocd.NAMESPACE).to_dict()
    entries = [{"group": "kueue.x-k8s.io", "kind": "ClusterQueue", "name": n} for n in names]
    project["spec"]["clusterResourceWhitelist"] += entries
    resource.replace(body=project, namespace=argocd.NAMESPACE)


def test_argocd_queue_health_holds_for_an_inactive_queue_not_a_held_one(
    env: argocd.ArgoEnv, first: First
) -> None:
    fleet = working_fleet(env)
    api = kueue_api(fleet)
    rendered = env.repo.work / "rendered"
    # The AppProject names each ClusterQueue it permits: an administrator permits the probes.
    permit_queues(env, ["probe-held", "probe-inactive"])
    # A queue held on purpose (as the gate holds one) is Active=False in Kueue, and Healthy.
    keeping.probe_queue(rendered, "probe-held", stop="Hold")
    revision = env.repo.commit("a held queue")
    kube.wait_for(
        f"every Application settled at {revision[:8]}",
        lambda: everything_settled(env, revision, set(APPS)),
        SYNC_TIMEOUT_S,
    )
    held = keeping.active(env.dyn, api, "probe-held")
    assert held is not None and (held["status"], held["reason"]) == ("False", "Stopped"), held
    # (Argo CD 3 keeps no per-resource health in the Application: its own health is the judge)

    # A queue Kueue keeps inactive (a flavor no one made) is Degraded, and its Application.
    keeping.probe_queue(rendered, "probe-inactive", missing_flavor=True)
    revision = env.repo.commit("a queue naming a missing flavor")
    with flux.History(env.api, APPLICATIONS, "tasgen-queues", argocd.NAMESPACE) as history:
        kube.wait_for(
            "tasgen-queues Degraded by probe-inactive",
            lambda: held_by_health(env, "tasgen-queues", revision, "probe-inactive"),
            SYNC_TIMEOUT_S,
        )
        inactive = keeping.active(env.dyn, api, "probe-inactive")
        assert inactive is not None and inactive["reason"] == "FlavorNotFound", inactive
        flavor = kube.create(env.dyn, keeping.probe_flavor(api))
        kube.wait_for(
            f"every Application settled at {revision[:8]}",
            lambda: everything_settled(env, revision, set(APPS)),
            SYNC_TIMEOUT_S,
        )
        versions = history.versions()
    assert not history.gaps
    # it was Degraded at the revision, and Healthy only once Kueue had the flavor
    at = [v for v in versions if synced_to(v, revision)]
    healths = [v["status"].get("health", {}).get("status") for v in at]
    assert "Healthy" in healths and "Degraded" in healths[: healths.index("Healthy")], healths
    made = stamp(flavor["metadata"]["creationTimestamp"])
    assert all(
        stamp(v["status"]["health"]["lastTransitionTime"]) >= made
        for v in at
        if healthy_and_synced(v, revision)
    )
    # Kueue's quantities as the render writes them: nothing OutOfSync after the queues exist
    assert all(a["status"]["sync"]["status"] == "Synced" for a in argocd.applications(env.dyn).values())
    # back: the probes pruned, then the flavor deleted by hand
    revision = env.repo.render_and_commit("no probe queues")
    kube.wait_for(
        f"every Application settled at {revision[:8]}",
        lambda: everything_settled(env, revision, set(APPS)),
        SYNC_TIMEOUT_S,
    )
    for name in ("probe-held", "probe-inactive"):
        kube.wait_for(f"{name} pruned", lambda n=name: kube.gone(env.dyn, api, "ClusterQueue", n))
    env.dyn.resources.get(api_version=api, kind="ResourceFlavor").delete(name=keeping.PROBE_FLAVOR)


ESCALATION = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRoleBinding",
    "metadata": {"name": "tasgen-gate-admin"},
    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
    "subjects": [{"kind": "ServiceAccount", "name": GATE_JOB, "namespace": GATE_NAMESPACE}],
}


def sync_refused(env: argocd.ArgoEnv, name: str, revision: str) -> dict[str, Any] | None:
    """The Application once Argo CD reports the revision's objects not permitted."""
    app = argocd.applications(env.dyn)[name]
    status = app.get("status", {})
    said = json.dumps([status.get("conditions") or [], status.get("operationState") or {}])
    at = status.get("sync", {}).get("revision") == revision
    return app if at and "not permitted in project" in said and "ClusterRoleBinding" in said else None


def test_argocd_refuses_a_commit_that_binds_cluster_admin(env: argocd.ArgoEnv, first: First) -> None:
    rendered = env.repo.work / "rendered"
    (rendered / "gate" / "escalation.yaml").write_text(yaml.safe_dump(ESCALATION))
    kustomization = rendered / "gate" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "  - escalation.yaml\n")
    revision = env.repo.commit("bind the gate to cluster-admin")
    app = kube.wait_for(
        "the gate's sync refused", lambda: sync_refused(env, "tasgen-gate", revision), SYNC_TIMEOUT_S
    )
    assert app["status"]["health"]["status"] != "Healthy" or app["status"]["sync"]["status"] != "Synced"
    rbac = env.dyn.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRoleBinding")
    with pytest.raises(ApiException) as missing:
        rbac.get(name=ESCALATION["metadata"]["name"])
    assert missing.value.status == 404
    # back
    (rendered / "gate" / "escalation.yaml").unlink()
    revision = env.repo.render_and_commit("no escalation")
    kube.wait_for(
        f"every Application settled at {revision[:8]}",
        lambda: everything_settled(env, revision, set(APPS)),
        SYNC_TIMEOUT_S,
    )
    with pytest.raises(ApiException):
        rbac.get(name=ESCALATION["metadata"]["name"])


def shards(env: argocd.ArgoEnv, count: int) -> None:
    """spec.output.nodeFeatureShards of the working copy's GeneratorConfig."""
    config = env.repo.work / "inventories" / "config.yaml"
    text = config.read_text()
    (line,) = [x for x in text.splitlines() if "nodeFeatureShards:" in x]
    config.write_text(text.replace(line, f"{line.split(':')[0]}: {count}"))


def app_states(env: argocd.ArgoEnv) -> list[tuple[str, ...]]:
    """Each Application's name, sync status and revision, health, operation phase and the
    types of its conditions: what a failed wait says."""
    found = []
    for name, app in sorted(argocd.applications(env.dyn).items()):
        status = app.get("status", {})
        conditions = ",".join(c["type"] for c in status.get("conditions") or [])
        found.append(
            (
                name,
                str(status.get("sync", {}).get("status")),
                str(status.get("sync", {}).get("revision", ""))[:8],
                str(status.get("health", {}).get("status")),
                str(status.get("operationState", {}).get("phase")),
                "operation" if "operation" in app else "",
                conditions,
            )
        )
    return found


def only_settled(env: argocd.ArgoEnv, revision: str, names: set[str]) -> bool | None:
    """Exactly the named Applications exist (the ApplicationSet deleted those of paths the
    render no longer has), each settled at the revision."""
    apps = argocd.applications(env.dyn)
    return True if set(apps) == names and all(settled_at(a, revision) for a in apps.values()) else None


def wait_only_settled(env: argocd.ArgoEnv, revision: str, names: set[str]) -> None:
    try:
        kube.wait_for(
            f"exactly {sorted(names)} settled at {revision[:8]}",
            lambda: only_settled(env, revision, names),
            SYNC_TIMEOUT_S,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the Applications: {app_states(env)}") from None


#: how Argo CD v3 marks the Application an object belongs to: "<application>:<group>/<kind>:..."
TRACKING_ID = "argocd.argoproj.io/tracking-id"


def feature_owners(env: argocd.ArgoEnv, fleet: Fleet) -> dict[str, str]:
    """NodeFeature name -> the Application its tracking annotation names."""
    resource = env.dyn.resources.get(api_version="nfd.k8s-sigs.io/v1alpha1", kind="NodeFeature")
    items = resource.get(namespace=fleet.node_feature_namespace).to_dict()["items"]
    return {
        f["metadata"]["name"]: (f["metadata"].get("annotations") or {}).get(TRACKING_ID, "").partition(":")[0]
        for f in items
    }


def shard_count(env: argocd.ArgoEnv) -> int:
    config = env.repo.work / "inventories" / "config.yaml"
    (line,) = [x for x in config.read_text().splitlines() if "nodeFeatureShards:" in x]
    return int(line.split(":")[1])


@pytest.fixture
def one_labels_path_after(env: argocd.ArgoEnv) -> Iterator[None]:
    """The example's one labels path again after the test, passed or failed (the tests after it
    expect it): committed and settled."""
    yield
    if shard_count(env) != 1:
        shards(env, 1)
        revision = env.repo.render_and_commit("the labels in one path again (cleanup)")
        argocd.apply_wiring(env, ("ApplicationSet",))
        wait_only_settled(env, revision, set(APPS))


def test_argocd_a_shard_layout_change_moves_node_features_without_a_node_losing_a_label(
    env: argocd.ArgoEnv, first: First, one_labels_path_after: None
) -> None:
    fleet = working_fleet(env)
    kept = keeping.kept_objects(fleet.rendered)
    rendered = env.repo.work / "rendered"
    assert set(argocd.expected_applications(rendered)) == set(APPS)
    features = {o["metadata"]["name"] for o in fleet.rendered if o["kind"] == "NodeFeature"}
    assert features and set(feature_owners(env, fleet).items()) >= {(f, "tasgen-labels") for f in features}
    watched = keeping.watched_kinds(kueue_api(fleet))
    with (
        keeping.NodeLabels(env.api, fleet.node_feature_labels()) as nodes,
        keeping.Deletions(env.api, watched) as deletions,
    ):
        # The fleet outgrows one labels path: labels/ goes, labels/shard-N come, and the
        # ApplicationSet's directories say labels/* (applied as the user's Application of
        # rendered/argocd/ applies it). It makes an Application per shard and deletes
        # tasgen-labels, which has no resources finalizer: its NodeFeatures stay, and each
        # shard's sync takes its own over.
        shards(env, 4)
        revision = env.repo.render_and_commit("the labels in 4 shards")
        argocd.apply_wiring(env, ("ApplicationSet",))
        split = argocd.expected_applications(rendered)
        shard_apps = {name for name, step in split.items() if step == "labels"}
        assert len(shard_apps) > 1 and "tasgen-labels" not in split
        wait_only_settled(env, revision, set(split))
        owners = feature_owners(env, fleet)
        assert {owners[f] for f in features} == shard_apps
        assert keeping.missing(env.dyn, kept) == []
        # and back: the shard paths go, labels/ comes again
        shards(env, 1)
        revision = env.repo.render_and_commit("the labels in one path again")
        argocd.apply_wiring(env, ("ApplicationSet",))
        assert set(argocd.expected_applications(rendered)) == set(APPS)
        wait_only_settled(env, revision, set(APPS))
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []
        assert deletions.seen() == []
    owners = feature_owners(env, fleet)
    assert {owners[f] for f in features} == {"tasgen-labels"}


def rename(env: argocd.ArgoEnv, name: str) -> None:
    """sync.argocd.name of the working copy's GeneratorConfig (its ApplicationSet, AppProject
    and the prefix of its Applications)."""
    path = env.repo.work / "inventories" / "config.yaml"
    text = path.read_text()
    anchor = "      targetRevision: main\n"
    assert anchor in text
    path.write_text(text.replace(anchor, f"{anchor}      name: {name}\n"))


def apps_gone(env: argocd.ArgoEnv, names: set[str]) -> bool | None:
    return True if not names & set(argocd.applications(env.dyn)) else None


def test_argocd_renaming_and_deleting_the_application_set_delete_nothing_the_fleet_runs_on(
    env: argocd.ArgoEnv, first: First
) -> None:
    fleet = working_fleet(env)
    kept = keeping.kept_objects(fleet.rendered)
    rendered = env.repo.work / "rendered"
    old = argocd.applications(env.dyn)
    assert set(old) == set(APPS)
    # the ApplicationSet put no resources finalizer on its Applications
    assert all(not a["metadata"].get("finalizers") for a in old.values())
    with keeping.NodeLabels(env.api, fleet.node_feature_labels()) as nodes:
        # sync.argocd.name renamed: a second ApplicationSet takes the objects over, and the old
        # one is deleted (as the user's Application of rendered/argocd/ prunes it), its
        # Applications with it (garbage collection of what it owns).
        rename(env, "gpu")
        revision = env.repo.render_and_commit("sync.argocd.name: gpu")
        argocd.apply_wiring(env)
        renamed = argocd.expected_applications(rendered, "gpu")
        env.dyn.resources.get(api_version=argocd.ARGO_API, kind="ApplicationSet").delete(
            name="tasgen", namespace=argocd.NAMESPACE
        )
        kube.wait_for("the old Applications gone", lambda: apps_gone(env, set(APPS)), SYNC_TIMEOUT_S)
        assert keeping.missing(env.dyn, kept) == []
        kube.wait_for(
            f"gpu's Applications settled at {revision[:8]}",
            lambda: everything_settled(env, revision, set(renamed)),
            SYNC_TIMEOUT_S,
        )
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []

        # Deleting the ApplicationSet deletes its Applications and nothing else.
        env.dyn.resources.get(api_version=argocd.ARGO_API, kind="ApplicationSet").delete(
            name="gpu", namespace=argocd.NAMESPACE
        )
        kube.wait_for("gpu's Applications gone", lambda: apps_gone(env, set(renamed)), SYNC_TIMEOUT_S)
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []
