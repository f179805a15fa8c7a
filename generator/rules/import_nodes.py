"""The rule of ``tasgen import-nodes``: what it reads is the node list kubectl prints."""

from generator.rules.base import Rule, Stage

NODE_LIST = Rule(
    "node-list",
    Stage.IMPORT,
    "import-nodes reads a List of Nodes (kubectl get nodes -o json, or -o yaml) with valid names, labels, "
    "quantities and taints, each node once.",
)

RULES = (NODE_LIST,)
