"""Properties of the loader over hostile input (hypothesis): random bytes spliced into a valid
inventory, and arbitrary YAML and JSON trees put where the inventory expects mappings. Never an
internal error; every problem has a position inside its file; a refused render leaves
rendered/ byte for byte as it was; an accepted one writes UTF-8 YAML that reads back."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import NOW, examples, tasgen
from tests.faults import BASE, write_base

SETTINGS = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@contextmanager
def _rendered_base() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        write_base(root / "inventory")
        run = tasgen("render", "-i", str(root / "inventory"), "-o", str(root / "rendered"), "--now", NOW)
        assert run.exit_code == 0, run.output
        yield root


def _render_and_check(root: Path) -> None:
    """Render the (changed) inventory and check the properties."""
    before = _bytes(root / "rendered")
    run = tasgen(
        "render",
        "-i",
        str(root / "inventory"),
        "-o",
        str(root / "rendered"),
        "--now",
        NOW,
        "--format",
        "json",
    )
    assert run.exit_code in (0, 1), run.output
    for problem in run.json()["problems"]:
        assert problem["line"] >= 1 and problem["col"] >= 1, problem
        path = Path(problem["path"])
        if path.is_file() and path.is_relative_to(root / "inventory"):
            lines = path.read_bytes().count(b"\n") + 1
            assert problem["line"] <= lines, problem
    if run.exit_code == 1:
        assert _bytes(root / "rendered") == before
    else:
        for name, data in _bytes(root / "rendered").items():
            if name.endswith(".yaml"):
                list(yaml.safe_load_all(data.decode("utf-8")))


# --- random bytes spliced into a valid file ---------------------------------------------------

_HOSTILE = st.sampled_from(
    [b"\x00", b"\x01", b"\x1b", b"\x7f", b"\xc2\x85", b"\xc2\x9f", b"\xef\xbb\xbf", b"\xef\xbf\xbe", b"\xff",
     b"\xed\xa0\x80", b"*a", b"&a ", b"!x ", b"!!binary ", b"? ", b"[", b"{", b"}", b": ", b"\t", b"\n",
     b"- ", b"'", b'"', b"\\ud800", b"9" * 30, b".inf", b"1e999", b"~", b"---\n", b"#"]
)  # fmt: skip


@SETTINGS
@given(
    st.sampled_from(sorted(BASE)),
    st.lists(st.tuples(st.floats(0, 1), st.one_of(_HOSTILE, st.binary(min_size=1, max_size=6))), max_size=6),
)
def test_random_bytes_in_a_valid_file(name: str, splices: list[tuple[float, bytes]]) -> None:
    with _rendered_base() as root:
        path = root / "inventory" / name
        data = path.read_bytes()
        for where, piece in splices:
            at = int(where * len(data))
            data = data[:at] + piece + data[at:]
        path.write_bytes(data)
        _render_and_check(root)


# --- arbitrary trees where mappings are expected ------------------------------------------------

_keys = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
)
_scalars = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "8",
            "1500m",
            "2Ti",
            "191_500m",
            "NaN",
            "1e5000",
            "a b",
            "x" * 70,
            "LowerPriority",
            "\ud800",
            "a\x00b",
        ]
    ),
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=12,
)
#: (file, the text the tree replaces) - each a place where the inventory expects a mapping
_PLACES = [
    ("queue.yaml", "{cohortName: team, namespaceSelector: {}}"),
    ("queue.yaml", '{nvidia.com/gpu: "16"}'),
    ("nodes.yaml", "{kubernetes.io/hostname: b1, nvidia.com/gpu.product: L40S, pool: b}"),
    ("nodes.yaml", '{cpu: "32", memory: 256Gi, nvidia.com/gpu: "4"}'),
    ("config.yaml", "{image: ghcr.io/example/gate:1}"),
]


def _flow(tree: Any) -> str:
    """The tree as one line of flow YAML (PyYAML writes any key type, .inf and .nan)."""
    return yaml.safe_dump(tree, default_flow_style=True, width=math.inf, allow_unicode=True).strip()


@SETTINGS
@given(st.sampled_from(_PLACES), _trees)
def test_arbitrary_yaml_trees(place: tuple[str, str], tree: Any) -> None:
    name, old = place
    with _rendered_base() as root:
        path = root / "inventory" / name
        text = _flow(tree)
        if "\n" in text or text.startswith("..."):
            text = json.dumps(text)  # a multi-line scalar: keep the document's layout
        before = path.read_text()
        assert old in before, f"{name} no longer holds {old}: the property would test nothing"
        path.write_bytes(before.replace(old, text, 1).encode("utf-8", "surrogatepass"))
        _render_and_check(root)


@SETTINGS
@given(_trees, st.booleans(), st.booleans())
def test_arbitrary_json_snapshots(tree: Any, as_nodes: bool, ascii_only: bool) -> None:
    with _rendered_base() as root:
        content = {"revision": "h1", "nodes": tree} if as_nodes else tree
        text = json.dumps(content, ensure_ascii=ascii_only)
        (root / "inventory" / "snapshots" / "hook.json").write_bytes(text.encode("utf-8", "surrogatepass"))
        _render_and_check(root)


def test_trees_are_written_as_the_properties_need() -> None:
    """Keys of every type, .inf and lone surrogates reach the files as such."""
    assert (
        _flow({1: 2, False: None, None: 1.5, "a": float("inf")}) == "{1: 2, false: null, null: 1.5, a: .inf}"
    )
    assert json.dumps({"a": "\ud800"}) == '{"a": "\\ud800"}'
