"""tasgen fit: every verdict reason has a case (tests/cases/fit/<case>/: a workload manifest
and the exact text output, positions included, judged against tests/cases/fit/inventory), the
JSON report agrees with its published schema and its typed values, and the kinds' PodSets and
requests are Kueue's."""

from __future__ import annotations

import json
import shutil
import subprocess
import typing
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from tasgen.cli import cli
from tasgen.commands.fit import live
from tasgen.fit import podsets as ps
from tasgen.fit.cluster import Cluster, from_objects, node_facts
from tasgen.fit.engine import Engine
from tasgen.fit.report import FitReport, PodSetVerdict, ProblemData, WorkloadVerdict
from tasgen.model import HOSTNAME_KEY
from tasgen.rules.fit import RULES
from tests.conftest import NOW, REPO, tasgen

CASES = REPO / "tests" / "cases" / "fit"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "workload.yaml").exists())
SCHEMA = json.loads(resources.files("tasgen").joinpath("schemas", "fit-report.schema.json").read_text())


def fit(*args: str) -> tuple[int, str]:
    run = tasgen("fit", "-i", "inventory", "--now", NOW, *args)
    return run.exit_code, run.output


def expected(name: str) -> tuple[int, str]:
    first, _, rest = (CASES / name / "expected.txt").read_text().partition("\n")
    assert first.startswith("# exit ")
    return int(first.removeprefix("# exit ")), rest


@pytest.mark.parametrize("name", NAMES)
def test_a_case_prints_exactly_its_expected_output(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    assert fit(f"{name}/workload.yaml") == expected(name)


@pytest.mark.parametrize("name", NAMES)
def test_a_case_json_follows_the_schema_and_says_what_the_text_says(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CASES)
    code, output = fit(f"{name}/workload.yaml", "--format", "json")
    report = json.loads(output)
    jsonschema.validate(report, SCHEMA)
    text_code, text = expected(name)
    assert code == text_code
    for w in report["workloads"]:
        for podset in w["podSets"]:
            line = f"{w['file']}:{w['line']}:{w['column']}: {w['kind']} {w['namespace']}/{w['name']}"
            assert line in text and (podset["reason"] is None) == podset["fits"]
    for p in report["problems"]:
        assert f"{p['path']}:{p['line']}:{p['col']}: {p['level']}: {p['message']} [{p['rule']}]" in text


def test_every_fit_rule_has_a_case() -> None:
    reported = {
        line.rsplit("[", 1)[1].rstrip("]")
        for n in NAMES
        for line in expected(n)[1].splitlines()
        if "[" in line
    }
    assert {rule.id for rule in RULES} <= reported


def test_every_reason_kueue_gives_has_a_case() -> None:
    """The reasons of the engine (generator/fit/engine.py) and the queue checks, each printed by
    a case."""
    texts = "\n".join(expected(n)[1] for n in NAMES)
    for reason in (
        "does not contain the requested level",
        "allows to fit only",
        "doesn't allow to fit any of",
        "insufficient quota for",
        "untolerated taint",
        "doesn't match node affinity",
        "unavailable in ClusterQueue",
        "LocalQueue research doesn't exist",
        "is above the podset topology",
        "excluded: nodeSelector",
        "excluded: resource",
        "not a multiple of the slice size",
        "Kueue's webhook refuses",
    ):
        assert reason in texts, reason


def test_the_typed_report_is_the_schema() -> None:
    """Every TypedDict of the report has exactly the properties its schema part requires."""
    parts = {
        FitReport: SCHEMA,
        WorkloadVerdict: SCHEMA["$defs"]["workload"],
        PodSetVerdict: SCHEMA["$defs"]["podSet"],
        ProblemData: SCHEMA["$defs"]["problem"],
    }
    for typed, schema in parts.items():
        fields = set(typing.get_type_hints(typed))
        assert fields == set(schema["properties"]) == set(schema["required"]), typed.__name__
        assert schema["additionalProperties"] is False


def test_standard_input_and_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    manifest = (CASES / "quota" / "workload.yaml").read_text()
    run = CliRunner().invoke(cli, ["fit", "-i", "inventory", "--now", NOW, "-"], input=manifest)
    assert run.exit_code == 1 and run.output.startswith("<stdin>:2:1: Job ml/big")
    code, output = fit("quota", "fits-required-rack")
    assert code == 1
    assert (
        "quota/workload.yaml:2:1: error:" in output and "fits-required-rack/workload.yaml:2:1: Job" in output
    )


def test_usage_errors_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    assert fit("no-such-file.yaml")[0] == 2
    assert tasgen("fit", "-i", "no-such-folder", "quota/workload.yaml").exit_code == 2
    no_path = tasgen("fit", "-i", "inventory")
    assert no_path.exit_code == 2 and "GeneratorConfig spec.workloads" in no_path.output


CONFIG = (
    "apiVersion: topology.gpustack.ai/v1alpha1\nkind: GeneratorConfig\nmetadata: {name: config}\n"
    "spec:\n  workloads: ['jobs/**/*.yaml']\n"
)


def test_without_a_path_the_configured_workloads_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The globs match the repository's files from its top folder, wherever tasgen runs."""
    root = tmp_path / "repo"
    shutil.copytree(CASES / "inventory", root / "inventories")
    (root / "inventories" / "config.yaml").write_text(CONFIG)
    for name, to in (
        ("quota", "jobs/big.yaml"),
        ("fits-required-rack", "jobs/team/rack.yaml"),
        ("kinds", "other/x.yaml"),
    ):
        (root / to).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CASES / name / "workload.yaml", root / to)
    monkeypatch.chdir(root)
    outside = tasgen("fit", "-i", "inventories", "--now", NOW)
    assert outside.exit_code == 2 and "git work tree" in outside.output
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    configured = tasgen("fit", "-i", "inventories", "--now", NOW)
    named = tasgen("fit", "-i", "inventories", "--now", NOW, "jobs/big.yaml", "jobs/team/rack.yaml")
    assert (configured.exit_code, configured.output) == (named.exit_code, named.output)
    assert "jobs/team/rack.yaml:2:1: Job" in configured.output and "other/" not in configured.output
    monkeypatch.chdir(root / "inventories")
    from_below = tasgen("fit", "-i", ".", "--now", NOW)
    shown = (root.resolve() / "jobs" / "team" / "rack.yaml").as_posix()  # not below the directory
    assert from_below.exit_code == 1 and f"{shown}:2:1: Job" in from_below.output


