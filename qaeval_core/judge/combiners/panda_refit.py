"""PANDA refitted on the collected labels, optionally mixed with its shipped training data.

The shipped PANDA model was trained on SQuAD-style answer-equivalence pairs; a new dataset's
answers (long chatty LLM outputs, MMLU-Pro numbers) look different. Refitting on the labels
collected for the dataset adapts it; mixing in the 15k shipped rows keeps the general notion
of equivalence when there are only a few hundred labels.

The mixing weight ``alpha`` is the share of the total training weight carried by the collected
labels: 0 = shipped data only, 1 = collected labels only. It is implemented by repeating the
collected rows ``alpha / (1 - alpha) * n_shipped / n_collected`` times (``PandaClassifier`` takes
no sample weights; SGD on repeated rows is the same objective); an ``alpha`` below the natural
share ``n_collected / (n_collected + n_shipped)`` means one copy of each collected row.
``alpha`` is chosen by cross-validation on the collected labels (grouped by question when
groups are given), with log-loss as the criterion.

Training pairs: an item is labelled as a whole, but PANDA reads one (candidate, reference,
question) triple; each labelled item contributes the reference with the highest token F1 to its
candidate (the one a correct answer matches; for a wrong answer the hardest negative). Scoring
is the metric's rule: P(correct), max over references.

Optionally (``calibrate_threshold=True``) the decision cut on P(correct) is fitted on the
out-of-fold probabilities of the chosen ``alpha`` (so never on in-sample scores), because a
model dominated by the shipped data is rarely calibrated for the new domain at 0.5.

Serialisation: the fitted PANDA model as data (``PandaClassifier.to_dict``: vocabulary, idf,
weights), the chosen ``alpha`` and the threshold model; never pickle.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.io.item_frames import items_from_frame
from qaeval_core.judge.combiners.base import (
    CalibratedClassifier,
    as_binary,
    check_number,
    register_model,
    req,
    single_blas_thread,
)
from qaeval_core.judge.combiners.folds import assign_folds
from qaeval_core.judge.combiners.threshold import ThresholdClassifier
from qaeval_core.metrics.panda import (
    PandaClassifier,
    Triple,
    overlap_features,
    panda_token_lists,
)
from qaeval_core.schema import Item

__all__ = [
    "PandaFitClassifier",
    "TEXT_COLUMNS",
    "item_triples",
    "panda_item_scores",
    "shipped_training_data",
    "training_data_path",
]

#: Columns a text-reading model needs in X (a frame of items).
TEXT_COLUMNS = ("question", "references", "candidate")


def _items(X: Any) -> list[Item]:
    if isinstance(X, pd.DataFrame):
        return items_from_frame(X)
    items = list(X)
    if items and not isinstance(items[0], Item):
        raise InputError("X must be a DataFrame with question/references/candidate or Items.")
    return items


def _refs(item: Item) -> list[str]:
    return [str(r) for r in item.references if r is not None and str(r).strip()] or [""]


def item_triples(items: Sequence[Item]) -> list[Triple]:
    """One training triple per item: the reference with the highest token F1 to the candidate."""
    out = []
    for it in items:
        refs = _refs(it)
        cand = it.candidate or ""
        if len(refs) > 1:
            pairs = panda_token_lists([cand] * len(refs)), panda_token_lists(refs)
            f1 = overlap_features(*pairs)[:, 0]
            ref = refs[int(np.argmax(f1))]
        else:
            ref = refs[0]
        out.append((cand, ref, it.question or ""))
    return out


def panda_item_scores(clf: Any, items: Sequence[Item]) -> np.ndarray:
    """P(correct) per item, max over its references (the PANDA metric's rule)."""
    owner, triples = [], []
    for i, it in enumerate(items):
        for r in _refs(it):
            owner.append(i)
            triples.append((it.candidate or "", r, it.question or ""))
    scores = np.zeros(len(items))
    if triples:
        np.maximum.at(scores, np.asarray(owner), clf.predict_proba(triples)[:, 1])
    return scores


def training_data_path() -> Path:
    """``$QAEVAL_PANDA_TRAIN``, else ``pedants_ae_augmented_train.jsonl`` in
    ``<checkout>/../shared/data``."""
    env = os.environ.get("QAEVAL_PANDA_TRAIN")
    if env:
        return Path(env)
    # parents: combiners/, judge/, qaeval_core/, the checkout, the checkout's parent.
    beside_checkout = Path(__file__).resolve().parents[4] / "shared" / "data"
    return beside_checkout / "pedants_ae_augmented_train.jsonl"


@cache
def shipped_training_data() -> tuple[tuple[Triple, ...], tuple[int, ...]]:
    """The PANDA augmented training set (``../shared/data``), as triples and labels.

    Found next to the checkout (``<repo>/../shared/data``) or at ``$QAEVAL_PANDA_TRAIN``.
    """
    path = training_data_path()
    if not path.exists():
        raise ConfigError(
            f"PANDA's training data is not at {path}; set QAEVAL_PANDA_TRAIN to the "
            "pedants_ae_augmented_train.jsonl file, or use shipped=False."
        )
    X, y = [], []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            label = (row.get("human") or {}).get("label")
            if label is None or not row.get("references"):
                continue
            X.append((str(row["candidate"]), str(row["references"][0]), str(row["question"])))
            y.append(int(label))
    return tuple(X), tuple(y)


def _mix(
    own: list[Triple], y_own: np.ndarray, alpha: float, shipped: bool
) -> tuple[list[Triple], np.ndarray]:
    """Training rows where the collected labels carry ``alpha`` of the total weight."""
    if not shipped or alpha >= 1.0:
        return own, y_own.astype(int)
    Xs, ys = shipped_training_data()
    ys_arr = np.asarray(ys, dtype=int)
    if alpha <= 0.0:
        return list(Xs), ys_arr
    factor = alpha / (1.0 - alpha) * len(Xs) / max(len(own), 1)
    # Below the natural share (one copy of each collected row) alpha cannot go lower without
    # dropping labels; it then means "one copy".
    k = max(1, int(round(factor)))
    return list(Xs) + own * k, np.concatenate([ys_arr, np.tile(y_own.astype(int), k)])


def _log_loss(y: np.ndarray, p: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


@register_model
class PandaFitClassifier(CalibratedClassifier):
    """PANDA fitted on collected labels (+ shipped data), mixing weight chosen by CV.

    X is a frame with ``question``, ``references``, ``candidate`` columns (or a list of
    :class:`~qaeval_core.schema.Item`); other columns are ignored.

    Parameters
    ----------
    alphas:
        Candidate shares of training weight for the collected labels (0 = shipped data only,
        1 = collected labels only). A single value skips the CV.
    shipped:
        Mix in the PANDA augmented training set (``shipped_training_data``).
    cv, seed:
        Folds (grouped by question when ``fit`` gets groups) and seed of the ``alpha`` search.
    calibrate_threshold:
        Fit the cut on P(correct) on out-of-fold probabilities instead of using 0.5.
    panda_params:
        Parameters of :class:`~qaeval_core.metrics.panda.PandaClassifier` (default: the paper's).
    """

    type_name = "panda"
    needs_text = True

    def __init__(
        self,
        *,
        alphas: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
        shipped: bool = True,
        cv: int = 5,
        seed: int = 0,
        calibrate_threshold: bool = True,
        panda_params: Mapping[str, Any] | None = None,
    ) -> None:
        self.alphas = alphas
        self.shipped = shipped
        self.cv = cv
        self.seed = seed
        self.calibrate_threshold = calibrate_threshold
        self.panda_params = panda_params

    def _panda(self) -> Any:
        return PandaClassifier(**dict(self.panda_params or {}))

    def _fit_one(self, items: Sequence[Item], y: np.ndarray, alpha: float) -> Any:
        X, yy = _mix(item_triples(items), y, alpha, self.shipped)
        model = self._panda().fit(X, yy)
        # PANDA's file format rounds weights to 7 digits: use the stored form from the start so
        # a judge scores identically before saving and after loading.
        return type(model).from_dict(json.loads(json.dumps(model.to_dict())))

    @single_blas_thread  # as the stacker: many small fits
    def fit(self, X: Any, y: Any, groups: Any = None) -> PandaFitClassifier:
        """Choose ``alpha`` by (grouped) CV log-loss, refit on every label; returns self."""
        alphas = [float(a) for a in np.atleast_1d(self.alphas)]
        if not alphas or min(alphas) < 0 or max(alphas) > 1:
            raise InputError(f"alphas must lie in [0, 1] (e.g. [0, 0.5, 1]), got {self.alphas!r}.")
        if not self.shipped and min(alphas) < 1:
            alphas = [1.0]  # without shipped data only the collected labels remain
        items = _items(X)
        yb = as_binary(y)
        if len(items) != len(yb):
            raise InputError(
                f"X has {len(items)} items but y has {len(yb)} labels; give one per item."
            )
        if yb.all() or not yb.any():
            raise InputError("y holds one class only; PANDA needs correct and incorrect labels.")
        self.cv_log_loss_: dict[float, float] = {}
        oof: dict[float, np.ndarray] = {}
        n_groups = len(set(groups)) if groups is not None else len(yb)
        n_inner = min(self.cv, n_groups)
        if (len(alphas) > 1 or self.calibrate_threshold) and n_inner >= 2:
            folds = assign_folds(len(yb), n_inner, groups=groups, y=yb, seed=self.seed)
            for a in alphas:
                p = np.empty(len(yb))
                for k in range(n_inner):
                    te = folds == k
                    tr_items = [it for it, t in zip(items, te, strict=True) if not t]
                    if a > 0 and yb[~te].min() == yb[~te].max():
                        p[te] = yb[~te].mean()
                        continue
                    model = self._fit_one(tr_items, yb[~te], a)
                    p[te] = panda_item_scores(
                        model, [it for it, t in zip(items, te, strict=True) if t]
                    )
                oof[a] = p
                self.cv_log_loss_[a] = _log_loss(yb, p)
            self.alpha_ = min(alphas, key=lambda a: (self.cv_log_loss_[a], -a))
        else:
            self.alpha_ = alphas[-1]
        self.model_ = self._fit_one(items, yb, self.alpha_)
        self.threshold_model_ = None
        if self.calibrate_threshold and self.alpha_ in oof:
            self.threshold_model_ = ThresholdClassifier().fit(oof[self.alpha_], yb)
        self.feature_names_in_ = np.asarray([], dtype=object)
        self.n_features_in_ = 0
        self.classes_ = np.array([False, True])
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        p = panda_item_scores(self.model_, _items(X))
        if self.threshold_model_ is not None:
            return self.threshold_model_.predict_proba(p)
        return np.column_stack([1 - p, p])

    def to_dict(self) -> dict[str, Any]:
        check_is_fitted(self, "model_")
        return {
            "type": self.type_name,
            "columns": [],
            "alpha": float(self.alpha_),
            "shipped": bool(self.shipped),
            "cv_log_loss": {repr(k): float(v) for k, v in self.cv_log_loss_.items()},
            "panda": self.model_.to_dict(),
            "threshold": None if self.threshold_model_ is None else self.threshold_model_.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PandaFitClassifier:
        where = "model(panda)"
        alpha = float(req(data, "alpha", (int, float), where))
        obj = cls(alphas=(alpha,), shipped=bool(data.get("shipped", True)))
        panda = req(data, "panda", dict, where)
        _check_numbers(panda, f"{where}.panda")
        try:
            obj.model_ = PandaClassifier.from_dict(panda)
        except ConfigError as exc:
            raise ConfigError(f"{where}.panda: {exc}") from None
        thr = data.get("threshold")
        obj.threshold_model_ = None if thr is None else ThresholdClassifier.from_dict(thr)
        obj.alpha_ = alpha
        obj.cv_log_loss_ = {}
        obj.feature_names_in_ = np.asarray([], dtype=object)
        obj.n_features_in_ = 0
        obj.classes_ = np.array([False, True])
        return obj


def _check_numbers(value: Any, where: str) -> None:
    """Every number nested in ``value`` finite and float-sized (:func:`check_number`), before
    :meth:`PandaClassifier.from_dict` hands the lists to numpy, where a 400-digit integer
    raises OverflowError or TypeError instead of a message."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        current, path = stack.pop()
        if isinstance(current, Mapping):
            stack.extend((v, f"{path}.{k}") for k, v in current.items())
        elif isinstance(current, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(current))
        elif isinstance(current, int | float) and not isinstance(current, bool):
            check_number(current, path)
