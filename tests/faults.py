"""The fault-injection corpus: one valid inventory and a table of ways to break it.

Each fault edits one file of :data:`BASE` (replacing the first occurrence of a text, or the
whole file, as bytes) or the folder itself (links, permissions, special files), and names
the one problem it must cause: rule, file, line and column. tests/test_faults.py runs each
through ``tasgen render`` against a rendered/ of the valid inventory.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

NODES = """\
apiVersion: topology.gpustack.ai/v1alpha1
kind: NodeInventory
metadata: {name: fleet}
nodes:
  - name: a1
    labels: {kubernetes.io/hostname: a1, nvidia.com/gpu.product: H100, pool: a}
    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
  - name: a2
    labels: {kubernetes.io/hostname: a2, nvidia.com/gpu.product: H100, pool: a}
    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
  - name: b1
    labels: {kubernetes.io/hostname: b1, nvidia.com/gpu.product: L40S, pool: b}
    allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "4"}
"""
RACKS = """\
apiVersion: topology.gpustack.ai/v1alpha1
kind: TopologySource
metadata: {name: racks}
spec:
  nodeSelector: {matchLabels: {pool: a}}
  levels: [topology.gpustack.ai/rack]
  configMap: {namespace: topo, name: racks, key: snapshot.yaml}
---
apiVersion: v1
kind: ConfigMap
metadata: {namespace: topo, name: racks}
data:
  snapshot.yaml: |
    revision: "r1"
    nodes:
      a1: {topology.gpustack.ai/rack: r1}
      a2: {topology.gpustack.ai/rack: r2}
"""
HOOK = """\
apiVersion: topology.gpustack.ai/v1alpha1
kind: TopologySource
metadata: {name: hook}
spec:
  nodeSelector: {matchLabels: {pool: b}}
  levels: [topology.gpustack.ai/block]
  webhook:
    url: https://topo.example.com/snapshot
    bearerTokenSecretRef: {namespace: topo, name: token}
    snapshotPath: snapshots/hook.json
"""
HOOK_SNAPSHOT = """\
{
  "revision": "h1",
  "nodes": {"b1": {"topology.gpustack.ai/block": "x"}}
}
"""
QUEUE = """\
apiVersion: topology.gpustack.ai/v1alpha1
kind: ClusterQueuePlan
metadata: {name: main}
spec:
  coveredResources: [cpu, memory, nvidia.com/gpu]
  hardware:
    - identity: {nvidia.com/gpu.product: H100}
      nominalQuota: {nvidia.com/gpu: "16"}
    - identity: {nvidia.com/gpu.product: L40S}
  clusterQueue: {cohortName: team, namespaceSelector: {}}
"""
#: the pass-through fields of QUEUE (faults replace them)
CLUSTER_QUEUE = "{cohortName: team, namespaceSelector: {}}"
CONFIG = """\
apiVersion: topology.gpustack.ai/v1alpha1
kind: GeneratorConfig
metadata: {name: config}
spec:
  adminLabelPrefix: infra.example.com/
  gate: {image: ghcr.io/example/gate:1}
