"""Properties of WaitForIdle retention over random sequences of fleet changes (hypothesis): each
render is the new plan's queue plus exactly the previous render's dropped flavors that the cluster
did not show idle (offline, retainFor ends nothing), in the previous order, at the quota they
had, with their first time carried; quota is conserved; every flavor a queue names is rendered
with its Topology; and a render is a fixed point of itself (so check agrees with render)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasgen.emit.tree import render_tree
from tasgen.kube.quantities import parse
from tasgen.load.files import InputFile
from tasgen.load.previous import carried_of
from tasgen.model import RETIRING_PREFIX, Carried
from tasgen.pipeline import Compilation, compile_inventory
from tests.conftest import NOW, examples
from tests.plan.fleet import H100, RACK, ROW, ZONE, Fleet

SETTINGS = settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
START = datetime.fromisoformat(NOW)


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    # A rack stays within its zone, "" states none (a shorter profile): flavors come and go.
    racks = {
        n: draw(st.sampled_from(["r1", "r2", ""] if i < 4 else ["r3", "r4", ""])) for i, n in enumerate(H100)
    }
    levels = draw(st.sampled_from([(ZONE, RACK), (RACK,), (ZONE, RACK, ROW)]))
    rows = {n: {ROW: f"{racks[n]}-w1"} for n in H100[:2] if racks[n]} if ROW in levels else {}
    return Fleet(
        racks=racks,
        more=rows,
        levels=levels,
        training=draw(st.sampled_from([("H100", "L40S"), ("H100",), ("L40S",)])),
        quota=draw(st.sampled_from(["64", "48", "8"])),
        cohort="pool",
    )


@st.composite
def histories(draw: st.DrawFn) -> tuple[str | None, list[tuple[Fleet, int, int]]]:
    retain_for = draw(st.sampled_from([None, "24h", "90m"]))
    steps = draw(
        st.lists(st.tuples(fleets(), st.integers(0, 30), st.integers(0, 2**16)), min_size=2, max_size=5)
    )
    return retain_for, steps


def _files(fleet: Fleet, retain_for: str | None) -> list[InputFile]:
    config = "apiVersion: topology.gpustack.ai/v1alpha1\nkind: GeneratorConfig\nmetadata: {name: c}\n"
    config += "spec:\n  gate:\n    dropPolicy: WaitForIdle\n"
    config += f"    retainFor: {retain_for}\n" if retain_for else ""
    texts = {**fleet.files(), "config.yaml": config}
    return [InputFile(name, name, text.encode()) for name, text in sorted(texts.items())]


def _texts(result: Compilation) -> dict[str, str]:
    assert not result.failed, result.problems()
    assert result.rendering is not None
    return render_tree(result.rendering.manifests, (), result.rendering.synced).files


def _queues(texts: dict[str, str]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(texts["queues/clusterqueues.yaml"]) if d}


def _entries(queue: dict[str, Any]) -> list[dict[str, Any]]:
    groups = queue["spec"].get("resourceGroups") or [{"flavors": []}]
    entries: list[dict[str, Any]] = groups[0]["flavors"]
    return entries


def _idle(previous: Carried, seed: int) -> Carried:
    """Some of the previous queues' flavors shown idle by 'the cluster' (bits of seed)."""
    flavors = [(q, f) for q, names in sorted(previous.queues.items()) for f in names]
    idle: dict[str, set[str]] = {q: set() for q in previous.queues}
    for i, (queue, flavor) in enumerate(flavors):
        if seed >> (i % 16) & 1 and seed & 1:
            idle[queue].add(flavor)
    return replace(previous, idle={q: frozenset(f) for q, f in idle.items()}) if seed & 1 else previous


