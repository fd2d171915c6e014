"""Fit a decision threshold on one metric's score against human labels.

A metric's shipped threshold (0.5 for most, 0.67 for SMILE) was chosen on someone else's data;
on a new dataset the best cut can sit elsewhere (long chatty candidates push token precision down,
for example). :class:`ThresholdClassifier` picks the cut that maximises accuracy, balanced
accuracy or F1 of "correct" on the labels it is given.

Why the middle of the best plateau: many thresholds between two neighbouring scores give the
same training objective. Taking the midpoint of the widest optimal interval (maximum margin)
rather than its edge keeps the cut away from the labelled points and generalises better with a
few hundred labels; it also makes the result independent of how ties are broken.

``predict_proba`` is a one-parameter Platt scaling centred on the threshold,
``p = sigmoid(slope * (score - threshold))``, so that ``p >= 0.5`` exactly when the score clears
the threshold: the judge's 0-1 score and its decision can never disagree.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Literal, get_args

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge.combiners.base import (
    CalibratedClassifier,
    as_binary,
    as_score_matrix,
    register_model,
    req,
    req_float,
    sigmoid,
)

__all__ = ["Objective", "OBJECTIVES", "ThresholdClassifier", "objective_curve", "best_threshold"]

Objective = Literal["accuracy", "balanced_accuracy", "f1"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)

#: Slope used when the labels hold one class only (Platt scaling is undefined there).
_DEFAULT_SLOPE = 10.0
_MIN_SLOPE = 1e-3


def _check_objective(objective: str) -> None:
    if objective not in OBJECTIVES:
        raise InputError(f"objective={objective!r} is not valid; choose one of {OBJECTIVES}.")


def objective_curve(
    scores: np.ndarray, y: np.ndarray, objective: Objective = "accuracy"
) -> tuple[np.ndarray, np.ndarray]:
    """The objective at every distinct cut ``score >= t``.

    Returns ``(candidates, values)``: the sorted unique scores followed by ``+inf`` (reject
    everything), and the objective reached by each. Vectorised: one sort, cumulative counts.
    """
    _check_objective(objective)
    s = np.asarray(scores, dtype=float)
    yb = as_binary(y)
    uniq, inv = np.unique(s, return_inverse=True)
    pos_per = np.bincount(inv, weights=yb.astype(float), minlength=len(uniq))
    neg_per = np.bincount(inv, weights=(~yb).astype(float), minlength=len(uniq))
    # Accepted at cut u_k: every unique value >= u_k (reverse cumulative sum); +inf accepts none.
    tp = np.append(np.cumsum(pos_per[::-1])[::-1], 0.0)
    fp = np.append(np.cumsum(neg_per[::-1])[::-1], 0.0)
    n_pos, n_neg = float(yb.sum()), float((~yb).sum())
    fn = n_pos - tp
    tn = n_neg - fp
    if objective == "accuracy":
        values = (tp + tn) / len(yb)
    elif objective == "balanced_accuracy":
        parts = []
        if n_pos:
            parts.append(tp / n_pos)
        if n_neg:
            parts.append(tn / n_neg)
        values = np.mean(parts, axis=0)
    else:
        denom = 2 * tp + fp + fn
        values = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return np.append(uniq, np.inf), values


def best_threshold(
    scores: np.ndarray, y: np.ndarray, objective: Objective = "accuracy"
) -> tuple[float, float]:
    """The maximum-margin optimal threshold and the objective it reaches on (scores, y)."""
    cands, values = objective_curve(scores, y, objective)
    uniq = cands[:-1]
    k_last = len(cands) - 1  # index of +inf
    best = float(values.max())
    on = values >= best - 1e-12
    # Contiguous runs of optimal candidates.
    runs: list[tuple[int, int]] = []
    start = None
    for k, flag in enumerate(on):
        if flag and start is None:
            start = k
        if not flag and start is not None:
            runs.append((start, k - 1))
            start = None
    if start is not None:
        runs.append((start, k_last))

    def interval(a: int, b: int) -> tuple[float, float]:
        # Predictions equal those of candidates a..b for any t in (u[a-1], u[b]]; clamp the
        # unbounded ends to the observed score range.
        lo = uniq[a - 1] if a > 0 else uniq[0]
        hi = uniq[b] if b < k_last else uniq[-1]
        return float(lo), float(hi)

    a, b = max(runs, key=lambda r: interval(*r)[1] - interval(*r)[0])
    lo, hi = interval(a, b)
    if a == k_last:  # only "reject everything" is optimal
        t = float(np.nextafter(uniq[-1], np.inf))
    elif a == 0 and b == 0:  # only "accept everything" is optimal
        t = float(uniq[0])
    else:
        t = (lo + hi) / 2.0
        if a > 0 and t <= lo:  # neighbouring floats: stay strictly above u[a-1]
            t = float(np.nextafter(lo, np.inf))
    return t, best


@register_model
class ThresholdClassifier(CalibratedClassifier):
    """A cut on one metric's score, fitted to human labels.

    Parameters
    ----------
    objective:
        What the cut maximises on the labels: ``"accuracy"``, ``"balanced_accuracy"`` (use when
        one class is rare) or ``"f1"`` (F1 of "correct").
    column:
        Which column of a multi-column X holds the metric (name for a DataFrame, else index).
        ``None`` means X has exactly one column; ``"best"`` picks, at fit time, the column whose
        fitted threshold reaches the best training objective (ties: the first column), and
        records it in ``column_``.
    C:
        Inverse L2 strength of the Platt slope behind ``predict_proba`` (the threshold itself is
        unaffected).

    Examples
    --------
    >>> import numpy as np
    >>> clf = ThresholdClassifier().fit(np.array([0.1, 0.2, 0.6, 0.9]), [0, 0, 1, 1])
    >>> clf.threshold_
    0.4
    >>> clf.predict(np.array([0.3, 0.5])).tolist()
    [False, True]
    """

    type_name = "threshold"

    def __init__(
        self,
        *,
        objective: Objective = "accuracy",
        column: int | str | None = None,
        C: float = 1.0,
    ) -> None:
        self.objective = objective
        self.column = column
        self.C = C

    # -- fitting -----------------------------------------------------------------------------
    def _column_scores(self, X: Any, *, fitting: bool) -> np.ndarray:
        if fitting:
            arr, names = as_score_matrix(X)
        else:
            arr, names = as_score_matrix(X, getattr(self, "feature_names_in_", None))
        column = getattr(self, "column_", self.column)
        if column is None:
            if arr.shape[1] != 1:
                raise InputError(
                    f"X has {arr.shape[1]} columns; pass column=<name or index> to say which "
                    "metric to threshold."
                )
            return arr[:, 0]
        if isinstance(column, str):
            if names is None:
                raise InputError(
                    f"column={column!r} is a name but X has no column names; pass a "
                    "DataFrame or an integer column."
                )
            if column not in names:
                raise InputError(f"column {column!r} not in X columns {names}; name one of them.")
            return arr[:, names.index(column)]
        if not 0 <= int(column) < arr.shape[1]:
            raise InputError(
                f"column={column} is out of range for {arr.shape[1]} columns; use 0 to "
                f"{arr.shape[1] - 1}."
            )
        return arr[:, int(column)]

    def fit(self, X: Any, y: Any) -> ThresholdClassifier:
        """Choose the threshold on (scores, labels); returns self."""
        _check_objective(self.objective)
        if not self.C > 0:
            raise InputError(f"C must be > 0 (e.g. 1.0), got {self.C}.")
        arr, names = as_score_matrix(X)
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = arr.shape[1]
        yb = as_binary(y)
        if len(yb) != len(arr):
            raise InputError(f"X has {len(arr)} rows but y has {len(yb)} labels; give one per row.")
        if self.column == "best":
            fits = [best_threshold(arr[:, j], yb, self.objective) for j in range(arr.shape[1])]
            j = int(np.argmax([value for _, value in fits]))
            self.column_ = names[j] if names is not None else j
        else:
            self.column_ = self.column
        s = self._column_scores(X, fitting=True)
        self.threshold_, self.train_objective_ = best_threshold(s, yb, self.objective)
        self.slope_ = _fit_slope(s - self.threshold_, yb, self.C)
        self.classes_ = np.array([False, True])
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """Signed distance of the score from the threshold (positive = correct)."""
        check_is_fitted(self, "threshold_")
        return self._column_scores(X, fitting=False) - self.threshold_

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "threshold_")
        return self._column_scores(X, fitting=False) >= self.threshold_

    def predict_proba(self, X: Any) -> np.ndarray:
        """Platt-scaled probability of "correct", >= 0.5 exactly at or above the threshold."""
        d = self.decision_function(X)
        p = sigmoid(self.slope_ * d)
        # Guarantee the decision rule at the boundary despite rounding.
        p = np.where(d >= 0, np.maximum(p, 0.5), np.minimum(p, np.nextafter(0.5, 0)))
        return np.column_stack([1 - p, p])

    # -- serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        check_is_fitted(self, "threshold_")
        names = getattr(self, "feature_names_in_", None)
        return {
            "type": self.type_name,
            "objective": self.objective,
            "column": self.column_,
            "columns": None if names is None else [str(n) for n in names],
            "C": float(self.C),
            "threshold": float(self.threshold_),
            "slope": float(self.slope_),
            "train_objective": float(self.train_objective_),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdClassifier:
        where = "model(threshold)"
        objective = req(data, "objective", str, where)
        if objective not in OBJECTIVES:
            raise ConfigError(f"{where}.objective {objective!r} is not one of {OBJECTIVES}.")
        column = data.get("column")
        bad_type = isinstance(column, bool) or not isinstance(column, (int, str))
        if column == "best" or (column is not None and bad_type):
            raise ConfigError(f"{where}.column must be a column name, an index or null.")
        columns = data.get("columns")
        if columns is not None and (
            not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)
        ):
            raise ConfigError(f"{where}.columns must be a list of names or null.")
        C = req_float(data, "C", where)
        if C <= 0:
            raise ConfigError(f"{where}.C must be > 0, got {C:g}.")
        obj = cls(objective=objective, column=column, C=C)
        obj.column_ = column
        obj.threshold_ = req_float(data, "threshold", where)
        obj.slope_ = req_float(data, "slope", where)
        if obj.slope_ <= 0:
            raise ConfigError(f"{where}.slope must be > 0, got {obj.slope_}.")
        obj.train_objective_ = req_float(data, "train_objective", where)
        obj.classes_ = np.array([False, True])
        if columns is not None:
            obj.feature_names_in_ = np.asarray(columns, dtype=object)
            obj.n_features_in_ = len(columns)
        return obj


def _fit_slope(d: np.ndarray, y: np.ndarray, C: float) -> float:
    """Slope of ``sigmoid(a * d)`` by L2-regularised logistic regression without intercept."""
    if y.all() or not y.any() or np.ptp(d) == 0:
        return _DEFAULT_SLOPE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(fit_intercept=False, C=C, max_iter=1000)
        lr.fit(d[:, None], y.astype(int))
    return float(max(lr.coef_[0, 0], _MIN_SLOPE))
