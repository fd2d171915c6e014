"""Multi-layer fusion of metrics (Rahnamoun & Shamsfard), with calibrated thresholds.

Layer 1 (filters): metrics whose "score >= t" calls are almost always right are applied in
order; an item any of them accepts is decided correct and leaves the pipeline. Layer 2 (vote):
the remaining items are decided by the majority of an odd-sized subset S of metrics chosen to
maximise

    beta * sum_{m in S} Acc(m) - lam * sum_{i<j in S} rho(mi, mj) + gamma * sum_{m in S} rho(m, H)

subject to rho_min <= rho(mi, mj) <= rho_max for every pair in S, where rho is the mean of
Spearman, Kendall and Pearson correlation (paper eqs. 7-8, appendix B).

Decisions recorded here (the paper leaves them open):

* Filters are chosen by their *precision* on the labels (share of accepted items that humans
  call correct), not overall accuracy: a filter only ever says "correct", so precision is what
  its error rate is. Each metric's filter cut is the lowest score whose precision reaches
  ``target_precision`` on at least ``min_filter_support`` labelled items; filters are added
  greedily by coverage of the items still undecided, and each later filter is judged only on
  what earlier filters left (the paper's D \\ D_k). ``reject_filters=True`` adds the mirror
  image ("score < t is almost always wrong"), which the paper does not have.
* Layer-2 thresholds are calibrated (:class:`ThresholdClassifier`) on the items layer 1 leaves,
  instead of the paper's fixed 0.5, and Acc(m) is measured at that threshold. If fewer than
  ``min_layer2_items`` labelled items (or one class only) remain, layer 2 is fitted on all items.
* The subset search is exhaustive over odd sizes up to ``max_voters``; a single metric always
  satisfies the pairwise constraint, so a solution always exists.
* ``predict_proba``: the training precision of the filter that fired (1 - its precision for a
  reject filter), else the share of "correct" votes (a lone voter's Platt probability), so the
  score is >= 0.5 exactly when the decision is "correct".

Why it is one module: the paper's two layers (precision filters, then the odd voting subset
chosen by the objective above) form one estimator; the layer functions exist only for it and are
tested through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any, Literal

import numpy as np
from sklearn.utils.validation import check_is_fitted

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge.combiners.base import (
    CalibratedClassifier,
    as_binary,
    as_score_matrix,
    register_model,
    req,
    req_float,
    req_names,
    rho,
)
from qaeval_core.judge.combiners.threshold import Objective, ThresholdClassifier

__all__ = ["FusionClassifier", "select_voters", "fit_filters"]


def _filter_cut(
    s: np.ndarray, y: np.ndarray, side: Literal["accept", "reject"], target: float, support: int
) -> tuple[float, float, int] | None:
    """Most permissive cut whose calls reach ``target`` precision on >= ``support`` items.

    accept: items with s >= cut are called correct; reject: items with s < cut are called wrong.
    Returns (cut, precision, n_covered) or None.
    """
    if len(s) == 0:
        return None
    order = np.argsort(-s if side == "accept" else s, kind="stable")
    ss = s[order]
    hit = y[order] if side == "accept" else ~y[order]
    n_cov = np.arange(1, len(ss) + 1)
    prec = np.cumsum(hit) / n_cov
    # A cut must include all items tied at the boundary score: only positions where the next
    # score differs are valid ends.
    valid = np.append(ss[1:] != ss[:-1], True)
    ok = valid & (prec >= target) & (n_cov >= support)
    if not ok.any():
        return None
    k = int(np.flatnonzero(ok).max())
    # reject: s < cut covers ss[:k+1], so the cut sits just above the last covered score.
    cut = float(ss[k]) if side == "accept" else float(np.nextafter(ss[k], np.inf))
    return cut, float(prec[k]), int(n_cov[k])


def fit_filters(
    X: np.ndarray,
    y: np.ndarray,
    names: list[str],
    *,
    target_precision: float,
    min_support: int,
    reject: bool,
    max_filters: int,
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Greedy layer 1: returns the ordered filters and the mask of items they leave."""
    remaining = np.ones(len(y), dtype=bool)
    filters: list[dict[str, Any]] = []
    sides: list[Literal["accept", "reject"]] = ["accept", "reject"] if reject else ["accept"]
    for side in sides:
        used: set[str] = set()
        while len(filters) < max_filters:
            best = None
            for j, name in enumerate(names):
                if name in used:
                    continue
                found = _filter_cut(
                    X[remaining, j], y[remaining], side, target_precision, min_support
                )
                if found and (best is None or (found[2], found[1]) > (best[3], best[2])):
                    best = (j, found[0], found[1], found[2])
            if best is None:
                break
            j, cut, prec, cov = best
            fired = X[:, j] >= cut if side == "accept" else X[:, j] < cut
            filters.append(
                {
                    "column": names[j],
                    "side": side,
                    "threshold": cut,
                    "precision": prec,
                    "support": cov,
                }
            )
            used.add(names[j])
            remaining &= ~fired
    return filters, remaining


