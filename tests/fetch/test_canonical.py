"""The canonical form fetch commits: it reads back as the same snapshot, and writing what it
reads back gives the same bytes (so an unchanged topology never gives a diff), for any
snapshot-shaped data and both suffixes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tasgen.commands.fetch.snapshotfile import canonical
from tasgen.parse import parse_text
from tests.conftest import examples

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
labels = st.dictionaries(text, text, max_size=4)
snapshots = st.fixed_dictionaries(
    {"revision": text, "nodes": st.dictionaries(text, labels, max_size=5)},
    optional={"expiresAt": text},
)


@settings(max_examples=examples(200), deadline=None)
@given(snapshots, st.sampled_from([".json", ".yaml", ".yml"]))
def test_canonical_form_round_trips_and_is_a_fixed_point(data: dict[str, Any], suffix: str) -> None:
    written = canonical(data, suffix)
    (read,) = parse_text(written, json_syntax=suffix == ".json")
    assert read == data
    assert canonical(read, suffix) == written


@settings(max_examples=examples(100), deadline=None)
@given(snapshots, st.randoms(use_true_random=False))
def test_key_order_does_not_matter(data: dict[str, Any], random: Any) -> None:
    shuffled_nodes = list(data["nodes"].items())
    random.shuffle(shuffled_nodes)
    items = [*data.items()]
    random.shuffle(items)
    shuffled = {k: (dict(shuffled_nodes) if k == "nodes" else v) for k, v in items}
    assert canonical(shuffled, ".yaml") == canonical(data, ".yaml")
    assert canonical(shuffled, ".json") == canonical(data, ".json")
