"""What the calibration page shows about a fitted judge, computed without Streamlit.

Why a module of its own: :class:`~qaeval_core.calibrate.fit.CalibrationReport` gives a CI for
the accuracy only, and the page also shows balanced accuracy and F1 with CIs, for the calibrated
candidates (their out-of-fold predictions) and for the uncalibrated metrics at their shipped
thresholds on the same labels, plus learning curves (quality on the unseen rest against the
number of labels used). All of it is recomputed from the report and the labelled data
(:func:`qaeval_core.workflows.labelled_data` reads it from the store), with the same question
grouping as the fit, so every interval resamples whole questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from qaeval_core.calibrate.fit import CANDIDATES, CalibrationReport
from qaeval_core.calibrate.inputs import FEATURE_ONLY
from qaeval_core.calibrate.protocol import bootstrap_ci, held_out_split, learning_curve, quality
from qaeval_core.calibrate.select import single_blas_thread

__all__ = [
    "MEASURES",
    "LabelledData",
    "default_sizes",
    "learning_curves",
    "quality_table",
]

#: Quality measures shown with CIs (accuracy first: it is what the judge is selected on).
MEASURES: tuple[str, ...] = ("accuracy", "balanced_accuracy", "f1")


class HasReport(Protocol):
    """Anything carrying a calibration report (a stored dataset's calibration result)."""

    report: CalibrationReport


@dataclass(frozen=True)
class LabelledData:
    """The labelled items a calibration used, in its order: verdicts, groups, stored scores."""

    item_ids: list[int]
    y: np.ndarray
    groups: np.ndarray
    scores: pd.DataFrame
    decisions: pd.DataFrame


def _ci_rows(
    name: str, kind: str, y: np.ndarray, pred: np.ndarray, groups: np.ndarray, n_boot: int
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for measure in MEASURES:
        est, lo, hi = bootstrap_ci(y, pred, measure, n_boot=n_boot, seed=0, groups=groups)  # type: ignore[arg-type]
        rows.append(
            {"judge": name, "kind": kind, "measure": measure, "estimate": est, "lo": lo, "hi": hi}
        )
    return rows


def quality_table(result: HasReport, data: LabelledData, *, n_boot: int = 1000) -> pd.DataFrame:
    """Long table: per judge (each calibrated candidate, out of fold; each uncalibrated metric at
    its own threshold) and measure, the estimate and its 95% bootstrap CI over questions.

    ``kind`` is ``"calibrated (winner)"``, ``"calibrated"`` or ``"uncalibrated"``.
    """
    rows: list[dict[str, object]] = []
    report = result.report
    for name, proba in report.oof_proba.items():
        kind = "calibrated (winner)" if name == report.winner else "calibrated"
        rows += _ci_rows(name, kind, data.y, np.asarray(proba) >= 0.5, data.groups, n_boot)
    for col in data.decisions.columns:
        if col in FEATURE_ONLY:
            continue
        pred = data.decisions[col].to_numpy(dtype=bool)
        rows += _ci_rows(col, "uncalibrated", data.y, pred, data.groups, n_boot)
    return pd.DataFrame(rows)


def default_sizes(n_labelled: int, *, steps: int = 5, minimum: int = 20) -> list[int]:
    """Label counts for a learning curve: ``steps`` evenly spaced sizes that leave at least a
    fifth of the labels to test on (empty when there are too few labels)."""
    top = int(n_labelled * 0.8)
    if top < minimum:
        return []
    return sorted({int(round(x)) for x in np.linspace(minimum, top, steps)})


@single_blas_thread
def learning_curves(
    data: LabelledData,
    *,
    candidates: Sequence[str] = ("stacker", "threshold"),
    sizes: Sequence[int] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    n_boot: int = 300,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Accuracy on the unseen rest against the number of labels used, averaged over ``seeds``.

    ``columns``: the score columns the calibrated candidates read (a cost-aware fit's chosen
    inputs, so the curves are those of the judge that was fitted; default: every column).

    Each (size, seed) split is :func:`~qaeval_core.calibrate.protocol.held_out_split` by whole
    questions; the calibrated candidates are fitted on the labelled part; the best uncalibrated
    metric (by accuracy on all these labels) is measured on the same test rows, so the curves
    compare like with like. Columns: ``judge``, ``size``, ``accuracy``, ``lo``, ``hi`` (the
    per-seed bootstrap CIs averaged), ``n_test``. Text-reading candidates (panda) are skipped.
    """
    sizes = list(sizes) if sizes is not None else default_sizes(len(data.y))
    if not sizes:
        return pd.DataFrame(columns=["judge", "size", "accuracy", "lo", "hi", "n_test"])
    usable = [c for c in candidates if not getattr(CANDIDATES[c](), "needs_text", False)]
    scores = data.scores if columns is None else data.scores[list(columns)]
    curve = learning_curve(
        {c: CANDIDATES[c] for c in usable},
        scores,
        data.y,
        sizes,
        seeds=seeds,
        groups=data.groups,
        n_boot=n_boot,
    ).rename(columns={"estimator": "judge"})
    votes = [c for c in data.decisions.columns if c not in FEATURE_ONLY]
    if votes:
        acc = {
            c: quality(data.y, data.decisions[c].to_numpy(dtype=bool))["accuracy"] for c in votes
        }
        best = max(votes, key=lambda c: acc[c])
        pred = data.decisions[best].to_numpy(dtype=bool)
        rows = []
        for size in sizes:
            for seed in seeds:
                _, test = held_out_split(len(data.y), int(size), groups=data.groups, seed=seed)
                est, lo, hi = bootstrap_ci(
                    data.y[test],
                    pred[test],
                    "accuracy",
                    n_boot=n_boot,
                    seed=seed,
                    groups=data.groups[test],
                )
                rows.append(
                    {
                        "judge": f"{best} (uncalibrated)",
                        "size": int(size),
                        "seed": seed,
                        "accuracy": est,
                        "accuracy_lo": lo,
                        "accuracy_hi": hi,
                        "n_test": len(test),
                    }
                )
        curve = pd.concat([curve, pd.DataFrame(rows)], ignore_index=True)
    return (
        curve.groupby(["judge", "size"], as_index=False, sort=False)
        .agg(
            accuracy=("accuracy", "mean"),
            lo=("accuracy_lo", "mean"),
            hi=("accuracy_hi", "mean"),
            n_test=("n_test", "mean"),
        )
        .sort_values(["judge", "size"])
        .reset_index(drop=True)
    )
