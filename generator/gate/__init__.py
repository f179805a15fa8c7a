"""The drain gate: an in-cluster job that switches ClusterQueue flavor plans safely.

It depends on nothing of the compiler but :mod:`generator.model` (an import-linter contract
checks this), so its image carries only the gate and the Kubernetes client.
"""
