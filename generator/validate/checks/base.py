"""What a semantic check is, and the context every check reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from itertools import compress, repeat
from operator import attrgetter, eq
from typing import Any, TypeVar

from ...model import Inventory, Node, Selector, Source
from ...rules import Hit
from ...util.columns import group
from ..hierarchy import Stated, stated_of

T = TypeVar("T")


@dataclass
class Context:
    inventory: Inventory
    now: datetime
    #: sources whose snapshot could not be loaded (already reported); rules skip them
    unloaded: set[str] = field(default_factory=set)
    _memo: dict[str, Any] = field(default_factory=dict)

    def memo(self, key: str, compute: Callable[[Context], T]) -> T:
        """A value several rules share, computed once per run."""
        if key not in self._memo:
            self._memo[key] = compute(self)
        value: T = self._memo[key]
        return value

    @cached_property
    def node_names(self) -> list[str]:
        """The inventory's node names, sorted (the order of every per-node output)."""
        return sorted(self.inventory.nodes)

    @cached_property
    def ordered_nodes(self) -> list[Node]:
        """The inventory's nodes in name order. Read only. An inventory that import-nodes
        wrote lists them in that order already: then no node is looked up by its name (a
        pass of lookups per node is bound by cache misses over the names and the table)."""
        nodes = self.inventory.nodes
        if list(nodes) == self.node_names:
            return list(nodes.values())
        return list(map(nodes.__getitem__, self.node_names))

    @cached_property
    def selected(self) -> dict[str, list[Node]]:
        """Source name -> the inventory's nodes its nodeSelector selects, by node name. Read
        only: sources with the same selector share one list."""
        by_key: dict[str, dict[str | None, list[Node]]] = {}
        nodes = self.ordered_nodes
        return {name: _select(src.selector, nodes, by_key) for name, src in self.inventory.sources.items()}

    def loaded_sources(self) -> Iterable[Source]:
        for name in sorted(self.inventory.sources):
            if name not in self.unloaded:
                yield self.inventory.sources[name]

    def writing_sources(self) -> Iterable[Source]:
        return (s for s in self.loaded_sources() if s.writes and s.snapshot is not None)

    def expired(self, source: Source) -> bool:
        snapshot = source.snapshot
        return bool(snapshot and snapshot.expires_at and snapshot.expires_at <= self.now)

    def hierarchy_values(self, source: Source) -> list[tuple[Node, dict[str, str]]]:
        """Each selected node with the level values the source gives it."""
        return self.stated(source).pairs

    def stated(self, source: Source) -> Stated:
        """The level values the source gives its selected nodes, and the distinct ones
        (computed once: the hierarchy rules and the profiles all read them)."""
        return self.memo(f"values/{source.name}", lambda ctx: stated_of(source, ctx.selected[source.name]))


def _select(
    selector: Selector, nodes: list[Node], by_key: dict[str, dict[str | None, list[Node]]]
) -> list[Node]:
    """The nodes a selector selects, in their order. The common selector, matchLabels alone,
    is filtered without a call per node; sources usually split a fleet by one label (a pool),
    so the nodes are grouped by its value once (``by_key``) and each source takes its group."""
    if selector.expressions:
        return [n for n in nodes if selector.selects(n.labels)]
    if not selector.match_labels:
        return nodes
    (key, value), *more = selector.match_labels
    if key not in by_key:
        by_key[key] = group(list(map(dict.get, map(attrgetter("labels"), nodes), repeat(key))), nodes)
    result = by_key[key].get(value, [])
    for key, value in more:  # rare: a selector of several labels
        values = map(dict.get, map(attrgetter("labels"), result), repeat(key))
        result = list(compress(result, map(eq, values, repeat(value))))
    return result


#: a semantic check: what it finds, without a rule ID or level (the engine stamps those)
Check = Callable[[Context], Iterable[Hit]]
