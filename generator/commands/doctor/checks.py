"""The doctor's decisions: pure functions of what the render needs (:class:`Expected`), what the
cluster shows (:class:`Live`) and the repository's HEAD. Each finding names what is wrong,
where, and the fix (docs/explanation/doctor.md explains each check)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import InvalidOperation
from typing import Any

from ...kube.quantities import parse
from . import components as c
from .expected import (
    GRANT_FIELDS,
    HEALTH_PREFIX,
    NFD_GROUP,
    Expected,
    Ref,
    label_namespace,
)
from .live import Live
from .report import ERROR, WARNING, Component, DoctorFinding, Engine, Level

#: the finalizer Kueue's controllers put on every ResourceFlavor, and its TAS controllers (only
#: when TopologyAwareScheduling is on) on every Topology
IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
TAS_GATE = "TopologyAwareScheduling"
#: the oldest Kueue each kueue.x-k8s.io version of the render runs on (docs/reference/kueue-versions.md)
KUEUE_MINIMUM = {"kueue.x-k8s.io/v1beta2": (0, 17, 0), "kueue.x-k8s.io/v1beta1": (0, 14, 0)}
#: NodeFeature objects are read by nfd-master by default from this release on
NFD_MINIMUM = (0, 14, 0)
NODE_FEATURE_API = f"{NFD_GROUP}/v1alpha1"
#: kustomize-controller: Kustomization v1 (Flux 2.0), healthCheckExprs (Flux 2.5)
FLUX_MINIMUM, FLUX_HEALTH_EXPRS_MINIMUM = (1, 0, 0), (1, 5, 0)
#: NFD's own label namespaces, allowed under kubernetes.io (nfd-master's validation)
_NFD_OWN = ("feature.node.kubernetes.io", "profile.node.kubernetes.io")
PROGRESSIVE_KEY = "applicationsetcontroller.enable.progressive.syncs"
PROGRESSIVE_ENV = "ARGOCD_APPLICATIONSET_CONTROLLER_ENABLE_PROGRESSIVE_SYNCS"
_SHOWN_LABELS = 3  # a node's missing labels named in its finding


@dataclass(frozen=True)
class Facts:
    """Everything the checks decide on."""

    expected: Expected
    live: Live
    head: str | None  # the repository's HEAD commit, when the render is in a git work tree

    @property
    def deployed(self) -> dict[str, c.Deployed]:
        return c.deployed(self.live.deployments)

    def present(self, ref: Ref) -> Mapping[str, Any] | None:
        return self.live.objects.get(ref)


Check = Callable[[Facts], Iterator[DoctorFinding]]


def _finding(check: str, level: Level, subject: str, problem: str, fix: str) -> DoctorFinding:
    return DoctorFinding(check=check, level=level, subject=subject, problem=problem, fix=fix)


def _version(v: tuple[int, int, int]) -> str:
    return "v" + ".".join(map(str, v))


# --- Kueue --------------------------------------------------------------------------------


def kueue_api(f: Facts) -> Iterator[DoctorFinding]:
    api = f.expected.kueue_api
    if api is not None and api not in f.live.served:
        least = KUEUE_MINIMUM.get(api)
        yield _finding(
            "kueue-api",
            ERROR,
            f"API {api}",
            f"the API server does not serve {api}, which every Kueue object of the render is written in",
            f"install Kueue {_version(least) if least else ''} or later (its CRDs), or set GeneratorConfig "
            "kueueAPIVersion to the version the installed Kueue serves and render again",
        )


def kueue_version(f: Facts) -> Iterator[DoctorFinding]:
    kueue = f.deployed.get("kueue")
    least = KUEUE_MINIMUM.get(f.expected.kueue_api or "")
    have = c.version_tuple(kueue.version) if kueue else None
    if kueue is not None and least is not None and have is not None and have < least:
        yield _finding(
            "kueue-version",
            ERROR,
            f"Deployment {kueue.deployment}",
            f"Kueue {kueue.version} runs; the render's {f.expected.kueue_api} needs {_version(least)} "
            "or later",
            f"upgrade Kueue to {_version(least)} or later, or set GeneratorConfig kueueAPIVersion for this "
            "release (docs/reference/kueue-versions.md)",
        )


def _declared_gate(kueue: c.Deployed, maps: Mapping[tuple[str, str], Mapping[str, str]]) -> bool | None:
    """TopologyAwareScheduling as Kueue's Deployment sets it: --feature-gates, else its
    configuration file's featureGates; None when neither says."""
    said = c.gates(c.flag(kueue.args, "feature-gates")).get(TAS_GATE)
    if said is not None:
        return said
    for key in kueue.config_maps:
        for doc in c.config_documents(maps.get(key, {})):
            value = (doc.get("featureGates") or {}).get(TAS_GATE)
            if isinstance(value, bool):
                return value
    return None


