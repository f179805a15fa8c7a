"""Workload manifests -> the Workloads Kueue's integrations make of them: which PodSets, with
which counts and pod templates (Kueue v0.17's pkg/controller/jobs). Pure: documents in,
workloads and findings out."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..kube.selectors import Expression, expressions_of
from ..model import Document, Finding, Pointer, Where
from ..rules.fit import FIT_MANIFEST, FIT_UNMANAGED
from .podsets import (
    GROUP,
    TOPOLOGY_ANNOTATIONS,
    PodSet,
    annotation_errors,
    group_errors,
    pod_requests,
    topology_request,
)
from .resources import resource_errors

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"


@dataclass(frozen=True)
class Template:
    """A pod template of a manifest, and where it sits."""

    name: str
    count: int
    body: Mapping[str, Any]  # {metadata, spec}
    pointer: Pointer


@dataclass
class Workload:
    kind: str
    namespace: str
    name: str
    local_queue: str | None
    where: Where
    podsets: list[PodSet] = field(default_factory=list)
    #: per PodSet: annotation -> where it is written
    annotations: list[dict[str, Where]] = field(default_factory=list)
    #: where the queue-name label is written (None: not written, or a pod group's)
    queue_where: Where | None = None


class BadManifest(Exception):
    def __init__(self, pointer: Pointer, message: str) -> None:
        super().__init__(message)
        self.pointer, self.message = pointer, message


@dataclass(frozen=True)
class ClusterFacts:
    """What a cluster adds when a workload's PodSets are built (``tasgen fit --kubeconfig``):
    training runtimes, and the LimitRange defaults and RuntimeClass overhead that Kueue's
    ``AdjustResources`` applies as the API server would to the pods."""

    runtimes: tuple[Mapping[str, Any], ...] = ()
    #: namespace -> its LimitRanges, by name
    limit_ranges: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    runtime_classes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # by name


def workloads(
    documents: Iterable[Document], facts: ClusterFacts | None = None
) -> tuple[list[Workload], list[Finding]]:
    """The workloads of the documents, in order, and the findings of those that cannot be
    read (or that Kueue does not manage, or whose annotations its webhook refuses).
    TrainJobs find their runtimes among the documents and the cluster's."""
    documents = list(documents)
    facts = facts or ClusterFacts()
    runtimes = [*(d.body for d in documents if d.kind in RUNTIME_KINDS), *facts.runtimes]
    found: list[Workload] = []
    findings: list[Finding] = []
    groups: dict[tuple[str, str], list[tuple[Document, Template]]] = {}
    for doc in documents:
        kind, api = doc.kind, str(doc.body.get("apiVersion", ""))
        group = api.split("/", maxsplit=1)[0] if "/" in api else ""
        builder = _BUILDERS.get((group, kind))
        if (group, kind) == ("trainer.kubeflow.org", "TrainJob"):
            builder = partial(_trainjob, runtimes=runtimes)
        if builder is None:
            if kind not in _IGNORED:
                message = f"{api} {kind} is not a workload tasgen fit reads ({_kinds_text()})"
                findings.append(FIT_MANIFEST(doc.where("kind"), message))
            continue
        try:
            templates = builder(doc.body)
            meta = _mapping(doc.body.get("metadata"), ("metadata",))
        except BadManifest as e:
            findings.append(FIT_MANIFEST(doc.where(*e.pointer), e.message))
            continue
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        if kind == "Pod" and POD_GROUP_LABEL in (meta.get("labels") or {}):
            group = str(meta["labels"][POD_GROUP_LABEL])
            groups.setdefault((namespace, group), []).append((doc, templates[0]))
            continue
        made = _workload(doc, kind, namespace, name, meta, templates, findings, facts)
        if made is not None:
            found.append(made)
    for (namespace, group), members in groups.items():
        made = _pod_group(namespace, group, members, findings, facts)
        if made is not None:
            found.append(made)
    return found, findings


