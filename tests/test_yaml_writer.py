"""The YAML writer: any data it is given reads back the same, under YAML 1.1 and 1.2."""

from __future__ import annotations

from typing import Any

import yaml as pyyaml
import yaml_rs
from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.compile.manifests import FeatureFile
from tasgen.emit import yaml
from tasgen.emit.tree import feature_text
from tests.conftest import examples

scalars = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1e3",
            "0x1F",
            "08",
            "1:20",
            "- a",
            "a: b",
            "#x",
            "'q'",
            '"q"',
            "2026-01-01",
            " lead",
            "tail ",
            "a\nb\n",
            "\n",
            "_0",
            "_1_000",
            ".5",
            ".inf",
            "+1",
            "0o17",
            "0b1",
            "1_0",
            "<<",
            "=",
        ]
    ),
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.none(),
)
keys = st.one_of(
    st.text(min_size=1, max_size=8), st.sampled_from(["yes", "null", "1", "a/b.c", "on", "_0", "_1_0", "0_1"])
)
data = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(keys, data, min_size=1, max_size=5))
def test_dump_round_trips(document: dict[str, Any]) -> None:
    text = yaml.dump(document)
    assert pyyaml.safe_load(text) == document  # YAML 1.1 (kubectl, Argo CD)
    assert yaml_rs.loads(text, parse_datetime=False) == document  # YAML 1.2


label_keys = st.sampled_from(["topology.gpustack.ai/rack", "infra.example.com/b", "x", "_0", "a\nb"])
label_values = st.one_of(st.text(max_size=6), st.sampled_from(["a\n", "\n", "_0", "a\nb", "yes", "1"]))
names = st.one_of(st.text(min_size=1, max_size=10), st.sampled_from(["a\n", "_0", "x\ny\n", "no", "0x1"]))
label_sets = st.dictionaries(label_keys, label_values, max_size=3)


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=6), label_sets)
def test_the_flat_mapping_fast_path_writes_the_same_bytes(key: str, labels: dict[str, str]) -> None:
    assert yaml.flat_entry(key, labels, "  ") == yaml.entry(key, labels, "  ")


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.tuples(names, st.sampled_from([0, 1, 2])), max_size=6),
    st.lists(label_sets, min_size=3, max_size=3),
    st.one_of(st.none(), names),
    names,
)
def test_the_node_feature_writer_writes_what_the_generic_writer_writes(
    rows: list[tuple[str, int]], label_sets: list[dict[str, str]], source: str | None, namespace: str
) -> None:
    """One format per document, labels text shared by the rows that share a set (as a rack's
    nodes do): the bytes of yaml.dump of every object the rows stand for."""
    features = FeatureFile("labels/f.yaml", namespace, source, [(n, label_sets[i]) for n, i in rows])
    generic = "\n---\n".join(yaml.dump(m.body).rstrip("\n") for m in features.manifests())
    assert feature_text(features) == generic


plain_or_not = st.one_of(
    st.from_regex(r"[a-z][a-z0-9.-]{0,12}", fullmatch=True),
    st.sampled_from(["yes", "No", "n", "ON", "_0", "0a", "a b", "a\n", "\n", "a:", "", "null", "x\ny"]),
    st.text(max_size=6),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(plain_or_not, max_size=8))
def test_quoting_many_at_once_quotes_each_as_quote_does(texts: list[str]) -> None:
    assert yaml.quote_all(texts) == [yaml.quote(t) for t in texts]


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(plain_or_not, st.sampled_from(["", "o", "tr", "nu", "fa", "y", "1"])),
    st.lists(plain_or_not, max_size=8),
)
def test_quoting_behind_a_prefix_quotes_as_quoting_the_whole(prefix: str, texts: list[str]) -> None:
    """Short prefixes and texts that together spell a reserved word ("o" + "n") are quoted."""
    expected = yaml.quote_all([prefix + t for t in texts])
    assert yaml.quote_prefixed(prefix, texts, yaml.quote_all(texts)) == expected