def kueue_tas(f: Facts) -> Iterator[DoctorFinding]:
    if not f.expected.topologies:
        return
    kueue = f.deployed.get("kueue")
    if kueue is not None and _declared_gate(kueue, f.live.config_maps) is False:
        yield _finding(
            "kueue-tas",
            ERROR,
            f"Deployment {kueue.deployment}",
            f"Kueue runs with {TAS_GATE}=false: no workload gets a topology assignment",
            f"remove {TAS_GATE}=false from Kueue's --feature-gates (or its configuration's featureGates) "
            "and restart Kueue",
        )
        return
    topologies = [(n, o) for n in f.expected.topologies if (o := f.present(_kueue_ref(f, "Topology", n)))]
    flavors = [(n, o) for n in f.expected.flavors if (o := f.present(_kueue_ref(f, "ResourceFlavor", n)))]
    bare_topologies = [n for n, o in topologies if IN_USE_FINALIZER not in _finalizers(o)]
    reconciled = [n for n, o in flavors if IN_USE_FINALIZER in _finalizers(o)]
    if flavors and not reconciled:
        yield _finding(
            "kueue-running",
            ERROR,
            f"ResourceFlavor {flavors[0][0]}",
            f"no ResourceFlavor of the render carries Kueue's {IN_USE_FINALIZER} finalizer: Kueue's "
            "controllers are not running (or not watching these objects)",
            "start Kueue's controller manager (kubectl -n kueue-system get pods) and read its log",
        )
    elif bare_topologies and reconciled:
        yield _finding(
            "kueue-tas",
            ERROR,
            f"Topology {bare_topologies[0]}",
            f"Kueue runs but its topology controller has not put its {IN_USE_FINALIZER} finalizer on "
            f"Topology {', '.join(bare_topologies)}: the {TAS_GATE} feature gate is off, so no workload "
            "gets a topology assignment",
            f"start Kueue with --feature-gates={TAS_GATE}=true (or featureGates in its configuration)",
        )


def _kueue_ref(f: Facts, kind: str, name: str) -> Ref:
    return f.expected.kueue_refs.get((kind, name)) or Ref(kind, name, None, f.expected.kueue_api or "")


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or ())


def kueue_objects(f: Facts) -> Iterator[DoctorFinding]:
    if f.expected.kueue_api not in f.live.served:
        return  # kueue_api says why none can be read
    for kind, names in (
        ("Topology", f.expected.topologies),
        ("ResourceFlavor", f.expected.flavors),
        ("ClusterQueue", tuple(f.expected.queues)),
    ):
        ref_missing = [n for n in names if f.present(_kueue_ref(f, kind, n)) is None]
        for name in ref_missing:
            ref = _kueue_ref(f, kind, name)
            yield _finding(
                "kueue-objects",
                ERROR,
                ref.shown(),
                f"the render's {kind} {name} is not in the cluster",
                f"let the engine sync {f.expected.file_of(ref)} (or kubectl apply -f it)",
            )


