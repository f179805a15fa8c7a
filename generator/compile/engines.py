"""The names by which tasgen's objects speak to the GitOps engines (Argo CD, Flux) and mark
themselves as tasgen's: one home, so that the compile stage and the emit stage's ServerSideApply
check read the same annotation."""

from __future__ import annotations

#: the label on every object tasgen renders (the admission policy and the retire step select it)
MANAGED_BY = {"app.kubernetes.io/managed-by": "tasgen"}
WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: Topologies and flavors have no health of their own; one that a person deletes while a queue
#: names it waits for Kueue's resource-in-use finalizer and must not hold its Application at
#: Progressing meanwhile
IGNORE_HEALTH = "argocd.argoproj.io/ignore-healthcheck"
COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
