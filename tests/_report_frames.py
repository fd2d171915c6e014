"""Frames for the report tests: judge and human labels for two QA models, with a hostile
model name (a script tag) that the report must show as text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

EVIL = "<script>alert('x')</script>"


def report_frames() -> dict[str, pd.DataFrame]:
    """Items, human labels and judge scores for 40 items of two QA models (seeded)."""
    rng = np.random.default_rng(0)
    n = 40
    truth = rng.choice([0, 2], size=n)
    items = pd.DataFrame(
        {
            "item_id": range(n),
            "dataset": ["nq"] * (n - 2) + ["other"] * 2,
            "qa_model": [f"{EVIL} | m1" if i % 3 == 0 else "m2" for i in range(n)],
            "question": [f"question {i} {EVIL}" for i in range(n)],
            "candidate": [f"answer {i} <img src=x onerror=alert(1)>" for i in range(n)],
            "references": [["ref", EVIL] for _ in range(n)],
        }
    )
    labels = pd.DataFrame(
        [
            {"item_id": i, "rater": rater, "value": int(v if rng.random() < 0.8 else 2 - v)}
            for i, v in enumerate(truth)
            for rater in ("ann1", EVIL)
        ]
    )
    adjudications = pd.DataFrame({"item_id": [0], "value": [2]})
    value = np.clip(truth / 2 + rng.normal(0, 0.3, n), 0, 1)
    scores = pd.concat(
        [
            pd.DataFrame({"item_id": range(n), "metric_id": "noisy", "value": value}),
            pd.DataFrame(
                {"item_id": range(n), "metric_id": EVIL, "value": rng.random(n), "details": EVIL}
            ),
        ]
    )
    return {"items": items, "labels": labels, "adjudications": adjudications, "scores": scores}
