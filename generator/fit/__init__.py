"""Will a workload ever be admitted? The PodSets Kueue builds from a workload manifest, judged
against the rendered queues, flavors, Topologies and nodes as Kueue's flavor assigner and
topology-aware scheduling judge them (docs/explanation/fit.md).

Pure: :mod:`.cluster` is what Kueue knows (built from a compiled inventory or from live objects),
:mod:`.kinds` turns manifests into workloads, :mod:`.engine` gives each PodSet its verdict from
a domain index built once per flavor (:mod:`.index`). Reading files and the API server is the
command's (generator/commands/fit/).
"""