def quantities(f: Facts) -> Iterator[DoctorFinding]:
    """Quotas Kueue stores in another spelling (its webhook canonicalises them), and quotas that
    differ in value (the queue is not synced, or someone edited it)."""
    for name, spec in f.expected.queues.items():
        live = f.present(_kueue_ref(f, "ClusterQueue", name))
        if live is None:
            continue
        have = _quotas(live.get("spec") or {})
        for where, written in _quotas(spec).items():
            stored = have.get(where)
            if stored is None or stored == written:
                continue
            subject = f"ClusterQueue {name} {'/'.join(where)}"
            if _same(stored, written):
                yield _finding(
                    "quantity-form",
                    WARNING,
                    subject,
                    f"the render writes {written!r}, Kueue stores {stored!r}: an engine comparing the two "
                    "may show the queue out of sync",
                    f"nothing is wrong in the cluster; written {stored!r} in the render, the two compare "
                    "equal",
                )
            else:
                yield _finding(
                    "queue-drift",
                    WARNING,
                    subject,
                    f"the cluster holds {stored!r}, the render {written!r}",
                    f"let the engine sync {f.expected.file_of(_kueue_ref(f, 'ClusterQueue', name))} (a "
                    "drain in progress holds the old plan until the gate switches it)",
                )


def _quotas(spec: Mapping[str, Any]) -> dict[tuple[str, str, str], str]:
    """(flavor, resource, field) -> the quantity as written, for every quota of a queue."""
    out = {}
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if key in resource:
                        out[(str(flavor.get("name")), str(resource.get("name")), key)] = str(resource[key])
    return out


def _same(a: str, b: str) -> bool:
    try:
        return parse(a) == parse(b)
    except (InvalidOperation, ValueError, ArithmeticError):
        return False


# --- NFD ------------------------------------------------------------------------------------


def nfd_api(f: Facts) -> Iterator[DoctorFinding]:
    if f.expected.node_labels and NODE_FEATURE_API not in f.live.served:
        yield _finding(
            "nfd-api",
            ERROR,
            f"API {NODE_FEATURE_API}",
            "the API server does not serve NodeFeature, which carries every topology label of the render",
            f"install Node Feature Discovery {_version(NFD_MINIMUM)} or later (its CRDs and nfd-master)",
        )


def nfd_version(f: Facts) -> Iterator[DoctorFinding]:
    nfd = f.deployed.get("nfd-master")
    have = c.version_tuple(nfd.version) if nfd else None
    if nfd is not None and have is not None and have < NFD_MINIMUM:
        yield _finding(
            "nfd-version",
            ERROR,
            f"Deployment {nfd.deployment}",
            f"nfd-master {nfd.version} runs; NodeFeature objects are read by default from "
            f"{_version(NFD_MINIMUM)}",
            f"upgrade Node Feature Discovery to {_version(NFD_MINIMUM)} or later",
        )


def nfd_allows(namespace: str, extra: Iterable[str], deny: Iterable[str]) -> bool:
    """Whether nfd-master writes labels of ``namespace``: kubernetes.io and its subdomains are
    refused but for NFD's own, as is any -deny-label-ns entry (``*.suffix`` a wildcard);
    -extra-label-ns allows either back."""
    if namespace in set(extra):
        return True
    kube = namespace == "kubernetes.io" or namespace.endswith(".kubernetes.io")
    own = namespace in _NFD_OWN or any(namespace.endswith(f".{n}") for n in _NFD_OWN)
    denied = any(namespace.endswith(d.lstrip("*")) if d.startswith("*") else namespace == d for d in deny)
    return not ((kube and not own) or denied)


def _nfd_settings(f: Facts) -> tuple[c.Deployed, list[str], list[str]] | None:
    """nfd-master's -extra-label-ns and -deny-label-ns: its flags, else its configuration file's
    extraLabelNs / denyLabelNs; None without its Deployment."""
    nfd = f.deployed.get("nfd-master")
    if nfd is None:
        return None
    config: dict[str, Any] = {}
    for mounted in nfd.config_maps:
        for doc in c.config_documents(f.live.config_maps.get(mounted, {})):
            config.update(doc)
    lists = []
    for flag, key in (("extra-label-ns", "extraLabelNs"), ("deny-label-ns", "denyLabelNs")):
        said = c.flag(nfd.args, flag)
        values = said.split(",") if said is not None else [str(v) for v in config.get(key) or ()]
        lists.append([v.strip() for v in values if v.strip()])
    return nfd, lists[0], lists[1]


def _render_namespaces(f: Facts) -> list[str]:
    return sorted({label_namespace(k) for labels in f.expected.node_labels.values() for k in labels})


