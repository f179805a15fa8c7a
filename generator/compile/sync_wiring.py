"""How GitOps engines sync rendered/: ``rendered/flux/`` and ``rendered/argocd/``.

Every folder of rendered/ with a kustomization.yaml is one synced path. Both engines sync them
in one order, labels -> kueue -> gate -> queues -> retire, each step once the one before is
healthy: Flux by ``dependsOn`` with ``wait: true``, Argo CD by an ApplicationSet whose
RollingSync orders one Application per path. Why this order, and where Argo CD keeps less of
it (the gate's admission policy covers the rest): docs/reference/rendered.md, "Order".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import Manifest
from .engines import MANAGED_BY
from .gate_wiring import NAME as GATE_JOB
from .gate_wiring import RETIRE_NAME, RETIRE_TIMEOUT_SECONDS, job_deadline_seconds

FLUX_API = "kustomize.toolkit.fluxcd.io/v1"
ARGO_API = "argoproj.io/v1alpha1"
STEPS = ("labels", "kueue", "gate", "queues", "retire")
STEP_LABEL = "topology.gpustack.ai/sync-step"
#: kubectl's client-side apply keeps the whole object in one annotation, and the API server
#: refuses annotations over 262,144 bytes in all; leave room for the engine's own labels.
LAST_APPLIED_LIMIT = 262_144 - 8_192
DEFAULT_FLUX_NAMESPACE = "flux-system"
DEFAULT_ARGO = {
    "namespace": "argocd",
    "name": "tasgen",
    "targetRevision": "HEAD",
    "destination": {"server": "https://kubernetes.default.svc"},
}
#: Argo CD's automated sync does not run a failed sync of the same revision again by itself:
#: a gate that timed out before the drain, or a queue apply the admission policy refused, needs
#: a retry; and each retry takes the newest revision (refresh), or a revert made mid-drain would
#: wait until the dropping commit's retries are spent (docs/explanation/gate.md)
#: An Application or Kustomization that goes (deleted, renamed, a labels shard that the layout
#: no longer has) leaves its objects in place: the ApplicationSet's Applications carry no
#: resources finalizer, so the ApplicationSet controller deletes an Application whose path went
#: (policy "sync") without touching its objects, which the new path's Application takes over;
#: and Flux orphans a deleted Kustomization's objects. Kept instead, such an Application would
#: stay unsynced for ever, its path missing. Deleting on purpose: docs/reference/rendered.md,
#: "Deletion".
APPSET_SYNC_POLICY: dict[str, Any] = {
    "preserveResourcesOnDeletion": True,
    "applicationsSync": "sync",
}
FLUX_DELETION_POLICY = "Orphan"
#: The ServiceAccount every Flux Kustomization tasgen renders runs as (kustomize-controller
#: impersonates it), and the file that grants it exactly what the render writes: an
#: administrator applies that file, no Kustomization syncs it (a commit could widen it).
#: docs/explanation/gate.md, "Who is trusted".
FLUX_SERVICE_ACCOUNT = "tasgen-flux"
FLUX_RBAC_FILE = "flux/rbac.yaml"
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API = f"{RBAC_GROUP}/v1"
ADMISSION_API = "admissionregistration.k8s.io/v1"
#: The API groups whose cluster-scoped objects Flux's ServiceAccount may write by name only:
#: those that grant API access or guard it. Kueue's objects grant none, and their names follow
#: the inventory (a new queue or profile would otherwise be an administrator's change, and a
#: queue a render drops could not be pruned once the new grant is applied).
NAMED_GROUPS = frozenset({"", RBAC_GROUP, "admissionregistration.k8s.io"})
READ = ["get", "list", "watch"]
WRITE = ["create", "patch", "update", "delete"]
#: Flux's gate and retire Jobs have a TTL that never runs out (the largest the API takes):
#: kustomize-controller counts a vanished Job as finished only when its manifest has a TTL (an
#: operator deleting the Job ends the step's wait), and a Job the TTL deleted Flux would run
#: again at its next reconciliation. docs/explanation/gate.md, "Ordering".
FLUX_JOB_TTL_SECONDS = 2**31 - 1
#: Kueue writes a queue's Active condition; a queue held on purpose (stopPolicy, e.g. by the
#: drain gate) is Active=False with reason Stopped and, when nothing else is wrong, exactly
#: this message (Kueue v0.17 lists every cause in it): it counts as healthy, else the step
#: would wait for the gate's own hold. Argo CD's Lua in templates/init/ says the same (its
#: sandbox has no string library: equality it is).
HELD_MESSAGE = "Can't admit new workloads: is stopped."
_ACTIVE = "has(status.conditions) && status.conditions.exists(c, c.type == 'Active' && ({}))"
_HELD = f'c.reason == "Stopped" && c.message == "{HELD_MESSAGE}"'
#: A LocalQueue is Active=False whenever its ClusterQueue is, a held one too: its own health
#: leaves that to the ClusterQueue's and waits only for a queue it names that is missing.
LOCAL_QUEUE_OK = "c.status == 'True' || c.reason == 'Stopped' || c.reason == 'ClusterQueueIsInactive'"
DEFAULT_RETRY: dict[str, Any] = {
    "limit": 5,
    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
    "refresh": True,
}


@dataclass(frozen=True)
class Paths:
    """The synced folders of rendered/, by step, and where rendered/ is in the repository."""

    repo_path: str  # e.g. "rendered" or "clusters/prod/rendered", no leading ./ or trailing /
    labels: tuple[str, ...]  # "labels" alone, or "labels/shard-000", ...
    sharded: bool

    @staticmethod
    def of(repo_path: str, label_folders: Iterable[str]) -> Paths:
        labels = tuple(sorted(set(label_folders))) or ("labels",)  # no node: an empty labels path
        clean = repo_path.strip().removeprefix("./").rstrip("/") or "."
        return Paths(clean, labels, any("/" in f for f in labels))

    @property
    def folders(self) -> tuple[str, ...]:
        """Every synced folder of rendered/: each is written, with its kustomization.yaml, even
        when it holds nothing (no queue plan, no node), since the engines sync each path
        whether or not the render fills it (a missing one stalls Flux's chain, or has Argo CD's
        generator delete its Application instead of pruning it)."""
        return tuple(f for _, folders in self.by_step() for f in folders)

    def by_step(self) -> list[tuple[str, Sequence[str]]]:
        return [("labels", self.labels), *((step, (step,)) for step in STEPS[1:])]

    def in_repo(self, folder: str) -> str:
        return folder if self.repo_path == "." else f"{self.repo_path}/{folder}"


#: Kinds whose names follow the inventory (a flavor and a Topology per profile): the AppProject
#: names them by tasgen's prefix, so that a new profile needs no new AppProject; every other
#: cluster-scoped object it names one by one.
BY_PREFIX = {("kueue.x-k8s.io", "ResourceFlavor"), ("kueue.x-k8s.io", "Topology")}
CATALOG_PREFIX = "gpustack-"


@dataclass(frozen=True)
class Synced:
    """What the engines apply from the synced paths, as an AppProject sees it: the
    cluster-scoped objects by kind and name, the namespaced kinds, and the namespaces that
    namespaced objects go to."""

    cluster_objects: frozenset[tuple[str, str, str]]  # (group, kind, name)
    namespaced_kinds: frozenset[tuple[str, str]]
    namespaces: frozenset[str]
    home: str  # the gate's namespace: the Applications' destination namespace
    #: the rules of the render's ClusterRoles and of its Roles (JSON texts, in render order):
    #: what Flux's ServiceAccount must hold itself to write them (RBAC refuses escalation)
    cluster_role_rules: tuple[str, ...] = ()
    role_rules: tuple[str, ...] = ()
    role_names: frozenset[str] = frozenset()

    @property
    def cluster_kinds(self) -> frozenset[tuple[str, str]]:
        return frozenset((group, kind) for group, kind, _ in self.cluster_objects)

    @staticmethod
    def of(objects: Iterable[Mapping[str, Any]], home: str) -> Synced:
        """``objects``: every object of the synced paths (an object with a namespace is of a
        namespaced kind: tasgen writes the namespace of each)."""
        cluster: set[tuple[str, str, str]] = set()
        namespaced: set[tuple[str, str]] = set()
        namespaces = {home}
        rules: dict[str, list[str]] = {"ClusterRole": [], "Role": []}
        role_names: set[str] = set()
        for obj in objects:
            kind = (str(obj["apiVersion"]).rpartition("/")[0], str(obj["kind"]))
            meta = obj.get("metadata") or {}
            namespace = meta.get("namespace")
            if namespace:
                namespaced.add(kind)
                namespaces.add(str(namespace))
            else:
                cluster.add((*kind, str(meta["name"])))
            if kind[0] == RBAC_GROUP and kind[1] in rules:
                rules[kind[1]] += [json.dumps(rule, sort_keys=True) for rule in obj.get("rules") or ()]
                role_names.add(str(meta["name"]))
        return Synced(
            frozenset(cluster),
            frozenset(namespaced),
            frozenset(namespaces),
            home,
            tuple(dict.fromkeys(rules["ClusterRole"])),
            tuple(dict.fromkeys(rules["Role"])),
            frozenset(role_names),
        )


def wiring(
    paths: Paths, sync: Mapping[str, Any], gate_timeout: int, synced: Synced, kueue_api: str
) -> list[Manifest]:
    """rendered/flux/ always; rendered/argocd/ when the config names the repository.
    ``kueue_api``: the apiVersion of the queues, whose health Flux checks."""
    found = flux_kustomizations(paths, sync.get("flux", {}), gate_timeout, kueue_api)
    found += flux_rbac(sync.get("flux", {}), synced)
    if "argocd" in sync:
        argo = sync["argocd"]
        found.append(Manifest("argocd/appproject.yaml", app_project(argo, synced)))
        found.append(Manifest("argocd/applicationset.yaml", application_set(paths, argo, synced.home)))
    return found


# --- Flux -------------------------------------------------------------------------------


def flux_kustomizations(
    paths: Paths, flux: Mapping[str, Any], gate_timeout: int, kueue_api: str
) -> list[Manifest]:
    """One Kustomization per path; labels shards in one file (it changes only when a shard
    appears or goes), each other step in its own."""
    found: list[Manifest] = []
    before: Sequence[str] = ()
    for step, folders in paths.by_step():
        for folder in folders:
            body = _flux_kustomization(paths, flux, folder, before, gate_timeout)
            if folder == "queues":
                body["spec"]["healthCheckExprs"] = queue_health_exprs(kueue_api)
            found.append(Manifest(f"flux/{step}.yaml", body))
        before = folders
    return found


def _flux_name(folder: str) -> str:
    return "tasgen-" + folder.replace("/", "-")


def _flux_kustomization(
    paths: Paths, flux: Mapping[str, Any], folder: str, after: Sequence[str], gate_timeout: int
) -> dict[str, Any]:
    source = flux.get("sourceRef", {})
    spec: dict[str, Any] = {
        "interval": flux.get("interval", "10m"),
        "retryInterval": "1m",
        "timeout": "5m",
        "path": f"./{paths.in_repo(folder)}",
        "prune": True,
        "deletionPolicy": FLUX_DELETION_POLICY,
        "wait": True,
        "sourceRef": {"kind": source.get("kind", "GitRepository"), "name": source.get("name", "flux-system")},
        "serviceAccountName": FLUX_SERVICE_ACCOUNT,
    }
    if "namespace" in source:
        spec["sourceRef"]["namespace"] = source["namespace"]
    if after:
        spec["dependsOn"] = [{"name": _flux_name(f)} for f in after]
    if folder == "gate":
        # The Job is immutable: a new plan hash in its template makes Flux recreate it.
        spec["force"] = True
        spec["timeout"] = f"{job_deadline_seconds(gate_timeout) + 60}s"
        spec["patches"] = [_job_ttl_patch(GATE_JOB)]
    if folder == "retire":
        spec["force"] = True  # the same for the retire Job and its keep list's hash
        spec["timeout"] = f"{job_deadline_seconds(RETIRE_TIMEOUT_SECONDS) + 60}s"
        spec["patches"] = [_job_ttl_patch(RETIRE_NAME)]
    meta = {
        "name": _flux_name(folder),
        "namespace": flux.get("namespace", DEFAULT_FLUX_NAMESPACE),
        "labels": dict(MANAGED_BY),
    }
    return {"apiVersion": FLUX_API, "kind": "Kustomization", "metadata": meta, "spec": spec}


def _job_ttl_patch(job: str) -> dict[str, Any]:
    """FLUX_JOB_TTL_SECONDS on a Job: added to the gate's (Argo CD's has none: a deleted Job
    would leave its Application OutOfSync), in place of the retire hook's (Argo CD's is short)."""
    # A JSON 6902 patch (kustomize takes JSON): json.dumps, not a second YAML writer. "add"
    # replaces a member that is there.
    ops = [{"op": "add", "path": "/spec/ttlSecondsAfterFinished", "value": FLUX_JOB_TTL_SECONDS}]
    patch = json.dumps(ops, separators=(",", ":"))
    return {"patch": patch, "target": {"kind": "Job", "name": job}}


def _plural(kind: str) -> str:
    """The resource of a kind, as RBAC names it (the kinds a render holds all follow this)."""
    lower = kind.lower()
    return f"{lower[:-1]}ies" if lower.endswith("y") else f"{lower}s"


def _rule(group: str, kinds: Iterable[str], verbs: list[str], names: Iterable[str] = ()) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted({_plural(k) for k in kinds})}
    if names:
        rule["resourceNames"] = sorted(set(names))
    return {**rule, "verbs": verbs}


def flux_rbac(flux: Mapping[str, Any], synced: Synced) -> list[Manifest]:
    """``flux/rbac.yaml``: the ServiceAccount the Kustomizations run as, what it may do, and
    an admission policy that keeps the Kustomizations it writes running as itself. Not synced:
    rendered/flux/kustomization.yaml leaves it out (emit/tree.py)."""
    namespace = flux.get("namespace", DEFAULT_FLUX_NAMESPACE)
    subject = [{"kind": "ServiceAccount", "name": FLUX_SERVICE_ACCOUNT, "namespace": namespace}]
    meta = {"labels": dict(MANAGED_BY)}
    namespaced = f"{FLUX_SERVICE_ACCOUNT}-namespaced"

    def role_ref(kind: str, name: str) -> dict[str, str]:
        return {"apiGroup": RBAC_GROUP, "kind": kind, "name": name}

    bodies: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": synced.home, **meta}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": FLUX_SERVICE_ACCOUNT, "namespace": namespace, **meta},
        },
        {
            "apiVersion": RBAC_API,
            "kind": "ClusterRole",
            "metadata": {"name": FLUX_SERVICE_ACCOUNT, **meta},
            "rules": _flux_cluster_rules(synced),
        },
        {
            "apiVersion": RBAC_API,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": FLUX_SERVICE_ACCOUNT, **meta},
            "roleRef": role_ref("ClusterRole", FLUX_SERVICE_ACCOUNT),
            "subjects": subject,
        },
        {
            "apiVersion": RBAC_API,
            "kind": "ClusterRole",
            "metadata": {"name": namespaced, **meta},
            "rules": _flux_namespaced_rules(synced),
        },
    ]
    for where in sorted(synced.namespaces):
        bodies.append(
            {
                "apiVersion": RBAC_API,
                "kind": "RoleBinding",
                "metadata": {"name": FLUX_SERVICE_ACCOUNT, "namespace": where, **meta},
                "roleRef": role_ref("ClusterRole", namespaced),
                "subjects": subject,
            }
        )
    bodies.append(
        {
            "apiVersion": RBAC_API,
            "kind": "Role",
            "metadata": {"name": FLUX_SERVICE_ACCOUNT, "namespace": namespace, **meta},
            "rules": [_rule("kustomize.toolkit.fluxcd.io", ["Kustomization"], READ + WRITE)],
        }
    )
    bodies.append(
        {
            "apiVersion": RBAC_API,
            "kind": "RoleBinding",
            "metadata": {"name": f"{FLUX_SERVICE_ACCOUNT}-wiring", "namespace": namespace, **meta},
            "roleRef": role_ref("Role", FLUX_SERVICE_ACCOUNT),
            "subjects": subject,
        }
    )
    bodies += _flux_wiring_policy(namespace)
    return [Manifest(FLUX_RBAC_FILE, body) for body in bodies]


def _flux_cluster_rules(synced: Synced) -> list[dict[str, Any]]:
    """Reading every cluster-scoped kind the render holds (Flux's health checks list them);
    writing its RBAC, admission policy and Namespace by name (a server-side apply that creates
    is authorized as a create of that name), Kueue's kinds by kind (NAMED_GROUPS); binding only
    the render's own roles; and the rules of the ClusterRoles it writes, which RBAC lets it
    grant only if it holds them (no ``escalate``)."""
    by_kind: dict[tuple[str, str], list[str]] = {}
    for group, kind, name in sorted(synced.cluster_objects):
        by_kind.setdefault((group, kind), []).append(name)
    rules: list[dict[str, Any]] = []
    for (group, kind), names in sorted(by_kind.items()):
        rules.append(_rule(group, [kind], READ))
        by_name = group in NAMED_GROUPS
        rules.append(_rule(group, [kind], WRITE, names if by_name else ()))
    cluster_roles = sorted(n for g, k, n in synced.cluster_objects if (g, k) == (RBAC_GROUP, "ClusterRole"))
    if cluster_roles:
        rules.append(_rule(RBAC_GROUP, ["ClusterRole"], ["bind"], cluster_roles))
    return rules + _held(synced.cluster_role_rules)


def _held(rules: Iterable[str]) -> list[dict[str, Any]]:
    """The rules of the render's roles, without their names: held by kind, they stay the same
    when a queue is added (the gate's role names each queue)."""
    found = []
    for text in rules:
        rule = {k: v for k, v in json.loads(text).items() if k != "resourceNames"}
        if rule not in found:
            found.append(rule)
    return found


def _flux_namespaced_rules(synced: Synced) -> list[dict[str, Any]]:
    """Bound in each namespace the render writes to: its namespaced kinds, by kind (a
    NodeFeature per node: names would make every new node an administrator's change), binding
    only the render's roles, and the rules of the Roles it writes (see above)."""
    rules = [_rule(g, [k], READ + WRITE) for g, k in sorted(synced.namespaced_kinds)]
    if synced.role_names:
        rules.append(_rule(RBAC_GROUP, ["Role", "ClusterRole"], ["bind"], synced.role_names))
    return rules + _held(synced.role_rules)


def _flux_wiring_policy(namespace: str) -> list[dict[str, Any]]:
    """The Kustomizations the ServiceAccount writes (rendered/flux/, synced by the root
    Kustomization that runs as it too) are tasgen's own (named ``tasgen-*``: not Flux's
    bootstrap, whose deletion would prune all it holds), run as it, and reach nothing else: no
    other account to impersonate (kustomize-controller's own is cluster-admin), no
    kubeconfig, no Secrets read into the objects (postBuild), no decryption keys."""
    name = f"{FLUX_SERVICE_ACCOUNT}-wiring"
    user = f"system:serviceaccount:{namespace}:{FLUX_SERVICE_ACCOUNT}"
    written = "request.operation == 'DELETE' || "
    checks = [
        (
            "(request.operation == 'DELETE' ? oldObject : object).metadata.name.startsWith('tasgen-')",
            "is named tasgen-*",
        ),
        (
            f"{written}(has(object.spec.serviceAccountName) && "
            f"object.spec.serviceAccountName == '{FLUX_SERVICE_ACCOUNT}')",
            f"runs as {FLUX_SERVICE_ACCOUNT} (spec.serviceAccountName)",
        ),
        (f"{written}!has(object.spec.kubeConfig)", "sets no spec.kubeConfig"),
        (f"{written}!has(object.spec.postBuild)", "sets no spec.postBuild"),
        (f"{written}!has(object.spec.decryption)", "sets no spec.decryption"),
    ]
    rule = {
        "apiGroups": ["kustomize.toolkit.fluxcd.io"],
        "apiVersions": ["*"],
        "operations": ["CREATE", "UPDATE", "DELETE"],
        "resources": ["kustomizations"],
    }
    return [
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [rule]},
                "matchConditions": [
                    {"name": "written-by-flux", "expression": f"request.userInfo.username == '{user}'"}
                ],
                "validations": [
                    {
                        "expression": expression,
                        "message": f"a Kustomization {FLUX_SERVICE_ACCOUNT} writes {what}",
                    }
                    for expression, what in checks
                ],
            },
        },
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": dict(MANAGED_BY)},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]


