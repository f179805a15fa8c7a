"""Rules on ClusterQueuePlans and the GeneratorConfig that can be checked without profiles."""

from __future__ import annotations

from collections.abc import Iterable

from generator.model import Finding, Hardware, QueuePlan
from generator.validate.labels import label_key_error, label_value_error, write_refusal
from generator.validate.quantities import quantity_error
from generator.validate.rules.base import Context, Rule


def _identity(ctx: Context) -> Iterable[Finding]:
    keys = ctx.inventory.settings.hardware_identity_keys
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for key, value in hw.identity.items():
                problem = _identity_problem(key, value, keys)
                if problem:
                    yield Finding(hw.where.key_of("identity", key), "plan-identity", problem)


def _identity_problem(key: str, value: str, keys: tuple[str, ...]) -> str | None:
    if key not in keys:
        return (
            f"{key!r} is not a hardware identity key ({', '.join(keys)}); set "
            "GeneratorConfig hardwareIdentityKeys"
        )
    return label_value_error(value)


def _overlap(ctx: Context) -> Iterable[Finding]:
    for plan in ctx.inventory.plans.values():
        for i, hw in enumerate(plan.hardware):
            for earlier in plan.hardware[:i]:
                if _compatible(hw, earlier):
                    yield _overlap_finding(plan, hw, earlier)
                    break


def _compatible(a: Hardware, b: Hardware) -> bool:
    """Whether one node could match both identities: no key where they differ."""
    return all(b.identity.get(k, v) == v for k, v in a.identity.items())


def _overlap_finding(plan: QueuePlan, hw: Hardware, earlier: Hardware) -> Finding:
    message = (
        f"identity {hw.identity} of queue {plan.name!r} can select the same nodes as "
        f"{earlier.identity}: flavor selectors must not overlap (add a distinguishing key)"
    )
    return Finding(hw.where.at("identity"), "flavor-overlap", message)


def _quota(ctx: Context) -> Iterable[Finding]:
    for plan in ctx.inventory.plans.values():
        for hw in plan.hardware:
            for field, resource, value in _amounts(hw):
                where = hw.where.at(field, resource)
                if resource not in plan.covered_resources:
                    covered = ", ".join(plan.covered_resources)
                    yield Finding(where, "plan-quota", f"{resource!r} is not a covered resource ({covered})")
                elif quantity_error(value):
                    yield Finding(where, "quantity", f"{resource}: {quantity_error(value)}")


def _amounts(hw: Hardware) -> Iterable[tuple[str, str, str]]:
    for field, declared in (("nominalQuota", hw.nominal_quota or {}), *hw.limits):
        for resource, value in declared.items():
            yield field, resource, value


def _cluster_queue(ctx: Context) -> Iterable[Finding]:
    for plan in ctx.inventory.plans.values():
        raw = plan.spec.get("clusterQueue", {})
        for old, new in (("cohort", "cohortName"), ("admissionChecks", "admissionChecksStrategy")):
            if old in raw and new in raw:
                where = plan.where.key_of("spec", "clusterQueue", old)
                yield Finding(where, "plan-cluster-queue", f"give {new} or its v1beta1 form {old}, not both")


def _config(ctx: Context) -> Iterable[Finding]:
    settings = ctx.inventory.settings
    if settings.where is None:
        return
    for i, key in enumerate(settings.hardware_identity_keys):
        problem = label_key_error(key)
        if problem:
            message = f"hardwareIdentityKeys: {key!r} is not a label key: {problem}"
            yield Finding(settings.where.at("hardwareIdentityKeys", i), "generator-config", message)
    prefix = settings.admin_label_prefix
    problem = _prefix_problem(prefix) if prefix is not None else None
    if problem:
        yield Finding(settings.where.at("adminLabelPrefix"), "generator-config", problem)


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


RULES = (
    Rule(
        "plan-identity",
        "Identity keys are GeneratorConfig hardwareIdentityKeys; values are label values.",
        _identity,
    ),
    Rule("flavor-overlap", "No two identities of a queue can select the same node.", _overlap),
    Rule("plan-quota", "nominalQuota, borrowingLimit and lendingLimit name only covered resources.", _quota),
    Rule(
        "plan-cluster-queue",
        "clusterQueue gives a field in one spelling (v1beta2 or v1beta1).",
        _cluster_queue,
    ),
    Rule(
        "generator-config",
        "hardwareIdentityKeys are label keys; adminLabelPrefix is outside reserved namespaces.",
        _config,
    ),
)
