"""The engines' wiring conforms to the engines' own CRDs: the ApplicationSet of rendered/argocd/
(and every Application its generator makes) to Argo CD's, the Kustomizations of rendered/flux/
to Flux kustomize-controller's. The CRDs come from the releases' Go modules, as a user gets
them (``go mod download``; Argo CD v3.5.7 is the newest release that Go 1.26 accepts, v3.6
requires Go 1.27)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from tasgen.compile.sync_wiring import Paths, application_set
from tests.conformance import crds
from tests.conformance.test_rendered_conformance import RENDERED, rendered_objects
from tests.conftest import NOW, REPO, tasgen

ARGO_MODULE = "github.com/argoproj/argo-cd/v3"
ARGO_VERSION = "v3.5.7"
#: the Argo CD that tests/cluster/argocd builds and the end-to-end tests sync with
ARGO_CLUSTER_VERSION = "v3.5.3"
FLUX_MODULE = "github.com/fluxcd/kustomize-controller"
FLUX_VERSION = "v1.9.6"  # the one tests/cluster/flux builds

Obj = dict[str, Any]


@functools.cache
def engines(argo_version: str = ARGO_VERSION) -> crds.Catalog:
    argo = crds.go_module_dir(ARGO_MODULE, argo_version) / "manifests" / "crds"
    flux = crds.go_module_dir(FLUX_MODULE, FLUX_VERSION) / "config" / "crd" / "bases"
    paths = [
        argo / "application-crd.yaml",
        argo / "applicationset-crd.yaml",
        argo / "appproject-crd.yaml",
        *sorted(flux.glob("*.yaml")),
    ]
    return crds.Catalog(f"argo-cd {argo_version} + kustomize-controller {FLUX_VERSION}", paths)


def applications(appset: Obj, root: Path) -> list[Obj]:
    """The Applications the git directory generator makes of the folders that exist, with the
    template's three expressions filled in as the generator fills them."""
    made = []
    repo = appset["spec"]["generators"][0]["git"]
    for entry in repo["directories"]:
        pattern = entry["path"].removeprefix("rendered/")
        for folder in sorted(p for p in root.glob(pattern) if p.is_dir()):
            path = f"rendered/{folder.relative_to(root).as_posix()}"
            made.append(_instantiate(appset["spec"]["template"], path))
    return made


def _instantiate(template: Any, path: str) -> Any:
    if isinstance(template, dict):
        return {k: _instantiate(v, path) for k, v in template.items()}
    if isinstance(template, list):
        return [_instantiate(v, path) for v in template]
    if not isinstance(template, str):
        return template
    segments = path.split("/")
    text = template.replace("{{ .path.path }}", path)
    text = text.replace("{{ .path.basenameNormalized }}", segments[-1])
    for i, segment in enumerate(segments):
        text = text.replace(f"{{{{ index .path.segments {i} }}}}", segment)
    assert "{{" not in text, f"an expression the test does not fill: {text}"
    return text


#: The Flux ServiceAccount's grants: applied by an administrator, synced by no engine, and made
#: only of kinds built into the API server (the Flux end-to-end tests apply them to a real one).
ADMIN_FILE = "flux/rbac.yaml"
ADMIN_KINDS = [
    "ClusterRole",
    "ClusterRoleBinding",
    "Namespace",
    "Role",
    "RoleBinding",
    "ServiceAccount",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
]


def _engine_objects(objects: list[tuple[str, Obj]]) -> list[tuple[str, Obj]]:
    """The engines' own objects, checked against their CRDs: every wiring file but the grants."""

    def granting(where: str) -> bool:
        return where.partition("#")[0] == ADMIN_FILE

    kept = [(w, o) for w, o in objects if w.startswith(("argocd/", "flux/")) and not granting(w)]
    grants = sorted({o["kind"] for w, o in objects if granting(w)})
    assert grants == ADMIN_KINDS
    return kept


def wiring(root: Path) -> list[tuple[str, Obj]]:
    return _engine_objects(list(rendered_objects(root)))


def problems_of(objects: list[tuple[str, Obj]], argo_version: str = ARGO_VERSION) -> list[str]:
    catalog = engines(argo_version)
    return [f"{where} {crds.describe(obj)}: {p}" for where, obj in objects for p in catalog.validate(obj)]


