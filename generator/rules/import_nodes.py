"""The rule of ``tasgen import-nodes``: what it reads is the node list kubectl prints."""

from .base import Rule, Stage

NODE_LIST = Rule(
    "node-list",
    Stage.IMPORT_NODES_COMMAND,
    "import-nodes reads a List of Nodes (kubectl get nodes -o json, or -o yaml) with valid names, labels, "
    "quantities and taints, each node once.",
    why=(
        "The NodeInventory `tasgen import-nodes` writes is what every later validate and render "
        "trusts. A value `tasgen validate` would refuse (a label value that is not a string, an "
        "allocatable that is no quantity, a node twice, an item that is not a Node) is refused at "
        "its line and column in kubectl's output, and nothing is written."
    ),
    fix=(
        "Import the output of `kubectl get nodes -o json` (or `-o yaml`) as kubectl printed it; a "
        "problem in it points at the node to fix in the cluster, or at a file edited by hand."
    ),
)

RULES = (NODE_LIST,)
