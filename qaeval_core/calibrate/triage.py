"""Fit a judge's calibrated probability and its triage band from out-of-fold predictions.

Calibration already has, for every labelled item, the winning combiner's score from a model
that never saw the item (:func:`~qaeval_core.calibrate.protocol.cross_val_predict_proba`).
From those out-of-fold scores:

* :func:`fit_probability` fits Platt scaling (a 1-D logistic regression on the score's logit)
  -> :class:`~qaeval_core.judge.triage.ProbabilityCalibrator`;
* :func:`effort_curve` asks, for each share of items routed to people (0-50%), what the
  combination is worth: people right on the routed items (the most doubtful ones), the judge's
  verdict on the rest; with a 95% bootstrap CI over questions, next to routing the same share at
  random. This is how a researcher chooses the share;
* :func:`fit_band` turns a share (``--human-share``) or a target accuracy
  (``--target-accuracy``: the smallest share whose combined accuracy reaches it) into a
  :class:`~qaeval_core.judge.triage.TriageBand`.

The curve is measured on the same out-of-fold rows the Platt map is fitted on; with two
parameters fitted on hundreds of rows the optimism this adds is far below the curve's CIs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from qaeval_core.calibrate.options import check_target_accuracy
from qaeval_core.calibrate.protocol import bootstrap_ci
from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary
from qaeval_core.judge.triage import (
    ProbabilityCalibrator,
    TriageBand,
    check_share,
    doubt,
    score_logit,
)

__all__ = ["CURVE_SHARES", "effort_curve", "fit_band", "fit_probability", "routed_order"]

#: Shares of items routed to people on the effort curve (0-99% in steps of 1%; pages show 0-50%).
CURVE_SHARES: tuple[float, ...] = tuple(round(0.01 * k, 2) for k in range(100))


def fit_probability(oof_score: Any, y: Any) -> ProbabilityCalibrator:
    """Platt scaling of out-of-fold combiner scores against binary labels.

    A weak L2 penalty (``C=100``) keeps the fit finite when the scores separate the labels.
    """
    yb = as_binary(y)
    s = np.asarray(oof_score, dtype=float)
    if len(s) != len(yb):
        raise InputError(f"{len(s)} scores for {len(yb)} labels; give one score per label.")
    if yb.all() or not yb.any():
        raise InputError("Calibrating probabilities needs both correct and incorrect labels.")
    lr = LogisticRegression(C=100.0).fit(score_logit(s)[:, None], yb)
    return ProbabilityCalibrator(float(lr.coef_[0, 0]), float(lr.intercept_[0]))


def routed_order(item_doubt: np.ndarray) -> np.ndarray:
    """Positions from most to least doubtful (ties broken by position, so it is stable)."""
    return np.argsort(-np.asarray(item_doubt, dtype=float), kind="stable")


def effort_curve(
    oof_score: Any,
    y: Any,
    calibrator: ProbabilityCalibrator,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    shares: Sequence[float] = CURVE_SHARES,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per share routed: the doubt threshold and the combined / random / confident accuracy.

    Combined: the ``round(share * n)`` most doubtful items count as right (people decide them),
    the judge's out-of-fold verdict counts on the rest. Random: the expected accuracy of routing
    the same share at random, ``share + (1 - share) * judge accuracy``, with the judge's CI
    scaled the same way. Confident: the judge alone on the items it keeps.
    """
    yb = as_binary(y)
    s = np.asarray(oof_score, dtype=float)
    verdict = s >= 0.5
    d = doubt(calibrator.predict(s), verdict)
    order = routed_order(d)
    right = verdict == yb
    n = len(yb)
    judge_acc, judge_lo, judge_hi = bootstrap_ci(
        yb, verdict, "accuracy", n_boot=n_boot, seed=seed, groups=groups
    )
    rows = []
    for share in shares:
        k = int(round(float(share) * n))
        routed = np.zeros(n, dtype=bool)
        routed[order[:k]] = True
        combined = np.where(routed, yb, verdict)
        est, lo, hi = bootstrap_ci(
            yb, combined, "accuracy", n_boot=n_boot, seed=seed, groups=groups
        )
        kept = ~routed
        rows.append(
            {
                "share": float(share),
                "threshold": float(d[order[k - 1]]) if k else float(d.max()) + 1e-9,
                "combined_accuracy": float(est),
                "combined_lo": float(lo),
                "combined_hi": float(hi),
                "random_accuracy": float(share + (1 - share) * judge_acc),
                "random_lo": float(share + (1 - share) * judge_lo),
                "random_hi": float(share + (1 - share) * judge_hi),
                "confident_accuracy": float(right[kept].mean()) if kept.any() else 1.0,
            }
        )
    return pd.DataFrame(rows)


def fit_band(
    curve: pd.DataFrame, *, human_share: float = 0.0, target_accuracy: float | None = None
) -> TriageBand:
    """The band for ``human_share``, or for the smallest share whose combined accuracy reaches
    ``target_accuracy`` (an error naming the best reachable when none does)."""
    if target_accuracy is not None:
        check_target_accuracy(target_accuracy)
        reached = curve[curve["combined_accuracy"] >= float(target_accuracy)]
        if reached.empty:
            best = curve.loc[curve["combined_accuracy"].idxmax()]
            raise InputError(
                f"No share up to {curve['share'].max():.0%} reaches a cross-validated combined "
                f"accuracy of {float(target_accuracy):.3f} (best: {best['combined_accuracy']:.3f} "
                f"at {best['share']:.0%}); lower target_accuracy or label more items.",
                param="target_accuracy",
            )
        human_share = float(reached["share"].min())
    share = check_share(human_share, param="human_share")
    shares = curve["share"].to_numpy()
    row = curve.iloc[int(np.argmin(np.abs(shares - share)))]
    if abs(float(row["share"]) - share) > 0.005:
        raise InputError(
            f"human_share {share} is beyond the effort curve's {shares.max():.0%}; route at "
            "most half of the items (or label them all).",
            param="human_share",
        )
    return TriageBand(
        threshold=float(row["threshold"]),
        share=float(row["share"]),
        cv_accuracy_confident=float(row["confident_accuracy"]),
        cv_accuracy_combined=float(row["combined_accuracy"]),
        curve=curve.to_dict(orient="records"),
    )
