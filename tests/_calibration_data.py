"""A small labelled dataset to calibrate on, and cost measuring without processes.

Shared by the tests that calibrate (CLI, app pages, checks, reports); they are not about costs,
so costs are measured instantly into a cache of the test's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

FACTS = [
    ("capital of France", "Paris", "Lyon"),
    ("largest planet", "Jupiter", "Saturn"),
    ("author of Hamlet", "William Shakespeare", "Christopher Marlowe"),
    ("year World War 2 ended", "1945", "1939"),
    ("first man on the moon", "Neil Armstrong", "Buzz Aldrin"),
]


def write_labelled_dataset(path: Path, n: int = 160, seed: int = 0, labels: bool = True) -> Path:
    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            q, right, wrong = FACTS[i % len(FACTS)]
            ok = bool(rng.random() < 0.5)
            cand = right if ok else wrong
            if rng.random() < 0.4:
                cand = f"I think the answer is {cand}, if I remember correctly."
            row = {
                "id": f"r{i}",
                "question": f"What is the {q}? (variant {i // 2})",
                "references": [right],
                "candidate": cand,
            }
            if labels:
                row["label"] = int(ok)
            fh.write(json.dumps(row) + "\n")
    return path


def fake_cost_measuring(mp: pytest.MonkeyPatch, folder: Path) -> list[list[str]]:
    """Cost measuring without processes, for tests not about costs: the cost cache lives in
    ``folder`` (never the user's) and the child launcher returns fixed timings (1 ms per row
    and input, 10 ms load) at once. Returns the launches made (each family's columns)."""
    from qaeval_core.calibrate import cost

    launches: list[list[str]] = []

    def launch(specs, items, timeout):  # type: ignore[no-untyped-def]
        launches.append([column for column, _ in specs])
        timings = [
            {"column": column, "load_s": 0.01, "seconds": 0.001 * len(items)} for column, _ in specs
        ]
        return timings, cost.machine_info()

    folder.mkdir(parents=True, exist_ok=True)
    mp.setattr(cost, "_measure_isolated", launch)
    mp.setattr(cost, "cost_cache_path", lambda: folder / cost.COST_CACHE_FILE)
    return launches
