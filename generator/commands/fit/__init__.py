"""``tasgen fit``: reads workload manifests and the inventory, asks :mod:`generator.fit` for each
PodSet's verdict, and prints it (text, JSON, GitHub annotations); with ``--kubeconfig``, also
whether it fits now (docs/explanation/fit.md)."""