def queue_health_exprs(kueue_api: str) -> list[dict[str, str]]:
    """Flux's health of ClusterQueues and LocalQueues (kstatus knows neither): current once
    Kueue says the queue is Active, or held on purpose; in progress otherwise, so that the
    Kustomization waits (up to its timeout) for an inactive queue."""
    return [
        {
            "apiVersion": kueue_api,
            "kind": "ClusterQueue",
            "current": _ACTIVE.format(f"c.status == 'True' || {_HELD}"),
        },
        {"apiVersion": kueue_api, "kind": "LocalQueue", "current": _ACTIVE.format(LOCAL_QUEUE_OK)},
    ]


# --- Argo CD ----------------------------------------------------------------------------


def _settings(argo: Mapping[str, Any]) -> dict[str, Any]:
    settings = {**DEFAULT_ARGO, **argo}
    settings.setdefault("project", settings["name"])  # a project of tasgen's own
    return settings


def app_project(argo: Mapping[str, Any], synced: Synced) -> dict[str, Any]:
    """The AppProject of tasgen's Applications: the repository, the destination cluster, only
    the namespaces and namespaced kinds the render holds, and its cluster-scoped objects by
    name (flavors and Topologies by tasgen's prefix), so that a commit to the synced paths (or
    an edit of an Application) cannot make Argo CD apply anything else, e.g. a RoleBinding in
    kube-system or a ClusterRoleBinding to cluster-admin. Namespaced kinds cannot be named
    (Argo CD's namespaceResourceWhitelist takes none). Why: docs/explanation/gate.md, "Who is
    trusted"."""
    settings = _settings(argo)

    def kinds(found: frozenset[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"group": group, "kind": kind} for group, kind in sorted(found)]

    def named(found: frozenset[tuple[str, str, str]]) -> list[dict[str, str]]:
        """Argo CD v3.5 matches a whitelist entry's name as a glob (an older CRD without the
        field drops it, and permits the whole kind)."""
        entries = {
            (group, kind, f"{CATALOG_PREFIX}*" if (group, kind) in BY_PREFIX else name)
            for group, kind, name in found
        }
        return [{"group": group, "kind": kind, "name": name} for group, kind, name in sorted(entries)]

    return {
        "apiVersion": ARGO_API,
        "kind": "AppProject",
        "metadata": {
            "name": settings["project"],
            "namespace": settings["namespace"],
            "labels": dict(MANAGED_BY),
        },
        "spec": {
            "description": "tasgen's rendered/ paths: only the namespaces, kinds and names its render holds",
            "sourceRepos": [settings["repoURL"]],
            "destinations": [
                {**settings["destination"], "namespace": namespace} for namespace in sorted(synced.namespaces)
            ],
            "clusterResourceWhitelist": named(synced.cluster_objects),
            "namespaceResourceWhitelist": kinds(synced.namespaced_kinds),
        },
    }


