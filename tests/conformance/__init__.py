"""Conformance of tasgen's output to the upstream Kueue and NFD CustomResourceDefinitions."""