"""
BASE = {
    "nodes.yaml": NODES,
    "racks.yaml": RACKS,
    "hook.yaml": HOOK,
    "snapshots/hook.json": HOOK_SNAPSHOT,
    "queue.yaml": QUEUE,
    "config.yaml": CONFIG,
}


def write_base(folder: Path) -> None:
    for name, text in BASE.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


@dataclass(frozen=True)
class Fault:
    name: str
    file: str  # relative to the inventory folder: where the problem is reported
    rule: str
    line: int
    col: int
    old: str | None = None  # replaced (first occurrence) by ``new``; None: ``new`` is the file
    new: str | bytes = ""
    setup: Callable[[Path], None] | None = None  # a change of the folder instead of a file
    unreadable: bool = False  # needs file modes to apply (see tests/privileges.py)

    def apply(self, inventory: Path) -> None:
        if self.setup is not None:
            self.setup(inventory)
            return
        path = inventory / self.file
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.old is None:
            path.write_bytes(self.new if isinstance(self.new, bytes) else self.new.encode())
            return
        text = path.read_bytes()
        new = self.new if isinstance(self.new, bytes) else self.new.encode()
        assert self.old.encode() in text, f"{self.name}: {self.old!r} is not in {self.file}"
        path.write_bytes(text.replace(self.old.encode(), new, 1))


def edit(name: str, file: str, old: str, new: str | bytes, rule: str, line: int, col: int) -> Fault:
    return Fault(name, file, rule, line, col, old, new)


def whole(name: str, file: str, new: str | bytes, rule: str, line: int, col: int) -> Fault:
    return Fault(name, file, rule, line, col, None, new)


def folder(
    name: str, file: str, setup: Callable[[Path], None], rule: str, *, unreadable: bool = False
) -> Fault:
    return Fault(name, file, rule, 1, 1, setup=setup, unreadable=unreadable)


# --- changes of the folder -----------------------------------------------------------------


def _link(target: str, at: str) -> Callable[[Path], None]:
    def setup(inventory: Path) -> None:
        outside = inventory.parent / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\n")
        (outside / "hook.json").write_text(HOOK_SNAPSHOT)
        link = inventory / at
        if link.exists() or link.is_symlink():
            link.unlink()
        # "@/x": an absolute link to x beside the inventory folder
        link.symlink_to(inventory.parent / target[2:] if target.startswith("@/") else target)

    return setup


def _mode_000(relative: str, *, make_folder: bool = False) -> Callable[[Path], None]:
    def setup(inventory: Path) -> None:
        path = inventory / relative
        if make_folder:
            path.mkdir()
            (path / "more.yaml").write_text(QUEUE.replace("name: main", "name: more"))
        path.chmod(0)

    return setup


def _fifo(relative: str) -> Callable[[Path], None]:
    return lambda inventory: os.mkfifo(inventory / relative)


# --- YAML texts ------------------------------------------------------------------------------

_MEGA = "x" * 1_000_000
_BIG_ALIASES = f"a: &big {_MEGA}\nl: [{', '.join(['*big'] * 1500)}]\n"
_HUGE_ALIASES = f"a: &big {_MEGA}\nl: [{', '.join(['*big'] * 10_000)}]\n"
_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
_ADJACENT_ALIASES = f"a: &big {_MEGA}\nm: {{" + ", ".join(f'"k{i}":*big' for i in range(1500)) + "}\n"
_DEEP_ALIASES = "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 40))
_LONG_STRING_LAUGHS = f"a: &a {'y' * 1000}\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcde", "bcdef", strict=True)
)

#: nesting: 22 KB of "- " (11k levels) crashed yaml-rs (a segmentation fault); each text is one level
#: beyond the limit of 500, at the collection that goes deeper
_DEEP_COMPACT = "- " * 15_000 + "x\n"
_DEEP_INDENTED = "".join(" " * i + "k:\n" for i in range(501)) + " " * 501 + "x\n"
_DEEP_SEQUENCES_IN_MAPPINGS = "".join("  " * i + "- k:\n" for i in range(250)) + "  " * 250 + "- x\n"
_DEEP_THROUGH_ALIASES = (
    f"a: &a {'[' * 200}x{']' * 200}\nb: &b {'[' * 200}*a{']' * 200}\nc: {'[' * 100}*b{']' * 100}\n"
)


def _control(char: str) -> Fault:
    name = f"control-U+{ord(char):04X}"
    return edit(name, "queue.yaml", "name: main", f"name: ma{char}in", "yaml-syntax", 3, 20)


def _quantity(name: str, value: str, col: int = 24) -> Fault:
    """A node's allocatable cpu (nodes.yaml line 7, the value at column 24)."""
    return edit(f"allocatable-{name}", "nodes.yaml", 'cpu: "64"', f"cpu: {value}", "quantity", 7, col)


