"""Active selection: which items to label next, and how many labels are still needed.

Why: a calibrated judge learns most from items the automatic metrics cannot agree on. Where
every metric says "correct" with a score far above its threshold, a human label mostly confirms
what the metrics already know; where half of them say "correct" (or all sit next to their
thresholds), the label decides something. Serving those items first makes the first few hundred
labels count more for :mod:`qaeval_core.calibrate`.

* :func:`disagreement_order` ranks items by metric disagreement: the entropy of the metrics'
  binary votes (0 when unanimous, 1 bit when split half and half) plus ``margin_weight`` times
  the mean closeness of the scores to their thresholds (1 on the threshold, 0 at
  ``margin_scale`` or further away). The entropy dominates; closeness orders the unanimous items.
* :func:`qaeval_core.workflows.reorder_queue` puts annotators' queues in this order (it joins
  the store; this module is pure pandas/numpy).
* :func:`labels_needed_for_ci` answers "how many more labels for a CI of width w?" for an
  accuracy (a proportion): the Wilson score interval by default (well-behaved near 0 and 1),
  or the normal (Wald) approximation ``n = 4 z^2 p (1 - p) / w^2``.
* :func:`design_effect_from_width` says how much more labels correlated rows need: the square of
  how much wider a measured (grouped bootstrap) interval is than the binomial one.

Example
-------
>>> import pandas as pd
>>> long = pd.DataFrame({"item_id": [1, 1, 2, 2], "metric_id": ["em", "f1"] * 2,
...                      "value": [0.0, 0.9, 1.0, 1.0], "decision": [False, True, True, True]})
>>> disagreement_order(long)["item_id"].tolist()
[1, 2]
>>> labels_needed_for_ci(0.8, 100, 0.1, method="normal")
146
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from qaeval_core.stats import normal_quantile, wilson_width

__all__ = [
    "STRATEGIES",
    "Strategy",
    "ci_width",
    "design_effect_from_width",
    "disagreement_order",
    "implied_thresholds",
    "labels_needed_for_ci",
]

Strategy = Literal["metric_disagreement"]
STRATEGIES: tuple[str, ...] = ("metric_disagreement",)
CIMethod = Literal["wilson", "normal"]


# -- ranking ---------------------------------------------------------------------------------


def implied_thresholds(scores: pd.DataFrame, decisions: pd.DataFrame) -> dict[str, float]:
    """Per metric, the threshold its stored decisions imply: midway between the highest score
    decided "incorrect" and the lowest decided "correct".

    Why: stored scores carry the decision made at scoring time but not the threshold, which
    depends on the metric's configuration. Metrics whose decisions are all one way, or are not
    a cut on the score (the two ranges overlap), get no threshold and no margin term.
    """
    out: dict[str, float] = {}
    for col in scores.columns:
        if col not in decisions.columns:
            continue
        s = scores[col].to_numpy(dtype=float)
        d = decisions[col].to_numpy(dtype=object)
        ok = np.isfinite(s) & pd.notna(d)
        yes = s[ok & (d == True)]  # noqa: E712  (object array of bools)
        no = s[ok & (d == False)]  # noqa: E712
        if len(yes) and len(no) and no.max() <= yes.min():
            out[str(col)] = float((no.max() + yes.min()) / 2)
    return out


def _wide(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    return frame.pivot_table(index="item_id", columns="metric_id", values=column, aggfunc="last")


def disagreement_order(
    scores: pd.DataFrame,
    decisions: pd.DataFrame | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
    metrics: Sequence[str] | None = None,
    margin_weight: float = 0.5,
    margin_scale: float = 0.5,
) -> pd.DataFrame:
    """Items ranked by how much the metrics disagree on them, most informative first.

    ``scores`` is either long (columns ``item_id``, ``metric_id``, ``value`` and optionally
    ``decision``, as :func:`qaeval_core.store.scores` returns) or wide (index = item id,
    one column per metric). Decisions come from the ``decision`` column or ``decisions`` (wide,
    same shape); otherwise from ``thresholds`` (default 0.5 for every metric). Thresholds for the
    margin term default to the ones the decisions imply (:func:`implied_thresholds`).

    Returns one row per item: ``item_id``, ``disagreement``, ``vote_entropy`` (bits),
    ``closeness`` (mean, 0-1), ``n_metrics``, ``votes_correct``; sorted by disagreement
    (descending), ties by item id. ``metrics`` restricts which metric columns vote.
    """
    if margin_weight < 0 or margin_scale <= 0:
        raise ValueError(
            f"margin_weight must be >= 0 and margin_scale > 0, got {margin_weight}, {margin_scale}."
        )
    if {"item_id", "metric_id", "value"} <= set(scores.columns):
        wide_scores = _wide(scores, "value")
        if decisions is None and "decision" in scores.columns:
            decisions = _wide(scores.assign(decision=scores["decision"].astype(object)), "decision")
    else:
        wide_scores = scores.copy()
    wide_scores = wide_scores.astype(float)
    if metrics is not None:
        missing = sorted(set(metrics) - set(map(str, wide_scores.columns)))
        if missing:
            raise ValueError(
                f"No scores for metric(s) {missing}; scored: {sorted(map(str, wide_scores))}."
            )
        wide_scores = wide_scores[list(metrics)]
    cuts = dict(thresholds or {})
    if decisions is None:
        votes = pd.DataFrame(
            {
                c: np.where(wide_scores[c].notna(), wide_scores[c] >= cuts.get(str(c), 0.5), np.nan)
                for c in wide_scores.columns
            },
            index=wide_scores.index,
        )
    else:
        votes = decisions.reindex(index=wide_scores.index, columns=wide_scores.columns)
        cuts = {**implied_thresholds(wide_scores, votes), **cuts}
    v = votes.to_numpy(dtype=float)  # 1 / 0 / NaN
    n = np.sum(np.isfinite(v), axis=1)
    k = np.nansum(v, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, k / np.maximum(n, 1), 0.0)
        ent = -(p * np.log2(np.where(p > 0, p, 1)) + (1 - p) * np.log2(np.where(p < 1, 1 - p, 1)))
    close = np.full(wide_scores.shape, np.nan)
    for j, col in enumerate(wide_scores.columns):
        if str(col) in cuts:
            dist = np.abs(wide_scores[col].to_numpy(dtype=float) - cuts[str(col)])
            close[:, j] = np.clip(1 - dist / margin_scale, 0, 1)
    has_close = np.isfinite(close).any(axis=1)
    closeness = np.zeros(len(close))
    if has_close.any():
        closeness[has_close] = np.nanmean(close[has_close], axis=1)
    out = pd.DataFrame(
        {
            "item_id": wide_scores.index.to_numpy(),
            "disagreement": ent + margin_weight * closeness,
            "vote_entropy": ent,
            "closeness": closeness,
            "n_metrics": n.astype(int),
            "votes_correct": k.astype(int),
        }
    )
    return out.sort_values(["disagreement", "item_id"], ascending=[False, True]).reset_index(
        drop=True
    )


# -- how many labels ---------------------------------------------------------------------------


def ci_width(p: float, n: float, confidence: float = 0.95, *, method: CIMethod = "wilson") -> float:
    """Width of the ``confidence`` interval of a proportion ``p`` estimated from ``n`` labels."""
    if n <= 0:
        return 1.0
    if method == "normal":
        return 2 * normal_quantile(confidence) * math.sqrt(p * (1 - p) / n)
    if method == "wilson":
        return wilson_width(p, n, confidence)
    raise ValueError(f"Unknown method {method!r}; choose 'wilson' or 'normal'.")


def design_effect_from_width(
    p: float, n: int, measured_width: float, confidence: float = 0.95
) -> float:
    """The design effect a measured interval shows: ``(measured_width / ci_width(p, n)) ** 2``,
    at least 1; 1 when nothing was measured (no width or no labels).

    Why: answers to one question are correlated (several QA models answer it alike, and people
    judge them alike), so ``n`` such labels carry less than ``n`` independent ones. The
    calibration's bootstrap resamples whole questions, so its interval is as wide as the labels
    really allow, while the Wilson interval of ``n`` labels assumes independence. A width falls
    with the square root of n, so an interval ``r`` times wider needs ``r ** 2`` times the
    labels: that is the factor :func:`labels_needed_for_ci` takes as ``design_effect``. Never
    below 1: a bootstrap interval narrower than the binomial one is resampling noise, not
    evidence that more labels are worth less. ``measured_width`` is an interval at
    ``confidence`` (the calibration report's are 95%), compared with the Wilson width at the
    same confidence.

    >>> design_effect_from_width(0.8, 100, 0.0)
    1.0
    >>> round(design_effect_from_width(0.8, 100, 2 * ci_width(0.8, 100)), 6)
    4.0
    >>> design_effect_from_width(0.8, 100, 0.5 * ci_width(0.8, 100))
    1.0
    """
    if not measured_width or measured_width <= 0 or n <= 0:
        return 1.0
    base = ci_width(p, n, confidence)
    return max(1.0, (float(measured_width) / base) ** 2) if base else 1.0


def labels_needed_for_ci(
    current_accuracy_estimate: float,
    n_labelled: int,
    target_ci_width: float,
    confidence: float = 0.95,
    *,
    method: CIMethod = "wilson",
    design_effect: float = 1.0,
) -> int:
    """How many more labels are likely needed for an accuracy CI of ``target_ci_width``.

    The accuracy is treated as a binomial proportion that stays at the current estimate; the
    total n is the smallest one whose interval (Wilson score by default; ``"normal"``: Wald,
    ``n = ceil(4 z^2 p (1 - p) / w^2)``) is no wider than the target, and the answer is that
    minus ``n_labelled`` (0 when already reached). ``design_effect`` (>= 1) inflates n for
    correlated rows, e.g. several answers to one question, which the grouped bootstrap CIs of
    the calibration report reflect: pass :func:`design_effect_from_width`. An
    estimate of a future quantity, not a guarantee: the accuracy itself moves as labels come.
    """
    p = float(current_accuracy_estimate)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"current_accuracy_estimate must be in [0, 1], got {p}.")
    if not 0.0 < target_ci_width <= 1.0:
        raise ValueError(f"target_ci_width must be in (0, 1], got {target_ci_width}.")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    if n_labelled < 0 or design_effect <= 0:
        raise ValueError(
            f"n_labelled must be >= 0 and design_effect > 0, got {n_labelled}, {design_effect}."
        )
    if method == "normal":
        z = normal_quantile(confidence)
        total = math.ceil(4 * z * z * p * (1 - p) / target_ci_width**2 - 1e-9)
    else:
        lo, hi = 1, 1
        while ci_width(p, hi, confidence, method=method) > target_ci_width:
            lo, hi = hi, hi * 2
        while lo < hi:  # smallest n with width <= target (the width falls as n grows)
            mid = (lo + hi) // 2
            if ci_width(p, mid, confidence, method=method) <= target_ci_width:
                hi = mid
            else:
                lo = mid + 1
        total = hi
    total = math.ceil(total * design_effect - 1e-9)
    return max(0, total - int(n_labelled))
