"""Each source type is described once (generator/sourcetypes.py): the published schema, the
source-type rule and fetch all read that description."""

from __future__ import annotations

import json

from tasgen.sourcetypes import SOURCE_TYPES, WEBHOOK, Obtained, of_spec, present
from tests.conftest import tasgen


def test_the_published_schema_is_composed_from_the_source_types() -> None:
    published = json.loads(tasgen("schema", "TopologySource").output)
    spec = published["properties"]["spec"]["properties"]
    assert {t.key: spec[t.key] for t in SOURCE_TYPES} == {t.key: t.schema for t in SOURCE_TYPES}
    assert set(spec) - {t.key for t in SOURCE_TYPES} == {"nodeSelector", "levels"}


def test_only_the_read_only_type_does_not_write_and_only_fetched_types_name_a_file() -> None:
    assert {t.key for t in SOURCE_TYPES if not t.writes} == {"nodeLabels"}
    files = {t.key: t.snapshot_file({t.key: {"snapshotPath": "s.json"}}) for t in SOURCE_TYPES}
    assert files == {"nodeLabels": None, "configMap": None, "webhook": "s.json"}
    assert [t for t in SOURCE_TYPES if t.obtained is Obtained.FETCHED] == [WEBHOOK]


def test_a_spec_names_its_types_in_registry_order() -> None:
    spec = {"webhook": {}, "nodeLabels": {}}
    assert [t.key for t in present(spec)] == ["nodeLabels", "webhook"]
    assert of_spec({}).key == "nodeLabels"