@pytest.mark.parametrize("argo_version", [ARGO_VERSION, ARGO_CLUSTER_VERSION])
def test_example_wiring_conforms(argo_version: str) -> None:
    objects = wiring(RENDERED)
    kinds = sorted({o["kind"] for _, o in objects})
    assert kinds == ["AppProject", "ApplicationSet", "Kustomization"]
    (appset,) = [o for _, o in objects if o["kind"] == "ApplicationSet"]
    (project,) = [o for _, o in objects if o["kind"] == "AppProject"]
    made = [(f"generated from {appset['metadata']['name']}", a) for a in applications(appset, RENDERED)]
    assert len(made) == 5  # labels, kueue, gate, queues, retire
    for _, app in made:
        app.update({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application"})
        app["metadata"]["namespace"] = appset["metadata"]["namespace"]
        # in the rendered project, to a destination it permits (as Argo CD matches it)
        assert app["spec"]["project"] == project["metadata"]["name"]
        assert app["metadata"]["namespace"] == project["metadata"]["namespace"]
        assert {**app["spec"]["destination"]} in project["spec"]["destinations"]
        # Each retry syncs the newest revision, so a revert made mid-drain is what is retried.
        assert app["spec"]["syncPolicy"]["retry"]["refresh"] is True
    assert problems_of(objects + made, argo_version) == []


@pytest.mark.parametrize("argo_version", [ARGO_VERSION, ARGO_CLUSTER_VERSION])
def test_the_checker_knows_retry_refresh_as_a_boolean(argo_version: str) -> None:
    """retry.refresh is a field of both Argo CD releases' schema (an unknown field or a
    string there is an error), so the rendered one is checked, not passed over."""
    (appset,) = [o for _, o in wiring(RENDERED) if o["kind"] == "ApplicationSet"]
    policy = appset["spec"]["template"]["spec"]["syncPolicy"]
    for retry in ({**policy["retry"], "refresh": "yes"}, {**policy["retry"], "refreshes": True}):
        spec = {**appset["spec"]["template"]["spec"], "syncPolicy": {**policy, "retry": retry}}
        broken = {
            **appset,
            "spec": {**appset["spec"], "template": {**appset["spec"]["template"], "spec": spec}},
        }
        assert problems_of([("broken", broken)], argo_version) != [], retry


def test_the_checker_sees_a_bad_app_project() -> None:
    (project,) = [o for _, o in wiring(RENDERED) if o["kind"] == "AppProject"]
    broken = {**project, "spec": {**project["spec"], "destinations": [{"server": 1, "namespaces": "x"}]}}
    assert problems_of([("broken", broken)]) != []


def test_sharded_wiring_conforms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = REPO / "tests" / "cases" / "valid" / "sharded"
    monkeypatch.chdir(case)
    out = tmp_path / "rendered"
    assert tasgen("render", "-i", "inventory", "-o", str(out), "--now", NOW).exit_code == 0
    objects = _engine_objects(list(rendered_objects.__wrapped__(out)))
    assert sorted({o["kind"] for _, o in objects}) == ["AppProject", "ApplicationSet", "Kustomization"]
    assert problems_of(objects) == []


def test_the_checker_sees_a_bad_application_set() -> None:
    (appset,) = [o for _, o in wiring(RENDERED) if o["kind"] == "ApplicationSet"]
    broken = {**appset, "spec": {**appset["spec"], "strategy": {"type": "RollingSync", "rollingSync": "x"}}}
    assert problems_of([("broken", broken)]) != []


def test_a_configured_retry_conforms() -> None:
    (appset,) = [o for _, o in wiring(RENDERED) if o["kind"] == "ApplicationSet"]
    retry = {"limit": -1, "backoff": {"duration": "30s", "factor": 3, "maxDuration": "30m"}, "refresh": True}
    argo = {"repoURL": appset["spec"]["template"]["spec"]["source"]["repoURL"], "retry": retry}
    configured = application_set(Paths.of("rendered", ["labels"]), argo, "tasgen-system")
    assert configured["spec"]["template"]["spec"]["syncPolicy"]["retry"] == retry
    assert problems_of([("configured", configured)]) == []
