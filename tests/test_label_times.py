"""The times saved with a label: the client's measures bounded by the server's clock
(qaeval_core.label_times)."""

from __future__ import annotations

import pytest

from qaeval_core.label_times import bounded_label_times


@pytest.mark.parametrize(
    ("active", "wall", "expected"),
    [
        (12.0, 30.0, (12.0, 21.0)),  # the wall time the client claims: at most open + 1 s
        (25.0, 20.5, (20.5, 20.5)),  # active at most the wall time
        (None, 10.0, (10.0, 10.0)),  # no active measure: the wall time, cut at the idle cap
        (None, None, (20.0, 20.0)),  # no measure at all: the server's count
        ("nan", "-3", (20.0, 20.0)),  # broken measures count as missing
        (float("inf"), 5, (5.0, 5.0)),
    ],
)
def test_label_times_are_the_clients_bounded_by_the_servers_clock(active, wall, expected):
    assert bounded_label_times(active, wall, open_seconds=20.0, idle_cap=60.0) == expected
    assert bounded_label_times(None, None, open_seconds=200.0, idle_cap=60.0) == (60.0, 200.0)
    # a server clock that went back counts as zero seconds open (plus the 1 s of slack)
    assert bounded_label_times(2.0, 3.0, open_seconds=-5.0, idle_cap=60.0) == (1.0, 1.0)