def _workload(
    doc: Document,
    kind: str,
    namespace: str,
    name: str,
    meta: Mapping[str, Any],
    templates: list[Template],
    findings: list[Finding],
    facts: ClusterFacts,
) -> Workload | None:
    labels = meta.get("labels") or {}
    queue = labels.get(QUEUE_LABEL)
    where = doc.where()
    if queue is None and kind in ("Deployment", "StatefulSet", "LeaderWorkerSet"):
        queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
    made = Workload(kind, namespace, name, str(queue) if queue is not None else None, where)
    if QUEUE_LABEL in labels:
        made.queue_where = doc.where("metadata", "labels", QUEUE_LABEL)
    ok = True
    for template in templates:
        try:
            podset = _podset(template, namespace, facts)
        except BadManifest as e:
            findings.append(FIT_MANIFEST(doc.where(*e.pointer), e.message))
            ok = False
            continue
        refused = _refused_resources(doc, kind, template)
        if refused:
            findings += refused
            ok = False
            continue
        annotations = _annotations(template)
        places = {k: doc.where(*template.pointer, "metadata", "annotations", k) for k in annotations}
        for key, message in annotation_errors(annotations, podset.count):
            findings.append(
                FIT_MANIFEST(places[key], f"{key}: {message} (Kueue's webhook refuses the {kind})")
            )
            ok = False
        made.podsets.append(podset)
        made.annotations.append(places)
    if ok and kind in _GROUPED:
        paths = [_field_path((*t.pointer, "metadata", "annotations")) for t in templates]
        for i, message in group_errors(made.podsets, paths):
            findings.append(
                FIT_MANIFEST(
                    made.annotations[i][GROUP], f"{GROUP}: {message} (Kueue's webhook refuses the {kind})"
                )
            )
            ok = False
    return made if ok else None


#: the kinds whose Kueue webhook checks podset-group-name groups
_GROUPED = frozenset({"JobSet", "LeaderWorkerSet", "MPIJob", "RayJob", "RayCluster"})


def _field_path(pointer: Pointer) -> str:
    """A field as Kubernetes' field errors name it: spec.replicatedJobs[1].template."""
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in pointer).lstrip(".")


def _pod_group(
    namespace: str,
    group: str,
    members: list[tuple[Document, Template]],
    findings: list[Finding],
    facts: ClusterFacts,
) -> Workload | None:
    """Pods of one ``kueue.x-k8s.io/pod-group-name``: one Workload, a PodSet per role (pods
    of the same shape), counted from the pods (or the total-count annotation for one role)."""
    first_doc, first = members[0]
    meta = first.body.get("metadata") or {}
    queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
    roles: dict[str, list[tuple[Document, Template]]] = {}
    for doc, template in members:
        roles.setdefault(_role(template), []).append((doc, template))
    made = Workload("Pod", namespace, group, str(queue) if queue is not None else None, first_doc.where())
    total = (meta.get("annotations") or {}).get(POD_GROUP_TOTAL)
    for pods in roles.values():
        doc, template = pods[0]
        count = len(pods)
        if len(roles) == 1 and total is not None and str(total).isdigit():
            count = max(count, int(str(total)))
        named = Template(
            str((template.body.get("metadata") or {}).get("name") or "main"),
            count,
            template.body,
            template.pointer,
        )
        try:
            podset = _podset(named, namespace, facts)
        except BadManifest as e:
            findings.append(FIT_MANIFEST(doc.where(*e.pointer), e.message))
            return None
        refused = _refused_resources(doc, "Pod", template)
        if refused:
            findings += refused
            return None
        made.podsets.append(podset)
        made.annotations.append({k: doc.where("metadata", "annotations", k) for k in _annotations(template)})
    return made


