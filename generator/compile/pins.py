"""Nodes that keep their flavors until the cluster shows them idle (docs/explanation/gate.md,
"One label per flavor").

Each node's profile NodeFeature carries its profile label and one label per flavor that
selects it (``flavor_key``), and each flavor's nodeLabels select its own label: so a node
changes flavor only when its NodeFeature changes. Kueue's TAS keeps a Workload's usage in the
cache of the flavor it was admitted on and leaves TAS Pods out of the per-node usage other
flavors see, so a node that another flavor starts to select while pods admitted through its old
flavor run there is double-booked. Hence one rule for every edit, under either drop policy: a
node whose flavors change keeps its previous labels (pinned) until a live render shows that no
unfinished Workload's topology assignment names it. When a flavor it leaves could still admit
onto it before the sync (a live queue gives that flavor quota), it first goes through a transit
row that no flavor selects, and gets its new flavors at a later live render that finds it idle
again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import FLAVOR_KEY_PREFIX, PROFILE_KEY, TRANSIT_KEY, LiveNodes

Row = Mapping[str, str]
TRANSIT_ROW: Row = {TRANSIT_KEY: "true"}


@dataclass
class Pinned:
    """The rows the render writes, and which nodes keep old ones."""

    rows: dict[str, Row]
    #: node -> the flavors it keeps (those of its previous row) while the plan moves it
    kept: dict[str, frozenset[str]] = field(default_factory=dict)
    #: nodes written with the transit row (released from their flavors, not yet given new ones)
    transit: set[str] = field(default_factory=set)
    #: node -> the flavors the plan gives it, for each node kept or in transit (a flavor's
    #: quota follows the nodes it selects as written: compile/queues.py)
    planned: dict[str, frozenset[str]] = field(default_factory=dict)

    def moved(self) -> bool:
        """Some node is written otherwise than the plan gives it."""
        return bool(self.kept or self.transit)


def flavors_in(row: Row) -> frozenset[str]:
    """The flavors a row's flavor labels name."""
    return frozenset(v for k, v in row.items() if k.startswith(FLAVOR_KEY_PREFIX))


class _Legacy:
    """Flavors of a render before the flavor labels (their nodeLabels hold no flavor label):
    which of them selected a node, from its profile label and its inventory labels."""

    def __init__(self, specs: Mapping[str, Mapping[str, Any]]) -> None:
        self.by_profile: dict[str, list[tuple[str, dict[str, str]]]] = defaultdict(list)
        for name, spec in specs.items():
            labels = spec.get("nodeLabels")
            if not isinstance(labels, Mapping) or any(str(k).startswith(FLAVOR_KEY_PREFIX) for k in labels):
                continue
            profile = labels.get(PROFILE_KEY)
            if isinstance(profile, str):
                rest = {str(k): str(v) for k, v in labels.items() if k != PROFILE_KEY}
                self.by_profile[profile].append((name, rest))

    def of(self, row: Row, labels: Mapping[str, str]) -> frozenset[str]:
        found = self.by_profile.get(row.get(PROFILE_KEY, ""), ())
        return frozenset(name for name, want in found if all(labels.get(k) == v for k, v in want.items()))


def pin(
    rows: dict[str, Row],
    previous: Mapping[str, Row],
    node_labels: Mapping[str, Mapping[str, str]],
    previous_flavors: Mapping[str, Mapping[str, Any]],
    live: LiveNodes | None,
) -> Pinned:
    """``rows``: node -> the labels the new plan gives it; ``previous``: node -> the labels
    its NodeFeature had (empty on a first render); ``node_labels``: the inventory's labels of
    each node (what a flavor of a render before the flavor labels selected by);
    ``previous_flavors``: the previous render's ResourceFlavor specs; ``live``: what the
    cluster shows (None offline: every node whose flavors change is kept)."""
    if not previous:
        return Pinned(rows)
    legacy = _Legacy(previous_flavors)
    result = Pinned(dict(rows))
    for node, row in rows.items():
        before = previous.get(node)
        if before is None or before == row:
            continue
        if TRANSIT_KEY in before:
            if live is None or node in live.busy:
                result.rows[node] = before
                result.transit.add(node)
                result.planned[node] = flavors_in(row)
            continue
        old = flavors_in(before) or legacy.of(before, node_labels.get(node, {}))
        new = flavors_in(row)
        if not old or old == new:
            continue
        if live is None or node in live.busy or old & live.unplaced:
            result.rows[node] = before
            result.kept[node] = old
            result.planned[node] = new
        elif (old - new) & live.admitting:
            result.rows[node] = TRANSIT_ROW
            result.transit.add(node)
            result.planned[node] = new
    return result
