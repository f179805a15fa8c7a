"""no_cycle_collection leaves the collector as it found it, also when the block raises."""

from __future__ import annotations

import gc

import pytest

from tasgen.util.gc import no_cycle_collection


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_inside_and_restored_after(enabled: bool) -> None:
    before = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with pytest.raises(KeyError), no_cycle_collection():
            assert not gc.isenabled()
            raise KeyError("escapes the block")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if before else gc.disable)()
