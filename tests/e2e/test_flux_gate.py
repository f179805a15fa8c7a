"""The drain gate under real Flux: a commit that drops a flavor on which a workload holds a
reservation, synced by source-controller and kustomize-controller from a git repository on
127.0.0.1. The queue drains before its flavors change; a gate Job deleted mid-drain lets no new
plan through (the admission policy refuses the queues' apply until the recreated gate has
switched the queue); a revert during the drain converges without a switch.

Order is asserted on what the API server wrote, in its order (flux.History), never on sleeps;
only the kubelet is played (tests/e2e/kubelet.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import celpy
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tasgen.gate.decision import PREVIOUS_POLICY_ANNOTATION
from tests.conftest import REPO
from tests.e2e import flux, harness, kube
from tests.e2e.busy import (  # what the tests drop: each starts from the example (fixture example)
    CLUSTER_QUEUES,
    INFERENCE_DROPS_L40S,
    TRAINING_DROPS_GB200,
    Drop,
    Reservations,
    admitted_on,
    commit_drop,
    drop_of,
    evicted,
    flavor_names,
    holding,
    load,
    named,
    queue,
    release,
    rendered_objects,
    stop_policy,
    workload,
)

pytestmark = pytest.mark.cluster

SYNC_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flux.FluxEnv]:
    yield from harness.entered(flux.example_env(tmp_path_factory.mktemp("flux-gate")))


@pytest.fixture(scope="module")
def first(env: flux.FluxEnv) -> str:
    """The example committed and synced once: its revision."""
    revision = env.repo.commit("the example fleet")
    env.sync("./rendered/flux")
    flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
    return revision


@pytest.fixture
def example(env: flux.FluxEnv, first: str) -> str:
    """Each test starts from the example, synced, whatever the tests before it committed: the
    working copy's inventories/ and rendered/ are the repository's again (a commit only when
    they changed). The revision."""
    for folder in ("inventories", "rendered"):
        shutil.rmtree(env.repo.work / folder)
        flux.copy_tree(REPO / folder, env.repo.work / folder)
    if not flux.git(env.repo.work, "status", "--porcelain"):
        return flux.git(env.repo.work, "rev-parse", "HEAD")
    revision = env.repo.commit("back to the example")
    flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
    return revision


@pytest.fixture
def reservations(env: flux.FluxEnv) -> Iterator[Reservations]:
    """The Workloads the test holds reservations with, deleted after it, passed or failed."""
    with holding(env) as made:
        yield made


# --- the queue, version by version ----------------------------------------------------------


@dataclass(frozen=True)
class Drain:
    """Indexes into a queue's versions: the first that reports the flavor busy, the first
    held with HoldAndDrain, the first after it that reports the flavor idle, the first that
    no longer names the flavor; and what the last status before that switch reported."""

    busy: int
    hold: int
    idle: int
    switch: int
    last_load: int | None


def drain_of(versions: list[dict[str, Any]], flavor: str) -> Drain:
    def first(pred: Callable[[dict[str, Any]], bool], start: int = 0) -> int:
        return next((i for i, v in enumerate(versions) if i >= start and pred(v)), -1)

    switch = first(lambda v: flavor not in flavor_names(v))
    hold = first(lambda v: stop_policy(v) == "HoldAndDrain")
    reports = [load(v, flavor) for v in versions[: switch if switch >= 0 else None]]
    return Drain(
        busy=first(lambda v: bool(load(v, flavor))),
        hold=hold,
        idle=first(lambda v: load(v, flavor) == 0, max(hold, 0)),
        switch=switch,
        last_load=next((r for r in reversed(reports) if r is not None), None),
    )


def assert_drained_then_switched(versions: list[dict[str, Any]], drop: Drop) -> Drain:
    drain = drain_of(versions, drop.flavor)
    assert 0 <= drain.busy < drain.hold < drain.idle < drain.switch, drain
    assert drain.last_load == 0, f"switched while Kueue reported {drop.flavor} busy: {drain}"
    return drain


def assert_held(env: flux.FluxEnv, drop: Drop) -> None:
    live = queue(env, drop.queue)
    assert drop.flavor in flavor_names(live), live["spec"]
    assert (
        stop_policy(live) == "HoldAndDrain" and PREVIOUS_POLICY_ANNOTATION in live["metadata"]["annotations"]
    )


def assert_rendered_live(env: flux.FluxEnv, name: str) -> dict[str, Any]:
    """The live queue has every field of the rendered one (Kueue may add defaults)."""
    rendered = named(rendered_objects(env, "ClusterQueue"), name)
    live = queue(env, name)
    assert contains(live["spec"], rendered["spec"]), (live["spec"], rendered["spec"])
    assert PREVIOUS_POLICY_ANNOTATION not in (live["metadata"].get("annotations") or {})
    return live


def contains(live: Any, rendered: Any) -> bool:
    if isinstance(rendered, dict):
        return isinstance(live, dict) and all(k in live and contains(live[k], v) for k, v in rendered.items())
    if isinstance(rendered, list):
        return isinstance(live, list) and len(live) == len(rendered) and all(map(contains, live, rendered))
    return bool(live == rendered)


# --- Flux and the gate Job ------------------------------------------------------------------


def gate_job(env: flux.FluxEnv) -> tuple[str, str]:
    """The name and namespace of the Job that the gate's step syncs."""
    (job,) = rendered_objects(env, "Job", "gate")
    return job["metadata"]["name"], job["metadata"]["namespace"]