def _refused_resources(doc: Document, kind: str, template: Template) -> list[Finding]:
    spec = template.body.get("spec")
    if not isinstance(spec, Mapping):
        return []
    api = str(doc.body.get("apiVersion", ""))
    found = resource_errors(kind, api, spec, (*template.pointer, "spec"))
    return [
        FIT_MANIFEST(doc.where(*at), f"{message} (the API server refuses the {kind})")
        for at, message in found
    ]


def _role(template: Template) -> str:
    spec = template.body.get("spec") or {}
    shape = {
        k: spec.get(k) for k in ("containers", "initContainers", "tolerations", "nodeSelector", "affinity")
    }
    shape["annotations"] = _annotations(template)
    return json.dumps(shape, sort_keys=True, default=str)


def _annotations(template: Template) -> dict[str, str]:
    meta = template.body.get("metadata") or {}
    raw = meta.get("annotations") or {}
    return (
        {str(k): str(v) for k, v in raw.items() if k in TOPOLOGY_ANNOTATIONS} if isinstance(raw, dict) else {}
    )


def _podset(template: Template, namespace: str, facts: ClusterFacts) -> PodSet:
    spec = _mapping(template.body.get("spec"), (*template.pointer, "spec"))
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        raise BadManifest((*template.pointer, "spec"), "a pod template needs spec.containers")
    spec = adjusted(spec, namespace, facts)
    tolerations = tuple(t for t in spec.get("tolerations") or () if isinstance(t, dict))
    selector = spec.get("nodeSelector")
    return PodSet(
        template.name,
        template.count,
        pod_requests(spec),
        tolerations,
        {str(k): str(v) for k, v in selector.items()} if isinstance(selector, dict) else None,
        _affinity(spec),
        topology_request(_annotations(template)),
    )


def adjusted(spec: Mapping[str, Any], namespace: str, facts: ClusterFacts) -> Mapping[str, Any]:
    """Kueue's ``AdjustResources`` before it counts a pod: the RuntimeClass's fixed overhead
    where the pod gives none, then the namespace's LimitRange container defaults (limits
    and requests) where a container gives none (the first LimitRange's value wins)."""
    overhead = None
    runtime_class = spec.get("runtimeClassName")
    if runtime_class and not spec.get("overhead"):
        overhead = ((facts.runtime_classes.get(str(runtime_class)) or {}).get("overhead") or {}).get(
            "podFixed"
        )
    default, default_request = _container_defaults(facts.limit_ranges.get(namespace, ()))
    if not overhead and not default and not default_request:
        return spec
    out = copy.deepcopy(dict(spec))
    if overhead:
        out["overhead"] = dict(overhead)
    for field_name in ("initContainers", "containers"):
        for container in out.get(field_name) or ():
            if not isinstance(container, dict):
                continue
            given = container.get("resources")
            resources: dict[str, Any] = given if isinstance(given, dict) else {}
            resources["limits"] = {**default, **(resources.get("limits") or {})}
            resources["requests"] = {**default_request, **(resources.get("requests") or {})}
            container["resources"] = resources
    return out


