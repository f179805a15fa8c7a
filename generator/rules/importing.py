"""The rule of ``tasgen import-nodes``: what it reads is the node list kubectl prints."""

from generator.rules.base import Rule, Stage

IMPORT_NODES = Rule(
    "import-nodes",
    Stage.IMPORT,
    "import-nodes reads a List of Nodes (kubectl get nodes -o json|yaml) with valid names, labels, "
    "quantities and taints, each node once.",
)

RULES = (IMPORT_NODES,)
