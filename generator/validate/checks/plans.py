"""Rules on ClusterQueuePlans and the GeneratorConfig that can be checked without profiles."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...kube.quantities import quantity_error
from ...load.globs import glob_problem
from ...model import PROFILE_KEY, Hardware, QueuePlan
from ...rules import Hit, Rule
from ...rules.semantic import (
    ARGOCD_PROJECT,
    FLAVOR_OVERLAP,
    GATE_NAMESPACE,
    GENERATOR_CONFIG,
    PLAN_CLUSTER_QUEUE,
    PLAN_IDENTITY,
    PLAN_QUOTA,
    QUANTITY,
    RETAIN_FOR,
    RETENTION_UNBOUNDED,
    WORKLOAD_GLOB,
)
from ...util.durations import duration
from ..documents import selector
from ..labels import label_key_error, label_value_error, write_refusal
from .base import Check, Context
from .sources import selector_hits


def _identity(ctx: Context) -> Iterable[Hit]:
    keys = ctx.inventory.settings.hardware_identity_keys
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for key, value in hw.identity.items():
                problem = _identity_problem(key, value, keys)
                if problem:
                    yield Hit(hw.where.key_of("identity", key), problem)


def _identity_problem(key: str, value: str, keys: tuple[str, ...]) -> str | None:
    if key not in keys:
        return (
            f"{key!r} is not a hardware identity key ({', '.join(keys)}); set "
            "GeneratorConfig hardwareIdentityKeys"
        )
    return label_value_error(value)


def _overlap(ctx: Context) -> Iterable[Hit]:
    for plan in ctx.inventory.plans.values():
        for i, hw in enumerate(plan.hardware):
            for earlier in plan.hardware[:i]:
                if _compatible(hw, earlier):
                    yield _overlap_finding(plan, hw, earlier)
                    break


def _compatible(a: Hardware, b: Hardware) -> bool:
    """Whether one node could match both identities: no key where they differ."""
    return all(b.identity.get(k, v) == v for k, v in a.identity.items())


def _overlap_finding(plan: QueuePlan, hw: Hardware, earlier: Hardware) -> Hit:
    message = (
        f"identity {hw.identity} of queue {plan.name!r} can select the same nodes as "
        f"{earlier.identity}: flavor selectors must not overlap (add a distinguishing key)"
    )
    return Hit(hw.where.at("identity"), message)


def _quota_resources(ctx: Context) -> Iterable[Hit]:
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for field, resource, _ in _amounts(hw):
                if resource not in plan.covered_resources:
                    covered = ", ".join(plan.covered_resources)
                    message = f"{resource!r} is not a covered resource ({covered})"
                    yield Hit(hw.where.at(field, resource), message)


def _quota_amounts(ctx: Context) -> Iterable[Hit]:
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for field, resource, value in _amounts(hw):
                problem = quantity_error(value, resource) if resource in plan.covered_resources else None
                if problem:
                    yield Hit(hw.where.at(field, resource), f"{resource}: {problem}")


def _amounts(hw: Hardware) -> Iterable[tuple[str, str, str]]:
    for field, declared in (("nominalQuota", hw.nominal_quota or {}), *hw.limits):
        for resource, value in declared.items():
            yield field, resource, value


def _cluster_queue(ctx: Context) -> Iterable[Hit]:
    for plan in ctx.inventory.plans.values():
        raw = plan.spec.get("clusterQueue", {})
        for old, new in (("cohort", "cohortName"), ("admissionChecks", "admissionChecksStrategy")):
            if old in raw and new in raw:
                where = plan.where.key_of("spec", "clusterQueue", old)
                yield Hit(where, f"give {new} or its v1beta1 form {old}, not both")
        yield from _kueue_fields(plan, raw, ctx.inventory.settings.kueue_api_version)
        raw_selector = plan.cluster_queue.get("namespaceSelector")
        if raw_selector is not None:
            yield from selector_hits(
                selector(raw_selector), plan.where.at("spec", "clusterQueue", "namespaceSelector")
            )


def _kueue_fields(plan: QueuePlan, raw: dict[str, Any], version: str) -> Iterable[Hit]:
    """Fields Kueue refuses in what tasgen writes: flavors named by hand (tasgen names them,
    and renames them when a profile changes), and a v1beta2 field on the v1beta1 target."""
    strategy = raw.get("admissionChecksStrategy", {})
    for i, check in enumerate(strategy.get("admissionChecks", ())):
        if "onFlavors" in check:
            message = (
                "onFlavors names ResourceFlavors, which tasgen names (gpustack-...) and renames when "
                "a profile changes: Kueue would refuse a stale name; give the check to the whole queue"
            )
            yield Hit(
                plan.where.key_of(
                    "spec", "clusterQueue", "admissionChecksStrategy", "admissionChecks", i, "onFlavors"
                ),
                message,
            )
    if version == "v1beta1" and "preference" in raw.get("flavorFungibility", {}):
        message = (
            "flavorFungibility.preference is a v1beta2 field (Kueue v0.17 on); the v1beta1 target "
            "(kueueAPIVersion, for Kueue v0.14 to v0.16) has no such field"
        )
        yield Hit(plan.where.key_of("spec", "clusterQueue", "flavorFungibility", "preference"), message)


def _weight(ctx: Context) -> Iterable[Hit]:
    """fairSharing.weight matches the quantity pattern (schema); its range is checked here."""
    for plan in ctx.inventory.plans.values():
        weight = plan.cluster_queue.get("fairSharing", {}).get("weight")
        problem = quantity_error(str(weight)) if weight is not None else None
        if problem:
            where = plan.where.at("spec", "clusterQueue", "fairSharing", "weight")
            yield Hit(where, f"fairSharing.weight: {problem}")


def _config(ctx: Context) -> Iterable[Hit]:
    settings = ctx.inventory.settings
    if settings.where is None:
        return
    for i, key in enumerate(settings.hardware_identity_keys):
        problem = label_key_error(key)
        if problem:
            message = f"hardwareIdentityKeys: {key!r} is not a label key: {problem}"
            yield Hit(settings.where.at("hardwareIdentityKeys", i), message)
        elif key == PROFILE_KEY:
            message = (
                f"hardwareIdentityKeys: {key!r} is the profile label tasgen writes on every node: "
                "it names no hardware, and a flavor would select its own profile instead"
            )
            yield Hit(settings.where.at("hardwareIdentityKeys", i), message)
    prefix = settings.admin_label_prefix
    problem = _prefix_problem(prefix) if prefix is not None else None
    if problem:
        yield Hit(settings.where.at("adminLabelPrefix"), problem)


#: namespaces that hold more than the gate: the engine would prune one named here, with
#: everything in it, once gate.namespace changes
_SHARED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _gate_namespace(ctx: Context) -> Iterable[Hit]:
    settings = ctx.inventory.settings
    namespace = settings.gate.get("namespace")
    if settings.where is None or namespace is None:
        return
    engines = {
        "the NodeFeatures' namespace (nodeFeatureNamespace)": settings.node_feature_namespace,
        "Flux's (sync.flux.namespace)": settings.sync.get("flux", {}).get("namespace", "flux-system"),
        "the Flux source's (sync.flux.sourceRef.namespace)": settings.sync.get("flux", {})
        .get("sourceRef", {})
        .get("namespace"),
        "Argo CD's (sync.argocd.namespace)": settings.sync.get("argocd", {}).get("namespace", "argocd"),
    }
    whose = next((who for who, name in engines.items() if name == namespace), None)
    if namespace in _SHARED_NAMESPACES or namespace.startswith("kube-"):
        whose = "a namespace of Kubernetes itself"
    if whose is not None:
        message = (
            f"gate.namespace {namespace!r} is {whose}: tasgen renders the gate's Namespace object, "
            "which the GitOps engine would then manage (its labels, and its fate when tasgen is "
            "removed) beside whoever owns it; give the gate a namespace of its own (default tasgen-system)"
        )
        yield Hit(settings.where.at("gate", "namespace"), message)


def _argocd_project(ctx: Context) -> Iterable[Hit]:
    settings = ctx.inventory.settings
    project = settings.sync.get("argocd", {}).get("project")
    if settings.where is not None and project == "default":
        message = (
            "sync.argocd.project 'default' is Argo CD's own project, every other Application's too: "
            "tasgen renders its Applications' AppProject, restricted to what the render holds; "
            "leave project out (it is then named like the ApplicationSet) or name one of tasgen's own"
        )
        yield Hit(settings.where.at("sync", "argocd", "project"), message)


def _prefix_problem(prefix: str) -> str | None:
    """An admin prefix starts label keys ("example.com/" or "example.com/rack-") outside the
    namespaces that are never writable."""
    if "/" not in prefix:
        return f"adminLabelPrefix {prefix!r} must contain '/', e.g. {prefix}/"
    probe = prefix + "x"  # the shortest key the prefix starts
    if label_key_error(probe):
        return f"adminLabelPrefix {prefix!r} does not start a valid label key: {label_key_error(probe)}"
    refusal = write_refusal(probe, None)
    if refusal and "may publish only" not in refusal:
        return f"adminLabelPrefix {prefix!r} is in a reserved namespace: {refusal}"
    return None


def _retain_for(ctx: Context) -> Iterable[Hit]:
    settings = ctx.inventory.settings
    value = settings.gate.get("retainFor")
    if settings.where is None or value is None or duration(value):
        return
    message = (
        f"gate.retainFor {value!r} is not a positive Go duration such as 168h or 36h30m "
        "(units h, m, s, ms, us, ns; at most Go's 2562047h)"
    )
    yield Hit(settings.where.at("gate", "retainFor"), message)


def _retention_unbounded(ctx: Context) -> Iterable[Hit]:
    """WaitForIdle with nothing that ends a retention: at each queue's own dropPolicy, and once
    at the GeneratorConfig's for the queues that take it from there."""
    settings = ctx.inventory.settings
    if settings.gate.get("liveRefresh") is True or "retainFor" in settings.gate:
        return  # an invalid retainFor is retain-for's error, not this warning
    plans = sorted(ctx.inventory.plans.values(), key=lambda p: p.name)
    for plan in plans:
        if plan.drop_policy == "WaitForIdle":
            yield Hit(plan.where.at("spec", "dropPolicy"), _unbounded(f"queue {plan.name!r}"))
    inherited = [p.name for p in plans if p.drop_policy is None]
    if settings.drop_policy == "WaitForIdle" and inherited and settings.where is not None:
        whose = f"queue {inherited[0]!r}" if len(inherited) == 1 else f"queues {', '.join(inherited)}"
        yield Hit(settings.where.at("gate", "dropPolicy"), _unbounded(whose))


