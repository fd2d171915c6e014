"""Imported harness logs on a stored dataset: the numbers of ``qaeval report``'s harness section.

Why here and not in :mod:`qaeval_core.analysis.harness_report`: the calibrated judge's
verdicts (:func:`~qaeval_core.workflows.triage.estimation_frame`) and the final labels
(:func:`~qaeval_core.workflows.triage.final_labels`) join the store and a saved judge, which
only ``workflows/`` does (docs/architecture.md, the floors). This module reads them;
:func:`~qaeval_core.analysis.harness_report.harness_numbers` computes the section from the
frames, below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.frames import load_frames
from qaeval_core.analysis.harness_report import (
    DECIDED,
    HARNESS_ITEM_COLUMNS,
    JUDGE,
    harness_numbers,
)
from qaeval_core.workflows.triage import estimation_frame, final_labels

__all__ = ["harness_results"]


def harness_results(
    db: store.Store,
    dataset: str,
    *,
    calibration: str | None = None,
    metrics: Sequence[str] | None = None,
    config_hashes: Sequence[str] | None = None,
    confidence: float = 0.95,
    min_labels: int = 10,
) -> dict[str, Any] | None:
    """The harness section's numbers of a stored dataset
    (:func:`~qaeval_core.analysis.harness_report.harness_numbers`), or None when no item came
    from a harness log."""
    items = _harness_items(db, dataset)
    if items.empty:
        return None
    preds = _predictions(db, dataset, calibration, metrics, config_hashes)
    return harness_numbers(
        items, preds, calibration=calibration, confidence=confidence, min_labels=min_labels
    )


def _harness_items(db: store.Store, dataset: str) -> pd.DataFrame:
    """One row per imported harness item: ``item_id``, model, task, variant, scores."""
    items = store.list_items(db, dataset)
    rows = []
    for rec in items.to_dict("records"):
        meta = rec.get("meta") or {}
        if not isinstance(meta, dict) or not meta.get("harness"):
            continue
        rows.append(
            {
                "item_id": int(rec["item_id"]),
                "model": rec.get("qa_model") or "(unknown)",
                "task": str(meta.get("task") or ""),
                "variant": str(meta.get("variant") or ""),
                "harness": str(meta["harness"]),
                "scores": meta.get("harness_scores") or {},
            }
        )
    return pd.DataFrame(rows, columns=HARNESS_ITEM_COLUMNS)


def _predictions(
    db: store.Store,
    dataset: str,
    calibration: str | None,
    metrics: Sequence[str] | None,
    config_hashes: Sequence[str] | None,
) -> pd.DataFrame:
    """Per item: each judge's prediction in [0, 1] (a metric's decision, the calibrated
    judge's probability), the human verdict ``gold_label`` (0/1/2) and ``label_sample``."""
    scores = load_frames(db, dataset, metrics=metrics, config_hashes=config_hashes).scores
    scores = scores[scores["decision"].notna()]
    wide = scores.pivot_table(
        index="item_id", columns="metric_id", values="decision", aggfunc="first"
    ).astype(float)
    human = final_labels(db, dataset)
    human = human[human["source"].isin(["adjudication", "annotators"])]
    out = wide.join(
        human.set_index("item_id")[["final_label", "label_sample"]].rename(
            columns={"final_label": "gold_label"}
        ),
        how="outer",
    )
    if calibration is not None:
        judged = estimation_frame(db, dataset, calibration).set_index("item_id")
        out = out.join(judged["judge_probability"].rename(JUDGE), how="outer")
        out = out.join(judged["judge_correct"].astype(float).rename(DECIDED), how="outer")
    out.index = out.index.astype(int)
    return out