def dropped_namespaces(f: Facts) -> list[str]:
    """The label namespaces nfd-master leaves off every node: of the nodes that should carry
    one, none does, while labels of other namespaces are there (nfd-master runs). Only when
    every NodeFeature of the render is in the cluster: else the missing ones may be why."""
    if _missing_features(f):
        return []
    carried: dict[str, bool] = {}
    for node, labels in f.expected.node_labels.items():
        live = f.live.nodes.get(node)
        if live is None:
            continue
        have = (live.get("metadata") or {}).get("labels") or {}
        for key in labels:
            ns = label_namespace(key)
            carried[ns] = carried.get(ns, False) or key in have
    if not any(carried.values()):
        return []  # nothing projected at all: nfd_running says so
    return sorted(ns for ns, any_there in carried.items() if not any_there)


def nfd_label_namespaces(f: Facts) -> Iterator[DoctorFinding]:
    settings = _nfd_settings(f)
    refused: set[str] = set()
    if settings is not None:
        nfd, extra, deny = settings
        for ns in _render_namespaces(f):
            if ns and not nfd_allows(ns, extra, deny):
                refused.add(ns)
                yield _finding(
                    "nfd-label-namespace",
                    ERROR,
                    f"Deployment {nfd.deployment}",
                    f"nfd-master's settings refuse the label namespace {ns}, which the render's "
                    "NodeFeatures use: its labels never reach the nodes",
                    f"add {ns} to nfd-master's -extra-label-ns (or extraLabelNs in nfd-master.conf)",
                )
    for ns in dropped_namespaces(f):
        if ns not in refused:
            yield _finding(
                "nfd-label-namespace",
                ERROR,
                f"label namespace {ns}",
                f"no node carries the labels of {ns} that the render's NodeFeatures give it, while "
                "other NodeFeature labels arrive: nfd-master does not allow this namespace",
                f"add {ns} to nfd-master's -extra-label-ns (or extraLabelNs in nfd-master.conf), and "
                "remove it from -deny-label-ns",
            )


def _projected(f: Facts) -> bool | None:
    """Whether any present node carries a label of the render's NodeFeatures (None: no node
    that should carry one is there)."""
    present = [n for n in f.expected.node_labels if n in f.live.nodes]
    if not present:
        return None
    return any(
        k in ((f.live.nodes[n].get("metadata") or {}).get("labels") or {})
        for n in present
        for k in f.expected.node_labels[n]
    )


def nfd_running(f: Facts) -> Iterator[DoctorFinding]:
    if _projected(f) is not False or NODE_FEATURE_API not in f.live.served:
        return
    yield _finding(
        "nfd-running",
        ERROR,
        "NodeFeature labels",
        "no node carries any label of the render's NodeFeatures: nfd-master is not running, or the "
        "NodeFeatures are not synced",
        "check nfd-master (kubectl -n node-feature-discovery get pods) and that the engine synced "
        f"{f.expected.output}'s labels",
    )


def node_features(f: Facts) -> Iterator[DoctorFinding]:
    """The render's NodeFeatures against tasgen's in the cluster: missing ones leave their
    nodes without labels; ones the render no longer holds (the engines keep NodeFeatures when
    a path or an Application goes away) keep stale labels on their nodes."""
    rendered = _rendered_features(f)
    missing = _missing_features(f)
    leftover = sorted(f.live.node_features - rendered)
    if missing:
        yield _finding(
            "nodefeature-missing",
            ERROR,
            f"NodeFeatures in {missing[0].namespace}",
            f"{len(missing)} NodeFeature(s) of the render are not in the cluster ({_some(missing)})",
            f"let the engine sync {f.expected.file_of(missing[0])} and the other labels files",
        )
    if leftover:
        yield _finding(
            "nodefeature-leftover",
            WARNING,
            f"NodeFeatures in {leftover[0].namespace}",
            f"{len(leftover)} NodeFeature(s) managed by tasgen are not in the render ({_some(leftover)}): "
            "their labels stay on their nodes",
            "delete them once no flavor needs their labels (kubectl delete nodefeature -n NAMESPACE NAME)",
        )


def _rendered_features(f: Facts) -> set[Ref]:
    return {r for r in f.expected.files if r.kind == "NodeFeature" and r.api_version in f.live.served}


