"""Rules of the emit stage: what is already in rendered/."""

from generator.model import Level
from generator.rules.base import Rule, Stage

_S = Stage.EMIT

IMMUTABLE_FIELD = Rule(
    "immutable-field", _S, "A render never changes an immutable field of an object already in rendered/."
)
STALE_RENDER = Rule("stale-render", _S, "rendered/ is what 'tasgen render' would write (tasgen check).")
OUTPUT_UNWRITABLE = Rule("output-unwritable", _S, "rendered/ can be written.")
OBJECT_SIZE = Rule(
    "object-size",
    _S,
    "Every rendered object is one the API server stores: a ConfigMap's data at most 1 MiB, an object "
    "at most 1.5 MiB (etcd's request limit).",
)

SYNC_PATH = Rule(
    "sync-path",
    Stage.EMIT,
    "GeneratorConfig sync.path is where rendered/ is in its git repository (the path Argo CD and Flux sync).",
    Level.WARNING,
)

RULES = (IMMUTABLE_FIELD, STALE_RENDER, OUTPUT_UNWRITABLE, OBJECT_SIZE, SYNC_PATH)
