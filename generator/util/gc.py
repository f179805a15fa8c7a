"""Cycle collection paused for a block of work that allocates many small objects and makes
no reference cycles: the collector would only rescan them (docs/explanation/render-speed.md)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Disable the cycle collector for the block; afterwards it is as it was before."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
