"""``tasgen init``: the files a GitOps repository needs to use tasgen, from jinja2 templates
(templates/init/): a commented GeneratorConfig, the pull-request workflow, the scheduled
refresh workflow (fetch, import-nodes, render, one pull request), a pre-commit
configuration, and the Argo CD and Flux objects that sync rendered/.

Nothing is overwritten: when any target exists, nothing is written at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import Path

import jinja2

from ...load.files import load_file, read_inventory

#: target path (relative to the repository) -> template (templates/init/)
FILES = {
    "inventories/config.yaml": "config.yaml.j2",
    ".github/workflows/tasgen.yml": "workflow.yaml.j2",
    ".github/workflows/tasgen-refresh.yml": "refresh-workflow.yaml.j2",
    ".pre-commit-config.yaml": "pre-commit-config.yaml.j2",
    "deploy/argocd/application.yaml": "argocd-application.yaml.j2",
    "deploy/argocd/argocd-cm-health.yaml": "argocd-cm-health.yaml.j2",
    "deploy/argocd/project.yaml": "argocd-project.yaml.j2",
    "deploy/flux/kustomization.yaml": "flux-kustomization.yaml.j2",
}
HOOKS_REPO = "https://github.com/tasgen/tasgen"
#: the inventory reference, in this repository (tests/test_docs.py checks that the page exists)
DOCS = f"{HOOKS_REPO}/blob/main/docs/reference/inventory.md"
PLAN_MARKER = "<!-- tasgen-plan -->"  # the same as generator/commands/plan/formats.py's (a test checks)


@dataclass(frozen=True)
class Options:
    repo_url: str
    branch: str
    version: str


class Exists(Exception):
    """Some target files exist already; nothing was written."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(", ".join(paths))
        self.paths = paths


class Unwritable(Exception):
    """A file could not be written; the ones written before it were removed."""


class Unusable(Exception):
    """The repository cannot take the scaffold as it is; nothing was written."""


def installed_version() -> str:
    return metadata.version("tasgen")


def scaffold(root: Path, options: Options) -> list[str]:
    """Writes every file of :data:`FILES` below ``root``; returns their paths."""
    taken = [path for path in FILES if (root / path).exists() or (root / path).is_symlink()]
    if taken:
        raise Exists(taken)
    escaping = [path for path in FILES if not _inside(root, (root / path).parent)]
    if escaping:
        raise Unusable(f"{escaping[0]} would be written outside {root}: a link on its way leads out of it")
    configured = _generator_config(root / "inventories")
    if configured:
        raise Unusable(f"{configured} holds the inventory's GeneratorConfig already (at most one)")
    texts = {path: _render(template, options) for path, template in FILES.items()}
    written: list[Path] = []  # files, and the folders made for them
    try:
        for path, text in texts.items():
            _write_new(root / path, text, written)
    except OSError as e:
        for done in reversed(written):  # all or nothing
            done.rmdir() if done.is_dir() else done.unlink(missing_ok=True)
        raise Unwritable(f"cannot write {e.filename or root}: {e.strerror or e}") from e
    return list(texts)


def _inside(root: Path, folder: Path) -> bool:
    """Whether the folder, links on its way followed (even broken ones), is below root."""
    try:
        return folder.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link that loops (RuntimeError in Python 3.11)
        return False


def _write_new(target: Path, text: str, written: list[Path]) -> None:
    missing = [p for p in reversed(target.parents) if not p.exists() and not p.is_symlink()]
    for folder in missing:
        folder.mkdir()
        written.append(folder)
    with target.open("x", encoding="utf-8") as stream:  # "x": never replaces a file
        written.append(target)
        stream.write(text)


def _generator_config(inventory: Path) -> str | None:
    """The inventory file that holds a GeneratorConfig, if any (only files that spell the
    kind are parsed)."""
    if not inventory.is_dir():
        return None
    spelled = [f for f in read_inventory(inventory) if f.data is not None and b"GeneratorConfig" in f.data]
    for file in spelled:
        if any(doc.kind == "GeneratorConfig" for doc in load_file(file).documents):
            return file.shown
    return None


def _quoted(value: str) -> str:
    """A YAML scalar that reads back as the string itself ("1.10", "yes", "#main"...): JSON's
    double-quoted form, which YAML reads as it is."""
    return json.dumps(value, ensure_ascii=False)


def _render(template: str, options: Options) -> str:
    return (
        _environment()
        .get_template(template)
        .render(
            repo_url=options.repo_url,
            branch=options.branch,
            version=options.version,
            hooks_repo=HOOKS_REPO,
            docs=DOCS,
            marker=PLAN_MARKER,
        )
    )


@cache
def _environment() -> jinja2.Environment:
    folder = resources.files("tasgen").joinpath("templates", "init")
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: folder.joinpath(name).read_text("utf-8")),
        autoescape=False,  # YAML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["quoted"] = _quoted
    return env
