"""Kubernetes quantities, parsed by the official client, and exact integer units."""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from kubernetes.utils import parse_quantity

#: resources whose quota is split in thousandths (the API's millicores)
MILLI_RESOURCES = frozenset({"cpu"})


@lru_cache(maxsize=65536)  # fleets repeat a few values on thousands of nodes
def parse(value: str) -> Decimal:
    """The quantity as a Decimal; raises ValueError."""
    parsed: Decimal = parse_quantity(value)
    return parsed


@lru_cache(maxsize=65536)
def quantity_error(value: str) -> str | None:
    try:
        amount = parse(value)
    except ValueError:
        return f"{value!r} is not a Kubernetes quantity (e.g. 8, 1500m, 2Ti)"
    if amount < 0:
        return f"{value!r} is negative"
    return None


def scale_for(resource: str, amounts: list[Decimal]) -> int:
    """How many units make one of ``resource``: 1000 (milli) for CPU and for any resource
    given with a fraction, else 1 (GPUs, pods and bytes stay integral)."""
    if resource in MILLI_RESOURCES or any(a != a.to_integral_value() for a in amounts):
        return 1000
    return 1


def to_units(amount: Decimal, scale: int) -> int:
    """Whole units of ``amount`` at ``scale``; rounds up below a unit (a 0.5m CPU is 1m)."""
    scaled = amount * scale
    whole = int(scaled)
    return whole + 1 if scaled > whole else whole


def format_units(units: int, scale: int) -> str:
    if scale == 1 or units % scale == 0:
        return str(units // scale)
    return f"{units}m"
