"""Edits of the repository's example inventory that several tests make (docs/explanation/plan.md
shows what the rack edit does to the plan)."""

from __future__ import annotations

import re
from pathlib import Path

#: the DCIM snapshot that places the H100 nodes, relative to the inventory folder
RACK_SNAPSHOT = "sources/h100-racks.yaml"
_UNRECORDED = re.compile(r"^(\s+h100-1b-r2-0\d: \{infra\.example\.com/block: blk-b)\}$", re.MULTILINE)


def record_rack_b_r02(inventory: Path) -> None:
    """The 4-line DCIM snapshot edit: rack b-r02 recorded for its four H100 nodes."""
    path = inventory / RACK_SNAPSHOT
    text, count = _UNRECORDED.subn(r"\1, topology.gpustack.ai/rack: b-r02}", path.read_text())
    assert count == 4, count  # the four nodes of rack b-r02
    path.write_text(text)