@SETTINGS
@given(histories())
def test_retention_keeps_exactly_what_nothing_ended(
    history: tuple[str | None, list[tuple[Fleet, int, int]]],
) -> None:
    retain_for, steps = history
    now, texts = START, {}
    for fleet, hours, seed in steps:
        now += timedelta(hours=hours)
        files = _files(fleet, retain_for)
        previous = _idle(carried_of(texts), seed)
        result = compile_inventory(files, now, node_features=False, carried=previous)
        new = _texts(result)
        fresh = _queues(_texts(compile_inventory(files, now, node_features=False)))  # the plan alone
        for name, queue in _queues(new).items():
            entries, rendering = _entries(queue), _entries(fresh[name])
            # the new plan's flavors first (their quota lowered by what retained ones keep)
            assert [e["name"] for e in entries[: len(rendering)]] == [e["name"] for e in rendering]
            kept = entries[len(rendering) :]
            since = previous.since.get(name, {})
            idle = previous.idle.get(name, frozenset()) if previous.idle is not None else frozenset()
            expected = [
                f
                for f in previous.queues.get(name, ())
                if f not in {e["name"] for e in rendering}
                and f not in idle  # offline, retainFor never ends a retention
            ]
            assert [e["name"] for e in kept] == expected
            cohort = "cohortName" in queue["spec"]
            limits = {"borrowingLimit": "0", "lendingLimit": "0"} if cohort else {}
            # offline, a retained flavor keeps the quota the previous render gave it
            had = previous.quotas.get(name, {})
            for e in kept:
                for r in e["resources"]:
                    want = had.get(e["name"], {}).get(r["name"], "0")
                    want = "0" if parse(want) == 0 else want
                    assert r == {"name": r["name"], "nominalQuota": want, **limits}
            annotations = queue["metadata"]["annotations"]
            retiring = {
                k[len(RETIRING_PREFIX) :]: v for k, v in annotations.items() if k.startswith(RETIRING_PREFIX)
            }
            assert retiring == {f: since.get(f, now).strftime("%Y-%m-%dT%H:%M:%SZ") for f in expected}
            # per identity, the queue's GPU quota is its plan's unless the retained quota exceeds
            # it (the fleet's one queue in a cohort has no peer there)
            for identity in {_identity(e["name"]) for e in (*entries, *rendering)}:
                mine = [e for e in entries if _identity(e["name"]) == identity]
                held = _gpus([e for e in kept if _identity(e["name"]) == identity])
                wanted = _gpus([e for e in rendering if _identity(e["name"]) == identity])
                assert _gpus(mine) == max(wanted, held), identity
        flavors = {
            d["metadata"]["name"]: d for d in yaml.safe_load_all(new["kueue/resourceflavors.yaml"]) if d
        }
        topologies = {d["metadata"]["name"] for d in yaml.safe_load_all(new["kueue/topologies.yaml"]) if d}
        named = {e["name"] for q in _queues(new).values() for e in _entries(q)}
        assert named <= set(flavors)
        assert {f["spec"]["topologyName"] for f in flavors.values()} <= topologies
        # a fixed point: rendering again from what was written (offline) writes the same
        again = _texts(compile_inventory(files, now, node_features=False, carried=carried_of(new)))
        assert again == new
        texts = new


def _identity(flavor: str) -> str:
    """gpustack-<identity>-<hash>-<profile> without the profile."""
    return flavor.rsplit("-", 1)[0]


def _gpus(entries: list[dict[str, Any]]) -> int:
    return sum(
        int(r["nominalQuota"]) for e in entries for r in e["resources"] if r["name"] == "nvidia.com/gpu"
    )


def test_live_a_retained_flavor_is_lowered_to_what_kueue_reserves_and_the_rest_goes_back() -> None:
    """With the cluster read, a retained flavor's quota is Kueue's reservation on it (every
    covered resource), and the queue's new flavors of its identity get the rest."""
    before, after = Fleet(cohort="pool"), Fleet(cohort="pool", levels=(RACK,))  # a level removed
    first = _texts(compile_inventory(_files(before, None), START, node_features=False))
    old = {e["name"] for e in _entries(_queues(first)["training"]) if "h100" in e["name"]}
    reserved = {"nvidia.com/gpu": "3"}
    carried = replace(carried_of(first), usage={"training": dict.fromkeys(old, reserved)}, idle={})
    new = _queues(_texts(compile_inventory(_files(after, None), START, node_features=False, carried=carried)))
    entries = _entries(new["training"])
    kept = [e for e in entries if e["name"] in old]
    assert kept and all(
        r
        == {
            "name": r["name"],
            "nominalQuota": reserved.get(r["name"], "0"),
            "borrowingLimit": "0",
            "lendingLimit": "0",
        }
        for e in kept
        for r in e["resources"]
    )
    fresh = _entries(
        _queues(_texts(compile_inventory(_files(after, None), START, node_features=False)))["training"]
    )
    h100 = [e for e in entries if "h100" in e["name"] and e["name"] not in old]
    assert _gpus(h100) == _gpus([e for e in fresh if "h100" in e["name"]]) - 3 * len(kept)
    assert _gpus(entries) == _gpus(fresh)  # conserved
