"""Kubernetes resource quantities: the grammar and its range, exact values, the integer units
Kueue counts in, and the texts tasgen and Kueue print. One suffix table serves them all."""

from __future__ import annotations

import decimal
import importlib.util
import math
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from types import ModuleType

#: resources whose quota is split in thousandths (the API's millicores)
MILLI_RESOURCES = frozenset({"cpu"})
#: the suffixes, largest first, with what they multiply by
BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


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

#: Kubernetes' quantity grammar exactly (ASCII digits only: Python's Decimal, which parses
#: the value, would also take "1_000", "NaN", "Infinity" and other scripts' digits)
_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[KMGTPE]i|[mkMGTPE]|[eE][+-]?[0-9]+)?")
#: Kueue keeps quotas as 64-bit integers (millis for CPU); the text stays short
MAX_UNITS, MAX_LENGTH = 2**63 - 1, 64


@lru_cache(maxsize=65536)  # fleets repeat a few values on thousands of nodes
def parse(value: str) -> Decimal:
    """The quantity as a Decimal; raises ValueError on what Kubernetes does not take."""
    if not _QUANTITY.fullmatch(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    return _parse_quantity(value)


def is_quantity(value: object) -> bool:
    """A quantity as the API takes it: its text, or a JSON number (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return False
    try:
        parse(_text_of(value))
    except (ValueError, ArithmeticError):
        return False
    return True


def _text_of(value: str | int | float) -> str:
    return value if isinstance(value, str) else str(value)


def is_zero(value: object) -> bool:
    """A quantity that is zero ("0", "0Gi", "0.0", 0). Anything else is not, absence (None)
    and unreadable text included: a caller that reads absence as zero says so itself."""
    if not is_quantity(value):
        return False
    assert isinstance(value, str | int | float)
    return parse(_text_of(value)) == 0


@lru_cache(maxsize=65536)
def quantity_error(value: str, resource: str = "") -> str | None:
    """Why ``value`` is not a quantity tasgen can keep for ``resource``, or None."""
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


# --- tasgen's exact units (rendered quotas) ---------------------------------------------


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


def format_units(units: int, scale: int, resource: str = "") -> str:
    """The quantity text: millis only when needed; byte counts with the largest binary
    suffix that is exact (2000Gi rather than 2147483648000)."""
    if scale != 1 and units % scale:
        return f"{units}m"
    whole = units // scale
    if is_bytes(resource) and whole:
        return _with_suffix(whole, BINARY)
    return str(whole)


def is_bytes(resource: str) -> bool:
    return resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-")


def _with_suffix(whole: int, table: tuple[tuple[str, int], ...]) -> str:
    for suffix, size in table:
        if whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)


# --- Kueue's units (its quota and usage arithmetic) --------------------------------------


def kueue_units(resource: str, value: object) -> int | None:
    """``value`` (a quantity text or a number) in Kueue's integer units: millicores for CPU,
    whole units of anything else, rounded up as ``resource.Quantity.Value`` rounds; None
    when not a quantity or negative."""
    if not is_quantity(value):
        return None
    assert isinstance(value, str | int | float)
    try:
        amount = parse(_text_of(value))
    except (ValueError, ArithmeticError):
        return None
    if amount < 0:
        return None
    return math.ceil(amount * (1000 if resource in MILLI_RESOURCES else 1))


def kueue_text(resource: str, value: int) -> str:
    """What Kueue's ``resources.ResourceQuantityString`` prints for ``value`` units."""
    if resource in MILLI_RESOURCES:
        return _decimal_text(Decimal(value) / 1000)
    if is_bytes(resource) and value >= 1024:
        return _with_suffix(value, BINARY)  # below 1024 Kubernetes prints decimal (1k)
    return _decimal_text(Decimal(value))


def _decimal_text(value: Decimal) -> str:
    if value == 0:
        return "0"
    if value != value.to_integral_value():
        return f"{int(value * 1000)}m"
    return _with_suffix(int(value), DECIMAL)


def stored_form(quantity: str) -> str:
    """A quantity as Kueue stores it: its webhook decodes the queue into Go's
    resource.Quantity, whose canonical text keeps the largest power-of-1000 suffix that leaves
    the number whole ("2000" -> "2k", "12000m" -> "12"). Written that way, a queue the engine
    applies does not differ from the one it reads back. Takes what format_units writes: a
    whole number, millis, or a whole number with the largest exact binary suffix (already
    canonical)."""
    if quantity.endswith("m"):
        millis = int(quantity[:-1])
        return quantity if millis % 1000 else stored_form(str(millis // 1000))
    if not quantity.isdigit() or quantity == "0":
        return quantity
    return _with_suffix(int(quantity), DECIMAL)
