"""What `tasgen fetch` prints: each source's problems, then a line per source."""

from __future__ import annotations

from ...printable import one_line
from ...reporters import problem_line
from . import Outcome, Status


def fetch_report(outcomes: list[Outcome]) -> str:
    """Problems of every source first, then one summary line per source."""
    # Sources refused for the same inventory errors share them: each is shown once.
    lines = [problem_line(p) for p in dict.fromkeys(p for o in outcomes for p in o.problems)]
    for o in outcomes:
        revision = f" (revision {one_line(o.revision)})" if o.revision else ""
        reason = f": {one_line(o.reason)}" if o.status is Status.FAILED else ""
        lines.append(f"{o.source}: {o.status}{revision}{reason}")
    if not outcomes:
        lines.append("no webhook sources in the inventory")
    return "\n".join(lines) + "\n"
