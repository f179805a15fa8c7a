"""The rendered NodeFeatures label the Nodes (through nfd-master) and the queues activate."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.e2e.fleet import Fleet
from tests.e2e.kube import KUEUE_API, condition, get, wait_for

pytestmark = pytest.mark.cluster

FEATURE_LABELS = "nfd.node.kubernetes.io/feature-labels"


@pytest.mark.usefixtures("synced")
def test_nfd_master_projects_every_nodefeature_label_onto_its_node(
    api_client: client.ApiClient, fleet: Fleet
) -> None:
    core = client.CoreV1Api(api_client)
    expected = fleet.node_feature_labels()
    assert expected, "rendered/ has no NodeFeature"
    for node in fleet.nodes:
        projected = expected.get(node.name, {})
        want = {**node.labels, **projected}
        # nfd-master lists the labels it manages on a Node: exactly the NodeFeatures' ones.
        owned = ",".join(sorted(projected))

        def labelled(name: str = node.name, want: dict[str, str] = want, owned: str = owned) -> bool:
            meta = core.read_node(name).to_dict()["metadata"]
            labels, annotations = meta["labels"] or {}, meta["annotations"] or {}
            return annotations.get(FEATURE_LABELS, "") == owned and all(
                labels.get(key) == value for key, value in want.items()
            )

        wait_for(f"nfd-master to give Node {node.name} {want}", labelled)


@pytest.mark.usefixtures("synced")
def test_every_rendered_clusterqueue_becomes_active(dyn: DynamicClient, fleet: Fleet) -> None:
    queues = [cq["metadata"]["name"] for cq in fleet.of_kind("ClusterQueue")]
    assert queues, "rendered/ has no ClusterQueue"
    for name in queues:

        def active(name: str = name) -> bool:
            cond = condition(get(dyn, KUEUE_API, "ClusterQueue", name), "Active")
            return cond is not None and cond["status"] == "True"

        wait_for(f"ClusterQueue {name} to be Active", active)
