"""The API server's half of the drain gate: a ValidatingAdmissionPolicy (CEL) and its binding.

Every writer of a managed ClusterQueue but the gate (an engine applying ``queues/`` early,
selective sync, ``kubectl apply``) is judged against the stored object: ``drop`` (a flavor
dropped only when Kueue reports it idle), ``drain`` (the gate's record and stop policy kept
during a drain), ``label`` (never removed) and ``delete``. A managed queue is one of the render
(by name) or labelled as tasgen's, so that a queue gone from the plan stays protected.
The rules and their exemptions: docs/explanation/gate.md, "The API server enforces the gate".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .engines import MANAGED_BY

ADMISSION_API = "admissionregistration.k8s.io/v1"
#: The gate's record of the stop policy to restore (generator.gate.decision writes it; the
#: compiler may not import the gate, so the name is repeated here and a test pins both).
RECORD = "topology.gpustack.ai/previous-stop-policy"

_STATUS_CURRENT = (
    "has(oldObject.status) && has(oldObject.status.conditions) &&"
    " oldObject.status.conditions.exists(c, c.type == 'Active' && has(c.observedGeneration) &&"
    " c.observedGeneration == oldObject.metadata.generation)"
)
# A flavor (f) that the listing names with its resources, every total there and zero, every
# borrowed quantity zero (listed without resources or totals is unknown, as the gate reads it).
_IDLE_IN = (
    "(has(oldObject.status.{list}) && oldObject.status.{list}.exists(u, u.name == f.name &&"
    " has(u.resources) && size(u.resources) > 0 &&"
    " u.resources.all(q, has(q.total) && quantity(string(q.total)).compareTo(quantity('0')) == 0 &&"
    " (!has(q.borrowed) || quantity(string(q.borrowed)).compareTo(quantity('0')) == 0))))"
)
_KEPT = (
    "(has(object.spec.resourceGroups) &&"
    " object.spec.resourceGroups.exists(h, h.flavors.exists(n, n.name == f.name)))"
)
_DROP_SAFE = (
    "!has(oldObject.spec.resourceGroups) || oldObject.spec.resourceGroups.all(g, g.flavors.all(f,"
    f" {_KEPT} || (variables.statusCurrent && {_IDLE_IN.format(list='flavorsReservation')} &&"
    f" {_IDLE_IN.format(list='flavorsUsage')})))"
)
_DRAINING = f"has(oldObject.metadata.annotations) && '{RECORD}' in oldObject.metadata.annotations"
#: the record on the new object: only the gate adds it (else a record of HoldAndDrain, or one
#: set while nothing drains, would have the gate "restore" a policy nobody had)
_RECORDED = f"has(object.metadata.annotations) && '{RECORD}' in object.metadata.annotations"
_KEEPS_DRAIN = (
    f"has(object.metadata.annotations) && '{RECORD}' in object.metadata.annotations &&"
    f" object.metadata.annotations['{RECORD}'] in ['None', 'Hold'] &&"
    " variables.newPolicy == variables.oldPolicy"
)
_DELETE_SAFE = (
    "variables.oldPolicy == 'HoldAndDrain' || (variables.statusCurrent &&"
    " (!has(oldObject.status.reservingWorkloads) || oldObject.status.reservingWorkloads == 0))"
)


def admission_objects(
    name: str, namespace: str, queues: Sequence[str], meta: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy and its binding, both named ``name``; ``meta`` is the metadata the gate's
    other objects carry (labels, sync wave). The exempt user is the gate's ServiceAccount."""
    policy = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, **meta},
        "spec": {
            "failurePolicy": "Fail",
            # No objectSelector: a write that removes the label would take the queue out of it
            # for every later write. The match conditions select by name and label instead.
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "resourceRules": [
                    {
                        "apiGroups": ["kueue.x-k8s.io"],
                        # both: a v1beta1 target may run on Kueue v0.14, which serves no v1beta2
                        "apiVersions": ["v1beta1", "v1beta2"],
                        "operations": ["UPDATE", "DELETE"],
                        "resources": ["clusterqueues"],
                    }
                ],
            },
            "matchConditions": [{"name": "managed", "expression": _managed(queues)}],
            "variables": _variables(f"system:serviceaccount:{namespace}:{name}"),
            "validations": _validations(f"{namespace}/{name}", name),
        },
    }
    binding = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, **meta},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    return policy, binding


