"""Choose by cross-validation: SMILE's weight ``w``, A-VERT's model, or the judge's inputs.

Each candidate is a vector of precomputed scores (one per labelled item), so no metric is rerun
while choosing: SMILE's score is ``w * s_semantic + (1 - w) * s_lexical`` from its two stored
subscores, and each A-VERT model's scores come from one scoring pass per model.

Every candidate is judged by the same honest rule: out-of-fold accuracy (or another objective)
of a threshold fitted only on the other folds (``calibrate=True``), or of its fixed threshold
(A-VERT's argmax needs none). Why a margin: with a few hundred labels, CV differences of a
fraction of a point are noise; the documented default (listed first) is kept unless another
candidate beats it by more than ``win_margin``, which keeps choices stable across datasets.

:func:`select_inputs` chooses which input *families* a judge reads (cost-aware calibration,
:mod:`qaeval_core.calibrate.cost`): the cheapest set whose cross-validated accuracy loses at
most ``max_accuracy_loss`` against the best set seen, by a greedy search described there.

Why it is one module: choosing a SMILE weight, an A-VERT model and a judge's inputs are the
same act (candidates compared by out-of-fold quality on the same folds, a preferred choice kept
unless it loses more than a stated accuracy), and keeping them together keeps that rule one rule.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from qaeval_core.calibrate.cost import CostTable
from qaeval_core.calibrate.options import CostPolicy, CrossValidation, InputRule
from qaeval_core.calibrate.protocol import (
    assign_folds,
    cross_val_predict_proba,
    iter_folds,
    quality,
)
from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary, single_blas_thread
from qaeval_core.judge.combiners.threshold import Objective, ThresholdClassifier

__all__ = [
    "single_blas_thread",
    "InputSelection",
    "choose_inputs",
    "Selection",
    "cv_select",
    "select_avert_model",
    "select_inputs",
    "select_smile_weight",
]


@dataclass(frozen=True)
class Selection:
    """The chosen candidate and the table every candidate was judged by."""

    best: Any
    table: pd.DataFrame
    default: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "best": self.best,
            "default": self.default,
            "candidates": self.table.to_dict(orient="records"),
        }


def cv_select(
    candidates: Mapping[Any, Any],
    y: Any,
    *,
    calibrate: bool = True,
    fixed_threshold: float = 0.5,
    objective: Objective = "accuracy",
    n_splits: int = 5,
    groups: Sequence[Any] | np.ndarray | None = None,
    seed: int = 0,
    default: Any = None,
    win_margin: float = 0.005,
) -> Selection:
    """Pick the candidate score vector with the best out-of-fold ``objective``.

    A boolean candidate is taken as decisions and used as they are. ``default`` (else the
    first candidate) wins unless the best beats it by > ``win_margin``.
    """
    if not candidates:
        raise InputError("No candidates to choose from; pass {name: scores} for at least one.")
    yb = as_binary(y)
    folds = assign_folds(len(yb), n_splits, groups=groups, y=yb, seed=seed)
    keys = list(candidates)
    default = keys[0] if default is None else default
    if default not in candidates:
        raise InputError(
            f"default {default!r} is not among the candidates {keys}; pick one of them."
        )
    rows = []
    for key in keys:
        s = np.asarray(candidates[key], dtype=float)
        if s.shape != yb.shape:
            raise InputError(
                f"candidate {key!r} has {s.shape} scores for {len(yb)} labels; give one score "
                "per label."
            )
        pred = np.zeros(len(yb), dtype=bool)
        decided = np.asarray(candidates[key]).dtype == bool
        for fold in iter_folds(folds, groups=groups):
            if decided:  # the candidate's own decisions: nothing to fit
                pred[fold.test] = s[fold.test] > 0.5
            elif calibrate:
                clf = ThresholdClassifier(objective=objective).fit(s[fold.train], yb[fold.train])
                pred[fold.test] = clf.predict(s[fold.test])
            else:
                pred[fold.test] = s[fold.test] >= fixed_threshold
        q = quality(yb, pred)
        rows.append({"candidate": key, **q, "cv_objective": q[objective]})
    table = pd.DataFrame(rows)
    vals = dict(zip(table["candidate"], table["cv_objective"], strict=True))
    best = max(keys, key=lambda k: (vals[k], k == default))
    if vals[best] - vals[default] <= win_margin:
        best = default
    return Selection(best=best, table=table, default=default)


def select_smile_weight(
    s_semantic: Any,
    s_lexical: Any,
    y: Any,
    *,
    weights: Sequence[float] = tuple(np.round(np.linspace(0.0, 1.0, 11), 2)),
    default: float = 0.3,
    **kwargs: Any,
) -> Selection:
    """SMILE's ``w`` in ``w * s_semantic + (1 - w) * s_lexical`` by cross-validation.

    The paper's ``w = 0.3`` is the default; a threshold is recalibrated per candidate and fold
    (each ``w`` shifts the score scale, so comparing them at a fixed 0.67 would be unfair).
    """
    ss = np.asarray(s_semantic, dtype=float)
    sl = np.asarray(s_lexical, dtype=float)
    ws = [float(w) for w in weights]
    if default not in ws:
        ws = [float(default), *ws]
    if any(not 0.0 <= w <= 1.0 for w in ws):
        raise InputError(f"weights must lie in [0, 1] (e.g. 0.3, 0.5, 0.7), got {ws}.")
    candidates = {w: w * ss + (1.0 - w) * sl for w in ws}
    return cv_select(candidates, y, default=float(default), **kwargs)


def select_avert_model(
    scores_by_model: Mapping[str, Any],
    y: Any,
    *,
    calibrate: bool = False,
    default: str | None = None,
    **kwargs: Any,
) -> Selection:
    """A-VERT's ranking model (or configuration) by cross-validated quality of its decisions.

    A-VERT decides by argmax over its groups. Pass each model's boolean decisions to judge it at
    that decision; with two groups (correct / wrong) the normalised "correct" share >= 0.5 is
    the same thing. ``calibrate=True`` fits a threshold on the share instead.
    """
    return cv_select(
        scores_by_model, y, calibrate=calibrate, fixed_threshold=0.5, default=default, **kwargs
    )


def _paired_se(diff: np.ndarray, clusters: np.ndarray) -> float:
    """Standard error of the mean of per-item differences, items of one question together
    (cluster-robust: answers to one question are correlated)."""
    n = len(diff)
    sums = np.bincount(clusters, weights=diff - diff.mean())
    k = int(np.count_nonzero(np.bincount(clusters)))
    if k < 2:
        return 0.0
    return float(np.sqrt(k / (k - 1) * np.sum(sums**2)) / n)


@dataclass(frozen=True)
class InputSelection:
    """The input families chosen by :func:`select_inputs`, and every set it evaluated."""

    families: list[str]
    columns: list[str]
    cost: float
    cv_accuracy: float
    best_cv_accuracy: float
    #: The rule's :attr:`~qaeval_core.calibrate.options.InputRule.max_accuracy_loss` (written
    #: as ``tolerance`` in the judge file, whose format does not change).
    max_accuracy_loss: float
    max_cost: float | None
    #: One row per evaluated set: families, cost, cv_accuracy, frontier (no evaluated set is
    #: both at most as costly and more accurate), chosen.
    evaluated: pd.DataFrame
    #: The chosen set's out-of-fold probabilities on the first fold assignment (a tuned
    #: penalty fixed per fold, see :func:`select_inputs`).
    oof_proba: np.ndarray | None = field(default=None, repr=False, compare=False)
    #: Fold assignments every set's accuracy was averaged over.
    repeats: int = 1
    #: One-sided confidence of "loses at most the tolerance" (None: the plain difference).
    confidence: float | None = None
    #: Whether a tuned penalty was tuned once per fold (``_oof_predictor``) instead of per set.
    tune_once: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": (
                "cheapest evaluated input set whose cross-validated accuracy is within the "
                "tolerance of the best evaluated set"
                + ("" if self.max_cost is None else " costing at most max_cost")
                + "; greedy forward (families by cost) then backward (drop families); "
                f"accuracy averaged over {self.repeats} fold assignment(s)"
                + (
                    ""
                    if self.confidence is None
                    else f"; within the tolerance with {self.confidence:.0%} one-sided confidence"
                )
                + ("; penalty tuned once per fold on every input" if self.tune_once else "")
            ),
            "tune_once": self.tune_once,
            "repeats": self.repeats,
            "confidence": self.confidence,
            "families": list(self.families),
            "columns": list(self.columns),
            "cost": self.cost,
            "cv_accuracy": self.cv_accuracy,
            "best_cv_accuracy": self.best_cv_accuracy,
            "tolerance": self.max_accuracy_loss,
            "max_cost": self.max_cost,
            "evaluated": [
                {
                    "families": list(r["families"]),
                    "cost": float(r["cost"]),
                    "cv_accuracy": float(r["cv_accuracy"]),
                    "frontier": bool(r["frontier"]),
                    "chosen": bool(r["chosen"]),
                }
                for r in self.evaluated.to_dict(orient="records")
            ],
        }


def _oof_predictor(
    make_model: Callable[[], Any],
    X: pd.DataFrame,
    y: np.ndarray,
    folds: np.ndarray,
    groups: np.ndarray | None,
    *,
    tune_once: bool = False,
) -> Callable[[list[str]], np.ndarray]:
    """Out-of-fold probabilities of ``make_model()`` on any subset of ``X``'s columns.

    Why not plain nested CV per subset: a model that tunes its own penalty (the stacker: ``Cs``
    searched by inner CV, the pick in ``C_``) refits 5 x 5 inner models per outer fold, so the
    15-20 subsets a selection evaluates cost 2,000-3,000 fits, most of a minute on a small CPU.
    Here the penalty is tuned once per outer fold, on that fold's training rows with every
    input, and then held fixed for every subset in that fold (5 fits per subset). No test row
    is seen when tuning (leak-free), every subset gets the same penalty in a fold (the
    comparison stays paired), and for the full input set the result is exactly the nested CV's.
    Models without a penalty search are cross-validated as they are.
    """
    from sklearn.base import clone

    probe = make_model()
    cs = getattr(probe, "Cs", None)
    tuned = cs is not None and len(np.atleast_1d(cs)) > 1 and "Cs" in probe.get_params(deep=False)
    fold_list = list(iter_folds(folds, groups=groups))

    def fit(model: Any, cols: list[str], rows: np.ndarray) -> Any:
        if groups is not None and "groups" in inspect.signature(model.fit).parameters:
            return model.fit(X[cols].iloc[rows], y[rows], groups=groups[rows])
        return model.fit(X[cols].iloc[rows], y[rows])

    if not (tuned and tune_once):
        return lambda cols: cross_val_predict_proba(make_model(), X[cols], y, folds, groups=groups)
    every = [str(c) for c in X.columns]
    penalty = [float(fit(clone(probe), every, fold.train).C_) for fold in fold_list]

    def predict(cols: list[str]) -> np.ndarray:
        out = np.full(len(y), np.nan)
        for fold, c in zip(fold_list, penalty, strict=True):
            model = fit(clone(probe).set_params(Cs=(c,)), cols, fold.train)
            out[fold.test] = model.predict_proba(X[cols].iloc[fold.test])[:, 1]
        return out

    return predict


@single_blas_thread
def select_inputs(
    scores: pd.DataFrame,
    y: Any,
    families: Mapping[str, Sequence[str]],
    costs: Mapping[str, float],
    make_model: Callable[[], Any],
    *,
    rule: InputRule = InputRule(),
    cv: CrossValidation = CrossValidation(),
    fold_ids: np.ndarray | None = None,
    groups: Sequence[Any] | np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> InputSelection:
    """The cheapest set of input families whose CV accuracy is within the ``rule``'s
    tolerance of the best.

    Every candidate set is scored the same way: out-of-fold accuracy of ``make_model()`` (the
    default combiner) fitted on the set's columns, on the same folds of the labels given (the
    calibration's own labels; nothing else is seen), so differences between sets are paired.
    The folds are ``fold_ids`` when given, else drawn by ``cv`` (its ``n_splits`` and
    ``seed``). The default :class:`~qaeval_core.calibrate.options.InputRule` is the plain rule
    (one fold assignment, the model's own nested CV per set, no confidence margin); three
    stricter or faster variants are its options, each measured against held-out rows in
    ``experiments/results/cost_aware_rules.md`` and none better there:

    * ``repeats``: a set's accuracy is the mean over that many fold assignments (the folds
      given, then ones drawn with ``seed + 1``, ``seed + 2``, ...);
    * ``confidence``: within the tolerance with this one-sided confidence (paired per-item
      differences, standard error clustered by question) instead of on the point estimate;
    * ``tune_once``: a model that tunes its penalty (the stacker) has it tuned once per fold
      on every input and fixed across sets (``_oof_predictor``: 5 fits per set, not 130).

    Search (greedy, ``2F`` to ``F(F+1)/2 + F`` fits for ``F`` families):

    1. *forward*: families sorted by cost, cheapest first; evaluate each prefix (the cheapest
       family, the cheapest two, ... all of them);
    2. *backward*: from the cheapest evaluated set within the tolerance of the best evaluated
       set, try dropping each family (most costly first); take the drop that saves the most
       cost and stays within the tolerance of the best so far; repeat until none does.

    The result is the cheapest evaluated set within the tolerance of the best evaluated one,
    among sets costing at most the rule's ``max_cost`` (seconds per 1,000 rows) when given.

    ``progress(evaluated, at_most)`` hears each newly evaluated set: how many so far, and the
    most the search can evaluate (``F(F+1)/2`` sets).
    """
    tolerance, max_cost, repeats = rule.max_accuracy_loss, rule.max_cost, rule.repeats
    yb = as_binary(y)
    if len(scores) != len(yb):
        raise InputError(f"{len(scores)} score rows for {len(yb)} labels; give one per label.")
    fams = {f: list(cols) for f, cols in families.items() if cols}
    if not fams:
        raise InputError("No input families to choose from; give at least one with columns.")
    missing = [c for cols in fams.values() for c in cols if c not in scores.columns]
    if missing:
        raise InputError(f"scores lack the input column(s) {missing}.")
    unknown = [f for f in fams if f not in costs]
    if unknown:
        raise InputError(f"No cost for input famil(ies) {unknown}; measure every input first.")
    order = sorted(fams, key=lambda f: (float(costs[f]), f))
    if max_cost is not None and float(costs[order[0]]) > max_cost:
        raise InputError(
            f"max_cost {max_cost:g} is below the cheapest input family ({order[0]}: "
            f"{float(costs[order[0]]):.3g} seconds per 1,000 rows); raise it or use every "
            "input (inputs='all').",
            param="max_cost",
        )
    seed = cv.seed
    g = None if groups is None else np.asarray(groups, dtype=object)
    folds = (
        assign_folds(len(yb), cv.n_splits, groups=g, y=yb, seed=seed)
        if fold_ids is None
        else np.asarray(fold_ids)
    )
    k = len(np.unique(folds))
    assignments = [folds] + [
        assign_folds(len(yb), k, groups=g, y=yb, seed=seed + r) for r in range(1, repeats)
    ]
    X = scores.reset_index(drop=True)
    seen: dict[frozenset[str], tuple[float, float]] = {}
    right: dict[frozenset[str], np.ndarray] = {}  # per assignment and item: 1.0 if right
    oof: dict[frozenset[str], np.ndarray] = {}
    z = 0.0 if rule.confidence is None else float(norm.ppf(rule.confidence))
    clusters = np.arange(len(yb)) if g is None else pd.factorize(pd.Series(g))[0]
    ranks = {f: i for i, f in enumerate(order)}
    every = X[[c for c in X.columns if any(c in cols for cols in fams.values())]]
    predictors = [
        _oof_predictor(make_model, every, yb, a, g, tune_once=rule.tune_once) for a in assignments
    ]

    def columns_of(fset: frozenset[str]) -> list[str]:
        # In the scores' own order, so a model fitted on them is the one fit_judge would fit.
        keep = {c for f in fset for c in fams[f]}
        return [str(c) for c in X.columns if c in keep]

    def cost_of(fset: frozenset[str]) -> float:
        return float(sum(float(costs[f]) for f in fset))

    at_most = len(order) * (len(order) + 1) // 2  # F prefixes + at most F(F-1)/2 drops

    def evaluate(fset: frozenset[str]) -> tuple[float, float]:
        if fset not in seen:
            probas = [predict(columns_of(fset)) for predict in predictors]
            right[fset] = np.array([(p >= 0.5) == yb for p in probas], dtype=float)
            seen[fset] = (cost_of(fset), float(right[fset].mean()))
            oof[fset] = probas[0]
            if progress is not None:
                progress(len(seen), at_most)
        return seen[fset]

    def within(fset: frozenset[str], best: frozenset[str]) -> bool:
        if fset == best:
            return True
        diff = (right[fset] - right[best]).mean(axis=0)  # per item, over the assignments
        lower = float(diff.mean()) - z * _paired_se(diff, clusters)
        return lower >= -tolerance - 1e-12

    def best_of(ok: Mapping[frozenset[str], tuple[float, float]]) -> frozenset[str]:
        return max(ok, key=lambda s: (ok[s][1], -ok[s][0]))

    def affordable() -> dict[frozenset[str], tuple[float, float]]:
        return {s: v for s, v in seen.items() if max_cost is None or v[0] <= max_cost + 1e-12}

    def pick() -> frozenset[str]:
        ok = affordable()
        best = best_of(ok)
        near = [s for s in ok if within(s, best)]
        return min(near, key=lambda s: (ok[s][0], -ok[s][1], len(s), sorted(ranks[f] for f in s)))

    for k in range(1, len(order) + 1):
        prefix = frozenset(order[:k])
        if max_cost is not None and cost_of(prefix) > max_cost and k > 1:
            break
        evaluate(prefix)
    current = pick()
    while len(current) > 1:
        best = best_of(affordable())
        options = []
        for f in sorted(current, key=lambda f: -ranks[f]):
            smaller = current - {f}
            cost, acc = evaluate(smaller)
            if within(smaller, best):
                options.append((cost, -acc, smaller))
        if not options:
            break
        current = min(options, key=lambda o: (o[0], o[1]))[2]
    chosen = pick()

    rows = []
    for fset, (cost, acc) in seen.items():
        dominated = any(
            (c2 <= cost and a2 > acc) or (c2 < cost and a2 >= acc)
            for s2, (c2, a2) in seen.items()
            if s2 != fset
        )
        rows.append(
            {
                "families": [f for f in order if f in fset],
                "cost": cost,
                "cv_accuracy": acc,
                "frontier": not dominated,
                "chosen": fset == chosen,
            }
        )
    table = pd.DataFrame(rows).sort_values(["cost", "cv_accuracy"]).reset_index(drop=True)
    cost, acc = seen[chosen]
    return InputSelection(
        families=[f for f in order if f in chosen],
        columns=columns_of(chosen),
        cost=cost,
        cv_accuracy=acc,
        best_cv_accuracy=max(a for _, a in affordable().values()),
        max_accuracy_loss=tolerance,
        max_cost=max_cost,
        evaluated=table,
        oof_proba=oof[chosen],
        repeats=repeats,
        confidence=rule.confidence,
        tune_once=rule.tune_once,
    )


def choose_inputs(
    scores: pd.DataFrame,
    y: Any,
    costs: CostTable | None,
    make_model: Callable[[], Any] | None,
    *,
    cost_policy: CostPolicy = CostPolicy(),
    cv: CrossValidation = CrossValidation(),
    fold_ids: np.ndarray | None = None,
    groups: Sequence[Any] | np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> InputSelection | None:
    """:func:`select_inputs` by the ``cost_policy``'s rule over the families of ``costs``, or
    None when every input is kept (``inputs="all"`` without ``max_cost``, no costs, or no
    score-reading ``make_model``). ``progress`` is :func:`select_inputs`' (sets evaluated, at
    most)."""
    if costs is None:
        if cost_policy.max_cost is not None:
            raise InputError("max_cost needs measured input costs (costs=measure_costs(...)).")
        return None
    cols = [str(c) for c in scores.columns]
    costs.families_of(cols)  # every input must have a measured cost
    if not cost_policy.measures_costs or make_model is None:
        return None
    families: dict[str, list[str]] = {}
    for fam, members in costs.families().items():
        used = [c for c in members if c in cols]
        if used:
            families[fam] = used
    return select_inputs(
        scores,
        y,
        families,
        costs.family_costs(),
        make_model,
        rule=cost_policy.rule(),
        cv=cv,
        fold_ids=fold_ids,
        groups=groups,
        progress=progress,
    )
