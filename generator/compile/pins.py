"""Nodes that keep their previous profile label while a queue retains that profile's flavor.

Kueue's TAS keeps a Workload's usage in the cache of the flavor it was admitted on and leaves
TAS Pods out of the per-node usage that other flavors see, so a node relabelled into another
profile while a retained (WaitForIdle) flavor's Pods still run on it is offered to the new
profile's flavor as free: Kueue admits new work onto full nodes. So, while any queue retains a
flavor, a node whose NodeFeature gave it that flavor's profile keeps it, whatever profile the
new inventory gives it; its other labels (a rack just recorded) are written as usual. The node
moves once the flavor leaves every queue (docs/explanation/gate.md, "What Kueue does with a
retained flavor").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from generator.compile.profiles import Profile
from generator.model import PROFILE_KEY


def held_profiles(flavors: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The profile IDs that these ResourceFlavor specs (the retained flavors') select."""
    found: set[str] = set()
    for spec in flavors:
        labels = spec.get("nodeLabels")
        value = labels.get(PROFILE_KEY) if isinstance(labels, Mapping) else None
        if isinstance(value, str):
            found.add(value)
    return frozenset(found)


def pins(
    previous: Mapping[str, str], profile_of: Mapping[str, Profile], held: frozenset[str]
) -> dict[str, str]:
    """Node -> the profile its NodeFeature keeps: a node of the inventory whose previous
    profile label (``previous``: node -> profile, as rendered before) is ``held`` and that the
    new assignment (``profile_of``) moves to another profile."""
    if not held:
        return {}
    found: dict[str, str] = {}
    for node, old in previous.items():
        new = profile_of.get(node)
        if old in held and new is not None and new.id != old:
            found[node] = old
    return found