((_KEY, _VALUE),) = MANAGED_BY.items()


def _labelled(obj: str) -> str:
    """CEL: ``obj`` carries the managed-by label with tasgen's value."""
    labels = f"{obj}.metadata.labels"
    return f"(has({labels}) && '{_KEY}' in {labels} && {labels}['{_KEY}'] == '{_VALUE}')"


def _managed(queues: Sequence[str]) -> str:
    """A queue of this render (by name, labelled or not), or one labelled as tasgen's before or
    after the write (a queue gone from the plan, or one that becomes tasgen's in this sync)."""
    names = ", ".join(f"'{q}'" for q in sorted(queues))
    # object is null on a DELETE: && absorbs the error of reading it there
    return (
        f"oldObject.metadata.name in [{names}] || {_labelled('oldObject')} ||"
        f" (request.operation == 'UPDATE' && {_labelled('object')})"
    )


def _variables(gate_user: str) -> list[dict[str, str]]:
    policy = "has({o}.spec.stopPolicy) ? {o}.spec.stopPolicy : 'None'"
    return [
        {"name": "isGate", "expression": f"request.userInfo.username == '{gate_user}'"},
        {"name": "statusCurrent", "expression": _STATUS_CURRENT},
        {"name": "oldPolicy", "expression": policy.format(o="oldObject")},
        {"name": "newPolicy", "expression": policy.format(o="object")},
    ]


def _validations(gate: str, name: str) -> list[dict[str, str]]:
    queue = "'ClusterQueue ' + oldObject.metadata.name + ': "
    # every queue the policy matches, not only the names of the render that installed it: a
    # queue that becomes tasgen's in this sync may be applied before the new policy is
    update = "request.operation != 'UPDATE' || variables.isGate || "
    return [
        {
            "expression": update + f"({_DROP_SAFE})",
            "reason": "Forbidden",
            "messageExpression": queue + "this update drops a flavor on which Kueue reports"
            " reservations or usage (or has not reported the status of the current generation);"
            f" only the tasgen drain gate ({gate}) switches it, after draining. Let the gate"
            " sync run first (docs/explanation/gate.md)'",
        },
        {
            "expression": update + f"(({_DRAINING}) ? ({_KEEPS_DRAIN}) : !({_RECORDED}))",
            "reason": "Forbidden",
            "messageExpression": f"'ClusterQueue ' + oldObject.metadata.name + ': ' + (({_DRAINING}) ?"
            " 'the tasgen drain gate is draining this queue"
            f" (annotation {RECORD}); until it finishes, only the gate ({gate}) changes"
            " spec.stopPolicy or removes the annotation. To choose the policy it restores, set the"
            " annotation to None or Hold (docs/explanation/gate.md)' :"
            f" 'the annotation {RECORD} belongs to the tasgen drain gate: only the gate ({gate})"
            " adds it (docs/explanation/gate.md)')",
        },
        {
            # nobody is exempt (the gate keeps the labels it reads): without the label, a queue
            # gone from the plan would no longer be matched
            "expression": "request.operation != 'UPDATE' ||"
            f" !{_labelled('oldObject')} || {_labelled('object')}",
            "reason": "Forbidden",
            "messageExpression": queue + f"the label {_KEY}: {_VALUE} marks a queue that the tasgen"
            " drain gate guards, and only a delete takes it off: remove the ClusterQueuePlan of the queue"
            " (the engine deletes the queue once it is drained), or in an emergency delete the"
            f" ValidatingAdmissionPolicyBinding {name} first (docs/explanation/gate.md)'",
        },
        {
            "expression": f"request.operation != 'DELETE' || {_DELETE_SAFE}",
            "reason": "Forbidden",
            "messageExpression": queue + "Kueue reports workloads reserving quota on this queue"
            " (or no current status), and it does not evict them from a queue being deleted: set"
            " spec.stopPolicy to HoldAndDrain first (in its ClusterQueuePlan, or kubectl patch),"
            " then delete it (docs/explanation/gate.md)'",
        },
    ]
