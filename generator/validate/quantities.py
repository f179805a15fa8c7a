"""Kubernetes quantities, parsed by the official client, and exact integer units."""

from __future__ import annotations

import decimal
import importlib.util
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from types import ModuleType

#: resources whose quota is split in thousandths (the API's millicores)
MILLI_RESOURCES = frozenset({"cpu"})


def _client_quantity_module() -> ModuleType:
    """The official client's quantity parser, loaded on its own: importing it as
    ``kubernetes.utils`` runs the package's __init__, which imports the whole API client
    (a second of start-up for every command). The module itself needs only ``decimal``."""
    name = "kubernetes.utils.quantity"
    if name in sys.modules:
        return sys.modules[name]
    package = importlib.util.find_spec("kubernetes")
    if package is None or not package.submodule_search_locations:
        raise ImportError("the kubernetes package is not installed")
    path = Path(next(iter(package.submodule_search_locations))) / "utils" / "quantity.py"
    spec = importlib.util.spec_from_file_location("_tasgen_k8s_quantity", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_parse_quantity: Callable[[str], Decimal] = _client_quantity_module().parse_quantity

#: Quantities are parsed (a value times its suffix's power) and summed over many nodes with
#: Decimal arithmetic, which rounds to the context's precision: the default 28 digits rounded
#: a 29-digit value, and sums whose terms span more than 28 digits. 100 digits hold any value of
#: MAX_LENGTH characters times any suffix and node count exactly. Set before any quantity is
#: parsed, for this thread and for any thread started later (whose context is a copy of the
#: default one).
EXACT_DIGITS = 100
for _context in (decimal.getcontext(), decimal.DefaultContext):
    _context.prec = max(_context.prec, EXACT_DIGITS)


@lru_cache(maxsize=65536)  # fleets repeat a few values on thousands of nodes
def parse(value: str) -> Decimal:
    """The quantity as a Decimal; raises ValueError."""
    return _parse_quantity(value)


#: Kubernetes' quantity grammar exactly (ASCII digits only: Python's Decimal, which parses
#: the value, would also take "1_000", "NaN", "Infinity" and other scripts' digits)
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?")
#: Kueue keeps quotas as 64-bit integers (millis for CPU); the text stays short
MAX_UNITS, MAX_LENGTH = 2**63 - 1, 64


@lru_cache(maxsize=65536)
def quantity_error(value: str, resource: str = "") -> str | None:
    shown = value if len(value) <= 40 else f"{value[:40]}... ({len(value)} characters)"
    if len(value) > MAX_LENGTH:
        return f"{shown!r} is too long for a Kubernetes quantity (at most {MAX_LENGTH} characters)"
    if not _QUANTITY.fullmatch(value):
        return f"{shown!r} is not a Kubernetes quantity (e.g. 8, 1500m, 2Ti)"
    try:
        amount = parse(value)
        too_large = amount * (1000 if resource in MILLI_RESOURCES else 1) > MAX_UNITS
    except (ValueError, ArithmeticError):  # an exponent beyond Decimal's range
        too_large = True
    if too_large:
        return f"{shown!r} is beyond Kubernetes' range (at most {MAX_UNITS} units)"
    if amount < 0:
        return f"{shown!r} is negative"
    return None


def beyond_range(units: int, scale: int, resource: str = "") -> bool:
    """Whether ``units`` at ``scale`` exceed what Kueue keeps in 64 bits (millis for CPU): a
    quota summed from many nodes' allocatable can, where any one declared value cannot."""
    return Decimal(units) / scale * (1000 if resource in MILLI_RESOURCES else 1) > MAX_UNITS


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


_BINARY = (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_units(units: int, scale: int, resource: str = "") -> str:
    """The quantity text: millis only when needed; byte counts with the largest binary
    suffix that is exact (2000Gi rather than 2147483648000)."""
    if scale != 1 and units % scale:
        return f"{units}m"
    whole = units // scale
    if _is_bytes(resource) and whole:
        for suffix, size in _BINARY:
            if whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)


def _is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")