def _missing_features(f: Facts) -> list[Ref]:
    return sorted(_rendered_features(f) - f.live.node_features)


def _some(refs: list[Ref]) -> str:
    names = ", ".join(r.name for r in refs[:_SHOWN_LABELS])
    return names + (f" and {len(refs) - _SHOWN_LABELS} more" if len(refs) > _SHOWN_LABELS else "")


# --- nodes ----------------------------------------------------------------------------------


def nodes(f: Facts) -> Iterator[DoctorFinding]:
    dropped = set(dropped_namespaces(f))
    projected = _projected(f) is not False  # else nfd_running's one finding says it all
    for name in f.expected.nodes:
        node = f.live.nodes.get(name)
        if node is None:
            yield _finding(
                "node-missing",
                ERROR,
                f"Node {name}",
                "the inventory names this node; the cluster has no Node of that name",
                "join the node, or refresh the inventory (kubectl get nodes -o json | tasgen "
                "import-nodes -) and render again",
            )
            continue
        if not _ready(node):
            yield _finding(
                "node-not-ready",
                WARNING,
                f"Node {name}",
                "the node is not Ready: Kueue's topology-aware scheduling places no pod on it",
                "make the node Ready (kubectl describe node), or drop it from the inventory",
            )
        have = (node.get("metadata") or {}).get("labels") or {}
        wrong = [
            f"{k}={v}"
            for k, v in sorted(f.expected.node_labels.get(name, {}).items())
            if have.get(k) != v and label_namespace(k) not in dropped
        ]
        if wrong and projected:
            more = f" and {len(wrong) - _SHOWN_LABELS} more" if len(wrong) > _SHOWN_LABELS else ""
            yield _finding(
                "node-labels",
                ERROR,
                f"Node {name}",
                f"the node lacks {', '.join(wrong[:_SHOWN_LABELS])}{more}, which the render's "
                "NodeFeatures give it",
                f"let the engine sync {f.expected.output}'s labels and check that nfd-master runs "
                "(kubectl get nodefeatures -A)",
            )


def _ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


# --- the gate's objects ---------------------------------------------------------------------


def _missing(f: Facts, refs: Iterable[Ref], check: str, why: str) -> Iterator[DoctorFinding]:
    for ref in refs:
        if f.present(ref) is None:
            yield _finding(
                check,
                ERROR,
                ref.shown(),
                f"the render's {ref.kind} {ref.name} is not in the cluster: {why}",
                f"let the engine sync {f.expected.file_of(ref)} (or kubectl apply -f it)",
            )


def admission_policy(f: Facts) -> Iterator[DoctorFinding]:
    yield from _missing(
        f,
        f.expected.policies,
        "admission-policy",
        "nothing stops a write to a queue in the middle of a drain",
    )


def rbac(f: Facts) -> Iterator[DoctorFinding]:
    yield from _missing(f, f.expected.rbac, "rbac", "the gate or retire Job cannot do its work")
    for ref in f.expected.rbac:
        live, rendered = f.present(ref), f.expected.grants.get(ref) or {}
        if live is None or not rendered:
            continue
        differ = [k for k in GRANT_FIELDS if _normal(live.get(k)) != _normal(rendered.get(k))]
        if differ:
            yield _finding(
                "rbac",
                ERROR,
                ref.shown(),
                f"its {' and '.join(differ)} are not the render's: the Job may be refused a request it "
                "needs, or allowed more than it should",
                f"let the engine sync {f.expected.file_of(ref)} again (or kubectl apply -f it)",
            )


def _normal(value: Any) -> Any:
    """A grant as compared: empty fields dropped (the API server omits them), the items of a
    list of strings sorted (their order grants nothing), the rules in any order."""
    if isinstance(value, Mapping):
        kept = {str(k): _normal(v) for k, v in value.items() if v not in (None, "", [], {})}
        return tuple(sorted(kept.items()))
    if isinstance(value, list | tuple):
        items = [_normal(v) for v in value]
        return tuple(sorted(items, key=repr))
    return value


# --- the sync engine ------------------------------------------------------------------------


