"""Rules of ``tasgen fit``: workload manifests judged against the rendered queues
(generator/fit/)."""

from ..model import Level
from .base import Rule, Stage

_S = Stage.FIT_COMMAND

FIT_NEVER = Rule(
    "fit-never",
    _S,
    "Every PodSet of a workload can be admitted by its queue on an empty cluster.",
    why=(
        "Kueue keeps such a workload Pending for ever, with its reason only in the Workload's "
        "status: no flavor of the queue has the requested level, no one domain at the required "
        "level holds the complete PodSet, the quota of every single flavor is too small (capacity "
        "cannot combine across flavors or profiles), a taint is not tolerated, or the LocalQueue "
        "does not exist. The message is Kueue's own."
    ),
    fix=(
        "Read the reason: request a level the queue's flavors have (or a coarser one, or "
        "`podset-preferred-topology`), fewer pods per PodSet, a queue whose flavors hold it, or "
        "change the inventory (quota, levels, nodes) so that one flavor can."
    ),
)
FIT_MANIFEST = Rule(
    "fit-manifest",
    _S,
    "Every document given to tasgen fit is a workload the API server and Kueue's webhook accept.",
    why=(
        "A document fit cannot read is not judged, so a typo in a kind or a missing pod template "
        "would otherwise pass unnoticed. A pod template the API server refuses (a value that is "
        "not a quantity, a fraction of a GPU, a GPU request without an equal limit) or topology "
        "annotations Kueue's webhook refuses (two levels at once, a boolean Go does not read, a "
        "`podset-slice-size` without its level or larger than the PodSet, a `podset-group-name` "
        "without a level or not of two PodSets) would never become a workload at all."
    ),
    fix=(
        "Give fit the workload manifests only (batch/v1 Job, Pod, JobSet, LeaderWorkerSet, "
        "Deployment, StatefulSet, RayJob, RayCluster, PyTorchJob, MPIJob, AppWrapper, TrainJob), "
        "each with its pod templates, and correct the value or annotation as the message says."
    ),
)
FIT_UNMANAGED = Rule(
    "fit-unmanaged",
    _S,
    "A workload names its LocalQueue (label `kueue.x-k8s.io/queue-name`).",
    Level.WARNING,
    why=(
        "Kueue manages only workloads that name a LocalQueue (or whose namespace has a LocalQueue "
        "named `default`); any other runs without quota or topology-aware placement."
    ),
    fix="Add the label `kueue.x-k8s.io/queue-name: <LocalQueue>` to the workload's metadata.",
)
FIT_SLICE_REMAINDER = Rule(
    "fit-slice-remainder",
    _S,
    "`podset-slice-size` divides the PodSet's pod count.",
    Level.WARNING,
    why=(
        "Kueue places whole slices only: it assigns topology to count / size slices and the pods "
        "left over get none, so they never start."
    ),
    fix="Make the PodSet's count a multiple of `kueue.x-k8s.io/podset-slice-size`.",
)

RULES = (FIT_NEVER, FIT_MANIFEST, FIT_UNMANAGED, FIT_SLICE_REMAINDER)
