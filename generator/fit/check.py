"""Workload files -> their verdicts against one cluster: what ``tasgen fit`` prints and what
``tasgen plan`` compares between the base and the head (docs/explanation/fit.md)."""

from __future__ import annotations

from dataclasses import dataclass

from ..load.files import InputFile, load_file
from ..load.positions import PositionIndex
from ..model import Finding, Where
from .cluster import Cluster
from .judge import Judgement, judge
from .kinds import ClusterFacts, workloads


@dataclass
class Checked:
    judgement: Judgement
    findings: list[Finding]  # the files', the manifests' and the verdicts'
    texts: dict[str, str]  # shown path -> text, to locate the findings and the workloads


def check_files(cluster: Cluster, files: list[InputFile], facts: ClusterFacts | None = None) -> Checked:
    loaded = [load_file(f) for f in files]
    texts = {f.path: f.text for f in loaded}
    findings: list[Finding] = [x for f in loaded for x in f.findings]
    found, more = workloads([d for f in loaded for d in f.documents], facts)
    judgement = judge(cluster, found)
    return Checked(judgement, [*findings, *more, *judgement.findings], texts)


def positions(checked: Checked) -> list[tuple[int, int]]:
    """The line and column of each judged workload, in order (each file indexed once)."""
    wheres = [j.workload.where for j in checked.judgement.judged]
    by_file: dict[str, list[Where]] = {}
    for where in wheres:
        by_file.setdefault(where.file, []).append(where)
    indexes = {
        file: PositionIndex(checked.texts.get(file, ""), [(w.doc, w.pointer) for w in group])
        for file, group in by_file.items()
    }
    return [indexes[w.file].position(w.doc, w.pointer) for w in wheres]