def engine_of(f: Facts) -> Engine | None:
    appset = f.expected.application_set
    if appset is not None and f.present(appset) is not None:
        return "argocd"
    if any(f.present(k) is not None for k in f.expected.kustomizations):
        return "flux"
    return None


def engine_wiring(f: Facts) -> Iterator[DoctorFinding]:
    """An engine is installed (its API is served) but the render's wiring is not applied."""
    if engine_of(f) is not None:
        return
    appset = f.expected.application_set
    if appset is not None and appset.api_version in f.live.served:
        yield _finding(
            "engine-wiring",
            WARNING,
            appset.shown(),
            "Argo CD is installed but the render's ApplicationSet is not: nothing syncs the render",
            f"kubectl apply -k {f.expected.output}/argocd (or let tasgen init's bootstrap do it)",
        )
    kustomizations = f.expected.kustomizations
    if kustomizations and kustomizations[0].api_version in f.live.served:
        yield _finding(
            "engine-wiring",
            WARNING,
            kustomizations[0].shown(),
            "Flux is installed but the render's Kustomizations are not: nothing syncs the render",
            f"kubectl apply -k {f.expected.output}/flux (or let tasgen init's bootstrap do it)",
        )


def argocd_progressive_syncs(f: Facts) -> Iterator[DoctorFinding]:
    appset = f.expected.application_set
    if engine_of(f) != "argocd" or appset is None or not f.expected.rolling_sync:
        return
    controller = f.deployed.get("argocd-applicationset-controller")
    said = c.flag(controller.args, "enable-progressive-syncs") if controller else None
    if said is None and controller is not None:
        said = controller.env.get(PROGRESSIVE_ENV)
    params = (appset.namespace or "", "argocd-cmd-params-cm")
    where = f"ConfigMap {'/'.join(params)}"
    if said is None:
        said = f.live.config_maps.get(params, {}).get(PROGRESSIVE_KEY)
    elif controller is not None:
        where = f"Deployment {controller.deployment}"
    if (said or "").strip().lower() != "true":
        yield _finding(
            "argocd-progressive-syncs",
            ERROR,
            where,
            f"progressive syncs are off ({PROGRESSIVE_KEY} is {_shown(said)}): the ApplicationSet's "
            "RollingSync steps are ignored and every step syncs at once, the gate after the queues it "
            "should drain",
            f'set {PROGRESSIVE_KEY}: "true" in argocd-cmd-params-cm and restart the '
            "applicationset controller",
        )


def _shown(value: str | None) -> str:
    return "not set" if value is None else repr(value)


def argocd_health(f: Facts) -> Iterator[DoctorFinding]:
    appset = f.expected.application_set
    if engine_of(f) != "argocd" or appset is None:
        return
    live = f.live.config_maps.get((appset.namespace or "", "argocd-cm"), {})
    for key, lua in sorted(f.expected.argocd_health.items()):
        kind = key.removeprefix(HEALTH_PREFIX)
        if key not in live:
            yield _finding(
                "argocd-health",
                ERROR,
                f"ConfigMap {appset.namespace}/argocd-cm",
                f"Argo CD has no health check for {kind}: such objects are Healthy as soon as they "
                "exist, and RollingSync moves on",
                f"add {key} to argocd-cm (tasgen init scaffolds the health checks under deploy/argocd/)",
            )
        elif lua is not None and live[key].strip() != lua.strip():
            yield _finding(
                "argocd-health",
                WARNING,
                f"ConfigMap {appset.namespace}/argocd-cm",
                f"Argo CD's health check for {kind} is not the render's",
                f"apply the render's argocd-cm health checks ({key}) to the cluster's argocd-cm",
            )


def _owned_by(obj: Mapping[str, Any], kind: str, name: str) -> bool:
    owners = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any(o.get("kind") == kind and o.get("name") == name for o in owners)


def argocd_revision(f: Facts) -> Iterator[DoctorFinding]:
    appset = f.expected.application_set
    if engine_of(f) != "argocd" or appset is None:
        return
    apps = [a for a in f.live.applications if _owned_by(a, "ApplicationSet", appset.name)]
    if not apps:
        yield _finding(
            "engine-revision",
            WARNING,
            appset.shown(),
            "the ApplicationSet has generated no Application: nothing is synced",
            "check the applicationset controller's log and the ApplicationSet's status conditions",
        )
        return
    for app in sorted(apps, key=lambda a: str(a["metadata"]["name"])):
        revision = str(((app.get("status") or {}).get("sync") or {}).get("revision") or "")
        yield from _revision(f, f"Application {appset.namespace}/{app['metadata']['name']}", revision)


