"""A stand-in for kube-scheduler's bind step, for Pods that Kueue's TAS has placed.

The test control plane runs no scheduler. Kueue's topology ungater removes a TAS Pod's
scheduling gate only after it has written the chosen node into the Pod's nodeSelector
(``kubernetes.io/hostname``), so the scheduling decision is Kueue's; this thread only binds
such a Pod to that node (``pods/binding``, as kube-scheduler does), which is what gives it a
``spec.nodeName`` that Kueue's caches and tests/e2e/kubelet.py (``bound_only``) see. It never
checks the node's free capacity: a Pod that Kueue double-books is bound all the same, and
the test reads Kueue's decision from the Workload, not from the binding.
"""

from __future__ import annotations

import contextlib
import threading

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

HOSTNAME = "kubernetes.io/hostname"
POLL_S = 0.3


class Binder(threading.Thread):
    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(daemon=True, name=f"binder-{namespace}")
        self.core = client.CoreV1Api(api)
        self.namespace = namespace
        self.bound: dict[str, str] = {}  # Pod name -> the node it was bound to
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(POLL_S):
            with contextlib.suppress(ApiException, urllib3.exceptions.HTTPError, OSError):
                for pod in self.core.list_namespaced_pod(self.namespace).items:
                    self._bind(pod)

    def _bind(self, pod: client.V1Pod) -> None:
        spec = pod.spec
        node = (spec.node_selector or {}).get(HOSTNAME)
        if spec.node_name or spec.scheduling_gates or not node or pod.metadata.deletion_timestamp:
            return
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod.metadata.name),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        # The client cannot read the Status the API server answers a binding with.
        self.core.create_namespaced_pod_binding(
            pod.metadata.name, self.namespace, body, _preload_content=False
        )
        self.bound[pod.metadata.name] = node

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=5)
