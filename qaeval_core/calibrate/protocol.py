"""Honest evaluation of calibrated judges: no item used for fitting is ever scored.

Three pieces, all explicit so they can be tested and reproduced:

* :func:`assign_folds` returns one fold number per item. Items that share a group (the
  question) always land in the same fold: several QA systems answering the same question give
  near-duplicate rows, and a learned judge (PANDA's tf-idf sees the question text) would
  otherwise be tested on questions it was trained on.
* :func:`cross_val_predict_proba` fits a fresh clone of the estimator per fold and predicts
  only that fold's held-out items; it checks the split before fitting.
* :func:`held_out_split` and :func:`learning_curve` answer "if I label N items, how good is the
  judge on the rest?": fit on N labelled items chosen at random (whole questions at a time),
  measure on everything else.

Quality numbers come with percentile bootstrap confidence intervals (:func:`bootstrap_ci`,
:func:`paired_bootstrap`), resampling whole groups when groups are given so the interval is
not too narrow when rows of one question are correlated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import clone

from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary
from qaeval_core.judge.combiners.folds import assign_folds, group_codes

__all__ = [
    "Fold",
    "QualityName",
    "assign_folds",
    "iter_folds",
    "check_split",
    "take",
    "cross_val_predict_proba",
    "cross_validate",
    "held_out_split",
    "learning_curve",
    "quality",
    "bootstrap_ci",
    "paired_bootstrap",
]

QualityName = Literal["accuracy", "balanced_accuracy", "f1", "precision", "recall"]


# -- folds ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fold:
    """One cross-validation split: positions of the training and the test items."""

    index: int
    train: np.ndarray
    test: np.ndarray


def check_split(
    train: np.ndarray, test: np.ndarray, groups: Sequence[Any] | np.ndarray | None = None
) -> None:
    """Raise if a test item, or a test item's group, is also in training."""
    overlap = np.intersect1d(train, test)
    if len(overlap):
        raise RuntimeError(f"Leak: item positions {overlap[:5].tolist()} are in train and test.")
    if groups is not None:
        g = np.asarray(groups, dtype=object)
        shared = {x for x in g[train] if x is not None} & {x for x in g[test] if x is not None}
        if shared:
            raise RuntimeError(f"Leak: group(s) {sorted(map(str, shared))[:5]} span train/test.")


def iter_folds(
    fold_ids: np.ndarray, *, groups: Sequence[Any] | np.ndarray | None = None
) -> Iterator[Fold]:
    """The splits of a fold assignment, each checked for leaks."""
    fold_ids = np.asarray(fold_ids)
    for k in np.unique(fold_ids):
        test = np.flatnonzero(fold_ids == k)
        train = np.flatnonzero(fold_ids != k)
        check_split(train, test, groups)
        yield Fold(int(k), train, test)