def _unbounded(whose: str) -> str:
    return (
        f"{whose} uses dropPolicy WaitForIdle and nothing ends a retention: an offline render keeps "
        "a dropped flavor and pins its nodes for as long as the previous render did; set "
        "GeneratorConfig gate.liveRefresh: true if a scheduled job runs `tasgen render --kubeconfig` "
        "(tasgen init scaffolds one), or gate.retainFor (e.g. 168h)"
    )


def _workload_globs(ctx: Context) -> Iterable[Hit]:
    settings = ctx.inventory.settings
    for i, glob in enumerate(settings.workloads):
        problem = glob_problem(glob)
        if settings.where is not None and problem is not None:
            yield Hit(settings.where.at("workloads", i), f"workloads glob {glob!r} {problem}")


CHECKS: tuple[tuple[Rule, Check], ...] = (
    (PLAN_IDENTITY, _identity),
    (FLAVOR_OVERLAP, _overlap),
    (PLAN_QUOTA, _quota_resources),
    (QUANTITY, _quota_amounts),
    (QUANTITY, _weight),
    (PLAN_CLUSTER_QUEUE, _cluster_queue),
    (GENERATOR_CONFIG, _config),
    (GATE_NAMESPACE, _gate_namespace),
    (ARGOCD_PROJECT, _argocd_project),
    (RETAIN_FOR, _retain_for),
    (RETENTION_UNBOUNDED, _retention_unbounded),
    (WORKLOAD_GLOB, _workload_globs),
)