def application_set(paths: Paths, argo: Mapping[str, Any], home: str) -> dict[str, Any]:
    """Git directory generator over the synced paths, RollingSync over the steps. ``home``:
    the Applications' destination namespace (the gate's), which their AppProject permits."""
    settings = _settings(argo)
    return {
        "apiVersion": ARGO_API,
        "kind": "ApplicationSet",
        "metadata": {
            "name": settings["name"],
            "namespace": settings["namespace"],
            "labels": dict(MANAGED_BY),
        },
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"git": _directory_generator(paths, settings)}],
            "syncPolicy": dict(APPSET_SYNC_POLICY),
            "strategy": {
                "type": "RollingSync",
                "rollingSync": {
                    "steps": [
                        {"matchExpressions": [{"key": STEP_LABEL, "operator": "In", "values": [step]}]}
                        for step in STEPS
                    ]
                },
            },
            "template": _application_template(paths, settings, home),
        },
    }


def _directory_generator(paths: Paths, settings: Mapping[str, Any]) -> dict[str, Any]:
    # A pattern rather than the shard list: a shard that appears or goes needs no new entry.
    labels = paths.in_repo("labels/*" if paths.sharded else "labels")
    return {
        "repoURL": settings["repoURL"],
        "revision": settings["targetRevision"],
        "directories": [{"path": labels}, *({"path": paths.in_repo(step)} for step in STEPS[1:])],
    }


