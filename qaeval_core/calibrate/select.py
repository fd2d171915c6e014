"""Choose a metric variant by cross-validation: SMILE's weight ``w``, A-VERT's model, or any set.

Each candidate is a vector of precomputed scores (one per labelled item), so no metric is rerun
while choosing: SMILE's score is ``w * s_semantic + (1 - w) * s_lexical`` from its two stored
subscores, and each A-VERT model's scores come from one scoring pass per model.

Every candidate is judged by the same honest rule: out-of-fold accuracy (or another objective)
of a threshold fitted only on the other folds (``calibrate=True``), or of its fixed threshold
(A-VERT's argmax needs none). Why a tolerance: with a few hundred labels, CV differences of a
fraction of a point are noise; the documented default (listed first) is kept unless another
candidate beats it by more than ``tolerance``, which keeps choices stable across datasets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.calibrate.protocol import assign_folds, iter_folds, quality
from qaeval_core.errors import InputError
from qaeval_core.judge.combiners.base import as_binary
from qaeval_core.judge.combiners.threshold import Objective, ThresholdClassifier

__all__ = ["Selection", "cv_select", "select_smile_weight", "select_avert_model"]


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
    tolerance: float = 0.005,
) -> Selection:
    """Pick the candidate score vector with the best out-of-fold ``objective``.

    A boolean candidate is taken as decisions and used as they are. ``default`` (else the
    first candidate) wins unless the best beats it by > ``tolerance``.
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
    if vals[best] - vals[default] <= tolerance:
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
