"""The validate stage: documents -> typed inventory, schema first, then semantic rules."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .. import sourcetypes
from ..load.files import LoadedFile
from ..model import Document, Finding, Inventory, Level
from . import documents
from .checks import Context, run_checks
from .checks.sources import selector_problems
from .snapshots import SnapshotFiles, load_snapshot


@dataclass
class Validation:
    inventory: Inventory | None
    findings: list[Finding]
    texts: dict[str, str] = field(default_factory=dict)  # display path -> text, for positions
    context: Context | None = None

    @property
    def has_errors(self) -> bool:
        return any(f.level is Level.ERROR for f in self.findings)


def validate(files: list[LoadedFile], now: datetime) -> Validation:
    texts = {f.path: f.text for f in files}
    snapshot_paths = _snapshot_files(files)
    findings = [x for f in files if f.relative not in snapshot_paths for x in f.findings]
    docs = [d for f in files if f.relative not in snapshot_paths for d in f.documents]
    found = documents.catalog(docs)
    findings += found.findings
    inventory, store, more = _inventory(found, files)
    findings += more
    context = Context(inventory, now)
    findings += _load_snapshots(inventory, store, context)
    if any(f.level is Level.ERROR for f in findings):
        # Rules read a complete inventory; on a partial one they would report echoes of the
        # problems above (e.g. unknown nodes of an inventory file that failed to parse).
        return Validation(inventory, findings, texts, context)
    findings.extend(run_checks(context))
    if not any(f.level is Level.ERROR for f in findings):
        # Risks are judged on a valid inventory: on an invalid one they would echo its errors.
        findings.extend(run_checks(context, risks=True))
    return Validation(inventory, findings, texts, context)


def _snapshot_files(files: Iterable[LoadedFile]) -> set[str]:
    """Files that hold a fetched snapshot: data of a source, not inventory documents."""
    paths: set[str] = set()
    for doc in (d for f in files for d in f.documents if d.kind == "TopologySource"):
        spec = doc.body.get("spec")
        if not isinstance(spec, dict):
            continue
        for kind in sourcetypes.present(spec):
            path = kind.snapshot_file(spec)
            if path is not None:
                paths.add(Path(path).as_posix())
    return paths


def _inventory(
    found: documents.Catalog,
    files: list[LoadedFile],
) -> tuple[Inventory, SnapshotFiles, list[Finding]]:
    settings, findings = documents.settings(found.of("GeneratorConfig"))
    nodes, more = documents.nodes(found.of("NodeInventory"))
    sources = {d.name: documents.source(d) for d in found.of("TopologySource")}
    plans = {d.name: documents.queue_plan(d) for d in found.of("ClusterQueuePlan")}
    configmaps = {_cm_key(d): d for d in found.of("ConfigMap")}
    store = SnapshotFiles({f.relative: f for f in files}, configmaps, found.rejected)
    return Inventory(settings, nodes, sources, plans), store, findings + more


def _cm_key(doc: Document) -> str:
    return f"{doc.body['metadata']['namespace']}/{doc.name}"


def _load_snapshots(inventory: Inventory, store: SnapshotFiles, context: Context) -> list[Finding]:
    findings: list[Finding] = []
    for name, source in sorted(inventory.sources.items()):
        snapshot, problems = load_snapshot(source, store)
        source.snapshot = snapshot
        findings += problems
        if (source.writes and snapshot is None) or selector_problems(source):
            # Rules about what it selects or states would only echo this problem.
            context.unloaded.add(name)
    return findings
