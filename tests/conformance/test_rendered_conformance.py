"""Every Kueue and NFD object in the repository's rendered/ is accepted by the upstream CRDs.

All ``*.yaml``/``*.yml`` files under rendered/ are read (multi-document), except
``kustomization.yaml`` files. Objects of kinds that have no CRD here (Namespace, Job, RBAC,
ConfigMap, Flux Kustomization, ...) are not CRD-checked, but every document must be an object
with apiVersion and kind; and at least one NodeFeature, Topology, ResourceFlavor and ClusterQueue
must have been checked, so an empty or truncated rendered/ fails.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance import crds

RENDERED = Path(__file__).resolve().parents[2] / "rendered"
REQUIRED_KINDS = ("NodeFeature", "Topology", "ResourceFlavor", "ClusterQueue")
SKIPPED_FILES = frozenset({"kustomization.yaml", "kustomization.yml"})

Obj = dict[str, Any]


def rendered_files(root: Path = RENDERED) -> list[Path]:
    """The manifest files of rendered/, kustomization files left out."""
    files = [*root.rglob("*.yaml"), *root.rglob("*.yml")]
    return sorted(p for p in files if p.is_file() and p.name not in SKIPPED_FILES)


@functools.cache
def rendered_objects(root: Path = RENDERED) -> list[tuple[str, Obj]]:
    """``(file:document-number, object)`` for every object in rendered/ (cached)."""
    out: list[tuple[str, Obj]] = []
    for path in rendered_files(root):
        try:
            docs = crds.load_documents(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise AssertionError(f"{path.relative_to(root)}: not valid YAML: {exc}") from exc
        for number, doc in enumerate(docs):
            where = f"{path.relative_to(root)}#{number}"
            if doc is None:
                continue  # an empty document (a stray '---'): no object
            assert isinstance(doc, dict), f"{where}: a document must be an object"
            out.append((where, doc))
    return out


def test_rendered_documents_are_kubernetes_objects() -> None:
    objects = rendered_objects()
    assert objects, f"no objects under {RENDERED} (has tasgen's output been rendered?)"
    for where, obj in objects:
        assert isinstance(obj.get("apiVersion"), str) and obj["apiVersion"], where
        assert isinstance(obj.get("kind"), str) and obj["kind"], where
        assert isinstance(obj.get("metadata"), dict), f"{where}: metadata"


def test_rendered_output_has_every_checked_kind() -> None:
    checked = Counter(obj.get("kind") for _, obj in rendered_objects() if crds.is_checked(obj))
    missing = [kind for kind in REQUIRED_KINDS if not checked[kind]]
    assert not missing, f"no {', '.join(missing)} under {RENDERED} (checked: {dict(checked)})"


@pytest.mark.parametrize("kueue_version", crds.KUEUE_VERSIONS)
def test_rendered_objects_conform_to_the_upstream_crds(kueue_version: str) -> None:
    catalog = crds.catalog(kueue_version)
    problems: list[str] = []
    checked: Counter[str] = Counter()
    for where, obj in rendered_objects():
        if not crds.is_checked(obj):
            continue
        checked[str(obj.get("kind"))] += 1
        problems.extend(f"{where} {crds.describe(obj)}: {p}" for p in catalog.validate(obj))
    assert checked, f"no Kueue or NFD object under {RENDERED}"
    shown = "\n  ".join(problems[:100])
    assert not problems, f"{len(problems)} problem(s) against {catalog.name}:\n  {shown}"


@pytest.mark.parametrize("kueue_version", crds.KUEUE_VERSIONS)
def test_rendered_objects_use_no_deprecated_api_version(kueue_version: str) -> None:
    """The API server would answer each with a deprecation warning (Kueue v1beta1, say)."""
    catalog = crds.catalog(kueue_version)
    warned = []
    for where, obj in rendered_objects():
        if crds.is_checked(obj):
            crd = catalog.crd_version(str(obj.get("apiVersion")), str(obj.get("kind")))
            if crd is not None and crd.deprecation:
                warned.append(f"{where} {crds.describe(obj)}: {crd.deprecation}")
    assert not warned, "\n".join(warned)


def test_loader_reads_every_manifest_but_kustomizations(tmp_path: Path) -> None:
    (tmp_path / "fleet").mkdir()
    (tmp_path / "a.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\n"
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
    )
    (tmp_path / "fleet" / "c.yml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata: {}\n")
    (tmp_path / "kustomization.yaml").write_text("resources: [a.yaml]\n")
    (tmp_path / "notes.txt").write_text("kind: NotAManifest\n")
    objects = rendered_objects(tmp_path)
    assert [(where, obj["kind"]) for where, obj in objects] == [
        ("a.yaml#0", "Namespace"),
        ("a.yaml#2", "ConfigMap"),
        ("fleet/c.yml#0", "ServiceAccount"),
    ]
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(AssertionError, match="must be an object"):
        rendered_objects.__wrapped__(tmp_path)
    (tmp_path / "list.yaml").write_text("kind: A\nkind: B\n")
    with pytest.raises(AssertionError, match="duplicate key 'kind'"):
        rendered_objects.__wrapped__(tmp_path)


def test_yaml_is_read_as_kubectl_reads_it() -> None:
    [doc] = crds.load_documents("metadata:\n  creationTimestamp: 2026-11-30T01:02:03Z\n")
    assert doc == {"metadata": {"creationTimestamp": "2026-11-30T01:02:03Z"}}