def select_voters(
    acc: np.ndarray,
    rho_pairs: np.ndarray,
    rho_human: np.ndarray,
    *,
    beta: float,
    lam: float,
    gamma: float,
    rho_min: float,
    rho_max: float,
    max_voters: int,
) -> tuple[tuple[int, ...], float]:
    """Exhaustive search of the paper's objective over odd subsets; returns (subset, value)."""
    m = len(acc)
    best: tuple[int, ...] = ()
    best_val = -np.inf
    for size in range(1, min(max_voters, m) + 1, 2):
        for subset in combinations(range(m), size):
            pairs = [rho_pairs[i, j] for i, j in combinations(subset, 2)]
            if any(p < rho_min or p > rho_max for p in pairs):
                continue
            val = (
                beta * sum(acc[i] for i in subset)
                - lam * sum(pairs)
                + gamma * sum(rho_human[i] for i in subset)
            )
            if val > best_val + 1e-12:
                best, best_val = subset, float(val)
    return best, best_val


@register_model
class FusionClassifier(CalibratedClassifier):
    """Two-layer fusion: precision filters, then a majority vote of a chosen odd subset.

    Parameters
    ----------
    target_precision:
        Precision a layer-1 filter must reach on the labels (paper: 0.97).
    min_filter_support:
        A filter must accept at least this many labelled items (guards against a "perfect"
        filter that fired twice).
    max_filters:
        Upper bound on the number of layer-1 filters.
    reject_filters:
        Also learn "score < t means incorrect" filters (not in the paper).
    beta, lam, gamma:
        Weights of accuracy, inter-metric correlation and correlation with humans (paper: 1).
    rho_min, rho_max:
        Allowed pairwise correlation between voters (paper: 0.6 and 0.9).
    max_voters:
        Largest (odd) voting subset searched.
    threshold_objective:
        Objective of each voter's calibrated threshold.
    min_layer2_items:
        Below this many items left after layer 1, layer 2 is fitted on all items.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(300) < 0.5
    >>> X = np.column_stack([y + rng.normal(0, s, 300) for s in (0.4, 0.5, 0.6)])
    >>> clf = FusionClassifier().fit(X, y)
    >>> clf.score(X, y) > 0.8
    True
    """

    type_name = "fusion"

    def __init__(
        self,
        *,
        target_precision: float = 0.97,
        min_filter_support: int = 10,
        max_filters: int = 3,
        reject_filters: bool = False,
        beta: float = 1.0,
        lam: float = 1.0,
        gamma: float = 1.0,
        rho_min: float = 0.6,
        rho_max: float = 0.9,
        max_voters: int = 5,
        threshold_objective: Objective = "accuracy",
        min_layer2_items: int = 30,
    ) -> None:
        self.target_precision = target_precision
        self.min_filter_support = min_filter_support
        self.max_filters = max_filters
        self.reject_filters = reject_filters
        self.beta = beta
        self.lam = lam
        self.gamma = gamma
        self.rho_min = rho_min
        self.rho_max = rho_max
        self.max_voters = max_voters
        self.threshold_objective = threshold_objective
        self.min_layer2_items = min_layer2_items

    def _validate(self) -> None:
        if not 0.5 < self.target_precision <= 1.0:
            raise InputError(
                f"target_precision must be in (0.5, 1] (e.g. 0.9), got {self.target_precision}."
            )
        if self.max_voters < 1 or self.max_voters % 2 == 0:
            raise InputError(
                f"max_voters must be a positive odd number (e.g. 3), got {self.max_voters}."
            )
        if self.rho_min > self.rho_max:
            raise InputError(f"rho_min={self.rho_min} is above rho_max={self.rho_max}; swap them.")
        if min(self.beta, self.lam, self.gamma) < 0:
            raise InputError(
                f"beta, lam and gamma must be >= 0, got {self.beta}, {self.lam}, {self.gamma}."
            )
        if self.max_filters < 0 or self.min_filter_support < 1:
            raise InputError(
                "max_filters must be >= 0 and min_filter_support >= 1, got "
                f"{self.max_filters} and {self.min_filter_support}."
            )

    def fit(self, X: Any, y: Any) -> FusionClassifier:
        """Fit layer-1 filters, then the layer-2 voting subset and its thresholds."""
        self._validate()
        arr, names = as_score_matrix(X)
        yb = as_binary(y)
        if len(yb) != len(arr):
            raise InputError(f"X has {len(arr)} rows but y has {len(yb)} labels; give one per row.")
        names = names or [f"x{i}" for i in range(arr.shape[1])]
        self.feature_names_in_ = np.asarray(names, dtype=object)
        self.n_features_in_ = arr.shape[1]

        self.filters_, remaining = fit_filters(
            arr,
            yb,
            names,
            target_precision=self.target_precision,
            min_support=self.min_filter_support,
            reject=self.reject_filters,
            max_filters=self.max_filters,
        )
        rest = remaining
        y_rest = yb[rest]
        self.layer2_on_all_ = bool(
            rest.sum() < self.min_layer2_items or y_rest.all() or not y_rest.any()
        )
        if self.layer2_on_all_:
            rest = np.ones(len(yb), dtype=bool)
        A, yr = arr[rest], yb[rest]

        m = arr.shape[1]
        thresholds = [
            ThresholdClassifier(objective=self.threshold_objective).fit(A[:, j], yr)
            for j in range(m)
        ]
        acc = np.array([np.mean(t.predict(A[:, j]) == yr) for j, t in enumerate(thresholds)])
        rho_pairs = np.eye(m)
        for i, j in combinations(range(m), 2):
            rho_pairs[i, j] = rho_pairs[j, i] = rho(A[:, i], A[:, j])
        rho_h = np.array([rho(A[:, j], yr.astype(float)) for j in range(m)])
        subset, value = select_voters(
            acc,
            rho_pairs,
            rho_h,
            beta=self.beta,
            lam=self.lam,
            gamma=self.gamma,
            rho_min=self.rho_min,
            rho_max=self.rho_max,
            max_voters=self.max_voters,
        )
        self.voters_ = [names[j] for j in subset]
        self.voter_models_ = {names[j]: thresholds[j] for j in subset}
        self.selection_ = {
            "objective": value,
            "accuracy": {names[j]: float(acc[j]) for j in range(m)},
            "rho_human": {names[j]: float(rho_h[j]) for j in range(m)},
            "rho_pairs": {
                f"{names[i]}|{names[j]}": float(rho_pairs[i, j])
                for i, j in combinations(range(m), 2)
            },
            "n_layer2": int(rest.sum()),
        }
        self.classes_ = np.array([False, True])
        return self

    def _matrix(self, X: Any) -> np.ndarray:
        names = [str(n) for n in self.feature_names_in_]
        arr, _ = as_score_matrix(X, names if hasattr(X, "columns") else None)
        if arr.shape[1] != len(names):
            raise InputError(
                f"X has {arr.shape[1]} columns; fusion expects {names}: score the items with "
                "exactly these metrics."
            )
        return arr

    def explain(self, X: Any) -> list[str]:
        """Which part decided each item: ``filter:<column>`` or ``vote``."""
        check_is_fitted(self, "voters_")
        arr = self._matrix(X)
        out = np.full(len(arr), "vote", dtype=object)
        undecided = np.ones(len(arr), dtype=bool)
        for f in self.filters_:
            j = self._col(f["column"])
            fired = (
                arr[:, j] >= f["threshold"]
                if f["side"] == "accept"
                else (arr[:, j] < f["threshold"])
            )
            hit = undecided & fired
            out[hit] = f"filter:{f['column']}"
            undecided &= ~hit
        return out.tolist()

    def _col(self, name: str) -> int:
        return [str(n) for n in self.feature_names_in_].index(name)

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "voters_")
        arr = self._matrix(X)
        p = np.full(len(arr), np.nan)
        undecided = np.ones(len(arr), dtype=bool)
        for f in self.filters_:
            j = self._col(f["column"])
            if f["side"] == "accept":
                hit = undecided & (arr[:, j] >= f["threshold"])
                p[hit] = f["precision"]
            else:
                hit = undecided & (arr[:, j] < f["threshold"])
                p[hit] = 1.0 - f["precision"]
            undecided &= ~hit
        if undecided.any():
            sub = arr[undecided]
            if len(self.voters_) == 1:
                name = self.voters_[0]
                p[undecided] = self.voter_models_[name].predict_proba(sub[:, self._col(name)])[:, 1]
            else:
                votes = np.column_stack(
                    [self.voter_models_[v].predict(sub[:, self._col(v)]) for v in self.voters_]
                )
                p[undecided] = votes.mean(axis=1)
        return np.column_stack([1 - p, p])

    # -- serialisation -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        check_is_fitted(self, "voters_")
        return {
            "type": self.type_name,
            "columns": [str(n) for n in self.feature_names_in_],
            "params": self.get_params(),
            "filters": [dict(f) for f in self.filters_],
            "voters": [
                {"column": v, "model": self.voter_models_[v].to_dict()} for v in self.voters_
            ],
            "layer2_on_all": self.layer2_on_all_,
            "selection": self.selection_,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FusionClassifier:
        where = "model(fusion)"
        columns = req_names(data, "columns", where)
        params = req(data, "params", dict, where)
        try:
            obj = cls(**params)
            obj._validate()
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}.params are invalid: {exc}") from None
        obj.feature_names_in_ = np.asarray(columns, dtype=object)
        obj.n_features_in_ = len(columns)
        filters = []
        for i, f in enumerate(req(data, "filters", list, where)):
            w = f"{where}.filters[{i}]"
            col = req(f, "column", str, w)
            side = req(f, "side", str, w)
            if col not in columns:
                raise ConfigError(f"{w}.column {col!r} is not one of {columns}.")
            if side not in ("accept", "reject"):
                raise ConfigError(f"{w}.side must be 'accept' or 'reject', got {side!r}.")
            prec = req_float(f, "precision", w)
            if not 0.0 <= prec <= 1.0:
                raise ConfigError(f"{w}.precision must be in [0, 1], got {prec}.")
            support = req_float(f, "support", w)
            if support < 0 or not support.is_integer():
                raise ConfigError(f"{w}.support must be a count (an integer >= 0), got {support}.")
            filters.append(
                {
                    "column": col,
                    "side": side,
                    "threshold": req_float(f, "threshold", w),
                    "precision": prec,
                    "support": int(support),
                }
            )
        voters_raw = req(data, "voters", list, where)
        if not voters_raw or len(voters_raw) % 2 == 0:
            raise ConfigError(f"{where}.voters must be an odd, non-empty list.")
        obj.voters_, obj.voter_models_ = [], {}
        for i, v in enumerate(voters_raw):
            w = f"{where}.voters[{i}]"
            col = req(v, "column", str, w)
            if col not in columns or col in obj.voter_models_:
                raise ConfigError(f"{w}.column {col!r} is unknown or repeated.")
            model = ThresholdClassifier.from_dict(req(v, "model", dict, w))
            obj.voters_.append(col)
            obj.voter_models_[col] = model
        obj.filters_ = filters
        obj.layer2_on_all_ = bool(data.get("layer2_on_all", False))
        sel = data.get("selection", {})
        obj.selection_ = sel if isinstance(sel, dict) else {}
        obj.classes_ = np.array([False, True])
        return obj
