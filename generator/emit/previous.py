"""What the previous render held, read back from rendered/ as it was: the retire step's keep
list (its render serial, its Topologies and ResourceFlavors), from which the next render's
serial follows (generator.compile.gate_wiring.render_serial; docs/explanation/gate.md,
"Ordering")."""

from __future__ import annotations

from collections.abc import Mapping

from ..compile.gate_wiring import KEEP_KEY, RenderStamp
from ..parse import ParseError, parse_text

KEEP_FILE = "retire/configmap-keep.yaml"


def render_stamp_of(owned: Mapping[str, str]) -> RenderStamp | None:
    """None when rendered/ holds no keep list tasgen wrote, or one it cannot read (a
    conflicted merge, say): the render is then a first one, stamped 1 (the retire step then
    deletes nothing a later render stamped, which errs on keeping)."""
    text = owned.get(KEEP_FILE)
    if text is None:
        return None
    try:
        (configmap,) = parse_text(text)
        (keep,) = parse_text(configmap["data"][KEEP_KEY])
        serial = keep.get("render", 0)
        names = [*(keep.get("resourceFlavors") or []), *(keep.get("topologies") or [])]
    except (ParseError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(serial, int) or isinstance(serial, bool) or not all(isinstance(n, str) for n in names):
        return None
    return RenderStamp(serial, frozenset(names))