def test_strict_fails_on_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    assert fit("unmanaged/workload.yaml")[0] == 0
    assert fit("--strict", "unmanaged/workload.yaml")[0] == 1


def test_an_invalid_inventory_is_reported_as_validate_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "nodes.yaml").write_text("apiVersion: topology.gpustack.ai/v1alpha1\nkind: NodeInventory\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text((CASES / "quota" / "workload.yaml").read_text())
    code, output = fit("job.yaml")
    assert code == 1 and "inventory/nodes.yaml:" in output and "error:" in output


def test_github_annotates_the_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    code, output = fit("largest-domain/workload.yaml", "--format", "github")
    assert code == 1
    assert output.startswith("::error file=largest-domain/workload.yaml,line=14,col=50,title=fit-never::")


# --- requests and PodSets as Kueue computes them ----------------------------------------


def test_requests_take_the_larger_of_containers_and_init_containers_plus_overhead() -> None:
    spec = {
        "initContainers": [
            {"name": "fetch", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "8"}}},
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
            {"name": "late", "resources": {"requests": {"cpu": "5"}}},
        ],
        "containers": [{"name": "main", "resources": {"limits": {"cpu": "4", "nvidia.com/gpu": "4"}}}],
        "overhead": {"cpu": "250m", "memory": "1Gi"},
    }
    # containers 4 + the sidecar 1 = 5 CPUs; init: fetch 2 (8 GPUs), late 5 + the sidecar 1 = 6
    assert ps.pod_requests(spec) == {"cpu": 6250, "nvidia.com/gpu": 8, "memory": 2**30}


def test_limits_stand_for_missing_requests_only() -> None:
    spec = {
        "containers": [{"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Mi"}}}]
    }
    assert ps.pod_requests(spec) == {"cpu": 1000, "memory": 2**20}


@pytest.mark.parametrize(
    ("annotations", "built"),
    [
        ({}, None),
        ({ps.REQUIRED: "rack"}, ps.TopologyRequest(required="rack")),
        ({ps.REQUIRED: "rack", ps.GROUP: "g"}, ps.TopologyRequest(required="rack", group="g")),
        ({ps.UNCONSTRAINED: "true"}, ps.TopologyRequest(unconstrained=True)),
        ({ps.SLICE_LEVEL: "rack", ps.SLICE_SIZE: "4"}, ps.TopologyRequest(slice_level="rack", slice_size=4)),
        ({ps.GROUP: "g"}, None),
    ],
)
def test_topology_requests_are_built_as_kueue_builds_them(
    annotations: dict[str, str], built: ps.TopologyRequest | None
) -> None:
    assert ps.topology_request(annotations) == built