def _revision(f: Facts, subject: str, revision: str) -> Iterator[DoctorFinding]:
    if f.head is None:
        return
    commit = revision.rpartition(":")[2]  # Flux writes "main@sha1:<commit>"
    if not commit or (not f.head.startswith(commit) and not commit.startswith(f.head)):
        yield _finding(
            "engine-revision",
            WARNING,
            subject,
            f"synced at {commit or 'no revision yet'}, the repository's HEAD is {f.head}",
            "push HEAD, or wait for the engine's next sync (an error in the sync's status says why not)",
        )


def flux(f: Facts) -> Iterator[DoctorFinding]:
    if engine_of(f) != "flux":
        return
    controller = f.deployed.get("flux-kustomize-controller")
    least = FLUX_HEALTH_EXPRS_MINIMUM if f.expected.flux_health_exprs else FLUX_MINIMUM
    have = c.version_tuple(controller.version) if controller else None
    if controller is not None and have is not None and have < least:
        yield _finding(
            "flux-version",
            ERROR,
            f"Deployment {controller.deployment}",
            f"kustomize-controller {controller.version} runs; the render's Kustomizations need "
            f"{_version(least)}",
            f"upgrade Flux (kustomize-controller {_version(least)} or later)",
        )
    for account in f.expected.flux_service_accounts:
        if f.present(account) is None:
            yield _finding(
                "flux-service-account",
                ERROR,
                account.shown(),
                "the render's Kustomizations run as this ServiceAccount, which is not in the cluster: "
                "kustomize-controller refuses to apply them",
                "create the ServiceAccount and the RBAC it is bound to (docs/explanation/doctor.md)",
            )
    for ref in f.expected.kustomizations:
        live = f.present(ref)
        if live is None:
            yield _finding(
                "flux-wiring",
                ERROR,
                ref.shown(),
                "the render's Kustomization is not in the cluster: its step is never synced",
                f"kubectl apply -f {f.expected.file_of(ref)}",
            )
            continue
        status = live.get("status") or {}
        ready = next((x for x in status.get("conditions") or () if x.get("type") == "Ready"), None)
        if ready is None or ready.get("status") != "True":
            message = (ready or {}).get("message") or "never reconciled: is kustomize-controller running?"
            yield _finding(
                "flux-ready", WARNING, ref.shown(), f"not Ready: {message}", "read the Kustomization's events"
            )
        yield from _revision(f, ref.shown(), str(status.get("lastAppliedRevision") or ""))


CHECKS: dict[str, Check] = {
    "kueue-api": kueue_api,
    "kueue-version": kueue_version,
    "kueue-tas": kueue_tas,
    "kueue-objects": kueue_objects,
    "quantities": quantities,
    "nfd-api": nfd_api,
    "nfd-version": nfd_version,
    "nfd-running": nfd_running,
    "nfd-label-namespace": nfd_label_namespaces,
    "nodefeatures": node_features,
    "nodes": nodes,
    "admission-policy": admission_policy,
    "rbac": rbac,
    "engine-wiring": engine_wiring,
    "argocd-progressive-syncs": argocd_progressive_syncs,
    "argocd-health": argocd_health,
    "argocd-revision": argocd_revision,
    "flux": flux,
}


def components(f: Facts) -> tuple[Component, ...]:
    found = f.deployed
    names = ["kueue", "nfd-master"]
    engine = engine_of(f)
    if engine == "argocd":
        names.append("argocd-applicationset-controller")
    elif engine == "flux":
        names += ["flux-source-controller", "flux-kustomize-controller"]
    return tuple(
        Component(name=n, version=found[n].version, deployment=found[n].deployment)
        if n in found
        else Component(name=n, version=None, deployment=None)
        for n in names
    )


def run_checks(f: Facts) -> tuple[DoctorFinding, ...]:
    return tuple(finding for check in CHECKS.values() for finding in check(f))