def _application_template(paths: Paths, settings: Mapping[str, Any], home: str) -> dict[str, Any]:
    # The step is the path's first segment below rendered/: labels, kueue, gate or queues.
    depth = 0 if paths.repo_path == "." else len(paths.repo_path.split("/"))
    step = f"{{{{ index .path.segments {depth} }}}}"
    return {
        "metadata": {
            # tasgen-labels (one shard) or tasgen-shard-007, tasgen-kueue, tasgen-gate, ...
            "name": f"{settings['name']}-{{{{ .path.basenameNormalized }}}}",
            "labels": {**MANAGED_BY, STEP_LABEL: step},
        },
        "spec": {
            "project": settings["project"],
            "source": {
                "repoURL": settings["repoURL"],
                "targetRevision": settings["targetRevision"],
                "path": "{{ .path.path }}",
            },
            # a namespace the AppProject permits (Argo CD checks an Application's destination
            # namespace, an empty one too); every namespaced object names its own
            "destination": {**settings["destination"], "namespace": home},
            "syncPolicy": {
                # RollingSync turns automated sync off and triggers each sync itself, with this
                # prune setting.
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": ["PruneLast=true"],
                "retry": _retry(settings.get("retry", {})),
            },
        },
    }


def _retry(configured: Mapping[str, Any]) -> dict[str, Any]:
    """The configured retry over tasgen's defaults, key by key (the backoff's too)."""
    backoff = {**DEFAULT_RETRY["backoff"], **configured.get("backoff", {})}
    return {**DEFAULT_RETRY, **configured, "backoff": backoff}
