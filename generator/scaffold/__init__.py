"""tasgen init: scaffolds a GitOps repository that uses tasgen."""