def test_kinds_give_kueue_podset_names_and_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    report = json.loads(fit("kinds/workload.yaml", "--format", "json")[1])
    found = {
        (w["kind"], w["name"]): [(p["name"], p["count"]) for p in w["podSets"]] for w in report["workloads"]
    }
    assert found == {
        ("Pod", "solo"): [("main", 1)],
        ("Pod", "grp"): [("group-0", 3)],  # the group's total count
        ("JobSet", "js"): [("workers", 4)],  # replicas x min(parallelism, completions), lowercased
        ("LeaderWorkerSet", "lws"): [("leader", 1), ("worker", 2)],
        ("RayJob", "ray"): [("head", 1), ("gpu", 4), ("submitter", 1)],  # replicas x numOfHosts
        ("PyTorchJob", "pt"): [("master", 1), ("worker", 3)],
        ("StatefulSet", "sts"): [("main", 2)],
        ("Deployment", "deploy"): [("main", 1)],  # one Workload per replica
    }
    [pytorch] = [w for w in report["workloads"] if w["kind"] == "PyTorchJob"]
    assert [p["fits"] for p in pytorch["podSets"]] == [True, False]  # quota adds up over PodSets


# --- what fits now -------------------------------------------------------------------------


def _small_cluster() -> Cluster:
    nodes = [
        node_facts(name, {HOSTNAME_KEY: name, "gpu": "yes"}, {"nvidia.com/gpu": "8", "pods": "110"}, ())
        for name in ("h1", "h2")
    ]
    objects = [
        {"kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": HOSTNAME_KEY}]}},
        {
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeLabels": {"gpu": "yes"}, "topologyName": "t"},
        },
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "q"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]}
                        ],
                    }
                ],
            },
        },
    ]
    return from_objects(objects, nodes)


def _admitted(gpus: str, slices: list[dict[str, object]]) -> dict[str, object]:
    assignment = {
        "name": "main",
        "count": 2,
        "flavors": {"nvidia.com/gpu": "f"},
        "resourceUsage": {"nvidia.com/gpu": gpus},
        "topologyAssignment": {"levels": [HOSTNAME_KEY], "slices": slices},
    }
    return {"status": {"admission": {"clusterQueue": "q", "podSetAssignments": [assignment]}}}


def test_now_takes_admitted_quota_placements_and_running_pods() -> None:
    cluster = _small_cluster()
    one_each = {"domainCount": 2, "valuesPerLevel": [{"individual": {"prefix": "h", "roots": ["1", "2"]}}]}
    workload = _admitted("8", [one_each | {"podCounts": {"universal": 1}}])  # 4 GPUs a pod, one on each
    pod = {"spec": {"nodeName": "h1", "containers": [{"resources": {"requests": {"nvidia.com/gpu": "2"}}}]}}
    done = pod | {"status": {"phase": "Succeeded"}}
    busy = live.cluster_in_use(cluster, [workload], [pod, done], {})
    assert {n.name: n.allocatable["nvidia.com/gpu"] for n in busy.nodes} == {"h1": 2, "h2": 4}
    assert busy.usage == {("q", "f", "nvidia.com/gpu"): 8}
    queue = busy.queues["q"]
    assert (
        busy.available(queue, "f", "nvidia.com/gpu") == 8
        and busy.potential(queue, "f", "nvidia.com/gpu") == 16
    )

    def verdicts(count: int, gpus: int) -> tuple[bool, bool]:
        podset = ps.PodSet("main", count, {"nvidia.com/gpu": gpus})
        [ever] = Engine(cluster).judge(cluster.queues["q"], [podset])
        [fits_now] = Engine(busy, with_usage=True).judge(queue, [podset])
        return ever.fits, fits_now.fits

    assert verdicts(1, 4) == (True, True)  # h2 has 4 left
    assert verdicts(1, 6) == (True, False)  # no node has 6 left
    assert verdicts(3, 3) == (True, False)  # 9 GPUs: more than the 8 of quota left


def test_an_unreachable_cluster_is_a_usage_error_in_the_words_of_every_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fit reads the cluster through the edge render, plan, capacity and doctor share: a server
    that refuses the connection is said alike (plan's and capacity's tests say the same)."""
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    monkeypatch.chdir(CASES)
    code, output = fit(f"{NAMES[0]}/workload.yaml", "--kubeconfig", str(config))
    assert code == 2 and f"cannot reach the cluster of {config}:" in output, output
    assert "Traceback" not in output
