"""tasgen init: the scaffold of a GitOps repository, checked by the tools that will read it:
tasgen itself, actionlint (the workflow), the Argo CD and Flux CRDs (the bootstrap objects) and
this repository's pre-commit hooks."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tasgen.commands import init as scaffold
from tasgen.commands.plan.formats import MARKER
from tests.conformance.crds import Catalog, go_module_dir
from tests.conftest import REPO, tasgen, tree

ACTIONLINT = ("github.com/rhysd/actionlint/cmd/actionlint", "v1.7.7")
ARGO_CD = ("github.com/argoproj/argo-cd/v2", "v2.14.11", "manifests/crds/application-crd.yaml")
ARGO_CD_PROJECT = ("github.com/argoproj/argo-cd/v2", "v2.14.11", "manifests/crds/appproject-crd.yaml")
FLUX = (
    "github.com/fluxcd/kustomize-controller",
    "v1.7.3",
    "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
)


@pytest.fixture
def scaffolded(tmp_path: Path) -> Path:
    run = tasgen("init", str(tmp_path / "fleet"), "--repo-url", "https://github.com/acme/fleet.git")
    assert run.exit_code == 0, run.output
    return tmp_path / "fleet"


def test_init_writes_the_scaffold(scaffolded: Path) -> None:
    assert sorted(tree(scaffolded)) == sorted(scaffold.FILES)


def test_the_scaffolded_inventory_is_valid(scaffolded: Path) -> None:
    run = tasgen("validate", "-i", str(scaffolded / "inventories"), "--strict")
    assert run.exit_code == 0, run.output


def test_a_scaffold_without_repo_url_warns_until_the_url_is_set(tmp_path: Path) -> None:
    """The placeholder URL would point Argo CD at no repository: a warning (so --strict, as the
    workflow runs it, fails) at the line to change, until it is set."""
    assert tasgen("init", str(tmp_path)).exit_code == 0
    config = tmp_path / "inventories" / "config.yaml"
    run = tasgen("validate", "-i", str(tmp_path / "inventories"), "--strict")
    assert run.exit_code == 1
    line = next(n for n, text in enumerate(config.read_text().splitlines(), 1) if "OWNER/REPO" in text)
    column = config.read_text().splitlines()[line - 1].index('"https') + 1
    (problem,) = [p for p in run.output.splitlines() if "[repo-url-placeholder]" in p]
    assert problem.startswith(
        f"{config}:{line}:{column}: warning: repoURL is still https://github.com/OWNER/REPO.git,"
    )
    config.write_text(
        config.read_text().replace("https://github.com/OWNER/REPO.git", "https://git.example.com/f.git")
    )
    assert tasgen("validate", "-i", str(tmp_path / "inventories"), "--strict").exit_code == 0


def test_the_scaffolded_config_names_every_field_of_the_schema(scaffolded: Path) -> None:
    """Every GeneratorConfig field, at every depth, is in the scaffolded config, set or
    commented out: with the comment markers of the commented-out fields removed, the file is
    valid and holds each of them (one of a choice such as destination's server or name)."""
    text = (scaffolded / "inventories" / "config.yaml").read_text()
    uncommented = re.sub(r"(?m)^( +)# ([A-Za-z]+: )", r"\1\2", text)  # "  # image: x" -> "  image: x"
    assert uncommented.count("\n") == text.count("\n") and uncommented != text
    (scaffolded / "inventories" / "config.yaml").write_text(uncommented)
    run = tasgen("validate", "-i", str(scaffolded / "inventories"))
    assert run.exit_code == 0, (run.output, uncommented)
    schema = yaml.safe_load(tasgen("schema", "GeneratorConfig").output)["properties"]["spec"]
    spec = yaml.safe_load(uncommented)["spec"]
    assert _missing(schema, spec, "spec") == []


def _missing(schema: dict[str, object], value: object, at: str) -> list[str]:
    """The schema's fields that the value lacks, as dotted paths."""
    fields = schema.get("properties")
    if not isinstance(fields, dict) or not isinstance(value, dict):
        return []
    choose_one = schema.get("maxProperties") == 1
    absent = [f"{at}.{name}" for name in fields if name not in value]
    if choose_one and len(absent) < len(fields):
        absent = []
    return absent + [
        m for name, sub in fields.items() if name in value for m in _missing(sub, value[name], f"{at}.{name}")
    ]


@pytest.mark.parametrize("existing", sorted(scaffold.FILES))
def test_init_overwrites_nothing(tmp_path: Path, existing: str) -> None:
    target = tmp_path / existing
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine\n")
    run = tasgen("init", str(tmp_path))
    assert run.exit_code == 1
    assert existing in run.output and "nothing was written" in run.output
    assert tree(tmp_path) == {existing: "mine\n"}


def test_the_bootstrap_objects_point_at_the_folders_a_render_writes(scaffolded: Path) -> None:
    """The Argo CD Application syncs tasgen's ApplicationSet and the Flux Kustomization its
    Kustomizations: both folders exist once the scaffold's inventory is rendered, and the
    ApplicationSet reads the repository and branch init was given."""
    (scaffolded / "inventories/nodes.yaml").write_text(
        "apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\nmetadata: {name: nodes}\n"
        "nodes:\n  - name: gpu-1\n"
        "    labels: {kubernetes.io/hostname: gpu-1, nvidia.com/gpu.product: H100}\n"
    )
    run = tasgen("render", "-i", str(scaffolded / "inventories"), "-o", str(scaffolded / "rendered"))
    assert run.exit_code == 0, run.output
    application = yaml.safe_load((scaffolded / "deploy/argocd/application.yaml").read_text())
    flux = yaml.safe_load((scaffolded / "deploy/flux/kustomization.yaml").read_text())
    assert application["spec"]["source"]["path"] == "rendered/argocd"
    assert flux["spec"]["path"] == "./rendered/flux"
    rendered = tree(scaffolded / "rendered")
    assert "flux/kustomization.yaml" in rendered
    # Flux's root runs as the ServiceAccount that rendered/flux/rbac.yaml grants, as the
    # Kustomizations it applies do; that file is there, and not among what the root syncs.
    accounts = [
        d for d in yaml.safe_load_all(rendered["flux/rbac.yaml"]) if d and d["kind"] == "ServiceAccount"
    ]
    assert [(a["metadata"]["name"], a["metadata"]["namespace"]) for a in accounts] == [
        (flux["spec"]["serviceAccountName"], flux["metadata"]["namespace"])
    ]
    assert "rbac.yaml" not in yaml.safe_load(rendered["flux/kustomization.yaml"])["resources"]
    for name in ("gate", "queues"):
        (step,) = [d for d in yaml.safe_load_all(rendered[f"flux/{name}.yaml"]) if d]
        assert step["spec"]["serviceAccountName"] == flux["spec"]["serviceAccountName"]
    (appset,) = yaml.safe_load_all(rendered["argocd/applicationset.yaml"])
    git = appset["spec"]["generators"][0]["git"]
    assert (git["repoURL"], git["revision"]) == ("https://github.com/acme/fleet.git", "main")


def test_the_workflow_pins_this_release_and_updates_one_comment(scaffolded: Path) -> None:
    workflow = yaml.safe_load((scaffolded / ".github/workflows/tasgen.yml").read_text())
    steps = workflow["jobs"]["tasgen"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert f'pip install "tasgen=={scaffold.installed_version()}"' in runs[2]
    assert "tasgen validate --format github --strict" in runs
    assert "tasgen check --format github" in runs
    assert "tasgen fit --format github" in runs  # the configured workloads
    assert "workloads/**" in workflow[True]["pull_request"]["paths"]  # YAML 1.1 reads "on" as True
    assert any(r.startswith("tasgen plan --base") and "--format markdown" in r for r in runs)
    script = steps[-1]["with"]["script"]
    assert MARKER in script and "updateComment" in script and "createComment" in script
    assert scaffold.PLAN_MARKER == MARKER
    # only the workflow's own comment is updated: anyone can paste the marker into theirs
    assert 'c.user.login === "github-actions[bot]"' in script


def _tool(module: str, version: str) -> Path:
    """A Go tool built once from the module proxy into the user's cache, as the harness does."""
    go = shutil.which("go")
    assert go is not None, "go is needed to build actionlint (see CONTRIBUTING.md: Test control plane)"
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tasgen-tools" / version
    binary = cache / module.rsplit("/", 1)[-1]
    if not binary.exists():
        env = {**os.environ, "GOBIN": str(cache), "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
        subprocess.run([go, "install", f"{module}@{version}"], env=env, check=True, timeout=900)
    return binary


def test_the_scaffolded_workloads_are_what_the_workflow_checks(
    scaffolded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scaffold's globs match a manifest under workloads/, from the repository's top."""
    subprocess.run(["git", "init", "-q"], cwd=scaffolded, check=True)
    (scaffolded / "workloads" / "team").mkdir(parents=True)
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\n"
        "spec: {template: {spec: {containers: [{name: m, image: x}]}}}\n"
    )
    (scaffolded / "workloads" / "team" / "job.yaml").write_text(job)
    monkeypatch.chdir(scaffolded)
    assert tasgen("fit", "--format", "json").json()["workloads"] == []  # no queue label: not Kueue's
    run = tasgen("fit")
    assert run.exit_code == 0 and "workloads/team/job.yaml:3:1: warning:" in run.output, run.output


def test_the_workflow_is_actionlint_clean(scaffolded: Path) -> None:
    actionlint = _tool(*ACTIONLINT)
    done = subprocess.run(
        [str(actionlint), "-no-color", ".github/workflows/tasgen.yml"],
        cwd=scaffolded,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("crd", "target"),
    [
        (ARGO_CD, "deploy/argocd/application.yaml"),
        (ARGO_CD_PROJECT, "deploy/argocd/project.yaml"),
        (FLUX, "deploy/flux/kustomization.yaml"),
    ],
)
def test_the_bootstrap_objects_fit_their_crds(
    scaffolded: Path, crd: tuple[str, str, str], target: str
) -> None:
    module, version, path = crd
    catalog = Catalog(f"{module}@{version}", [go_module_dir(module, version) / path])
    (obj,) = yaml.safe_load_all((scaffolded / target).read_text())
    assert catalog.validate(obj) == []


def test_the_pre_commit_config_uses_this_repository_s_hooks(scaffolded: Path) -> None:
    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    config = yaml.safe_load((scaffolded / ".pre-commit-config.yaml").read_text())
    (repo,) = config["repos"]
    assert repo["rev"] == f"v{scaffold.installed_version()}"
    assert [h["id"] for h in repo["hooks"]] == ["tasgen-validate", "tasgen-check"]
    assert set(hooks) == {"tasgen-validate", "tasgen-check"}
    for hook in hooks.values():
        command = hook["entry"].split()
        assert command[0] == "tasgen" and hook["language"] == "python" and not hook["pass_filenames"]
        assert tasgen(*command[1:], "--help").exit_code == 0


def test_this_repository_s_own_ci_is_actionlint_clean() -> None:
    """tasgen's own workflows (CI, release) stay apart from the ones users get; they are
    linted the same way."""
    actionlint = _tool(*ACTIONLINT)
    workflows = sorted(p.relative_to(REPO).as_posix() for p in (REPO / ".github" / "workflows").iterdir())
    done = subprocess.run(
        [str(actionlint), "-no-color", *workflows], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert ".github/workflows/ci.yml" in workflows


def test_init_that_cannot_write_a_file_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "deploy").write_text("a file where init needs a folder\n")
    run = tasgen("init", str(tmp_path))
    assert run.exit_code == 1 and "cannot write" in run.output and "nothing was written" in run.output
    assert tree(tmp_path) == {"deploy": "a file where init needs a folder\n"}


def test_init_that_cannot_write_a_file_leaves_no_folder_behind(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "flux").write_text("a file where init needs a folder\n")
    run = tasgen("init", str(tmp_path))
    assert run.exit_code == 1 and "nothing was written" in run.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "deploy",
        "deploy/flux",
    ]


@pytest.mark.parametrize("branch", ["1.10", "0123", "yes", "#main", "feat: x", "*", "{{x}}"])
def test_any_branch_name_is_written_as_that_string(tmp_path: Path, branch: str) -> None:
    run = tasgen("init", str(tmp_path), "--branch", branch, "--repo-url", "https://g.example/a&b.git")
    assert run.exit_code == 0, run.output
    assert tasgen("validate", "-i", str(tmp_path / "inventories"), "--strict").exit_code == 0
    config = yaml.safe_load((tmp_path / "inventories" / "config.yaml").read_text())
    application = yaml.safe_load((tmp_path / "deploy" / "argocd" / "application.yaml").read_text())
    assert config["spec"]["sync"]["argocd"]["targetRevision"] == branch
    assert application["spec"]["source"]["targetRevision"] == branch
    assert application["spec"]["source"]["repoURL"] == "https://g.example/a&b.git"


@pytest.mark.parametrize(("option", "value"), [("--repo-url", ""), ("--branch", " "), ("--branch", "a\nb")])
def test_an_empty_or_multi_line_value_is_a_usage_error(tmp_path: Path, option: str, value: str) -> None:
    run = tasgen("init", str(tmp_path), option, value)
    assert run.exit_code == 2 and option in run.output
    assert list(tmp_path.iterdir()) == []


def test_init_refuses_an_inventory_that_has_a_generator_config(tmp_path: Path) -> None:
    shutil.copytree(REPO / "inventories", tmp_path / "inventories")
    (tmp_path / "inventories" / "config.yaml").rename(tmp_path / "inventories" / "generator.yaml")
    before = tree(tmp_path)
    run = tasgen("init", str(tmp_path))
    assert run.exit_code == 1
    assert "generator.yaml holds the inventory's GeneratorConfig already" in run.output
    assert "nothing was written" in run.output and tree(tmp_path) == before


@pytest.mark.parametrize("target", ["elsewhere", "gone", "loop"])
def test_init_writes_nothing_through_a_link_that_leads_out(tmp_path: Path, target: str) -> None:
    """A .github link out of the repository (to a folder, broken, looping): init wrote the
    workflows outside the folder it was given (found in review)."""
    repo, outside = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    outside.mkdir()
    (repo / ".github").symlink_to(
        {"elsewhere": outside, "gone": tmp_path / "gone", "loop": repo / ".github"}[target]
    )
    before = tree(tmp_path)
    run = tasgen("init", str(repo))
    assert run.exit_code == 1, run.output
    assert "would be written outside" in run.output and "nothing was written" in run.output
    assert tree(tmp_path) == before and list(outside.iterdir()) == []


def test_every_workflow_step_fails_when_a_piped_command_fails(scaffolded: Path) -> None:
    # GitHub runs a step without `shell:` as `bash -e`, without pipefail: `tasgen fetch | tee`
    # would then pass whatever fetch did. `shell: bash` adds -o pipefail.
    for workflow in (scaffolded / ".github" / "workflows").glob("*.yml"):
        jobs = yaml.safe_load(workflow.read_text())["jobs"]
        assert all(job["defaults"]["run"]["shell"] == "bash" for job in jobs.values()), workflow.name


def test_the_argocd_health_patch_is_what_the_engine_tests_apply(scaffolded: Path) -> None:
    """deploy/argocd/argocd-cm-health.yaml: the Lua health checks of Kueue's queues as an
    argocd-cm merge patch, under the keys Argo CD reads (resource.customizations.health.
    <group>_<kind>); tests/e2e/argocd.py applies the template itself, so it must be the text."""
    written = (scaffolded / "deploy/argocd/argocd-cm-health.yaml").read_text()
    assert written == (REPO / "templates/init/argocd-cm-health.yaml.j2").read_text()
    data = yaml.safe_load(written)["data"]
    assert set(data) == {
        "resource.customizations.health.kueue.x-k8s.io_ClusterQueue",
        "resource.customizations.health.kueue.x-k8s.io_LocalQueue",
    }
    assert all("return hs" in lua for lua in data.values())


def test_the_argocd_bootstrap_syncs_only_the_application_set(scaffolded: Path) -> None:
    """The bootstrap Application reads one file of rendered/argocd/ (a plain directory source,
    which takes precedence over the kustomization.yaml there), in a project that permits
    ApplicationSets in the argocd namespace and nothing cluster-scoped: the AppProject of the
    generated Applications is not synced from the repository."""
    application = yaml.safe_load((scaffolded / "deploy/argocd/application.yaml").read_text())
    project = yaml.safe_load((scaffolded / "deploy/argocd/project.yaml").read_text())
    source = application["spec"]["source"]
    assert source["directory"] == {"include": "applicationset.yaml"} and "kustomize" not in source
    assert application["spec"]["project"] == project["metadata"]["name"] != "default"
    assert project["spec"]["clusterResourceWhitelist"] == []
    assert project["spec"]["namespaceResourceWhitelist"] == [
        {"group": "argoproj.io", "kind": "ApplicationSet"}
    ]
    assert [d["namespace"] for d in project["spec"]["destinations"]] == [application["metadata"]["namespace"]]
    assert project["spec"]["sourceRepos"] == [source["repoURL"]]
