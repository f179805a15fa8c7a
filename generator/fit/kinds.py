"""Workload manifests -> the Workloads Kueue's integrations make of them: which PodSets, with
which counts and pod templates (Kueue v0.17's pkg/controller/jobs). Pure: documents in,
workloads and findings out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from generator.fit.podsets import (
    TOPOLOGY_ANNOTATIONS,
    Expression,
    PodSet,
    annotation_errors,
    pod_requests,
    topology_request,
)
from generator.model import Document, Finding, Pointer, Where
from generator.rules.fit import FIT_ANNOTATION, FIT_MANIFEST, FIT_UNMANAGED

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


def workloads(documents: Iterable[Document]) -> tuple[list[Workload], list[Finding]]:
    """The workloads of the documents, in order, and the findings of those that cannot be
    read (or that Kueue does not manage, or whose annotations its webhook refuses)."""
    found: list[Workload] = []
    findings: list[Finding] = []
    groups: dict[tuple[str, str], list[tuple[Document, Template]]] = {}
    for doc in documents:
        kind, api = doc.kind, str(doc.body.get("apiVersion", ""))
        builder = _BUILDERS.get((api.split("/", maxsplit=1)[0] if "/" in api else "", kind))
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
        made = _workload(doc, kind, namespace, name, meta, templates, findings)
        if made is not None:
            found.append(made)
    for (namespace, group), members in groups.items():
        made = _pod_group(namespace, group, members, findings)
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
            podset = _podset(template)
        except BadManifest as e:
            findings.append(FIT_MANIFEST(doc.where(*e.pointer), e.message))
            ok = False
            continue
        annotations = _annotations(template)
        places = {k: doc.where(*template.pointer, "metadata", "annotations", k) for k in annotations}
        for key, message in annotation_errors(annotations, podset.count):
            findings.append(
                FIT_ANNOTATION(places[key], f"{key}: {message} (Kueue's webhook refuses the {kind})")
            )
            ok = False
        made.podsets.append(podset)
        made.annotations.append(places)
    if not ok:
        return None
    if made.local_queue is None:
        made.local_queue = None
    return made


def _pod_group(
    namespace: str, group: str, members: list[tuple[Document, Template]], findings: list[Finding]
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
            podset = _podset(named)
        except BadManifest as e:
            findings.append(FIT_MANIFEST(doc.where(*e.pointer), e.message))
            return None
        made.podsets.append(podset)
        made.annotations.append({k: doc.where("metadata", "annotations", k) for k in _annotations(template)})
    return made


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


def _podset(template: Template) -> PodSet:
    spec = _mapping(template.body.get("spec"), (*template.pointer, "spec"))
    if not isinstance(spec.get("containers"), list) or not spec["containers"]:
        raise BadManifest((*template.pointer, "spec"), "a pod template needs spec.containers")
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


def _affinity(spec: Mapping[str, Any]) -> tuple[tuple[Expression, ...], ...] | None:
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not isinstance(required, dict):
        return None
    terms = []
    for term in required.get("nodeSelectorTerms") or ():
        expressions = tuple(
            (str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in e.get("values") or ()))
            for e in (term or {}).get("matchExpressions") or ()
        )
        terms.append(expressions)
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


def _trainjob(body: Mapping[str, Any]) -> list[Template]:
    """A TrainJob's PodSets come from its TrainingRuntime; the manifest's own ``podTemplate``
    overrides are not enough to build them."""
    raise BadManifest(
        ("spec", "runtimeRef"),
        "a TrainJob's PodSets come from its TrainingRuntime, which the manifest does not hold; "
        "check the runtime's pod templates as a JobSet instead",
    )


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
    ("trainer.kubeflow.org", "TrainJob"): _trainjob,
}
#: kinds a workload folder holds beside workloads, read without a word
_IGNORED = frozenset({"Namespace", "ConfigMap", "Secret", "Service", "ServiceAccount", "Kustomization"})


def _kinds_text() -> str:
    return ", ".join(kind for _, kind in _BUILDERS)


def unmanaged(workload: Workload) -> Finding:
    return FIT_UNMANAGED(
        workload.where.at("metadata"),
        f"{workload.kind} {workload.namespace}/{workload.name} has no {QUEUE_LABEL} label and its "
        "namespace no LocalQueue named default: Kueue does not manage it",
    )


def iter_podsets(workload: Workload) -> Iterator[tuple[PodSet, dict[str, Where]]]:
    yield from zip(workload.podsets, workload.annotations, strict=True)
