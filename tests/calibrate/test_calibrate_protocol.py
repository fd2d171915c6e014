"""The evaluation protocol never scores an item (or a question) it was fitted on."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from qaeval_core.calibrate.protocol import (
    assign_folds,
    bootstrap_ci,
    check_split,
    cross_val_predict_proba,
    cross_validate,
    held_out_split,
    iter_folds,
    learning_curve,
    paired_bootstrap,
    quality,
)
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.combiners.threshold import ThresholdClassifier


class SpyEstimator(BaseEstimator):
    """Records the item ids it was fitted on and refuses to predict any of them."""

    log: ClassVar[list[dict[str, set[Any]]]] = []

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None) -> SpyEstimator:
        self.seen_ = set(X["item"])
        self.seen_groups_ = set(X["question"])
        SpyEstimator.log.append({"fit": self.seen_, "groups": self.seen_groups_})
        return self

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        leaked = self.seen_ & set(X["item"])
        assert not leaked, f"scored items it was fitted on: {sorted(leaked)[:5]}"
        leaked_q = self.seen_groups_ & set(X["question"])
        assert not leaked_q, f"scored questions it was fitted on: {sorted(leaked_q)[:5]}"
        SpyEstimator.log[-1]["test"] = set(X["item"])
        return np.column_stack([np.full(len(X), 0.5), np.full(len(X), 0.5)])

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.predict_proba(X)[:, 1] >= 0.5


def _frame(n_questions: int = 60, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, n_questions)  # 1..8 answers per question, like NQ301
    question = np.repeat(np.arange(n_questions), sizes)
    n = len(question)
    frame = pd.DataFrame({"item": np.arange(n), "question": question, "s": rng.random(n)})
    y = rng.random(n) < frame["s"].to_numpy()
    return frame, y


def test_folds_keep_questions_together_and_cover_everything() -> None:
    frame, y = _frame()
    folds = assign_folds(len(frame), 5, groups=frame["question"], y=y, seed=3)
    assert set(folds) == set(range(5))
    per_question = frame.groupby("question")["item"].apply(lambda ix: set(folds[ix]))
    assert all(len(s) == 1 for s in per_question)
    sizes = np.bincount(folds)
    assert sizes.max() - sizes.min() <= 8  # balanced up to one question
    # Deterministic for a seed, different for another.
    again = assign_folds(len(frame), 5, groups=frame["question"], y=y, seed=3)
    np.testing.assert_array_equal(folds, again)
    other = assign_folds(len(frame), 5, groups=frame["question"], y=y, seed=4)
    assert (folds != other).any()


def test_too_few_groups_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="Cannot make 5 folds from 3 group"):
        assign_folds(9, 5, groups=[0, 0, 0, 1, 1, 1, 2, 2, 2])


def test_no_cv_fold_ever_sees_its_test_items() -> None:
    frame, y = _frame()
    folds = assign_folds(len(frame), 5, groups=frame["question"], y=y, seed=0)
    SpyEstimator.log.clear()
    proba = cross_val_predict_proba(SpyEstimator(), frame, y, folds, groups=frame["question"])
    assert not np.isnan(proba).any()  # every item predicted exactly once, out of fold
    assert len(SpyEstimator.log) == 5
    tested: set[int] = set()
    for entry in SpyEstimator.log:
        assert not entry["fit"] & entry["test"]
        assert not tested & entry["test"]
        tested |= entry["test"]
    assert tested == set(frame["item"])


def test_check_split_catches_item_and_question_leaks() -> None:
    groups = np.array(["a", "a", "b", "c"])
    check_split(np.array([0, 1]), np.array([2, 3]), groups)
    with pytest.raises(RuntimeError, match="item positions"):
        check_split(np.array([0, 1]), np.array([1, 2]), groups)
    with pytest.raises(RuntimeError, match="group"):
        check_split(np.array([0, 2]), np.array([1, 3]), groups)
    bad = np.array([0, 1, 1, 0])  # fold ids that split question "a"
    with pytest.raises(RuntimeError, match="span train/test"):
        list(iter_folds(bad, groups=groups))


@pytest.mark.parametrize("n_train", [10, 100, 200])
def test_held_out_split_respects_the_budget_and_the_questions(n_train: int) -> None:
    frame, _ = _frame(n_questions=80)
    train, test = held_out_split(len(frame), n_train, groups=frame["question"], seed=1)
    assert len(train) <= n_train
    assert len(train) >= n_train - 8  # at most one question's worth short
    assert len(np.intersect1d(train, test)) == 0
    assert len(train) + len(test) == len(frame)
    q = frame["question"].to_numpy()
    assert not set(q[train]) & set(q[test])


def test_learning_curve_never_scores_a_training_item() -> None:
    frame, y = _frame(n_questions=80)
    SpyEstimator.log.clear()
    curve = learning_curve(
        {"spy": SpyEstimator}, frame, y, [50, 100], seeds=[0, 1], groups=frame["question"]
    )
    assert len(curve) == 4
    assert (curve["n_train"] <= curve["size"]).all()
    assert (curve["n_train"] + curve["n_test"] == len(frame)).all()
    for entry in SpyEstimator.log:
        assert not entry["fit"] & entry["test"]


def test_nested_cv_passes_groups_to_inner_folds() -> None:
    # The stacker's inner C search receives the training questions, so inner folds also keep
    # questions together; this runs end to end on grouped data.
    frame, y = _frame()
    X = frame[["s"]]
    report = cross_validate(StackerClassifier(), X, y, groups=frame["question"], n_boot=200)
    assert 0.5 < report["accuracy"] <= 1.0
    lo, hi = report["accuracy_ci"]
    assert lo <= report["accuracy"] <= hi


def test_quality_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.4
    p = rng.random(300) < 0.5
    q = quality(y, p)
    assert q["accuracy"] == pytest.approx(accuracy_score(y, p))
    assert q["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, p))
    assert q["f1"] == pytest.approx(f1_score(y, p))
    assert q["n"] == 300


def test_bootstrap_ci_brackets_the_estimate_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(0)
    y_small = rng.random(100) < 0.5
    y_big = rng.random(10_000) < 0.5
    p_small = np.where(rng.random(100) < 0.8, y_small, ~y_small)
    p_big = np.where(rng.random(10_000) < 0.8, y_big, ~y_big)
    est, lo, hi = bootstrap_ci(y_small, p_small, n_boot=1000)
    assert lo <= est <= hi
    _, lo2, hi2 = bootstrap_ci(y_big, p_big, n_boot=1000)
    assert hi2 - lo2 < (hi - lo) / 5
    # Group bootstrap: whole questions are resampled.
    groups = np.repeat(np.arange(20), 5)
    est_g, lo_g, hi_g = bootstrap_ci(y_small, p_small, groups=groups, n_boot=500)
    assert est_g == est and lo_g <= est <= hi_g


def test_paired_bootstrap_detects_a_real_difference() -> None:
    rng = np.random.default_rng(0)
    y = rng.random(1000) < 0.5
    good = np.where(rng.random(1000) < 0.9, y, ~y)
    bad = np.where(rng.random(1000) < 0.7, y, ~y)
    out = paired_bootstrap(y, good, bad, n_boot=1000)
    assert out["lo"] > 0.1 and out["p_not_better"] == 0.0
    same = paired_bootstrap(y, good, good, n_boot=200)
    assert same["diff"] == 0.0


def test_threshold_cv_end_to_end() -> None:
    rng = np.random.default_rng(1)
    s = rng.random(400)
    y = s >= 0.55
    report = cross_validate(ThresholdClassifier(), s[:, None], y, n_boot=200)
    assert report["accuracy"] > 0.97
