"""Accuracy from labels chosen with known, unequal probabilities (active statistical inference).

Why this exists: labels a team asks for because the judge doubted the items are not a uniform
sample, so :mod:`.estimates` used to leave them out and a team paid twice (triage labels, then
a separate random audit). When each item was drawn with a known probability ``p_i``
(:mod:`.selection_design`), every such label counts with weight ``1 / p_i``: inverse-probability-
weighted prediction-powered inference (Zrnic and Candes, "Active Statistical Inference", ICML
2024). With ``w_i = 1 / p_i``, ``r_i = y_i - lam * f_i`` (label minus the tuned judge
prediction) and ``f`` the judge's predictions on every item of the model::

    estimate = mean(lam * f) + sum_lab(w * r) / sum_lab(w)

The correction is the self-normalised (Hajek) weighted mean of the rectifier rather than the
Horvitz-Thompson ``sum(w * r) / N``: with Poisson sampling the number of labels is random, and
Horvitz-Thompson pays for that randomness (1.8 times the standard error of a uniform sample
with an uninformative judge at 10% labelled and 70% accuracy); the ratio does not.

Standard error: ``lam**2 * var(f) / N`` plus ``mean(v**2) / n`` with ``v_i = w~_i (r_i -
rbar_w)`` (``w~`` the weights over their mean, ``rbar_w`` the weighted mean): the linearised
variance of the weighted mean. ``ppi_py``'s weighted ``ppi_mean_ci(..., w=...)`` is not used
here: it takes ``w`` as fixed density ratios and uses ``std(w * r)``, which for weights that
vary counts ``rbar**2 * var(w)`` of spread that the ratio estimator does not have (with an
uninformative judge its interval was wider than a uniform sample's). Power tuning: ``lam``
minimises that standard error in closed form (the PPI++ rule with weights), clipped to [0, 1],
so a useless judge gets ``lam`` near 0 and the interval of the weighted labels alone.

Intervals are Wilson intervals at the design-effect sample size ``estimate * (1 - estimate) /
se**2`` (:func:`qaeval_core.stats.design_effect_wilson`; a symmetric interval undercovered
near 0 and 1) with Student's t quantile at ``n_eff - 1`` degrees of freedom,
``n_eff = (sum w)**2 / sum(w**2)`` (Kish's effective sample size), as :mod:`.estimates` uses
``n - 1`` for a uniform sample. **A zero spread is never believed**: when the labels never
vary against the judge the interval is widened to cover the Wilson interval of the weighted
share correct at ``n_eff`` labels, as :mod:`.estimates` does for a uniform sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import InputError
from qaeval_core.stats import (
    design_effect_wilson,
    normal_quantile,
    student_quantile,
    wilson_interval,
)

__all__ = [
    "MIN_SAMPLE_PROBABILITY",
    "WeightedEstimate",
    "cell_number",
    "check_sample_probabilities",
    "read_sample_probabilities",
    "weighted_estimate",
]

#: The smallest sample probability read (issue 31, item 4): a label drawn with probability
#: ``p`` weighs ``1 / p``, so one row at 1e-12 outweighs a million uniform labels and its
#: model's interval collapses onto that one label; below 1e-300 the weight overflows. No design
#: of qaeval draws below this floor (a store audit sample of 30 items out of 30 million is
#: 1e-6), so a smaller value is a typo or a unit slip and is refused with its row.
MIN_SAMPLE_PROBABILITY = 1e-6


@dataclass(frozen=True)
class WeightedEstimate:
    """One inverse-probability-weighted estimate: the point, the interval, its standard error,
    the tuned ``lam`` (0: the weighted labels alone), Kish's effective number of labels and
    whether the interval was widened because the labels' spread was zero."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    lam: float
    n_effective: float
    degenerate: bool


def check_sample_probabilities(values: Any, what: str = "sample_probability") -> np.ndarray:
    """The probabilities as floats, each in [:data:`MIN_SAMPLE_PROBABILITY`, 1] (a label with
    probability 0 could not have been drawn, one below the floor would outweigh every other
    label; NaN: unknown, allowed here and left out by the caller). A refusal names the first
    bad row (1-based, in the order given) and its value as a plain number."""
    p = np.asarray(values, dtype=float)
    known = ~np.isnan(p)
    bad = known & ((p <= 0) | (p > 1) | ~np.isfinite(p))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{what} must be a probability in (0, 1] (the chance the row was chosen for "
            f"labelling; empty if unknown); {int(bad.sum())} row(s) are not, the first row "
            f"{row + 1} with {float(p[row]):g}."
        )
    small = known & (p < MIN_SAMPLE_PROBABILITY)
    if small.any():
        row = int(np.flatnonzero(small)[0])
        with np.errstate(over="ignore", divide="ignore"):
            weight = float(np.float64(1.0) / p[row])
        raise InputError(
            f"{what} below the floor of {MIN_SAMPLE_PROBABILITY:g} on {int(small.sum())} row(s), "
            f"the first row {row + 1} with {float(p[row]):g}: one such label would weigh as "
            f"{weight:.3g} uniform ones and decide its model's estimate "
            "alone; give the probability the row was drawn with, or leave it empty if unknown."
        )
    return p


