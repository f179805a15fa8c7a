"""The drain gate's objects: everything in ``rendered/gate/`` (the engines' wiring that orders
it among the other paths is in :mod:`generator.compile.sync_wiring`).

For Argo CD the Job is a resource of the gate's Application, not a hook, recreated on every
sync and followed by an empty wave-4 ConfigMap, so that the queues sync only after it
completed; for Flux a plan hash in its pod template makes a new plan recreate it. Files,
waves, Job policy: docs/explanation/gate.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Documents, Manifest
from .engines import COMPARE_OPTIONS, FLUX_PRUNE, MANAGED_BY, SYNC_OPTIONS, WAVE
from .gate_admission import ADMISSION_API, admission_objects

NAME = "tasgen-gate"
PLAN_KEY = "clusterqueues.yaml"
PLAN_MOUNT = "/etc/tasgen/plan"
PLAN_HASH_ANNOTATION = "topology.gpustack.ai/plan-hash"
RBAC_API = "rbac.authorization.k8s.io/v1"
#: Seconds a finished retire hook Job stays for its logs to be read (Argo CD; Flux keeps it).
JOB_TTL_SECONDS = 900
#: Grace beyond the gate's own timeout for a pod to be scheduled, pull its image and start.
START_GRACE_SECONDS = 300
#: Pods a Job may start after the first one: only after a crash (exit 3, a killed node); the
#: gate's own verdicts (exit 1 timeout or API error, 2 unusable plan) fail the Job at once.
BACKOFF_LIMIT = 1
#: The gate's exit codes that end the Job (generator.gate.command: TIMEOUT, UNUSABLE).
FINAL_EXIT_CODES = (1, 2)
#: The retire step (rendered/retire/): its Job's name, where its keep list is mounted, and how
#: long it retries a failing API server.
RETIRE_NAME = "tasgen-retire"
KEEP_MOUNT = "/etc/tasgen/retire"
KEEP_KEY = "keep.yaml"
RETIRE_TIMEOUT_SECONDS = 300
#: On every Topology and ResourceFlavor, and in the keep list: the render's serial, which grows
#: with each render that changes the set of them (docs/explanation/gate.md, "Ordering"). The
#: retire step deletes only what an older render stamped (the gate may not import the compiler:
#: generator.gate.retire repeats it, and a test pins both).
RENDER_ANNOTATION = "topology.gpustack.ai/render"


@dataclass(frozen=True)
class RenderStamp:
    """What the previous render (rendered/ as it was) held: its serial, and the names of its
    Topologies and ResourceFlavors."""

    serial: int
    names: frozenset[str]


def render_serial(previous: RenderStamp | None, names: frozenset[str]) -> int:
    """The serial of a render holding ``names``: the previous one while the set is the same (a
    render of the same inventory writes the same bytes), one more when it changes; 1 at first.
    So that a later render never stamps lower than an earlier one along a line of commits."""
    if previous is None:
        return 1
    return max(1, previous.serial if previous.names == names else previous.serial + 1)


KUEUE_GROUP = "kueue.x-k8s.io"
#: What retiring needs: list every flavor, Topology and queue (a foreign queue may name a
#: flavor of ours) and every Workload (its admission may hold a flavor no queue names any
#: more), delete flavors and Topologies. RBAC cannot narrow a delete to a label.
RETIRE_RULES = [
    {"apiGroups": [KUEUE_GROUP], "resources": ["resourceflavors", "topologies"], "verbs": ["list", "delete"]},
    {"apiGroups": [KUEUE_GROUP], "resources": ["clusterqueues", "workloads"], "verbs": ["list"]},
]


def job_deadline_seconds(timeout_seconds: int) -> int:
    """activeDeadlineSeconds of the gate Job: every pod it may start gets the gate's whole
    timeout plus a start margin, so the deadline never cuts a run's own timeout short (it
    only bounds a Job whose pods cannot start at all, e.g. an image that cannot be pulled).
    A Flux wait on the Job should last at least this long."""
    return (BACKOFF_LIMIT + 1) * (timeout_seconds + START_GRACE_SECONDS)


def gate_manifests(
    cluster_queues: Sequence[Mapping[str, Any]],
    *,
    namespace: str,
    image: str,
    timeout_seconds: int,
    event_namespace: str = "default",
    create_namespace: bool = True,
    name: str = NAME,
) -> list[Manifest]:
    """Everything the gate needs in rendered/gate/.

    ``create_namespace``: render the Namespace (a namespace dedicated to the gate, which the
    GitOps engine then owns); turn it off to use a namespace that exists already.
    ``event_namespace``: ``default`` or ``kube-system``, the only namespaces where the API
    server accepts Events about cluster-scoped objects.
    ``name``: of the ServiceAccount, the (Cluster)Roles and bindings and the Job; the plan's
    ConfigMap is ``<name>-plan``.
    """
    gate = _Gate(name, namespace, image, timeout_seconds, event_namespace)
    queues = sorted(str(q["metadata"]["name"]) for q in cluster_queues)
    plan = plan_documents(cluster_queues)
    return [
        *([Manifest("gate/namespace.yaml", gate.namespace_object())] if create_namespace else []),
        Manifest("gate/serviceaccount.yaml", gate.object("v1", "ServiceAccount", namespace)),
        Manifest("gate/clusterrole.yaml", gate.cluster_role(queues)),
        Manifest("gate/clusterrolebinding.yaml", gate.binding("ClusterRoleBinding", None)),
        Manifest("gate/role-events.yaml", gate.events_role()),
        Manifest("gate/rolebinding-events.yaml", gate.binding("RoleBinding", event_namespace)),
        Manifest("gate/role-plan.yaml", gate.plan_role()),
        Manifest("gate/rolebinding-plan.yaml", gate.binding("RoleBinding", namespace, role=f"{name}-plan")),
        Manifest("gate/configmap-plan.yaml", gate.configmap(plan)),
        Manifest("gate/job.yaml", gate.job(plan)),
        Manifest("gate/configmap-done.yaml", gate.done()),
        *gate.admission(queues),
    ]


def plan_documents(cluster_queues: Sequence[Mapping[str, Any]]) -> Documents:
    """The desired queues, reduced to what the gate compares (apiVersion, kind, name, spec):
    annotation-only changes then leave the plan, and so the Job, unchanged."""
    return Documents(
        tuple(
            {
                "apiVersion": q["apiVersion"],
                "kind": q["kind"],
                "metadata": {"name": q["metadata"]["name"]},
                "spec": q.get("spec") or {},
            }
            for q in sorted(cluster_queues, key=lambda q: str(q["metadata"]["name"]))
        )
    )


def retire_manifests(
    kueue_objects: Sequence[Mapping[str, Any]],
    *,
    namespace: str,
    image: str,
    name: str = RETIRE_NAME,
    serial: int = 1,
) -> list[Manifest]:
    """rendered/retire/, the last step of a sync: a Job that deletes the Topologies and
    ResourceFlavors this render no longer holds once nothing refers to them
    (generator.gate.retire), with its own ServiceAccount (not exempt from the admission
    policy: it never writes a queue), RBAC and keep list. In the gate's namespace, which the
    gate step creates before."""
    retire = _Gate(name, namespace, image, RETIRE_TIMEOUT_SECONDS, "default")
    keep = keep_documents(kueue_objects, serial)
    args = ["--keep", KEEP_MOUNT, "--timeout", str(RETIRE_TIMEOUT_SECONDS)]
    pod = _pod_spec(name, image, "tasgen.gate.retire", args, KEEP_MOUNT, f"{name}-keep")
    configmap = retire.object("v1", "ConfigMap", namespace, name=f"{name}-keep")
    return [
        Manifest("retire/serviceaccount.yaml", retire.object("v1", "ServiceAccount", namespace)),
        Manifest(
            "retire/clusterrole.yaml", {**retire.object(RBAC_API, "ClusterRole", None), "rules": RETIRE_RULES}
        ),
        Manifest("retire/clusterrolebinding.yaml", retire.binding("ClusterRoleBinding", None)),
        Manifest("retire/configmap-keep.yaml", {**configmap, "data": {KEEP_KEY: keep}}),
        Manifest("retire/job.yaml", retire.hook_job(pod, keep, RETIRE_TIMEOUT_SECONDS)),
    ]


def keep_documents(kueue_objects: Sequence[Mapping[str, Any]], serial: int = 1) -> Documents:
    """The retire step's keep list: the render's serial and the names of the rendered flavors
    and Topologies."""

    def names(kind: str) -> list[str]:
        return sorted(str(o["metadata"]["name"]) for o in kueue_objects if o["kind"] == kind)

    version = next((str(o["apiVersion"]) for o in kueue_objects), f"{KUEUE_GROUP}/v1beta2")
    doc = {
        "apiVersion": version,
        "render": serial,
        "resourceFlavors": names("ResourceFlavor"),
        "topologies": names("Topology"),
    }
    return Documents((doc,))


@dataclass(frozen=True)
class _Gate:
    name: str
    namespace: str
    image: str
    timeout_seconds: int
    event_namespace: str

    @property
    def labels(self) -> dict[str, str]:
        return {"app.kubernetes.io/name": self.name, **MANAGED_BY}

    def object(
        self, api: str, kind: str, namespace: str | None, wave: str = "2", name: str | None = None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name or self.name}
        if namespace is not None:
            meta["namespace"] = namespace
        meta["labels"] = self.labels
        meta["annotations"] = {WAVE: wave}
        return {"apiVersion": api, "kind": kind, "metadata": meta}

    def namespace_object(self) -> dict[str, Any]:
        """Never pruned or deleted by an engine: when gate.namespace changes, the old one
        stays (with what else was put in it) for an administrator to remove."""
        body = self.object("v1", "Namespace", None, name=self.namespace)
        body["metadata"]["annotations"] |= {
            SYNC_OPTIONS: "Prune=false,Delete=false",
            COMPARE_OPTIONS: "IgnoreExtraneous",  # kept by Prune=false, it must not hold the step OutOfSync
            FLUX_PRUNE: "disabled",
        }
        return body

    def cluster_role(self, queues: Sequence[str]) -> dict[str, Any]:
        """get/update of the managed queues, patch of their status (server-side apply of one
        condition), by name; list of Workloads (their admissions say which flavors are idle;
        a list cannot be narrowed by name). No queue, no rule: an empty resourceNames list
        would mean all."""
        rules: list[dict[str, Any]] = []
        if queues:
            rules = [
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues"],
                    "resourceNames": list(queues),
                    "verbs": ["get", "update"],
                },
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["clusterqueues/status"],
                    "resourceNames": list(queues),
                    "verbs": ["get", "patch"],
                },
                {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]},
            ]
        return {**self.object(RBAC_API, "ClusterRole", None), "rules": rules}

    def events_role(self) -> dict[str, Any]:
        """Events about cluster-scoped queues live in one namespace; creating them is all."""
        role = self.object(RBAC_API, "Role", self.event_namespace)
        role["rules"] = [{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]}]
        return role

    def plan_role(self) -> dict[str, Any]:
        """get of the plan's own ConfigMap: a run writes only while the cluster's plan is still
        the one it was started with (a newer run of another plan may be running)."""
        role = self.object(RBAC_API, "Role", self.namespace, name=f"{self.name}-plan")
        role["rules"] = [
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "resourceNames": [f"{self.name}-plan"],
                "verbs": ["get"],
            }
        ]
        return role

    def binding(self, kind: str, where: str | None, role: str | None = None) -> dict[str, Any]:
        role_kind = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
        body = self.object(RBAC_API, kind, where, name=role)
        body["roleRef"] = {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": role or self.name,
        }
        body["subjects"] = [{"kind": "ServiceAccount", "name": self.name, "namespace": self.namespace}]
        return body

    def admission(self, queues: Sequence[str]) -> list[Manifest]:
        """The policy that makes the API server refuse what the gate would not do (wave 2,
        with the RBAC: in place before the gate runs and before any queue is applied)."""
        meta = self.object(ADMISSION_API, "ValidatingAdmissionPolicy", None)["metadata"]
        meta = {k: v for k, v in meta.items() if k != "name"}
        policy, binding = admission_objects(self.name, self.namespace, queues, meta)
        return [
            Manifest("gate/admissionpolicy.yaml", policy),
            Manifest("gate/admissionpolicybinding.yaml", binding),
        ]

    def configmap(self, plan: Documents) -> dict[str, Any]:
        body = self.object("v1", "ConfigMap", self.namespace, name=f"{self.name}-plan")
        return {**body, "data": {PLAN_KEY: plan}}

    def done(self) -> dict[str, Any]:
        """An empty ConfigMap in wave 4, after the Job. Argo CD waits for the health of a wave's
        resources only when a later wave follows (gitops-engine's sync context: the last wave
        succeeds once applied); with it, Argo CD's sync of the gate lasts until the Job has
        completed and fails when the Job fails, so that syncPolicy.retry runs the gate again.
        Flux applies it with the rest (its wait on the Job is `wait: true`)."""
        return self.object("v1", "ConfigMap", self.namespace, wave="4", name=f"{self.name}-done")

    def job(self, plan: Documents) -> dict[str, Any]:
        """The gate run, in wave 3; its template carries the plan hash. For Argo CD a resource
        of the gate's Application, not a hook: RollingSync then waits for it (a Job is
        Progressing until it completes), and Force/Replace recreates it on every sync of that
        Application (deleted before it is created, as a hook's BeforeHookCreation did), so a
        new plan or a retried sync runs it again. No ttlSecondsAfterFinished: a deleted Job
        would leave the Application OutOfSync; Flux adds one that never runs out (sync_wiring)."""
        body = self._job(self.pod_spec(), plan, self.timeout_seconds, ttl=None)
        body["metadata"]["annotations"][SYNC_OPTIONS] = "Force=true,Replace=true"
        return body

    def hook_job(self, pod: dict[str, Any], config: Documents, timeout_seconds: int) -> dict[str, Any]:
        """A Job that Argo CD runs as a Sync hook (recreated each sync), deleted
        JOB_TTL_SECONDS after it finished (Flux patches in one that never runs out)."""
        body = self._job(pod, config, timeout_seconds, ttl=JOB_TTL_SECONDS)
        body["metadata"]["annotations"].update(
            {
                "argocd.argoproj.io/hook": "Sync",
                "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
            }
        )
        return body

    def _job(
        self, pod: dict[str, Any], config: Documents, timeout_seconds: int, ttl: int | None
    ) -> dict[str, Any]:
        body = self.object("batch/v1", "Job", self.namespace, wave="3")
        digest = config.digest()
        body["spec"] = {
            # A retry covers a crash or a lost node (the run resumes from what it reads); the
            # command's own verdicts end the Job at once, and an eviction is not counted.
            "backoffLimit": BACKOFF_LIMIT,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {
                            "containerName": "gate",
                            "operator": "In",
                            "values": list(FINAL_EXIT_CODES),
                        },
                    },
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                ]
            },
            "activeDeadlineSeconds": job_deadline_seconds(timeout_seconds),
            **({"ttlSecondsAfterFinished": ttl} if ttl is not None else {}),
            "template": {
                "metadata": {"labels": self.labels, "annotations": {PLAN_HASH_ANNOTATION: digest}},
                "spec": pod,
            },
        }
        return body

    def pod_spec(self) -> dict[str, Any]:
        args = [
            "--plan",
            PLAN_MOUNT,
            "--timeout",
            str(self.timeout_seconds),
            "--event-namespace",
            self.event_namespace,
            "--plan-configmap",
            f"{self.namespace}/{self.name}-plan",
        ]
        return _pod_spec(self.name, self.image, "tasgen.gate", args, PLAN_MOUNT, f"{self.name}-plan")


def _pod_spec(
    account: str, image: str, module: str, args: list[str], mount: str, configmap: str
) -> dict[str, Any]:
    """A locked-down pod that runs one module of the gate image with one ConfigMap mounted."""
    return {
        "serviceAccountName": account,
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                # The gate's modules alone, so that an image without the compiler's dependencies
                # (the one of deploy/gate/Dockerfile) runs them as well as a full tasgen image does.
                "name": "gate",
                "image": image,
                "command": ["python", "-m", module],
                "args": args,
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {
                    "requests": {"cpu": "50m", "memory": "64Mi"},
                    "limits": {"memory": "256Mi"},
                },
                "volumeMounts": [{"name": "config", "mountPath": mount, "readOnly": True}],
            }
        ],
        "volumes": [{"name": "config", "configMap": {"name": configmap}}],
    }