def _quota(name: str, value: str) -> Fault:
    old = 'nominalQuota: {nvidia.com/gpu: "16"}'
    new = f"nominalQuota: {{nvidia.com/gpu: {value}}}"
    return edit(f"quota-{name}", "queue.yaml", old, new, "quantity", 8, 38)


def _cluster_queue(name: str, fields: str, rule: str, col: int) -> Fault:
    """Pass-through clusterQueue fields (queue.yaml line 10)."""
    return edit(f"cluster-queue-{name}", "queue.yaml", CLUSTER_QUEUE, fields, rule, 10, col)


def _number(fault: Fault) -> Fault:
    """The same edit, refused earlier: YAML reads the value as a number out of range."""
    return Fault(fault.name, fault.file, "number-range", fault.line, fault.col, fault.old, fault.new)


FAULTS: list[Fault] = [
    # --- bytes and characters -------------------------------------------------------------
    *(_control(c) for c in "\x00\x01\x07\x08\x0b\x0c\x0e\x1b\x1f\x7f\x80\x84\x86\x9f\ufffe\uffff"),
    edit(
        "nul-truncates-cluster-queue",
        "queue.yaml",
        "  clusterQueue",
        "\x00  clusterQueue",
        "yaml-syntax",
        10,
        1,
    ),
    edit("nul-in-snapshot-text", "racks.yaml", "rack: r2}", "rack: r\x002}", "yaml-syntax", 17, 40),
    edit("nul-in-json", "snapshots/hook.json", '"h1"', '"h\x001"', "json-syntax", 2, 17),
    edit("control-in-json-string", "snapshots/hook.json", '"x"', '"\x1b"', "json-syntax", 3, 51),
    whole(
        "latin-1", "queue.yaml", QUEUE.replace("main", "m\xe4in").encode("latin-1"), "file-unreadable", 1, 1
    ),
    whole("utf-16", "queue.yaml", QUEUE.encode("utf-16"), "file-unreadable", 1, 1),
    whole("truncated-utf-8", "queue.yaml", QUEUE.encode() + b"\xe2\x82", "file-unreadable", 1, 1),
    whole(
        "lone-surrogate-utf-8", "nodes.yaml", NODES.encode() + b"# \xed\xa0\x80\n", "file-unreadable", 1, 1
    ),
    edit("json-lone-high-surrogate", "snapshots/hook.json", '"x"', '"\\ud800"', "json-syntax", 3, 51),
    edit("json-lone-low-surrogate", "snapshots/hook.json", '"h1"', '"\\udc00h1"', "json-syntax", 2, 16),
    edit("json-reversed-pair", "snapshots/hook.json", '"x"', '"\\ude00\\ud83d"', "json-syntax", 3, 51),
    edit("json-surrogate-in-key", "snapshots/hook.json", '"b1"', '"b\\ud8001"', "json-syntax", 3, 15),
    # --- tags -------------------------------------------------------------------------------
    edit("tag-custom", "queue.yaml", "name: main", "name: !foo main", "yaml-tag", 3, 18),
    edit("tag-binary", "queue.yaml", "name: main", "name: !!binary bWFpbg==", "yaml-tag", 3, 18),
    edit("tag-set", "queue.yaml", CLUSTER_QUEUE, "!!set {a, b}", "yaml-tag", 10, 17),
    edit("tag-omap", "queue.yaml", CLUSTER_QUEUE, "!!omap [a: 1]", "yaml-tag", 10, 17),
    edit(
        "tag-timestamp",
        "racks.yaml",
        'revision: "r1"',
        "revision: !!timestamp 2026-01-01",
        "yaml-tag",
        14,
        15,
    ),
    edit("tag-python", "queue.yaml", "name: main", "name: !!python/name:os.system x", "yaml-tag", 3, 18),
    edit(
        "tag-verbatim", "queue.yaml", "name: main", "name: !<tag:example.com,2026:q> main", "yaml-tag", 3, 18
    ),
    whole(
        "tag-directive",
        "queue.yaml",
        "%TAG !e! tag:example.com,2026:\n---\n" + QUEUE.replace("name: main", "name: !e!q main"),
        "yaml-tag",
        5,
        18,
    ),
    edit(
        "tag-on-mapping",
        "nodes.yaml",
        "labels: {kubernetes.io/hostname: a1",
        "labels: !lbl {kubernetes.io/hostname: a1",
        "yaml-tag",
        6,
        13,
    ),
    edit(
        "tag-on-sequence",
        "queue.yaml",
        "coveredResources: [cpu",
        "coveredResources: !res [cpu",
        "yaml-tag",
        5,
        21,
    ),
    edit("tag-in-snapshot", "racks.yaml", "a1: {topology", "a1: !n {topology", "yaml-tag", 16, 11),
    # core tags that contradict their node: the fast parser dropped a collection's tag silently
    edit(
        "tag-str-on-mapping",
        "queue.yaml",
        CLUSTER_QUEUE,
        "!!str " + CLUSTER_QUEUE,
        "yaml-tag-mismatch",
        10,
        17,
    ),
    edit(
        "tag-map-on-sequence",
        "queue.yaml",
        "coveredResources: [cpu",
        "coveredResources: !!map [cpu",
        "yaml-tag-mismatch",
        5,
        21,
    ),
    edit("tag-seq-on-scalar", "queue.yaml", "name: main", "name: !!seq main", "yaml-tag-mismatch", 3, 18),
    edit(
        "tag-int-on-word", "racks.yaml", 'revision: "r1"', "revision: !!int r1", "yaml-tag-mismatch", 14, 15
    ),
    # a value right after a quoted key's ":" (YAML 1.2's adjacent value): the pre-filter once missed it
    edit(
        "tag-after-quoted-key",
        "queue.yaml",
        CLUSTER_QUEUE,
        '{"cohortName":!t team, namespaceSelector: {}}',
        "yaml-tag",
        10,
        31,
    ),
    # --- keys that are not strings ---------------------------------------------------------------
    edit("key-int", "nodes.yaml", "pool: a}", "pool: a, 1: x}", "mapping-key", 6, 81),
    edit("key-true", "nodes.yaml", "pool: a}", "pool: a, true: x}", "mapping-key", 6, 81),
    edit("key-null-tilde", "nodes.yaml", "pool: a}", "pool: a, ~: x}", "mapping-key", 6, 81),
    edit(
        "key-null-word",
        "queue.yaml",
        CLUSTER_QUEUE,
        "{cohortName: team, null: x}",
        "mapping-key",
        10,
        36,
    ),
    edit("key-float", "queue.yaml", CLUSTER_QUEUE, "{cohortName: team, 1.5: x}", "mapping-key", 10, 36),
    edit("key-hex", "queue.yaml", CLUSTER_QUEUE, "{cohortName: team, 0x1F: x}", "mapping-key", 10, 36),
    edit("key-inf", "queue.yaml", CLUSTER_QUEUE, "{cohortName: team, .inf: x}", "mapping-key", 10, 36),
    edit(
        "key-sequence",
        "queue.yaml",
        "  clusterQueue",
        "  ? [a, b]\n  : x\n  clusterQueue",
        "mapping-key",
        10,
        5,
    ),
    edit(
        "key-mapping",
        "queue.yaml",
        "  clusterQueue",
        "  ? {a: 1}\n  : x\n  clusterQueue",
        "mapping-key",
        10,
        5,
    ),
    edit(
        "key-tagged-int",
        "queue.yaml",
        CLUSTER_QUEUE,
        '{cohortName: team, !!int "3": x}',
        "mapping-key",
        10,
        36,
    ),
    edit("key-in-snapshot", "racks.yaml", "a2: {topology", "1: {topology", "mapping-key", 17, 7),
    edit("key-allocatable", "nodes.yaml", 'cpu: "32"', "8: cpu", "mapping-key", 13, 19),
    edit(
        "key-document-root",
        "queue.yaml",
        "kind: ClusterQueuePlan",
        "kind: ClusterQueuePlan\n2: two",
        "mapping-key",
        3,
        1,
    ),
    # --- aliases ---------------------------------------------------------------------------------
    # a directive before the marker once made one list document count as a stream of two
    whole("directive-list-document", "queue.yaml", "%YAML 1.2\n---\n- a: 1\n", "document-shape", 3, 1),
    whole("alias-1mb-x1500", "bomb.yaml", _BIG_ALIASES, "yaml-alias-limit", 2, 53),
    whole("alias-1mb-x10000", "bomb.yaml", _HUGE_ALIASES, "yaml-alias-limit", 2, 53),
    whole("alias-billion-laughs", "bomb.yaml", _LAUGHS, "yaml-alias-limit", 6, 12),
    whole("alias-depth", "bomb.yaml", _DEEP_ALIASES, "yaml-alias-limit", 34, 12),
    whole("alias-long-strings", "bomb.yaml", _LONG_STRING_LAUGHS, "yaml-alias-limit", 5, 20),
    whole("alias-after-quoted-keys", "bomb.yaml", _ADJACENT_ALIASES, "yaml-alias-limit", 2, 98),
    edit(
        "alias-bomb-in-snapshot",
        "racks.yaml",
        '    revision: "r1"\n',
        '    revision: "r1"\n    x: &x [a]\n'
        + "".join(
            f"    x{i}: &x{i} [*x{i - 1 if i > 1 else ''}, *x{i - 1 if i > 1 else ''}]\n"
            for i in range(1, 40)
        ),
        "yaml-alias-limit",
        31,
        16,
    ),
    edit("alias-undefined", "queue.yaml", CLUSTER_QUEUE, "*nowhere", "yaml-syntax", 10, 17),
    # --- nesting ---------------------------------------------------------------------------------
    whole("nesting-compact-15000", "deep.yaml", _DEEP_COMPACT, "yaml-depth", 1, 1001),
    whole("nesting-indented", "deep.yaml", _DEEP_INDENTED, "yaml-depth", 501, 501),
    whole("nesting-sequences-in-mappings", "deep.yaml", _DEEP_SEQUENCES_IN_MAPPINGS, "yaml-depth", 251, 501),
    whole("nesting-through-aliases", "deep.yaml", _DEEP_THROUGH_ALIASES, "yaml-depth", 3, 104),
    edit(
        "nesting-in-snapshot",
        "racks.yaml",
        '    revision: "r1"\n',
        '    revision: "r1"\n    x:\n    ' + "- " * 600 + "y\n",
        "yaml-depth",
        16,
        1003,
    ),
    # --- other YAML and JSON syntax --------------------------------------------------------------
    edit("yaml-tab-indent", "queue.yaml", "  coveredResources", "\tcoveredResources", "yaml-syntax", 5, 2),
    edit("yaml-unclosed-flow", "queue.yaml", CLUSTER_QUEUE, "{cohortName: team", "yaml-syntax", 10, 17),
    edit("yaml-unclosed-quote", "queue.yaml", '"16"', '"16', "yaml-syntax", 8, 38),
    edit("yaml-bad-indent", "queue.yaml", "  hardware:", "   hardware:", "yaml-syntax", 6, 4),
    edit(
        "yaml-duplicate-key",
        "queue.yaml",
        "metadata: {name: main}",
        "metadata: {name: main, name: other}",
        "duplicate-key",
        3,
        24,
    ),
    edit(
        "yaml-deep-nesting",
        "queue.yaml",
        CLUSTER_QUEUE,
        "[" * 10_000 + "]" * 10_000,
        "yaml-syntax",
        10,
        272,
    ),
    whole("yaml-top-level-list", "extra.yaml", "- a\n- b\n", "document-shape", 1, 1),
    whole("yaml-scalar-document", "extra.yaml", "just text\n", "document-shape", 1, 1),
    edit("json-trailing-comma", "snapshots/hook.json", '"x"}}', '"x"},}', "json-syntax", 3, 55),
    edit("json-single-quotes", "snapshots/hook.json", '"h1"', "'h1'", "json-syntax", 2, 15),
    edit(
        "json-duplicate-key",
        "snapshots/hook.json",
        '"revision": "h1",',
        '"revision": "h1", "revision": "h2",',
        "duplicate-key",
        2,
        21,
    ),
    edit("json-nan", "snapshots/hook.json", '"h1"', "NaN", "number-range", 2, 15),
    edit("json-infinity", "snapshots/hook.json", '"h1"', "-Infinity", "number-range", 2, 15),
    edit("json-float-overflow", "snapshots/hook.json", '"h1"', "1.5e5000", "number-range", 2, 15),
    edit("json-huge-integer", "snapshots/hook.json", '"h1"', "9" * 5000, "number-range", 2, 15),
    edit(
        "json-deep-nesting", "snapshots/hook.json", '"h1"', "[" * 100_000 + "]" * 100_000, "json-syntax", 1, 1
    ),
    whole("json-two-documents", "snapshots/hook.json", HOOK_SNAPSHOT + HOOK_SNAPSHOT, "json-syntax", 5, 1),
    whole("json-empty", "snapshots/hook.json", "", "json-syntax", 1, 1),
    edit(
        "snapshot-two-documents",
        "racks.yaml",
        '    revision: "r1"\n',
        '    revision: "r1"\n    ---\n',
        "snapshot-shape",
        13,
        18,
    ),
    # --- files and folders -----------------------------------------------------------------------
    folder(
        "folder-unreadable",
        "locked",
        _mode_000("locked", make_folder=True),
        "file-unreadable",
        unreadable=True,
    ),
    folder("file-unreadable", "queue.yaml", _mode_000("queue.yaml"), "file-unreadable", unreadable=True),
    folder("root-unreadable", ".", _mode_000("."), "file-unreadable", unreadable=True),
    folder(
        "link-file-outside", "linked.yaml", _link("../outside/secret.yaml", "linked.yaml"), "symlink-outside"
    ),
    folder("link-folder-outside", "linked", _link("../outside", "linked"), "symlink-outside"),
    folder(
        "link-absolute-outside",
        "linked.yaml",
        _link("@/outside/secret.yaml", "linked.yaml"),
        "symlink-outside",
    ),
    folder(
        "link-snapshot-outside",
        "snapshots/hook.json",
        _link("../../outside/hook.json", "snapshots/hook.json"),
        "symlink-outside",
    ),
    folder("link-broken", "broken.yaml", _link("missing.yaml", "broken.yaml"), "file-unreadable"),
    folder("link-loop", "loop.yaml", _link("loop.yaml", "loop.yaml"), "file-unreadable"),
    folder("link-folder-to-ancestor", "snapshots/up", _link("..", "snapshots/up"), "file-unreadable"),
    folder("fifo", "queue.fifo.yaml", _fifo("queue.fifo.yaml"), "file-unreadable"),
    edit(
        "snapshot-path-parent",
        "hook.yaml",
        "snapshots/hook.json",
        "../outside/hook.json",
        "snapshot-path",
        10,
        19,
    ),
    edit(
        "snapshot-path-absolute", "hook.yaml", "snapshots/hook.json", "/etc/hostname", "snapshot-path", 10, 19
    ),
    edit(
        "snapshot-path-missing",
        "hook.yaml",
        "snapshots/hook.json",
        "snapshots/none.json",
        "snapshot-missing",
        10,
        19,
    ),
    # --- quantities --------------------------------------------------------------------------------
    _quantity("underscore", '"191_500m"'),
    _quantity("nan-string", '"NaN"'),
    _number(_quantity("nan-yaml", ".nan")),
    _quantity("infinity-string", '"Infinity"'),
    _number(_quantity("inf-yaml", ".inf")),
    _number(_quantity("minus-inf-yaml", "-.inf")),
    _number(_quantity("exponent-overflow", "1e5000")),
    _quantity("exponent-overflow-string", '"1e5000"'),
    _quantity("400-digits", '"' + "9" * 400 + '"'),
    _quantity("5000-digits", '"' + "9" * 5000 + '"'),
    _quantity("negative", '"-1"'),
    _quantity("two-points", '"1.5.5"'),
    _quantity("suffix-then-digits", '"1Ki5"'),
    _quantity("leading-space", '" 8"'),
    _quantity("hex-string", '"0x10"'),
    _quantity("empty", '""'),
    _quantity("fullwidth-digit", '"\uff18"'),
    _quantity("arabic-digits", '"\u0661\u0662"'),
    _quantity("bad-suffix", '"8Gb"'),
    _quantity("beyond-int64-millis", '"9223372036854776"'),
    _quota("nan", '"NaN"'),
    _quota("5000-digits", '"' + "9" * 5000 + '"'),
    _quota("underscore", '"1_6"'),
    _quota("exponent", '"1e19"'),
    _number(_quota("inf-yaml", ".inf")),
    edit("allocatable-huge-integer", "nodes.yaml", 'cpu: "64"', "cpu: " + "9" * 5000, "number-range", 7, 24),
    edit("allocatable-hex-huge", "nodes.yaml", 'cpu: "64"', "cpu: 0x" + "f" * 40, "number-range", 7, 24),
    # --- pass-through clusterQueue fields ----------------------------------------------------------
    _cluster_queue("weight-inf", "{fairSharing: {weight: .inf}}", "number-range", 40),
    _cluster_queue("weight-nan-string", '{fairSharing: {weight: "NaN"}}', "schema", 40),
    _cluster_queue("weight-exponent", '{fairSharing: {weight: "1e5000"}}', "quantity", 40),
    _cluster_queue("weight-negative", "{fairSharing: {weight: -1}}", "schema", 40),
    _cluster_queue("weight-bool", "{fairSharing: {weight: true}}", "schema", 40),
    _cluster_queue("fair-sharing-int-key", "{fairSharing: {1: 2}}", "mapping-key", 32),
    _cluster_queue("fair-sharing-scalar", "{fairSharing: 5}", "schema", 31),
    _cluster_queue("fair-sharing-unknown", "{fairSharing: {weigth: 1}}", "schema", 32),
    _cluster_queue("preemption-enum", "{preemption: {reclaimWithinCohort: Sometimes}}", "schema", 52),
    _cluster_queue(
        "preemption-cel", "{preemption: {borrowWithinCohort: {policy: LowerPriority}}}", "schema", 18
    ),
    _cluster_queue(
        "preemption-threshold",
        "{preemption: {borrowWithinCohort: {maxPriorityThreshold: 1.5}}}",
        "schema",
        74,
    ),
    _cluster_queue(
        "preemption-threshold-int32",
        "{preemption: {borrowWithinCohort: {maxPriorityThreshold: 3000000000}}}",
        "schema",
        74,
    ),
    _cluster_queue("queueing-strategy", "{queueingStrategy: LIFO}", "schema", 36),
    _cluster_queue("cohort-name-pattern", "{cohortName: Team_A}", "schema", 30),
    _cluster_queue("cohort-name-length", "{cohortName: " + "a" * 254 + "}", "schema", 30),
    _cluster_queue("cohort-name-int", "{cohortName: 7}", "schema", 30),
    _cluster_queue("cohort-both-spellings", "{cohortName: a, cohort: b}", "plan-cluster-queue", 33),
    _cluster_queue("selector-value-int", "{namespaceSelector: {matchLabels: {team: 1}}}", "schema", 58),
    _cluster_queue(
        "selector-operator", "{namespaceSelector: {matchExpressions: [{key: a, operator: Is}]}}", "schema", 76
    ),
    _cluster_queue(
        "selector-label-value", '{namespaceSelector: {matchLabels: {team: "a b"}}}', "plan-cluster-queue", 52
    ),
    _cluster_queue(
        "admission-checks-empty", "{admissionChecksStrategy: {admissionChecks: []}}", "schema", 44
    ),
    _cluster_queue(
        "admission-checks-name", "{admissionChecksStrategy: {admissionChecks: [{name: 5}]}}", "schema", 69
    ),
    _cluster_queue("admission-checks-v1beta1", "{admissionChecks: [1]}", "schema", 36),
    _cluster_queue("admission-scope", "{admissionScope: {admissionMode: Sometimes}}", "schema", 50),
    _cluster_queue("fungibility-enum", "{flavorFungibility: {whenCanBorrow: Maybe}}", "schema", 53),
    _cluster_queue(
        "fungibility-cel", "{flavorFungibility: {preference: BorrowingOverPreemption}}", "schema", 18
    ),
    _cluster_queue("resource-groups", "{resourceGroups: []}", "schema", 18),
    _cluster_queue("stop-policy", "{stopPolicy: Hold}", "schema", 18),
    # --- strings that land in rendered objects ---------------------------------------------------
    edit(
        "revision-10-mb",
        "racks.yaml",
        'revision: "r1"',
        'revision: "' + "r" * 10_000_000 + '"',
        "schema",
        14,
        15,
    ),
    edit("revision-over-1024", "snapshots/hook.json", '"h1"', '"' + "h" * 1025 + '"', "schema", 2, 15),
    edit("revision-empty", "snapshots/hook.json", '"h1"', '""', "schema", 2, 15),
    edit(
        "expires-at-garbage",
        "snapshots/hook.json",
        '"revision": "h1",',
        '"revision": "h1", "expiresAt": "soon",',
        "snapshot-expiry",
        2,
        34,
    ),
    edit("queue-name-final-newline", "queue.yaml", "name: main", 'name: "main\\n"', "schema", 3, 18),
    edit("source-name-final-newline", "hook.yaml", "name: hook", 'name: "hook\\n"', "schema", 3, 18),
    edit(
        "gate-image-space", "config.yaml", "ghcr.io/example/gate:1", "ghcr.io/example/gate 1", "schema", 6, 17
    ),
    edit("covered-resource-space", "queue.yaml", "[cpu,", '["c p u",', "schema", 5, 22),
    edit(
        "identity-value-long",
        "queue.yaml",
        "{nvidia.com/gpu.product: L40S}",
        "{nvidia.com/gpu.product: " + "L" * 64 + "}",
        "schema",
        9,
        42,
    ),
    edit("node-name-long", "nodes.yaml", "name: b1", "name: " + "b" * 64, "node-name", 11, 11),
    edit("label-value-newline", "nodes.yaml", "pool: b}", 'pool: "b\\n"}', "label-syntax", 12, 78),
    edit(
        "snapshot-label-value-long",
        "snapshots/hook.json",
        '"x"',
        '"' + "x" * 64 + '"',
        "snapshot-label-syntax",
        3,
        50,
    ),
    # --- quota is conserved ------------------------------------------------------------------------
    edit(
        "quota-for-unmatched-identity",
        "queue.yaml",
        "{nvidia.com/gpu.product: L40S}",
        '{nvidia.com/gpu.product: B300}\n      nominalQuota: {nvidia.com/gpu: "8"}',
        "quota-unplaceable",
        10,
        38,
    ),
]
