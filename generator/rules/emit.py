"""Rules of the emit stage: what is already in rendered/."""

from ..model import Level
from .base import Rule, Stage

_S = Stage.EMIT

IMMUTABLE_FIELD = Rule(
    "immutable-field",
    _S,
    "A render never changes an immutable field of an object already in rendered/.",
    why=(
        "Kueue refuses to change a Topology's levels and a topology-aware ResourceFlavor's "
        "nodeLabels, tolerations and topologyName (every release up to v0.19.2). tasgen's names "
        "embed the profile and a hash of the tolerations, so its own renders never do that: a "
        "difference means rendered/ was edited by hand or written by another version, and "
        "patching it would only fail in the cluster."
    ),
    fix=(
        "Restore rendered/ from git (`git checkout -- rendered/`) and render again; to replace "
        "the object on purpose, delete it from rendered/ first."
    ),
)
STALE_RENDER = Rule(
    "stale-render",
    _S,
    "rendered/ is what 'tasgen render' would write (tasgen check).",
    why=(
        "Argo CD and Flux sync rendered/ as committed, not the inventory. A pull request that "
        "changes the inventory without rendering, or edits rendered/ by hand, would merge a "
        "cluster state no render produced. `tasgen check` (in CI) compares rendered/ with what "
        "`tasgen render` would write, file by file, and names the first line that differs."
    ),
    fix=("Run `tasgen render` and commit rendered/ with the inventory change."),
)
OUTPUT_UNWRITABLE = Rule(
    "output-unwritable",
    _S,
    "rendered/ can be written.",
    why=(
        "A render writes the new tree beside rendered/ and swaps it in whole, so that git, Argo "
        "CD and Flux never see half a render. When anything of that cannot be written (a file "
        "where a folder must go, a read-only folder, a full disk, a link leading out of "
        "rendered/), rendered/ is left exactly as it was and the render fails."
    ),
    fix=(
        "Fix what the message names: remove the file or link in the way, make the folder that "
        "holds rendered/ writable, or free space; then render again."
    ),
)
OBJECT_SIZE = Rule(
    "object-size",
    _S,
    "Every rendered object is one the API server stores: a ConfigMap's data at most 1 MiB, an object "
    "at most 1.5 MiB (etcd's request limit).",
    why=(
        "The API server refuses a ConfigMap whose data is over 1 MiB and etcd a request over 1.5 "
        "MiB. The gate's plan holds every ClusterQueue in one ConfigMap: past the bound the gate "
        "step, and every sync step after it, would never sync."
    ),
    fix=("Render fewer ClusterQueuePlans, or fewer hardware entries per plan."),
)

SYNC_PATH = Rule(
    "sync-path",
    Stage.EMIT,
    "GeneratorConfig sync.path is where rendered/ is in its git repository (the path Argo CD and Flux sync).",
    Level.WARNING,
    why=(
        "Argo CD's ApplicationSet and Flux's Kustomizations are told to sync rendered/ at "
        "GeneratorConfig sync.path in the repository. Rendered into another folder of the "
        "repository, they would sync paths that do not exist, and nothing would reach the "
        "cluster."
    ),
    fix=(
        "Set GeneratorConfig `sync.path` to rendered/'s path in the repository (the message names "
        'it; `"."` when rendered/ is the root of what the engines fetch), or render to '
        "`sync.path`."
    ),
)

RULES = (IMMUTABLE_FIELD, STALE_RENDER, OUTPUT_UNWRITABLE, OBJECT_SIZE, SYNC_PATH)
