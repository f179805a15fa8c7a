"""Kubernetes meanings tasgen needs in more than one place, each written once: label selector
and node selector matching (:mod:`.selectors`), taints and tolerations (:mod:`.taints`),
resource quantities (:mod:`.quantities`). They know nothing of tasgen's kinds, so every stage
and the in-cluster gate may use them."""
