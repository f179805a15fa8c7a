"""Go-style durations ("168h", "1h30m", "1.5h"), as Kubernetes and Flux spell them: parsed
exactly (Decimal), held to Go's range, microseconds kept (a timedelta's resolution)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

#: nanoseconds per unit, as Go's time.ParseDuration names them
UNITS = {
    "ns": 1,
    "us": 1000,
    "µs": 1000,
    "μs": 1000,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
#: the longest duration Go can hold (an int64 of nanoseconds, about 290 years)
MAX_NANOSECONDS = 2**63 - 1


def nanoseconds(text: str) -> int | None:
    """The duration in nanoseconds (fractions of a nanosecond dropped, as Go does), None when
    ``text`` is not a Go duration without a sign, or is beyond Go's range."""
    position, total = 0, Decimal(0)
    for match in _PART.finditer(text):
        if match.start() != position:
            return None
        try:
            total += Decimal(match[1]) * UNITS[match[2]]
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            return None
        position = match.end()
    if position != len(text) or not text:
        return None
    return int(total) if total <= MAX_NANOSECONDS else None


def duration(text: str) -> timedelta | None:
    """The duration as a timedelta (to the microsecond), None as :func:`nanoseconds`."""
    found = nanoseconds(text)
    return None if found is None else timedelta(microseconds=found // 1000)