def gate_runs(env: flux.FluxEnv, uids: Iterable[str], seen: set[str]) -> str | None:
    """One of the uids that is a gate Job's and not among those seen."""
    name = gate_job(env)[0]
    return next((uid for uid in list(uids) if uid not in seen and env.runner.names.get(uid) == name), None)


def gate_run(env: flux.FluxEnv, seen: set[str]) -> str:
    """The uid of the gate Job whose Pod the stand-in runs now, other than those seen."""
    what = "the Pod of a new gate Job running"
    return kube.wait_for(what, lambda: gate_runs(env, env.runner.running, seen), SYNC_TIMEOUT_S)


def gate_writes(env: flux.FluxEnv, uid: str, name: str) -> list[dict[str, Any]]:
    """The spec writes one gate run made to a queue, as its log reports them."""
    return [ln for ln in env.runner.lines(uid) if ln["event"] == "updated" and ln["queue"] == name]


@dataclass(frozen=True)
class Refusal:
    """How the API server words a refusal of a queue write by the gate's admission policy:
    its name, and its messages for the queue (its CEL messageExpressions, evaluated)."""

    policy: str
    messages: tuple[str, ...]

    def found_in(self, text: str) -> bool:
        said = f"ValidatingAdmissionPolicy '{self.policy}'" in text
        return said and any(message in text for message in self.messages)


def refusal(env: flux.FluxEnv, name: str) -> Refusal:
    (policy,) = rendered_objects(env, "ValidatingAdmissionPolicy", "gate")
    cel = celpy.Environment()
    old = {"oldObject": celpy.json_to_cel({"metadata": {"name": name}})}
    expressions = [v["messageExpression"] for v in policy["spec"]["validations"]]
    messages = [cel.program(cel.compile(e)).evaluate(old) for e in expressions]
    return Refusal(policy["metadata"]["name"], tuple(str(m) for m in messages))


def premature_applies(versions: list[dict[str, Any]], revision: str, refused: Refusal) -> int:
    """The queues' Kustomization never applied the revision, and every attempt it made ended
    refused by the admission policy (Ready=False with its refusal). The number of versions
    that report such an outcome (an attempt is in progress while Ready is Unknown; a later
    DependencyNotReady keeps the last attempted revision but attempts nothing)."""
    refusals = 0
    for k in versions:
        status = k.get("status") or {}
        assert not applied(k, revision), status
        ready = kube.condition(k, "Ready") or {}
        if (
            not attempted(k, revision)
            or ready.get("status") == "Unknown"
            or ready.get("reason") == "DependencyNotReady"
        ):
            continue
        assert ready.get("status") == "False" and refused.found_in(ready.get("message", "")), status
        refusals += 1
    return refusals