def _container_defaults(ranges: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """limitrange.Summarize's Container defaults: per resource, the first range's."""
    default: dict[str, Any] = {}
    request: dict[str, Any] = {}
    for limit_range in ranges:
        for item in (limit_range.get("spec") or {}).get("limits") or ():
            if isinstance(item, Mapping) and item.get("type") == "Container":
                default = {**(item.get("default") or {}), **default}
                request = {**(item.get("defaultRequest") or {}), **request}
    return default, request


def _affinity(spec: Mapping[str, Any]) -> tuple[tuple[Expression, ...], ...] | None:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not isinstance(required, dict):
        return None
    terms = [
        expressions_of((term or {}).get("matchExpressions"))
        for term in required.get("nodeSelectorTerms") or ()
    ]
    return tuple(terms)


# --- the kinds ----------------------------------------------------------------------------


def _mapping(value: Any, pointer: Pointer) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadManifest(pointer, f"{'.'.join(map(str, pointer))} must be a mapping")
    return value


def _at(body: Mapping[str, Any], pointer: Pointer) -> Any:
    value: Any = body
    for step in pointer:
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and step < len(value) else None
        else:
            value = value.get(step) if isinstance(value, dict) else None
    return value


def _int(body: Mapping[str, Any], pointer: Pointer, default: int) -> int:
    value = _at(body, pointer)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadManifest(pointer, f"{'.'.join(map(str, pointer))} must be a whole number, not {value!r}")
    return value


def _template(body: Mapping[str, Any], pointer: Pointer, name: str, count: int) -> Template:
    value = _at(body, pointer)
    if not isinstance(value, dict):
        raise BadManifest(pointer[:-1] or pointer, f"{'.'.join(map(str, pointer))} is missing")
    return Template(name, count, value, pointer)


def _job(body: Mapping[str, Any], at: Pointer = ("spec",), name: str = "main", replicas: int = 1) -> Template:
    parallelism = _int(body, (*at, "parallelism"), 1)
    completions = _int(body, (*at, "completions"), parallelism)
    return _template(body, (*at, "template"), name, replicas * min(parallelism, completions))


def _pod(body: Mapping[str, Any]) -> list[Template]:
    return [Template("main", 1, body, ())]


def _jobset(body: Mapping[str, Any]) -> list[Template]:
    jobs = (body.get("spec") or {}).get("replicatedJobs")
    if not isinstance(jobs, list) or not jobs:
        raise BadManifest(("spec",), "a JobSet needs spec.replicatedJobs")
    found = []
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise BadManifest(("spec", "replicatedJobs", i), "a replicatedJob must be a mapping")
        replicas = _int(body, ("spec", "replicatedJobs", i, "replicas"), 1)
        at = ("spec", "replicatedJobs", i, "template", "spec")
        found.append(_job(body, at, str(job.get("name", "")).lower(), replicas))
    return found


def _lws(body: Mapping[str, Any]) -> list[Template]:
    """One Workload per group (replica); the first group's stands for all of them."""
    at = ("spec", "leaderWorkerTemplate")
    size = _int(body, (*at, "size"), 1)
    found = []
    if isinstance(((body.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("leaderTemplate"), dict):
        found.append(_template(body, (*at, "leaderTemplate"), "leader", 1))
        found.append(_template(body, (*at, "workerTemplate"), "worker", size - 1))
    else:
        found.append(_template(body, (*at, "workerTemplate"), "main", size))
    return found


def _replicated(field_name: str) -> Callable[[Mapping[str, Any]], list[Template]]:
    """Deployment: one single-pod Workload per replica; StatefulSet: one pod group."""

    def build(body: Mapping[str, Any]) -> list[Template]:
        replicas = _int(body, ("spec", "replicas"), 1)
        return [_template(body, ("spec", "template"), "main", 1 if field_name == "Deployment" else replicas)]

    return build


def _ray(job: bool) -> Callable[[Mapping[str, Any]], list[Template]]:
    def build(body: Mapping[str, Any]) -> list[Template]:
        at: Pointer = ("spec", "rayClusterSpec") if job else ("spec",)
        found = [_template(body, (*at, "headGroupSpec", "template"), "head", 1)]
        spec = _at(body, at)
        for i, group in enumerate((spec or {}).get("workerGroupSpecs") or ()):
            if not isinstance(group, dict):
                raise BadManifest((*at, "workerGroupSpecs", i), "a worker group must be a mapping")
            replicas = _int(body, (*at, "workerGroupSpecs", i, "replicas"), 1)
            hosts = _int(body, (*at, "workerGroupSpecs", i, "numOfHosts"), 1)
            name = str(group.get("groupName", "")).lower()
            found.append(
                _template(body, (*at, "workerGroupSpecs", i, "template"), name, replicas * max(hosts, 1))
            )
        if job and (body.get("spec") or {}).get("submissionMode", "K8sJobMode") == "K8sJobMode":
            if isinstance((body.get("spec") or {}).get("submitterPodTemplate"), dict):
                found.append(_template(body, ("spec", "submitterPodTemplate"), "submitter", 1))
            else:
                found.append(Template("submitter", 1, _SUBMITTER, ()))
        return found

    return build


#: KubeRay's default submitter pod, as Kueue counts it
_SUBMITTER = {
    "spec": {
        "containers": [
            {
                "name": "ray-job-submitter",
                "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "500m", "memory": "200Mi"},
                },
            }
        ]
    }
}


def _pytorch(body: Mapping[str, Any]) -> list[Template]:
    specs = (body.get("spec") or {}).get("pytorchReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        raise BadManifest(("spec",), "a PyTorchJob needs spec.pytorchReplicaSpecs")
    found = []
    for role in ("Master", "Worker"):
        if role in specs:
            replicas = _int(body, ("spec", "pytorchReplicaSpecs", role, "replicas"), 1)
            found.append(
                _template(body, ("spec", "pytorchReplicaSpecs", role, "template"), role.lower(), replicas)
            )
    return found


def _mpijob(body: Mapping[str, Any]) -> list[Template]:
    """Kueue's MPIJob: the launcher, then the workers (``orderedReplicaTypes``)."""
    specs = (body.get("spec") or {}).get("mpiReplicaSpecs")
    if not isinstance(specs, dict) or not specs:
        raise BadManifest(("spec",), "an MPIJob needs spec.mpiReplicaSpecs")
    found = []
    for role in ("Launcher", "Worker"):
        if role in specs:
            replicas = _int(body, ("spec", "mpiReplicaSpecs", role, "replicas"), 1)
            found.append(
                _template(body, ("spec", "mpiReplicaSpecs", role, "template"), role.lower(), replicas)
            )
    return found


def _appwrapper(body: Mapping[str, Any]) -> list[Template]:
    """An AppWrapper's PodSets: each component's declared ``podSets`` (a path into the
    component and a replica count), else those the AppWrapper controller infers for the
    component's kind; named ``<appwrapper>-<index>``."""
    components = (body.get("spec") or {}).get("components")
    if not isinstance(components, list) or not components:
        raise BadManifest(("spec",), "an AppWrapper needs spec.components")
    name = str((body.get("metadata") or {}).get("name") or "")
    found: list[Template] = []
    for i, component in enumerate(components):
        at: Pointer = ("spec", "components", i)
        if not isinstance(component, dict) or not isinstance(component.get("template"), dict):
            raise BadManifest(at, "an AppWrapper component needs a template")
        declared = component.get("podSets")
        if isinstance(declared, list) and declared:
            for j, podset in enumerate(declared):
                path = _aw_path(str((podset or {}).get("path") or ""), (*at, "podSets", j, "path"))
                replicas = _int(body, (*at, "podSets", j, "replicas"), 1)
                found.append(_template(body, (*at, *path), "", replicas))
        else:
            found += [
                Template("", t.count, t.body, (*at, "template", *t.pointer))
                for t in _aw_inferred(component["template"], (*at, "template"))
            ]
    return [Template(f"{name}-{k}".lower(), t.count, t.body, t.pointer) for k, t in enumerate(found)]


def _aw_path(path: str, where: Pointer) -> Pointer:
    """A component's podSet path (``template.spec.replicatedJobs[0].template``) as steps."""
    steps: list[str | int] = []
    for part in path.split("."):
        key, *indexes = part.split("[")
        if not key:
            raise BadManifest(where, f"{path!r} is not a path into the component")
        steps.append(key)
        for index in indexes:
            if not index.endswith("]") or not index[:-1].isdigit():
                raise BadManifest(where, f"{path!r} is not a path into the component")
            steps.append(int(index[:-1]))
    return tuple(steps)


def _aw_inferred(template: Mapping[str, Any], at: Pointer) -> list[Template]:
    """The AppWrapper controller's ``InferPodSets`` for a component's kind."""
    api, kind = str(template.get("apiVersion", "")), str(template.get("kind", ""))
    group = api.split("/", maxsplit=1)[0] if "/" in api else ""
    if (group, kind) in (("ray.io", "RayCluster"), ("ray.io", "RayJob")):
        spec: Pointer = ("spec", "rayClusterSpec") if kind == "RayJob" else ("spec",)
        found = [_template(template, (*spec, "headGroupSpec", "template"), "", 1)]
        for i, _ in enumerate(_at(template, (*spec, "workerGroupSpecs")) or ()):
            replicas = _int(template, (*spec, "workerGroupSpecs", i, "replicas"), 1)
            found.append(_template(template, (*spec, "workerGroupSpecs", i, "template"), "", replicas))
        return found
    if (group, kind) == ("apps", "Deployment"):
        return [_template(template, ("spec", "template"), "", _int(template, ("spec", "replicas"), 1))]
    inferable = {("batch", "Job"), ("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "PyTorchJob"), ("", "Pod")}
    builder = _BUILDERS.get((group, kind))
    if builder is None or (group, kind) not in inferable | {("apps", "StatefulSet")}:
        raise BadManifest(
            (*at, "kind"), f"the AppWrapper controller infers no PodSets for {api} {kind}: declare podSets"
        )
    try:
        return builder(template)
    except BadManifest as e:
        raise BadManifest((*at, *e.pointer), e.message) from None


#: the label that marks a runtime's trainer replicatedJob
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_KINDS = frozenset({"TrainingRuntime", "ClusterTrainingRuntime"})


def _trainjob(body: Mapping[str, Any], runtimes: Sequence[Mapping[str, Any]]) -> list[Template]:
    """A TrainJob's PodSets, as Kueue builds them from the JobSet its (Cluster)TrainingRuntime
    makes (Kubeflow Trainer v2.2.0's runtime info, ML policy plugins and jobset builder): one
    per replicatedJob, of :func:`_trainjob_counts` pods, ``trainer.resourcesPerNode`` on the
    ``node`` container of the trainer's job (``trainjob-ancestor-step: trainer``) and, for MPI
    with ``runLauncherAsNode``, of the ``node`` job. Positions are the runtimeRef's."""
    spec = body.get("spec") or {}
    ref = spec.get("runtimeRef") if isinstance(spec, Mapping) else None
    if not isinstance(ref, Mapping) or not ref.get("name"):
        raise BadManifest(("spec",), "a TrainJob needs spec.runtimeRef.name")
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    namespace = str((body.get("metadata") or {}).get("namespace") or "default")
    runtime = next((r for r in runtimes if _is_runtime(r, kind, str(ref["name"]), namespace)), None)
    if runtime is None:
        raise BadManifest(
            ("spec", "runtimeRef"),
            f"{kind} {ref['name']} is neither among the paths nor on the cluster: its pod templates "
            "make the TrainJob's PodSets",
        )
    runtime_spec = runtime.get("spec") or {}
    jobset = copy.deepcopy((runtime_spec.get("template") or {}).get("spec") or {})
    trainer: Mapping[str, Any] = spec["trainer"] if isinstance(spec.get("trainer"), Mapping) else {}
    policy = runtime_spec.get("mlPolicy")
    policy = policy if isinstance(policy, Mapping) else None
    mpi = policy.get("mpi") if policy is not None and isinstance(policy.get("mpi"), Mapping) else None
    launcher_as_node = mpi is not None and mpi.get("runLauncherAsNode") is True
    resources = trainer.get("resourcesPerNode")
    jobs = [j for j in jobset.get("replicatedJobs") or () if isinstance(j, dict)]
    for job, count in zip(jobs, _trainjob_counts(jobs, policy, trainer.get("numNodes")), strict=True):
        trains = _ancestor(job) == "trainer"
        job_spec = job.setdefault("template", {}).setdefault("spec", {})
        job_spec["parallelism"] = job_spec["completions"] = count
        if trains:
            job["replicas"] = 1
        if not (trains or (launcher_as_node and job.get("name") == "node")):
            continue
        if isinstance(resources, Mapping) and (resources.get("limits") or resources.get("requests")):
            for container in ((job_spec.get("template") or {}).get("spec") or {}).get("containers") or ():
                if container.get("name") == "node":
                    container["resources"] = dict(resources)
    try:
        templates = _jobset({"spec": jobset})
    except BadManifest as e:
        raise BadManifest(("spec", "runtimeRef"), f"{kind} {ref['name']}: {e.message}") from None
    return [Template(t.name, t.count, t.body, ("spec", "runtimeRef")) for t in templates]


def _trainjob_counts(
    jobs: Sequence[Mapping[str, Any]], policy: Mapping[str, Any] | None, num_nodes: Any
) -> list[int]:
    """Each replicatedJob's pods (parallelism and completions alike): its parallelism, the
    trainer's job the runtime's ``mlPolicy.numNodes``; then the TrainJob's
    ``trainer.numNodes`` on the trainer's job, but for MPI on the job named ``node`` (one less
    with ``runLauncherAsNode``, at least one), as the ML policy plugins set it."""
    counts = []
    mpi = policy is not None and isinstance(policy.get("mpi"), Mapping)
    as_node = mpi and policy is not None and policy["mpi"].get("runLauncherAsNode") is True
    for job in jobs:
        parallelism = ((job.get("template") or {}).get("spec") or {}).get("parallelism")
        count = parallelism if isinstance(parallelism, int) else 1
        if _ancestor(job) == "trainer" and policy is not None:
            own = policy.get("numNodes")
            count = own if isinstance(own, int) else 1
        if isinstance(num_nodes, int):
            if mpi and job.get("name") == "node":
                count = max(num_nodes - 1, 1) if as_node else num_nodes
            elif not mpi and _ancestor(job) == "trainer":
                count = num_nodes
        counts.append(max(count, 1))
    return counts


def _ancestor(job: Mapping[str, Any]) -> str | None:
    labels = ((job.get("template") or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(ANCESTOR_LABEL)
    return str(value) if value is not None else None


def _is_runtime(runtime: Mapping[str, Any], kind: str, name: str, namespace: str) -> bool:
    meta = runtime.get("metadata") or {}
    if runtime.get("kind") != kind or meta.get("name") != name:
        return False
    return kind == "ClusterTrainingRuntime" or (meta.get("namespace") or "default") == namespace


_BUILDERS: dict[tuple[str, str], Callable[[Mapping[str, Any]], list[Template]]] = {
    ("batch", "Job"): lambda body: [_job(body)],
    ("", "Pod"): _pod,
    ("jobset.x-k8s.io", "JobSet"): _jobset,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _lws,
    ("apps", "Deployment"): _replicated("Deployment"),
    ("apps", "StatefulSet"): _replicated("StatefulSet"),
    ("ray.io", "RayJob"): _ray(job=True),
    ("ray.io", "RayCluster"): _ray(job=False),
    ("kubeflow.org", "PyTorchJob"): _pytorch,
    ("kubeflow.org", "MPIJob"): _mpijob,
    ("workload.codeflare.dev", "AppWrapper"): _appwrapper,
}
#: kinds a workload folder holds beside workloads, read without a word
_IGNORED = frozenset(
    {"Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "Kustomization", *RUNTIME_KINDS}
)


def _kinds_text() -> str:
    return ", ".join([*(kind for _, kind in _BUILDERS), "TrainJob"])


def unmanaged(workload: Workload) -> Finding:
    return FIT_UNMANAGED(
        workload.where.at("metadata"),
        f"{workload.kind} {workload.namespace}/{workload.name} has no {QUEUE_LABEL} label and its "
        "namespace no LocalQueue named default: Kueue does not manage it",
    )
