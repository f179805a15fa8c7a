"""tasgen plan states what render writes (hypothesis): for generated fleets under WaitForIdle and
random edits, the plan's node label changes, each queue's flavors added and removed and every
quota field (nominalQuota, borrowingLimit, lendingLimit per flavor and resource) equal the
difference of the two rendered trees, and its pins are the nodes the render writes otherwise
than a first render would: read from the trees themselves (not through the plan's code); pins,
transit and retained flavors included."""

from __future__ import annotations

from datetime import datetime, timedelta

import yaml
from hypothesis import HealthCheck, given, settings

from tasgen.commands.plan.report import build
from tasgen.emit.tree import render_tree
from tasgen.kube.quantities import parse
from tasgen.load.files import InputFile
from tasgen.load.previous import carried_of
from tasgen.pipeline import Compilation, compile_inventory
from tests.conftest import NOW, examples
from tests.plan.fleet import Fleet
from tests.test_retention_properties import _files, histories

NODE_NAME = "nfd.node.kubernetes.io/node-name"


def _tree(result: Compilation) -> dict[str, str]:
    assert not result.failed, result.problems()
    assert result.rendering is not None
    return render_tree(result.rendering.manifests, result.rendering.features, result.rendering.synced).files


def _labels(tree: dict[str, str]) -> dict[str, dict[str, str]]:
    """Node -> every label the tree's NodeFeatures write on it."""
    found: dict[str, dict[str, str]] = {}
    for path, text in tree.items():
        if path.startswith("labels/") and "nodefeatures-" in path:
            for doc in yaml.safe_load_all(text):
                if doc:
                    found.setdefault(doc["metadata"]["labels"][NODE_NAME], {}).update(doc["spec"]["labels"])
    return found


def _profile_labels(tree: dict[str, str]) -> dict[str, dict[str, str]]:
    """Node -> the labels of its profile NodeFeature (the profile, flavor and transit labels)."""
    found: dict[str, dict[str, str]] = {}
    for path, text in tree.items():
        if path.startswith("labels/") and path.endswith("nodefeatures-profiles.yaml"):
            for doc in yaml.safe_load_all(text):
                if doc:
                    found[doc["metadata"]["labels"][NODE_NAME]] = doc["spec"]["labels"]
    return found


def _queue_flavors(tree: dict[str, str]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for doc in yaml.safe_load_all(tree.get("queues/clusterqueues.yaml", "")):
        if doc and doc["kind"] == "ClusterQueue":
            groups = doc["spec"].get("resourceGroups") or [{"flavors": []}]
            found[doc["metadata"]["name"]] = {f["name"] for f in groups[0]["flavors"]}
    return found


def _quota_fields(tree: dict[str, str]) -> dict[tuple[str, str, str, str], str]:
    """(queue, flavor, resource, field) -> the quantity the tree's ClusterQueues write."""
    found: dict[tuple[str, str, str, str], str] = {}
    for doc in yaml.safe_load_all(tree.get("queues/clusterqueues.yaml", "")):
        if doc and doc["kind"] == "ClusterQueue":
            for group in doc["spec"].get("resourceGroups") or ():
                for flavor in group["flavors"]:
                    for r in flavor["resources"]:
                        for field, value in r.items():
                            if field != "name":
                                key = (doc["metadata"]["name"], flavor["name"], r["name"], field)
                                found[key] = str(value)
    return found


def _amount(value: str | None) -> object:
    return None if value is None else parse(value)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_the_plan_is_the_difference_of_the_two_renders(
    history: tuple[str | None, list[tuple[Fleet, int, int]]],
) -> None:
    retain_for, steps = history
    now, tree = datetime.fromisoformat(NOW), {}
    base_files: list[InputFile] = []
    for fleet, hours, _ in steps:
        now += timedelta(hours=hours)
        files = _files(fleet, retain_for)
        previous = carried_of(tree)
        head = compile_inventory(files, now, node_features=False, carried=previous)
        new = _tree(compile_inventory(files, now, carried=previous))
        first = _tree(compile_inventory(files, now))  # the rows as planned, nothing carried
        if tree:
            base = compile_inventory(base_files, now, node_features=False, carried=previous)
            data = build(base, head, "base")
            # node labels: the plan's changes are the trees' label differences
            before, after = _labels(tree), _labels(new)
            expected = {
                node: {
                    k: (before.get(node, {}).get(k), after.get(node, {}).get(k))
                    for k in before.get(node, {}).keys() | after.get(node, {}).keys()
                    if before.get(node, {}).get(k) != after.get(node, {}).get(k)
                }
                for node in before.keys() | after.keys()
            }
            expected = {n: c for n, c in expected.items() if c}
            assert data.nodes.changes is not None  # 10 nodes: always named
            stated = {c.node: {x.key: (x.before, x.after) for x in c.labels} for c in data.nodes.changes}
            assert stated == expected
            # flavors: what each queue adds and removes is the trees' difference
            old, mine = _queue_flavors(tree), _queue_flavors(new)
            for queue in data.queues:
                was, now_has = old.get(queue.name, set()), mine.get(queue.name, set())
                assert {f.name for f in queue.flavors_added} == now_has - was, queue.name
                assert {f.name for f in queue.flavors_removed} == was - now_has, queue.name
            # quota: every field that differs between the trees, per queue, flavor and resource
            q_old, q_new = _quota_fields(tree), _quota_fields(new)
            quota = {
                k: (_amount(q_old.get(k)), _amount(q_new.get(k)))
                for k in q_old.keys() | q_new.keys()
                if q_old.get(k) != q_new.get(k)
            }
            shown = {
                (queue.name, d.flavor, d.resource, d.field): (_amount(d.before), _amount(d.after))
                for queue in data.queues
                for d in queue.quota
            }
            assert shown == quota
            # pins: the nodes whose profile NodeFeature's labels the render writes otherwise
            # than the plan gives them (a first render of the same inventory)
            written, planned = _profile_labels(new), _profile_labels(first)
            pinned = {n for n in written.keys() | planned.keys() if written.get(n) != planned.get(n)}
            listed = {n for pin in data.nodes.pins for n in pin.names or ()}
            assert listed == pinned, (listed, pinned)
            assert sum(pin.nodes for pin in data.nodes.pins) == len(pinned)
        tree, base_files = new, files