def attempted(k: dict[str, Any], revision: str) -> bool:
    return str((k.get("status") or {}).get("lastAttemptedRevision", "")).endswith(revision)


def applied(k: dict[str, Any], revision: str) -> bool:
    """The Kustomization reports the revision applied: Ready=True for it, or its
    lastAppliedRevision (kustomize-controller writes the two in separate patches)."""
    ready = kube.condition(k, "Ready") or {}
    last = str((k.get("status") or {}).get("lastAppliedRevision", ""))
    return last.endswith(revision) or (attempted(k, revision) and ready.get("status") == "True")


def refused_attempt(env: flux.FluxEnv, name: str, revision: str) -> str | None:
    """The Ready message of the Kustomization once an attempt at the revision failed."""
    k = kustomization(env, name)
    ready = kube.condition(k, "Ready") or {}
    failed = ready.get("status") == "False" and ready.get("reason") != "DependencyNotReady"
    return str(ready["message"]) if attempted(k, revision) and failed else None


def reported_load(env: flux.FluxEnv, drop: Drop) -> int:
    """load() once Kueue's status describes the queue's current generation."""
    cq = drop.queue
    return kube.wait_for(f"Kueue's status of {cq}", lambda: load(queue(env, cq), drop.flavor))


def kustomization(env: flux.FluxEnv, name: str) -> dict[str, Any]:
    return kube.get(env.dyn, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, flux.NAMESPACE)


def handled(env: flux.FluxEnv, name: str, token: str) -> dict[str, Any] | None:
    k = kustomization(env, name)
    return k if (k.get("status") or {}).get("lastHandledReconcileAt") == token else None


def flavor_state(env: flux.FluxEnv, name: str) -> str:
    try:
        flavor = kube.get(env.dyn, kube.KUEUE_API, "ResourceFlavor", name)
    except ApiException as exc:
        if exc.status == 404:
            return "absent"
        raise
    return "terminating" if flavor["metadata"].get("deletionTimestamp") else "present"


def queue_history(env: flux.FluxEnv, name: str) -> flux.History:
    return flux.History(env.api, CLUSTER_QUEUES, name)


def stopped_run(env: flux.FluxEnv, uid: str) -> int:
    """The exit code of a gate run whose Job is gone (the stand-in stops its Pod)."""
    return kube.wait_for("the gate's Pod to stop", lambda: env.runner.done.get(uid))


# --- the tests ------------------------------------------------------------------------------


def test_flux_gate_drains_a_busy_flavor_drop_before_the_queues_change(
    env: flux.FluxEnv, example: str, reservations: Reservations
) -> None:
    drop = drop_of(env, *TRAINING_DROPS_GB200)
    rendered = env.repo.work / "rendered"
    queues, refused = flux.step_of(rendered, "queues"), refusal(env, drop.queue)
    with queue_history(env, drop.queue) as cq, flux.kustomization_history(env.api, queues) as kq:
        held = reservations.hold(drop)
        seen = set(env.runner.done)
        revision = commit_drop(env, drop)
        run = gate_run(env, seen)
        kube.wait_for(f"{drop.queue} held", lambda: stop_policy(queue(env, drop.queue)) == "HoldAndDrain")
        kube.wait_for("Kueue to evict the workload", lambda: evicted(workload(env, drop, held)))
        # Flux looks at the queues' step during the hold, with the new revision in its source ...
        token = flux.request_reconcile(env.dyn, queues)
        kube.wait_for(f"{queues} to handle a reconcile request", lambda: handled(env, queues, token))
        # ... and leaves it: the reservation is still there, the queue still names the flavor.
        assert_held(env, drop)
        assert reported_load(env, drop) > 0
        premature_applies(kq.versions(), revision, refused)
        assert flavor_state(env, drop.flavor) == "present"  # not retired while named, nor pruned
        release(env, drop, held)
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        assert not cq.gaps and not kq.gaps
        versions, attempts = cq.versions(), kq.versions()

    drain = assert_drained_then_switched(versions, drop)
    premature_applies(until_applied(attempts, revision), revision, refused)
    # The switch was this gate run's write, not the engine's apply.
    writes = gate_writes(env, run, drop.queue)
    assert [w["action"] for w in writes] == ["Hold", "Switch", "Restore"], writes
    assert versions[drain.switch]["metadata"]["resourceVersion"] == writes[1]["resourceVersion"]
    assert env.runner.done[run] == 0
    # The queue runs the rendered plan, and Flux's apply of it after the gate changed nothing.
    live = assert_rendered_live(env, drop.queue)
    assert live["metadata"]["generation"] == writes[-1]["generation"]
    assert flavor_state(env, drop.flavor) == "absent"  # retired once no queue named it


