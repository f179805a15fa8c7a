"""Quantities in Kueue's integer units (millicores for CPU, whole units of anything else,
rounded up as ``resource.Quantity.Value`` rounds) and back to the text Kueue prints."""

from __future__ import annotations

import math
from decimal import Decimal

from generator.validate.quantities import parse

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def units(resource: str, value: object) -> int | None:
    """``value`` (a quantity string or a number) in Kueue's units; None when not a quantity."""
    try:
        amount = parse(str(value)) if not isinstance(value, bool) else None
    except (ValueError, ArithmeticError):
        return None
    if amount is None or amount < 0:
        return None
    scaled = amount * (1000 if resource == "cpu" else 1)
    return math.ceil(scaled)


def text(resource: str, value: int) -> str:
    """What Kueue's ``resources.ResourceQuantityString`` prints for ``value``."""
    if resource == "cpu":
        return _decimal(Decimal(value) / 1000)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return _binary(value)
    return _decimal(Decimal(value))


def _binary(value: int) -> str:
    if value == 0:
        return "0"
    for suffix, size in _BINARY:
        if value % size == 0:
            return f"{value // size}{suffix}"
    return _decimal(Decimal(value))


def _decimal(value: Decimal) -> str:
    if value == 0:
        return "0"
    if value != value.to_integral_value():
        return f"{int(value * 1000)}m"
    whole = int(value)
    for suffix, size in _DECIMAL:
        if whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)
