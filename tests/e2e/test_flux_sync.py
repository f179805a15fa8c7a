"""Real Flux (source-controller and kustomize-controller v1.9) syncs the example's rendered/ from
a git repository on 127.0.0.1: the first sync lands every object step by step and the queues
become Active; a commit that moves a rack and one that drops a flavor sync to completion."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tasgen.compile.gate_wiring import NAME as GATE_JOB
from tasgen.compile.gate_wiring import RETIRE_NAME as RETIRE_JOB
from tests.e2e import flux, harness, keeping, kube
from tests.e2e.conftest import describe
from tests.e2e.fleet import Fleet, load_fleet

pytestmark = pytest.mark.cluster

STEPS = ("tasgen-labels", "tasgen-kueue", "tasgen-gate", "tasgen-queues", "tasgen-retire")
ALL = {"tasgen-wiring", *STEPS}
SYNC_TIMEOUT_S = 300
MOVED_NODE = "h100-1a-r2-04"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    yield from harness.entered(flux.example_env(tmp_path_factory.mktemp("flux")))


@pytest.fixture(scope="module")
def first(env: flux.FluxEnv) -> tuple[str, list[dict[str, Any]]]:
    """The example committed and synced once: its revision and the Kustomizations then."""
    revision = env.repo.commit("the example fleet")
    env.sync("./rendered/flux")
    return revision, flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def ready_since(kustomization: dict[str, Any]) -> datetime:
    ready = kube.condition(kustomization, "Ready")
    assert ready is not None
    return stamp(ready["lastTransitionTime"])


def test_flux_first_sync_lands_every_object_in_order(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    fleet: Fleet = load_fleet()
    by_name = {k["metadata"]["name"]: k for k in first[1]}
    missing = []
    for obj in fleet.rendered:
        try:
            kube.created(env.dyn, obj)
        except ApiException:
            missing.append(describe(obj))
    assert missing == []
    # Each step's objects were created only once the step before was Ready.
    step_of = {"Topology": 1, "ResourceFlavor": 1, "Job": 2, "ClusterQueue": 3, "retire Job": 4}
    for obj in fleet.rendered:
        retire = obj["kind"] == "Job" and obj["metadata"]["name"] == "tasgen-retire"
        step = step_of.get("retire Job" if retire else obj["kind"])
        if step is not None:
            assert kube.created(env.dyn, obj) >= ready_since(by_name[STEPS[step - 1]]), describe(obj)
    # The gate's and the retire step's Kustomizations were Ready only after their Job's run
    # (each waits for its Job); on a first sync the retire step had nothing to delete.
    assert list(env.runner.done.values()) == [0, 0]
    # Both Jobs have a ttlSecondsAfterFinished under Flux, one that never runs out (each step's
    # Kustomization patches it in): a Job deleted mid-run then counts as finished, which lets an
    # operator abandon a drain (test_flux_gate.py), and no TTL deletes a finished one for Flux
    # to run again (below). The largest the API server takes, an int32.
    for name in (GATE_JOB, RETIRE_JOB):
        (job,) = [o for o in fleet.of_kind("Job") if o["metadata"]["name"] == name]
        live = kube.get(env.dyn, "batch/v1", "Job", name, job["metadata"]["namespace"])
        assert live["spec"]["ttlSecondsAfterFinished"] == 2**31 - 1, name
        assert job["spec"].get("ttlSecondsAfterFinished") != 2**31 - 1, name  # Flux's, not the file's
    flux.assert_example_landed(env.api)


def handled(env: flux.FluxEnv, name: str, token: str) -> dict[str, Any] | None:
    k = kube.get(env.dyn, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, flux.NAMESPACE)
    return k if (k.get("status") or {}).get("lastHandledReconcileAt") == token else None


BACK_DATED = timedelta(days=30)


def back_date(env: flux.FluxEnv, name: str, namespace: str) -> None:
    """Writes the finished Job's status as if it had finished BACK_DATED ago: the time the
    TTL-after-finished controller counts from (its final condition's lastTransitionTime), so a
    TTL shorter than that deletes it now."""
    batch = client.BatchV1Api(env.api)
    job = batch.read_namespaced_job_status(name, namespace)
    when = datetime.now(UTC) - BACK_DATED
    for condition in job.status.conditions:
        condition.last_transition_time = when
        condition.last_probe_time = when
    batch.replace_namespaced_job_status(name, namespace, job)


def test_flux_runs_the_jobs_once_per_change(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    """The Jobs' finish back-dated by a month (the TTL-after-finished controller's clock), then
    three reconciliations of the gate's and the retire step's Kustomizations without a commit:
    the same Jobs (by UID), no new run, neither Kustomization ever not Ready."""
    revision = first[0]
    rendered = env.repo.work / "rendered"
    names = {GATE_JOB: flux.step_of(rendered, "gate"), RETIRE_JOB: flux.step_of(rendered, "retire")}
    namespace = next(iter({o["metadata"]["namespace"] for o in load_fleet().of_kind("Job")}))
    batch = client.BatchV1Api(env.api)

    def uid(job: str) -> str:
        return str(batch.read_namespaced_job(job, namespace).metadata.uid)

    before = {job: uid(job) for job in names}
    runs = dict(env.runner.done)
    for job in names:
        back_date(env, job, namespace)
    with contextlib.ExitStack() as stack:
        histories = [stack.enter_context(flux.kustomization_history(env.api, k)) for k in names.values()]
        for _ in range(3):
            for k in names.values():
                token = flux.request_reconcile(env.dyn, k)
                kube.wait_for(
                    f"{k} to handle {token}", lambda k=k, t=token: handled(env, k, t), SYNC_TIMEOUT_S
                )
        versions = [h.versions() for h in histories]
    assert {job: uid(job) for job in names} == before
    assert dict(env.runner.done) == runs and not env.runner.running
    # never failed meanwhile (Unknown while a reconciliation runs), and Ready at the end
    for found in versions:
        states = [(kube.condition(v, "Ready") or {}).get("status") for v in found]
        assert "False" not in states and flux.ready_at(found[-1], revision), states


def escalation(namespace: str) -> dict[str, Any]:
    """What a commit under rendered/ could add to take the cluster: the gate bound to
    cluster-admin."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "tasgen-gate-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": GATE_JOB, "namespace": namespace}],
    }