def test_flux_gate_job_deleted_mid_drain_lets_no_new_plan_through(
    env: flux.FluxEnv, example: str, reservations: Reservations
) -> None:
    drop = drop_of(env, *INFERENCE_DROPS_L40S)
    rendered = env.repo.work / "rendered"
    gate, queues = flux.step_of(rendered, "gate"), flux.step_of(rendered, "queues")
    refused = refusal(env, drop.queue)
    with queue_history(env, drop.queue) as cq, flux.kustomization_history(env.api, queues) as kq:
        held = reservations.hold(drop)
        seen = set(env.runner.done)
        revision = commit_drop(env, drop)
        stopped = gate_run(env, seen)
        kube.wait_for(f"{drop.queue} held", lambda: stop_policy(queue(env, drop.queue)) == "HoldAndDrain")
        kube.wait_for("Kueue to evict the workload", lambda: evicted(workload(env, drop, held)))

        # An operator deletes the Job mid-drain (background propagation, as kubectl does); its
        # Pod gets SIGTERM, to which the gate answers with GateTimeout and exit 1.
        client.BatchV1Api(env.api).delete_namespaced_job(*gate_job(env), propagation_policy="Background")
        assert stopped_run(env, stopped) == 1, env.runner.log(stopped)  # what it did meanwhile
        # kustomize-controller counts the vanished Job (it has ttlSecondsAfterFinished) as
        # finished and applies the queues' step: the admission policy refuses that.
        message = kube.wait_for(
            f"{queues} to fail at {revision[:8]}", lambda: refused_attempt(env, queues, revision)
        )
        assert refused.found_in(message), message
        assert_held(env, drop)
        assert reported_load(env, drop) > 0

        release(env, drop, held)
        kube.wait_for(f"{drop.flavor} idle", lambda: load(queue(env, drop.queue), drop.flavor) == 0)
        assert_held(env, drop)  # idle, but nobody but the gate switches it
        # Flux recreates the Job when it next reconciles the gate's step (requested now rather
        # than after its interval); then the queues' step goes through.
        seen = {*env.runner.done, stopped}
        token = flux.request_reconcile(env.dyn, gate)
        done = kube.wait_for(
            f"{gate} to handle the request", lambda: handled(env, gate, token), SYNC_TIMEOUT_S
        )
        assert flux.ready_at(done, revision), done["status"]
        rerun = kube.wait_for("the recreated Job's run", lambda: gate_runs(env, env.runner.done, seen))
        token = flux.request_reconcile(env.dyn, queues)
        kube.wait_for(f"{queues} to handle the request", lambda: handled(env, queues, token), SYNC_TIMEOUT_S)
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        assert not cq.gaps and not kq.gaps
        versions, attempts = cq.versions(), kq.versions()

    drain = assert_drained_then_switched(versions, drop)
    # Every attempt of the queues' step before the gate finished was refused; there was one.
    assert premature_applies(until_applied(attempts, revision), revision, refused) >= 1
    # The stopped run held the queue; the recreated one switched and restored it.
    assert [w["action"] for w in gate_writes(env, stopped, drop.queue)] == ["Hold"]
    writes = gate_writes(env, rerun, drop.queue)
    assert [w["action"] for w in writes] == ["Switch", "Restore"], writes
    assert versions[drain.switch]["metadata"]["resourceVersion"] == writes[0]["resourceVersion"]
    assert env.runner.done[rerun] == 0
    live = assert_rendered_live(env, drop.queue)
    assert live["metadata"]["generation"] == writes[-1]["generation"]


