"""Properties of the plan report over random pairs of fleets (hypothesis): comparing a fleet
with itself reports nothing, comparing B with A is the mirror of A with B, and every report
fits its published schema and the comment bound."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from operator import attrgetter

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasgen.commands.plan.formats import COMMENT_LIMIT, json_text, markdown
from tasgen.commands.plan.report import build
from tasgen.commands.plan.shape import Flavor, Queue, Report
from tasgen.load.files import InputFile
from tasgen.pipeline import Compilation, compile_inventory
from tasgen.util.typed_json import from_json
from tests.conftest import NOW, examples
from tests.plan.fleet import H100, RACK, ROW, ZONE, Fleet

SCHEMA = json.loads(resources.files("tasgen").joinpath("schemas", "plan-report.schema.json").read_text())
SETTINGS = settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    # A rack stays within its zone (h-0..3 in z1, h-4..7 in z2), or the hierarchy is ambiguous.
    racks = {n: draw(st.sampled_from(["r1", "r2"] if i < 4 else ["r3", "r4"])) for i, n in enumerate(H100)}
    # A row belongs to one rack: its value names it (one child value under one parent).
    rows = draw(st.dictionaries(st.sampled_from(H100), st.sampled_from(["w1", "w2"]), max_size=8))
    levels = draw(st.sampled_from([(ZONE, RACK), (RACK,), (ZONE, RACK, ROW)]))
    return Fleet(
        racks=racks,
        more={n: {ROW: f"{racks[n]}-{v}"} for n, v in rows.items()} if ROW in levels else {},
        levels=levels,
        expires=draw(
            st.sampled_from(["2027-06-30T00:00:00Z", "2026-12-05T00:00:00Z", "2026-11-01T00:00:00Z"])
        ),
        training=draw(st.sampled_from([("H100", "L40S"), ("H100",), ("L40S",)])),
        quota=draw(st.sampled_from(["64", "48", "8"])),
    )


def compiled(fleet: Fleet, label: str) -> Compilation:
    files = [
        InputFile(name, f"{label}:{name}", text.encode()) for name, text in sorted(fleet.files().items())
    ]
    result = compile_inventory(files, datetime.fromisoformat(NOW), node_features=False)
    assert not result.failed, result.problems()
    return result


def report(base: Fleet, head: Fleet) -> Report:
    """The typed report; its JSON fits the schema and reads back as the same value."""
    data = build(compiled(base, "base"), compiled(head, "head"), "base")
    document = json.loads(json_text(data))
    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert from_json(Report, document) == data
    assert len(markdown(data)) < COMMENT_LIMIT
    return data


@SETTINGS
@given(fleets())
def test_a_fleet_compared_with_itself_changes_nothing(fleet: Fleet) -> None:
    data = report(fleet, fleet)
    assert data.summary.queues_changed == data.summary.nodes_changed == 0
    assert data.summary.fit_changed == 0 and data.summary.drains == ()
    assert not any(w.rule in ("level-removed", "level-added-uncarried") for w in data.warnings)


def _flavors(flavors: Callable[[Queue], tuple[Flavor, ...]], data: Report) -> dict[str, list[str]]:
    return {q.name: sorted(f.name for f in flavors(q)) for q in data.queues}


@SETTINGS
@given(fleets(), fleets())
def test_the_reverse_change_is_the_mirror(a: Fleet, b: Fleet) -> None:
    forward, backward = report(a, b), report(b, a)
    added, removed = attrgetter("flavors_added"), attrgetter("flavors_removed")
    assert _flavors(added, forward) == _flavors(removed, backward)
    assert forward.nodes.changed == backward.nodes.changed
    assert {(m.from_, m.to, m.nodes) for m in forward.profiles.moves} == {
        (m.to, m.from_, m.nodes) for m in backward.profiles.moves
    }
    mirrored = {(f.queue, f.level, f.after, f.before) for f in backward.fit}
    assert {(f.queue, f.level, f.before, f.after) for f in forward.fit} == mirrored