def failed_at(env: flux.FluxEnv, name: str, revision: str, *said: str) -> str | None:
    """The Ready message of the Kustomization once it failed at the revision, saying each of
    ``said``."""
    k = kube.get(env.dyn, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, flux.NAMESPACE)
    ready = kube.condition(k, "Ready") or {}
    at = str((k.get("status") or {}).get("lastAttemptedRevision", "")).endswith(revision)
    message = str(ready.get("message", ""))
    return message if at and ready.get("status") == "False" and all(s in message for s in said) else None


def absent(env: flux.FluxEnv, api_version: str, kind: str, name: str) -> bool:
    try:
        kube.get(env.dyn, api_version, kind, name)
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def test_flux_refuses_a_commit_that_binds_cluster_admin(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    """Every Kustomization runs as the rendered ServiceAccount, which may write only what the
    render holds: a ClusterRoleBinding to cluster-admin added to a synced path is refused by
    the API server (RBAC), and so is a Kustomization that would run as kustomize-controller's
    own account (the admission policy of rendered/flux/rbac.yaml)."""
    rendered = env.repo.work / "rendered"
    gate = flux.step_of(rendered, "gate")
    namespace = next(iter({o["metadata"]["namespace"] for o in load_fleet().of_kind("Job")}))
    binding = escalation(namespace)
    name = binding["metadata"]["name"]
    user = f'User "system:serviceaccount:{flux.NAMESPACE}:{flux.SERVICE_ACCOUNT}"'
    (rendered / "gate" / "escalation.yaml").write_text(yaml.safe_dump(binding))
    kustomization = rendered / "gate" / "kustomization.yaml"
    kept = kustomization.read_text()
    kustomization.write_text(kept + "  - escalation.yaml\n")
    revision = env.repo.commit("bind the gate to cluster-admin")
    message = kube.wait_for(
        f"{gate} to fail at {revision[:8]}",
        lambda: failed_at(env, gate, revision, name, "forbidden", user),
        SYNC_TIMEOUT_S,
    )
    assert "clusterrolebindings" in message, message
    assert absent(env, binding["apiVersion"], "ClusterRoleBinding", name)

    # The same binding with the gate's Kustomization running as kustomize-controller (which
    # Flux's installation makes cluster-admin): the root's apply of it is refused.
    gate_file = rendered / "flux" / "gate.yaml"
    wiring = gate_file.read_text()
    line = f"  serviceAccountName: {flux.SERVICE_ACCOUNT}\n"
    assert line in wiring
    gate_file.write_text(wiring.replace(line, "  serviceAccountName: kustomize-controller\n"))
    revision = env.repo.commit("run the gate's step as kustomize-controller")
    message = kube.wait_for(
        f"{flux.ROOT} to fail at {revision[:8]}",
        lambda: failed_at(env, flux.ROOT, revision, "ValidatingAdmissionPolicy", gate),
        SYNC_TIMEOUT_S,
    )
    assert f"runs as {flux.SERVICE_ACCOUNT}" in message, message
    live = kube.get(env.dyn, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", gate, flux.NAMESPACE)
    assert live["spec"]["serviceAccountName"] == flux.SERVICE_ACCOUNT
    assert absent(env, binding["apiVersion"], "ClusterRoleBinding", name)

    # back
    gate_file.write_text(wiring)
    (rendered / "gate" / "escalation.yaml").unlink()
    kustomization.write_text(kept)
    revision = env.repo.commit("no escalation")
    flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)
    assert absent(env, binding["apiVersion"], "ClusterRoleBinding", name)


def node_label(env: flux.FluxEnv, node: str, key: str) -> str | None:
    labels = client.CoreV1Api(env.api).read_node(node).metadata.labels or {}
    return labels.get(key)


def test_flux_syncs_a_commit_that_moves_a_rack(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    snapshot = env.repo.work / "inventories" / "sources" / "h100-racks.yaml"
    text = snapshot.read_text()
    before = f"{MOVED_NODE}: {{infra.example.com/block: blk-a, topology.gpustack.ai/rack: a-r02}}"
    assert before in text
    snapshot.write_text(text.replace(before, before.replace("a-r02", "a-r01")))
    revision = env.repo.render_and_commit(f"move {MOVED_NODE} to rack a-r01")
    flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)
    kube.wait_for(
        f"{MOVED_NODE} labelled with its new rack",
        lambda: node_label(env, MOVED_NODE, "topology.gpustack.ai/rack") == "a-r01" or None,
    )


def test_flux_syncs_a_commit_that_drops_a_flavor(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    gb200 = [f for f in kube.queue_flavors(env.dyn, "training") if "gb200" in f]
    assert len(gb200) == 1
    env.repo.drop_hardware("training", "NVIDIA-GB200")
    runs = len(env.runner.done)
    revision = env.repo.render_and_commit("training drops GB200")
    flux.wait_synced(env.dyn, revision, ALL, env.controllers, SYNC_TIMEOUT_S)
    assert kube.queue_flavors(env.dyn, "training") and gb200[0] not in kube.queue_flavors(env.dyn, "training")
    # The gate ran for the new plan, and the retired flavor went once no queue used it.
    assert len(env.runner.done) > runs and all(code == 0 for code in env.runner.done.values())
    kube.wait_for(
        f"ResourceFlavor {gb200[0]} deleted",
        lambda: kube.gone(env.dyn, kube.KUEUE_API, "ResourceFlavor", gb200[0]),
    )
    kube.wait_for("training Active", lambda: kube.queue_active(env.dyn, "training"))


# --- what the fleet runs on stays; a queue's health ------------------------------------------


def working_fleet(env: flux.FluxEnv) -> Fleet:
    """The fleet as the working copy renders it now (the tests above changed it)."""
    return load_fleet(env.repo.work / "inventories", env.repo.work / "rendered")


def kueue_api(fleet: Fleet) -> str:
    (api,) = {str(q["apiVersion"]) for q in fleet.of_kind("ClusterQueue")}
    return api


def health_checks_running(k: dict[str, Any], revision: str) -> bool:
    """kustomize-controller applied the revision and waits in its health checks."""
    healthy = kube.condition(k, "Healthy")
    message = str((healthy or {}).get("message", ""))
    return bool(
        healthy
        and healthy["status"] == "Unknown"
        and "Running health checks" in message
        and revision in message
    )


def back_to(env: flux.FluxEnv, message: str, probe_flavor: dict[str, Any] | None = None) -> str:
    """The working copy's render committed again (probes gone) and synced; then the probe's
    flavor deleted by hand (no queue names it any more)."""
    revision = env.repo.render_and_commit(message)
    flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
    if probe_flavor is not None:
        resource = env.dyn.resources.get(api_version=probe_flavor["apiVersion"], kind="ResourceFlavor")
        resource.delete(name=probe_flavor["metadata"]["name"])
    return revision


def test_flux_queue_health_waits_for_an_inactive_queue_not_a_held_one(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    fleet = working_fleet(env)
    api = kueue_api(fleet)
    rendered = env.repo.work / "rendered"
    queues = flux.step_of(rendered, "queues")
    # A queue held on purpose (as the gate holds one) is Active=False in Kueue, yet the step
    # is Ready: its health must not wait for the hold.
    keeping.probe_queue(rendered, "probe-held", stop="Hold")
    revision = env.repo.commit("a held queue")
    flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
    held = keeping.active(env.dyn, api, "probe-held")
    assert held is not None and (held["status"], held["reason"]) == ("False", "Stopped"), held

    # A queue that Kueue keeps inactive (a flavor no one made) holds the step, and so retire's.
    keeping.probe_queue(rendered, "probe-inactive", missing_flavor=True)
    revision = env.repo.commit("a queue naming a missing flavor")
    with flux.kustomization_history(env.api, queues) as history:
        inactive = kube.wait_for(
            "Kueue to report probe-inactive",
            lambda: keeping.active(env.dyn, api, "probe-inactive"),
            SYNC_TIMEOUT_S,
        )
        assert (inactive["status"], inactive["reason"]) == ("False", "FlavorNotFound"), inactive
        kube.wait_for(
            f"{queues} to wait in its health checks at {revision[:8]}",
            lambda: health_checks_running(kustomization(env, queues), revision) or None,
            SYNC_TIMEOUT_S,
        )
        retire = kustomization(env, flux.step_of(rendered, "retire"))
        assert not flux.ready_at(retire, revision)
        flavor = kube.create(env.dyn, keeping.probe_flavor(api))
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        versions = history.versions()
    assert not history.gaps
    made = stamp(flavor["metadata"]["creationTimestamp"])
    ready = [v for v in versions if flux.ready_at(v, revision)]
    assert ready and all(ready_since(v) >= made for v in ready)
    back_to(env, "no probe queues", keeping.probe_flavor(api))


def kustomization(env: flux.FluxEnv, name: str) -> dict[str, Any]:
    return kube.get(env.dyn, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, flux.NAMESPACE)


def gone_kustomizations(env: flux.FluxEnv, names: set[str]) -> bool | None:
    return True if not names & {k["metadata"]["name"] for k in flux.kustomizations(env.dyn)} else None


def test_flux_deleting_the_kustomizations_deletes_nothing_the_fleet_runs_on(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    fleet = working_fleet(env)
    kept = keeping.kept_objects(fleet.rendered)
    chain = flux.steps(env) - {flux.ROOT}
    with keeping.NodeLabels(env.api, fleet.node_feature_labels()) as nodes:
        # The user's Kustomization of rendered/flux/ goes: it prunes the chain's
        # Kustomizations, and each orphans what it applied.
        resource = env.dyn.resources.get(api_version="kustomize.toolkit.fluxcd.io/v1", kind="Kustomization")
        resource.delete(name=flux.ROOT, namespace=flux.NAMESPACE)
        kube.wait_for(
            "the chain's Kustomizations gone",
            lambda: gone_kustomizations(env, {flux.ROOT, *chain}),
            SYNC_TIMEOUT_S,
        )
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []
        # and back: the new Kustomizations take over what is there
        env.sync("./rendered/flux")
        revision = flux.git(env.repo.work, "rev-parse", "HEAD")
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []


def shards(env: flux.FluxEnv, count: int) -> None:
    config = env.repo.work / "inventories" / "config.yaml"
    text = config.read_text()
    (line,) = [x for x in text.splitlines() if "nodeFeatureShards:" in x]
    config.write_text(text.replace(line, f"{line.split(':')[0]}: {count}"))


def test_flux_a_shard_layout_change_moves_node_features_without_a_node_losing_a_label(
    env: flux.FluxEnv, first: tuple[str, list[dict[str, Any]]]
) -> None:
    fleet = working_fleet(env)
    kept = keeping.kept_objects(fleet.rendered)
    rendered = env.repo.work / "rendered"
    with keeping.NodeLabels(env.api, fleet.node_feature_labels()) as nodes:
        shards(env, 4)
        revision = env.repo.render_and_commit("the labels in 4 shards")
        split = {k["metadata"]["name"] for k in flux.wiring(rendered)} - set(STEPS)
        assert len(split) > 1 and "tasgen-labels" not in split  # the nodes moved to several shards
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        kube.wait_for(
            "tasgen-labels gone", lambda: gone_kustomizations(env, {"tasgen-labels"}), SYNC_TIMEOUT_S
        )
        shards(env, 1)
        revision = env.repo.render_and_commit("the labels in one path again")
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        kube.wait_for(
            "the shards' Kustomizations gone", lambda: gone_kustomizations(env, split), SYNC_TIMEOUT_S
        )
        assert keeping.missing(env.dyn, kept) == []
        assert nodes.lost() == []
    # every NodeFeature is the labels path's again, none left to another Kustomization
    features = env.dyn.resources.get(api_version="nfd.k8s-sigs.io/v1alpha1", kind="NodeFeature")
    owners = {
        f["metadata"]["labels"].get("kustomize.toolkit.fluxcd.io/name")
        for f in features.get(namespace=fleet.node_feature_namespace).to_dict()["items"]
    }
    assert owners == {"tasgen-labels"}
