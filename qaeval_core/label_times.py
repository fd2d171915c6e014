"""How long a label took: the browser's measures, bounded by the server's clock.

The Annotate page saves two times with each label (``save_label``'s ``seconds`` and
``wall_seconds``), measured by the browser. A client can be broken or tampered with, so the
server bounds them by what it saw itself; the rule lives here, once, not in the page.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["bounded_label_times"]


def _measured(raw: Any) -> float | None:
    """A client's measure as seconds: a finite number >= 0, else None (missing or broken)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def bounded_label_times(
    active: Any, wall: Any, *, open_seconds: float, idle_cap: float
) -> tuple[float, float]:
    """The ``(seconds, wall_seconds)`` to save with a label: the browser's measures, bounded by
    the server's clock.

    ``active`` (time the annotator was active, idle gaps already cut to the project's cap) and
    ``wall`` (time the item was open) come from the client; ``open_seconds`` is the server's
    own count since it served the item. Why bounded: a tampered or broken client must not
    claim more time than the item was open, so the wall time is at most the server's count
    (plus 1 s of clock and network slack) and the active time at most the wall time. A missing
    or broken measure (not a finite number >= 0) falls back to the server's count for the wall
    time, and to the wall time cut at ``idle_cap`` for the active time.

    >>> bounded_label_times(12.0, 30.0, open_seconds=20.0, idle_cap=60.0)
    (12.0, 21.0)
    >>> bounded_label_times(None, "broken", open_seconds=90.0, idle_cap=60.0)
    (60.0, 90.0)
    """
    server_wall = max(0.0, float(open_seconds))
    measured_wall = _measured(wall)
    wall_s = server_wall if measured_wall is None else min(measured_wall, server_wall + 1.0)
    measured_active = _measured(active)
    active_s = min(wall_s, idle_cap) if measured_active is None else min(measured_active, wall_s)
    return active_s, wall_s