def until_applied(versions: list[dict[str, Any]], revision: str) -> list[dict[str, Any]]:
    """A Kustomization's versions before the first one that reports the revision applied."""
    done = next((i for i, k in enumerate(versions) if applied(k, revision)), len(versions))
    return versions[:done]


def revert_head(env: flux.FluxEnv) -> str:
    """`git revert` of the last commit, pushed: the new revision."""
    flux.git(env.repo.work, "revert", "--no-edit", "HEAD")
    flux.git(env.repo.work, "push", "-q", "origin", "main")
    return flux.git(env.repo.work, "rev-parse", "HEAD")


def source_at(env: flux.FluxEnv, revision: str) -> bool:
    repo = kube.get(env.dyn, "source.toolkit.fluxcd.io/v1", "GitRepository", "flux-system", flux.NAMESPACE)
    artifact = (repo.get("status") or {}).get("artifact") or {}
    return str(artifact.get("revision", "")).endswith(revision)


def test_flux_gate_revert_during_a_drain_converges_without_a_switch(
    env: flux.FluxEnv, example: str, reservations: Reservations
) -> None:
    drop = drop_of(env, *INFERENCE_DROPS_L40S)
    rendered = env.repo.work / "rendered"
    gate, queues = flux.step_of(rendered, "gate"), flux.step_of(rendered, "queues")
    with queue_history(env, drop.queue) as cq:
        held = reservations.hold(drop)
        seen = set(env.runner.done)
        dropped = commit_drop(env, drop)
        stopped = gate_run(env, seen)
        kube.wait_for(f"{drop.queue} held", lambda: stop_policy(queue(env, drop.queue)) == "HoldAndDrain")
        kube.wait_for("Kueue to evict the workload", lambda: evicted(workload(env, drop, held)))
        revision = revert_head(env)
        kube.wait_for(f"the source at {revision[:8]}", lambda: source_at(env, revision))
        # kustomize-controller handles the other steps at the revert ...
        token = flux.request_reconcile(env.dyn, queues)
        kube.wait_for(f"{queues} to handle a reconcile request", lambda: handled(env, queues, token))
        # ... but does not interrupt the gate step's wait for its Job for a new revision (unless
        # its feature gate CancelHealthCheckOnNewRevision is on): the drop's run goes on.
        assert attempted(kustomization(env, gate), dropped) and stopped in env.runner.running
        # To abandon the drain at once, an operator deletes the Job (docs/explanation/gate.md).
        client.BatchV1Api(env.api).delete_namespaced_job(*gate_job(env), propagation_policy="Background")
        assert stopped_run(env, stopped) == 1, env.runner.log(stopped)  # what it did meanwhile
        flux.wait_synced(env.dyn, revision, flux.steps(env), env.controllers, SYNC_TIMEOUT_S)
        versions = cq.versions()
        assert not cq.gaps

    # Held by the drop's run, restored by the revert's; never switched away from the flavor.
    assert [w["action"] for w in gate_writes(env, stopped, drop.queue)] == ["Hold"]
    rerun = gate_runs(env, env.runner.done, seen | {stopped})
    assert rerun and [w["action"] for w in gate_writes(env, rerun, drop.queue)] == ["Restore"]
    assert any(stop_policy(v) == "HoldAndDrain" for v in versions)
    assert all(drop.flavor in flavor_names(v) for v in versions)
    assert_rendered_live(env, drop.queue)
    assert flavor_state(env, drop.flavor) == "present"
    # The workload never lost its reservation on the flavor (it was evicted, not released).
    assert admitted_on(workload(env, drop, held)) == drop.flavor
    release(env, drop, held)
