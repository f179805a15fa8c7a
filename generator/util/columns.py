"""Passes over a fleet's columns (a value per node) that run at C speed: a Python loop per
node is slow at fleet scale, and a render makes dozens of passes
(docs/explanation/render-speed.md)."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from itertools import starmap
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def group(keys: list[K], items: Iterable[T]) -> dict[K, list[T]]:
    """The items by their key (``keys[i]`` is the key of the i-th item; as many keys as items),
    keys in first-seen order and items in their order: each item appended to its key's list by
    ``list.append`` called from ``starmap``, never a Python frame per item."""
    groups: dict[K, list[T]] = {key: [] for key in dict.fromkeys(keys)}
    deque(starmap(list.append, zip(map(groups.__getitem__, keys), items, strict=True)), maxlen=0)
    return groups
