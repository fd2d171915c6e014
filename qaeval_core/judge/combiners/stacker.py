"""A learned stacker: L2 logistic regression on all metric scores.

The alternative to the fusion paper's hand-built layers: let a linear model weigh every metric
against the human labels. Why logistic regression and not something bigger: with 100-300 labels
a linear model with a cross-validated penalty is hard to overfit, its probabilities are usable as
the judge's 0-1 score, and its coefficients are a handful of numbers that can be read and stored
as plain JSON (the config never needs pickle or scikit-learn to be applied).

The penalty ``C`` is chosen by inner cross-validation (log-loss, the smoother criterion on small
sets; ties go to the stronger penalty) on folds that keep a question's answers together. Called
inside :func:`~qaeval_core.calibrate.protocol.cross_val_predict_proba` this is nested CV.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.utils.validation import check_is_fitted

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge.combiners.base import (
    MAX_WEIGHT,
    CalibratedClassifier,
    as_binary,
    as_score_matrix,
    check_number,
    check_range,
    register_model,
    req_float,
    req_floats,
    req_names,
    sigmoid,
    single_blas_thread,
)
from qaeval_core.judge.combiners.folds import assign_folds

__all__ = ["StackerClassifier"]


def _logreg(C: float, class_weight: str | None) -> LogisticRegression:
    return LogisticRegression(C=C, class_weight=class_weight, max_iter=2000)


def _log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


@register_model
class StackerClassifier(CalibratedClassifier):
    """Logistic regression on standardised metric scores with a cross-validated penalty.

    Parameters
    ----------
    Cs:
        Candidate inverse L2 strengths; the one with the best inner-CV log-loss is used.
        A single value skips the inner CV.
    cv:
        Number of inner folds for choosing ``C``.
    class_weight:
        ``None`` (maximise accuracy) or ``"balanced"`` (when one class is rare).
    seed:
        Seed of the inner fold assignment.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(200) < 0.5
    >>> X = np.column_stack([y + rng.normal(0, 0.5, 200), rng.random(200)])
    >>> clf = StackerClassifier().fit(X, y)
    >>> bool(abs(clf.coef_[0]) > abs(clf.coef_[1]))
    True
    """

    type_name = "stacker"

    def __init__(
        self,
        *,
        Cs: Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0),
        cv: int = 5,
        class_weight: str | None = None,
        seed: int = 0,
    ) -> None:
        self.Cs = Cs
        self.cv = cv
        self.class_weight = class_weight
        self.seed = seed

    @single_blas_thread  # many tiny logistic fits: BLAS threads only slow them down
    def fit(self, X: Any, y: Any, groups: Any = None) -> StackerClassifier:
        """Choose C by inner CV (grouped when ``groups`` is given), then fit on all rows."""
        Cs = [float(c) for c in np.atleast_1d(self.Cs)]
        if not Cs or min(Cs) <= 0:
            raise InputError(f"Cs must be positive numbers (e.g. [0.1, 1, 10]), got {self.Cs!r}.")
        if self.class_weight not in (None, "balanced"):
            raise InputError(f"class_weight must be None or 'balanced', got {self.class_weight!r}.")
        arr, names = as_score_matrix(X)
        yb = as_binary(y)
        if len(yb) != len(arr):
            raise InputError(f"X has {len(arr)} rows but y has {len(yb)} labels; give one per row.")
        if yb.all() or not yb.any():
            raise InputError(
                "y holds one class only; a stacker needs correct and incorrect labels."
            )
        self.n_features_in_ = arr.shape[1]
        self.feature_names_in_ = np.asarray(
            names if names is not None else [f"x{i}" for i in range(arr.shape[1])], dtype=object
        )
        self.mean_ = arr.mean(axis=0)
        scale = arr.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        Z = (arr - self.mean_) / self.scale_
        yi = yb.astype(int)

        self.cv_loss_ = {}
        # Few labelled questions: fewer inner folds; under two, fall back to the middle C.
        n_groups = (
            len(set(np.asarray(groups, dtype=object).tolist())) if groups is not None else len(yi)
        )
        n_inner = min(self.cv, n_groups)
        if len(Cs) > 1 and n_inner >= 2:
            folds = assign_folds(len(yi), n_inner, groups=groups, y=yb, seed=self.seed)
            for C in Cs:
                p = np.empty(len(yi))
                for k in range(n_inner):
                    te = folds == k
                    tr = ~te
                    if yi[tr].min() == yi[tr].max():
                        p[te] = yi[tr].mean()
                        continue
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        m = _logreg(C, self.class_weight).fit(Z[tr], yi[tr])
                    p[te] = m.predict_proba(Z[te])[:, 1]
                self.cv_loss_[C] = _log_loss(yi, p)
            best = min(self.cv_loss_.values())
            # Ties (within 1e-4) go to the smallest C: the stronger penalty generalises better.
            self.C_ = min(C for C, v in self.cv_loss_.items() if v <= best + 1e-4)
        else:
            self.C_ = Cs[len(Cs) // 2]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _logreg(self.C_, self.class_weight).fit(Z, yi)
        self.coef_ = model.coef_[0].astype(float)
        self.intercept_ = float(model.intercept_[0])
        self.classes_ = np.array([False, True])
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        names = [str(n) for n in self.feature_names_in_]
        arr, _ = as_score_matrix(X, names if hasattr(X, "columns") else None)
        if arr.shape[1] != self.n_features_in_:
            raise InputError(
                f"X has {arr.shape[1]} columns; the stacker expects {names}: score the items "
                "with exactly these metrics."
            )
        return ((arr - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def predict_proba(self, X: Any) -> np.ndarray:
        p = sigmoid(self.decision_function(X))
        return np.column_stack([1 - p, p])

    @property
    def weights_(self) -> dict[str, float]:
        """Coefficient per metric on the standardised scale (comparable across metrics)."""
        check_is_fitted(self, "coef_")
        return {str(n): float(c) for n, c in zip(self.feature_names_in_, self.coef_, strict=True)}

    def to_dict(self) -> dict[str, Any]:
        check_is_fitted(self, "coef_")
        return {
            "type": self.type_name,
            "columns": [str(n) for n in self.feature_names_in_],
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "coef": self.coef_.tolist(),
            "intercept": float(self.intercept_),
            "C": float(self.C_),
            "class_weight": self.class_weight,
            "cv_log_loss": {repr(float(k)): float(v) for k, v in self.cv_loss_.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StackerClassifier:
        where = "model(stacker)"
        columns = req_names(data, "columns", where)
        n = len(columns)
        class_weight = data.get("class_weight")
        if class_weight not in (None, "balanced"):
            raise ConfigError(f"{where}.class_weight must be null or 'balanced'.")
        C = req_float(data, "C", where)
        obj = cls(Cs=(C,), class_weight=class_weight)
        obj.feature_names_in_ = np.asarray(columns, dtype=object)
        obj.n_features_in_ = n
        obj.mean_ = req_floats(data, "mean", where, length=n)
        obj.scale_ = req_floats(data, "scale", where, length=n)
        if (obj.scale_ <= 0).any():
            raise ConfigError(f"{where}.scale must be positive.")
        obj.coef_ = req_floats(data, "coef", where, length=n)
        if (np.abs(obj.coef_) > MAX_WEIGHT).any():
            raise ConfigError(f"{where}.coef values must be within +-{MAX_WEIGHT:g}.")
        obj.intercept_ = check_range(
            req_float(data, "intercept", where), f"{where}.intercept", -MAX_WEIGHT, MAX_WEIGHT
        )
        if C <= 0:
            raise ConfigError(f"{where}.C must be > 0, got {C:g}.")
        obj.C_ = C
        losses = data.get("cv_log_loss", {})
        if not isinstance(losses, Mapping):
            raise ConfigError(f"{where}.cv_log_loss must be an object.")
        try:
            obj.cv_loss_ = {
                float(k): check_number(v, f"{where}.cv_log_loss[{k!r}]") for k, v in losses.items()
            }
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.cv_log_loss must map C values to numbers.") from None
        obj.classes_ = np.array([False, True])
        return obj
