"""Every reason tasgen fit gives in Kueue's words has a case with its exact position in
tests/cases/fit/ (checked there by tests/test_fit.py), or says why no inventory reaches it."""

from __future__ import annotations

import inspect
import json

import pytest

from tasgen.fit import reasons
from tasgen.fit.cluster import Cluster, ClusterQueue
from tasgen.fit.judge import judge
from tasgen.fit.kinds import Workload
from tasgen.fit.podsets import PodSet
from tasgen.model import Where
from tests.conftest import NOW, REPO, tasgen

CASES = REPO / "tests" / "cases" / "fit"

#: reason -> (case, a part of its message only that reason writes)
COVERED = {
    "local_queue_missing": ("unknown-local-queue", "doesn't exist"),
    "resource_unavailable": ("uncovered-resource", "unavailable in ClusterQueue"),
    "level_missing": ("level-not-in-topology", "does not contain the requested level"),
    "untolerated_taint": (
        "untolerated-flavor-taint",
        "untolerated taint {dedicated serving NoSchedule <nil>}",
    ),
    "affinity_mismatch": ("node-affinity", "doesn't match node affinity"),
    "quota": ("quota", "insufficient quota for nvidia.com/gpu"),
    "joined": ("untolerated-flavor-taint", "(8), untolerated taint"),
    "slice_above": ("slice-above-level", "is above the podset topology"),
    "not_fit": ("podsets-share-a-flavor", "allows to fit only 1 out of 2 pod(s)"),
}
#: reasons Kueue gives that a compiled inventory never leads to, and why
UNREACHABLE = {
    "cluster_queue_missing": "a rendered LocalQueue always names a rendered ClusterQueue",
    "namespace_not_selected": "the case inventory's queues select their namespaces: tested below",
    "flavor_not_found": "a rendered ClusterQueue names only rendered ResourceFlavors",
    "no_tas_support": "every flavor tasgen renders has a Topology",
    "tas_cache_missing": "every rendered flavor's Topology is rendered",
    "tas_only": "every flavor tasgen renders has a Topology: its queues are TAS-only",
    "level_not_specified": "the flavor check (level_missing) answers first, as in Kueue",
    "no_level": "the flavor check (level_missing) answers first, as in Kueue",
    "no_slice_level": "the flavor check (level_missing) answers first, as in Kueue",
    "slice_size_missing": "Kueue's webhook refuses a slice level without a size (fit-manifest) first",
    "no_domains": "every level of a rendered Topology has the domains of the flavor's nodes",
}


def test_every_reason_is_covered_by_a_case_or_says_why_none_reaches_it() -> None:
    made = {
        name
        for name, f in inspect.getmembers(reasons, inspect.isfunction)
        if not name.startswith("_") and f.__module__ == reasons.__name__
    }
    assert made == set(COVERED) | set(UNREACHABLE) | {"not_tried"}
    for name, (case, fragment) in COVERED.items():
        assert fragment in (CASES / case / "expected.txt").read_text(), name


#: every refusal fit answers as Kueue's webhook (generator/fit/podsets.py: the topology annotations,
#: the podset-group-name groups) or the API server (generator/fit/resources.py: the pod
#: template's quantities) words it -> (case, a part of its message only that refusal writes)
REFUSALS = {
    "two levels": ("annotation-refused", "must not contain more than one topology annotation"),
    "not a Go boolean": ("annotation-not-a-go-bool", '"tRUE": must be a boolean value'),
    "slice size not a number": ("annotation-refusals", '"two": must be a numeric value'),
    "slice size below 1": ("annotation-refusals", '"0": must be greater than or equal to 1'),
    "slice size above the count": ("annotation-refusals", "must not be greater than pod set count 2"),
    "slice level without a size": ("annotation-refusals", "Required value: must be set when"),
    "slice size without a level": (
        "annotation-refusals",
        "podset-slice-size: Forbidden: may not be set when 'kueue.x-k8s.io/podset-slice-required-topology'",
    ),
    "group that is a number": ("annotation-refusals", '"42": must not be a number'),
    "group with slices": (
        "annotation-refusals",
        "Forbidden: may not be set when 'kueue.x-k8s.io/podset-slice-size'",
    ),
    "group without a level": ("annotation-refusals", "Forbidden: may not be set when neither"),
    "multi-layer slices": (
        "annotation-multi-layer",
        "the TASMultiLayerTopology feature gate must be enabled",
    ),
    "group not of two": ("group-of-one", "can only define groups of exactly 2 pod sets"),
    "group without a single pod": ("annotation-refusals", "at least one pod set has only 1 replica"),
    "group levels differ": ("annotation-refusals", "topology consistent with"),
    "not a quantity (custom resource)": ("quantity-crd-pattern", ": should match '"),
    "not a quantity (API server)": (
        "quantity-not-kubernetes",
        "quantities must match the regular expression",
    ),
    "negative": ("resources-refused", "must be greater than or equal to 0"),
    "fraction of an extended resource": ("resources-refused", '"8.5": must be an integer'),
    "extended resource without a limit": ("resources-refused", "Limit must be set for non overcommitable"),
    "extended request not its limit": ("resources-refused", "must be equal to nvidia.com/gpu limit"),
    "request above its limit": ("resources-refused", "must be less than or equal to cpu limit"),
}


def test_every_refusal_is_an_error_at_its_value_in_a_case() -> None:
    """Each refusal's line in its case is an error of rule fit-manifest (at the line and column
    the case states: tests/test_fit.py compares the whole output)."""
    for name, (case, fragment) in REFUSALS.items():
        lines = [
            line for line in (CASES / case / "expected.txt").read_text().splitlines() if fragment in line
        ]
        assert lines, name
        assert all(": error: " in line and line.endswith("[fit-manifest]") for line in lines), name


def test_a_podset_after_the_one_kueue_stops_at_is_not_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    run = tasgen("fit", "-i", "inventory", "--now", NOW, "--format", "json", "podset-not-tried/workload.yaml")
    podsets = json.loads(run.output)["workloads"][0]["podSets"]
    assert [p["reason"] for p in podsets][1] == "not tried: Kueue stops at PodSet wide"


def test_a_namespace_the_queue_does_not_select_is_refused_at_the_workload() -> None:
    queue = ClusterQueue("q", (), namespace_selector={"matchLabels": {"team": "a"}})
    cluster = Cluster(
        [], queues={"q": queue}, local_queues={("ml", "lq"): "q"}, namespaces={"ml": {"team": "b"}}
    )
    workload = Workload("Job", "ml", "j", "lq", Where("w.yaml", 0), [PodSet("main", 1, {"cpu": 1000})], [{}])
    [finding] = judge(cluster, [workload]).findings
    assert finding.message == (
        "Job ml/j: PodSet main (1 pod(s)) never fits: Workload namespace doesn't match ClusterQueue selector"
    )
    assert finding.where == Where("w.yaml", 0)