def read_sample_probabilities(frame: pd.DataFrame, column: str) -> np.ndarray:
    """Per row, the probability it was chosen for labelling; NaN where unknown or no column."""
    if column not in frame.columns:
        return np.full(len(frame), np.nan)
    raw = frame[column].map(lambda v: np.nan if _blank(v) else v)
    values = np.array([cell_number(v) for v in raw], dtype=float)
    unreadable = raw.notna().to_numpy() & np.isnan(values)
    if unreadable.any():
        row = int(np.flatnonzero(unreadable)[0])
        shown = str(raw.iloc[row])
        shown = shown if len(shown) <= 40 else f"{shown[:20]}...({len(shown)} characters)"
        raise InputError(
            f"{column}: row {row + 1} has {shown!r}, not a number; give the probability the "
            "row was chosen for labelling, in (0, 1], or leave it empty if unknown."
        )
    return check_sample_probabilities(values, column)


def cell_number(value: Any) -> float:
    """A cell as a float: NaN when missing or not a number, +-inf when too large for one (a
    400-digit integer is out of range, not a crash)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if str(value).strip()[:1] != "-" else -math.inf
    except (TypeError, ValueError):
        return np.nan


def _blank(value: Any) -> bool:
    """None, NaN, NA or a blank string (an empty CSV cell): no value."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _z(alpha: float) -> float:
    return normal_quantile(1 - alpha)


def _t(alpha: float, df: float) -> float:
    return student_quantile(1 - alpha, df)


def _tuned_lam(y_c: np.ndarray, f_c: np.ndarray, wt: np.ndarray, var_f: float, n_all: int):
    """``lam`` minimising the standard error (module docstring), clipped to [0, 1]."""
    n = len(y_c)
    denom = float(np.mean(wt**2 * f_c**2)) / n + var_f / n_all
    if not denom > 0:
        return 0.0
    return float(np.clip(np.mean(wt**2 * y_c * f_c) / n / denom, 0.0, 1.0))


def weighted_estimate(
    y: Any,
    f_labelled: Any,
    f_all: Any,
    probability: Any,
    alpha: float,
    *,
    lam: float | None = None,
) -> WeightedEstimate:
    """The inverse-probability-weighted PPI estimate of the mean of ``y`` (module docstring).

    ``y``: labels (0/1) of the labelled items; ``f_labelled``: the judge's predictions on them;
    ``f_all``: the judge's predictions on every item the estimate is about (labelled ones
    included); ``probability``: per labelled item, the probability it was drawn. ``lam=None``
    tunes ``lam``; ``lam=0`` gives the weighted labels alone (no judge).
    """
    y = np.asarray(y, dtype=float)
    f_lab = np.asarray(f_labelled, dtype=float)
    f_all = np.asarray(f_all, dtype=float)
    p = check_sample_probabilities(probability)
    if not (len(y) == len(f_lab) == len(p)) or len(y) == 0 or np.isnan(p).any():
        raise InputError(
            "weighted_estimate needs one label, one prediction and one known probability per "
            f"labelled item (got {len(y)}, {len(f_lab)}, {len(p)}; at least one)."
        )
    n, n_all = len(y), max(len(f_all), 1)
    w = 1.0 / p
    wt = w / w.mean()
    n_eff = float(w.sum() ** 2 / (w**2).sum())
    y_c = y - np.average(y, weights=w)
    f_c = f_lab - np.average(f_lab, weights=w)
    var_f = float(np.var(f_all)) if len(f_all) > 1 else 0.0
    if lam is None:
        lam = _tuned_lam(y_c, f_c, wt, var_f, n_all) if np.ptp(f_all) > 0 else 0.0
    r = y - lam * f_lab
    estimate = float(lam * f_all.mean() + np.average(r, weights=w)) if len(f_all) else np.nan
    v = wt * (r - np.average(r, weights=w))
    se = float(np.sqrt(lam**2 * var_f / n_all + np.sum(v**2) / (n * max(n - 1, 1))))
    low, high = design_effect_wilson(estimate, se, _t(alpha, n_eff - 1))
    degenerate = bool(np.ptp(y) == 0 or np.ptp(r) == 0 or not se > 0)
    if degenerate:
        w_low, w_high = wilson_interval(float(np.average(y, weights=w)), n_eff, _z(alpha))
        low, high = min(low, w_low), max(high, w_high)
        se = (high - low) / (2 * _z(alpha))
    return WeightedEstimate(estimate, low, high, se, float(lam), n_eff, degenerate)