def take(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of an array, a DataFrame or a list (whatever an estimator is fitted on)."""
    if isinstance(X, (pd.DataFrame, pd.Series)):
        return X.iloc[idx]
    if isinstance(X, np.ndarray):
        return X[idx]
    return [X[i] for i in idx]


def _fit(estimator: Any, X: Any, y: np.ndarray, groups: np.ndarray | None) -> Any:
    # Estimators that do inner model selection accept groups so their inner folds also keep
    # questions together (nested cross-validation without leaks).
    import inspect

    if groups is not None and "groups" in inspect.signature(estimator.fit).parameters:
        return estimator.fit(X, y, groups=groups)
    return estimator.fit(X, y)


def cross_val_predict_proba(
    estimator: Any,
    X: Any,
    y: Any,
    fold_ids: np.ndarray,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
) -> np.ndarray:
    """Out-of-fold probability of "correct" for every item (each from a model not fitted on it)."""
    yb = as_binary(y)
    out = np.full(len(yb), np.nan)
    g = None if groups is None else np.asarray(groups, dtype=object)
    for fold in iter_folds(fold_ids, groups=g):
        model = clone(estimator)
        _fit(model, take(X, fold.train), yb[fold.train], None if g is None else g[fold.train])
        out[fold.test] = model.predict_proba(take(X, fold.test))[:, 1]
    return out


def cross_validate(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    n_splits: int = 5,
    groups: Sequence[Any] | np.ndarray | None = None,
    seed: int = 0,
    n_boot: int = 2000,
) -> dict[str, Any]:
    """Pooled out-of-fold quality with bootstrap CIs, plus the fold assignment used."""
    yb = as_binary(y)
    folds = assign_folds(len(yb), n_splits, groups=groups, y=yb, seed=seed)
    proba = cross_val_predict_proba(estimator, X, yb, folds, groups=groups)
    pred = proba >= 0.5
    report: dict[str, Any] = {"n": int(len(yb)), "n_splits": n_splits, "seed": seed}
    for name in ("accuracy", "balanced_accuracy", "f1"):
        est, lo, hi = bootstrap_ci(yb, pred, name, n_boot=n_boot, seed=seed, groups=groups)
        report[name] = est
        report[f"{name}_ci"] = [lo, hi]
    report["fold_ids"] = folds
    report["proba"] = proba
    return report


# -- held-out splits and learning curves ----------------------------------------------------


def held_out_split(
    n_items: int,
    n_train: int,
    *,
    groups: Sequence[Any] | np.ndarray | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """At most ``n_train`` items for fitting, chosen at random by whole group; the rest to test.

    Groups are taken in a seeded random order while they fit in the budget, so the training
    set never exceeds ``n_train`` and no question is split between fitting and testing.
    """
    if n_train < 1:
        raise InputError(f"n_train must be >= 1 (labels to fit on), got {n_train}.")
    if n_train >= n_items:
        raise InputError(
            f"n_train={n_train} leaves nothing to test among {n_items} items; use fewer labels."
        )
    codes = group_codes(n_items, groups)
    rng = np.random.default_rng(seed)
    n_groups = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=n_groups)
    chosen = np.zeros(n_groups, dtype=bool)
    used = 0
    for g in rng.permutation(n_groups):
        if used + sizes[g] <= n_train:
            chosen[g] = True
            used += sizes[g]
        if used == n_train:
            break
    mask = chosen[codes]
    return np.flatnonzero(mask), np.flatnonzero(~mask)


def learning_curve(
    make_estimator: Callable[[], Any] | Mapping[str, Callable[[], Any]],
    X: Any,
    y: Any,
    sizes: Sequence[int],
    *,
    seeds: Sequence[int] = (0,),
    groups: Sequence[Any] | np.ndarray | None = None,
    n_boot: int = 1000,
) -> pd.DataFrame:
    """Quality on the unseen rest against the number of labels used for fitting.

    For every size and seed: :func:`held_out_split`, fit each estimator on the labelled part,
    score the rest. One row per (estimator, size, seed) with accuracy, balanced accuracy, F1
    and the accuracy's bootstrap CI on that test set.
    """
    factories = make_estimator if isinstance(make_estimator, Mapping) else {"judge": make_estimator}
    yb = as_binary(y)
    g = None if groups is None else np.asarray(groups, dtype=object)
    rows = []
    for size in sizes:
        for seed in seeds:
            train, test = held_out_split(len(yb), int(size), groups=g, seed=seed)
            check_split(train, test, g)
            for name, factory in factories.items():
                model = factory()
                _fit(model, take(X, train), yb[train], None if g is None else g[train])
                pred = np.asarray(model.predict(take(X, test)), dtype=bool)
                q = quality(yb[test], pred)
                acc, lo, hi = bootstrap_ci(
                    yb[test],
                    pred,
                    "accuracy",
                    n_boot=n_boot,
                    seed=seed,
                    groups=None if g is None else g[test],
                )
                rows.append(
                    {
                        "estimator": name,
                        "size": int(size),
                        "seed": int(seed),
                        "n_train": int(len(train)),
                        "n_test": int(len(test)),
                        **q,
                        "accuracy_lo": lo,
                        "accuracy_hi": hi,
                    }
                )
    return pd.DataFrame(rows)


# -- quality and bootstrap ------------------------------------------------------------------


def _from_counts(tp: Any, fp: Any, fn: Any, tn: Any, name: str) -> Any:
    tp, fp, fn, tn = (np.asarray(v, dtype=float) for v in (tp, fp, fn, tn))
    with np.errstate(invalid="ignore", divide="ignore"):
        if name == "accuracy":
            return (tp + tn) / (tp + fp + fn + tn)
        if name == "precision":
            return np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        if name == "recall":
            return np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        if name == "f1":
            d = 2 * tp + fp + fn
            return np.where(d > 0, 2 * tp / d, 0.0)
        if name == "balanced_accuracy":
            p, n = tp + fn, tn + fp
            tpr = np.where(p > 0, tp / np.where(p > 0, p, 1), np.nan)
            tnr = np.where(n > 0, tn / np.where(n > 0, n, 1), np.nan)
            return np.nanmean(np.stack([tpr, tnr]), axis=0)
    raise InputError(
        f"Unknown quality {name!r}; choose accuracy, balanced_accuracy, f1, precision, recall."
    )


def quality(y_true: Any, y_pred: Any) -> dict[str, float]:
    """Accuracy, balanced accuracy, F1 / precision / recall of "correct", and n."""
    yt = as_binary(y_true, name="y_true")
    yp = np.asarray(y_pred, dtype=bool)
    tp = np.sum(yt & yp)
    fp = np.sum(~yt & yp)
    fn = np.sum(yt & ~yp)
    tn = np.sum(~yt & ~yp)
    out = {
        k: float(_from_counts(tp, fp, fn, tn, k))
        for k in ("accuracy", "balanced_accuracy", "f1", "precision", "recall")
    }
    out["n"] = int(len(yt))
    return out


def _bootstrap_rows(
    n: int, n_boot: int, seed: int, groups: Sequence[Any] | np.ndarray | None
) -> np.ndarray:
    """Index matrix (n_boot, ~n) of resampled rows; whole groups when groups are given."""
    rng = np.random.default_rng(seed)
    if groups is None:
        return rng.integers(0, n, size=(n_boot, n))
    codes = group_codes(n, groups)
    n_groups = int(codes.max()) + 1
    members = [np.flatnonzero(codes == k) for k in range(n_groups)]
    draws = rng.integers(0, n_groups, size=(n_boot, n_groups))
    return [np.concatenate([members[k] for k in row]) for row in draws]  # type: ignore[return-value]


def _counts(yt: np.ndarray, yp: np.ndarray, rows: Any) -> tuple[np.ndarray, ...]:
    cells = (yt & yp, ~yt & yp, yt & ~yp, ~yt & ~yp)
    if isinstance(rows, np.ndarray):
        return tuple(c[rows].sum(axis=1) for c in cells)
    return tuple(np.array([c[r].sum() for r in rows]) for c in cells)


def bootstrap_ci(
    y_true: Any,
    y_pred: Any,
    name: QualityName = "accuracy",
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    groups: Sequence[Any] | np.ndarray | None = None,
) -> tuple[float, float, float]:
    """(estimate, low, high): percentile bootstrap CI of a quality measure."""
    yt = as_binary(y_true, name="y_true")
    yp = np.asarray(y_pred, dtype=bool)
    est = float(quality(yt, yp)[name])
    rows = _bootstrap_rows(len(yt), n_boot, seed, groups)
    vals = np.asarray(_from_counts(*_counts(yt, yp, rows), name), dtype=float)
    vals = vals[np.isfinite(vals)]
    lo, hi = np.quantile(vals, [alpha / 2, 1 - alpha / 2])
    return est, float(lo), float(hi)


def paired_bootstrap(
    y_true: Any,
    pred_a: Any,
    pred_b: Any,
    name: QualityName = "accuracy",
    *,
    n_boot: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    groups: Sequence[Any] | np.ndarray | None = None,
) -> dict[str, float]:
    """Difference quality(a) - quality(b) on the same resamples: estimate, CI, P(diff <= 0)."""
    yt = as_binary(y_true, name="y_true")
    a = np.asarray(pred_a, dtype=bool)
    b = np.asarray(pred_b, dtype=bool)
    rows = _bootstrap_rows(len(yt), n_boot, seed, groups)
    va = np.asarray(_from_counts(*_counts(yt, a, rows), name), dtype=float)
    vb = np.asarray(_from_counts(*_counts(yt, b, rows), name), dtype=float)
    diff = va - vb
    diff = diff[np.isfinite(diff)]
    lo, hi = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
    return {
        "diff": float(quality(yt, a)[name] - quality(yt, b)[name]),
        "lo": float(lo),
        "hi": float(hi),
        "p_not_better": float(np.mean(diff <= 0)),
    }
