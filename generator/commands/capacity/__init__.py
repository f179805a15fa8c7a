"""``tasgen capacity``: per ClusterQueue, flavor and level, the slots of each size on an empty
cluster and, with ``--kubeconfig``, right now (docs/explanation/fit.md, "Capacity")."""
