"""ThresholdClassifier: finds a known best cut, matches brute force, serialises exactly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from qaeval_core.errors import ConfigError
from qaeval_core.judge.combiners.base import model_from_dict
from qaeval_core.judge.combiners.threshold import (
    OBJECTIVES,
    ThresholdClassifier,
    best_threshold,
    objective_curve,
)

SKLEARN = {
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
    "f1": lambda y, p: f1_score(y, p, zero_division=0.0),
}


def test_separable_data_gets_the_max_margin_cut() -> None:
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = s >= 0.62
    clf = ThresholdClassifier().fit(s, y)
    below, above = s[s < 0.62].max(), s[s >= 0.62].min()
    assert clf.threshold_ == pytest.approx((below + above) / 2)
    assert clf.train_objective_ == 1.0
    assert clf.score(s, y) == 1.0


@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
def test_noisy_data_recovers_the_true_cut(objective: str) -> None:
    # Labels follow s >= 0.4 with 10% symmetric noise: the population optimum is 0.4.
    rng = np.random.default_rng(1)
    s = rng.random(20_000)
    y = (s >= 0.4) ^ (rng.random(20_000) < 0.1)
    clf = ThresholdClassifier(objective=objective).fit(s, y)
    assert clf.threshold_ == pytest.approx(0.4, abs=0.02)


def test_f1_objective_accepts_more_than_accuracy() -> None:
    # F1 ignores true negatives, so its optimal cut sits at or below the accuracy cut.
    rng = np.random.default_rng(1)
    s = rng.random(20_000)
    y = (s >= 0.4) ^ (rng.random(20_000) < 0.1)
    f1 = ThresholdClassifier(objective="f1").fit(s, y)
    acc = ThresholdClassifier(objective="accuracy").fit(s, y)
    assert f1.threshold_ <= acc.threshold_ + 1e-9


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_objective_curve_matches_brute_force(objective: str) -> None:
    rng = np.random.default_rng(2)
    s = np.round(rng.random(150), 1)  # many ties
    y = rng.random(150) < 0.3 + 0.5 * s
    cands, values = objective_curve(s, y, objective)
    for t, v in zip(cands, values, strict=True):
        assert v == pytest.approx(SKLEARN[objective](y, s >= t))
    t, best = best_threshold(s, y, objective)
    assert best == pytest.approx(values.max())
    assert SKLEARN[objective](y, s >= t) == pytest.approx(best)


def test_balanced_accuracy_moves_the_cut_when_a_class_is_rare() -> None:
    rng = np.random.default_rng(3)
    y = rng.random(3000) < 0.1
    s = np.where(y, rng.normal(0.6, 0.15, 3000), rng.normal(0.4, 0.15, 3000))
    acc = ThresholdClassifier(objective="accuracy").fit(s, y)
    bal = ThresholdClassifier(objective="balanced_accuracy").fit(s, y)
    assert bal.threshold_ < acc.threshold_
    assert balanced_accuracy_score(y, bal.predict(s)) > balanced_accuracy_score(y, acc.predict(s))


def test_one_class_and_constant_scores_are_handled() -> None:
    assert ThresholdClassifier().fit([0.2, 0.3], [1, 1]).predict([0.2, 0.3]).all()
    assert not ThresholdClassifier().fit([0.2, 0.3], [0, 0]).predict([0.2, 0.3]).any()
    clf = ThresholdClassifier().fit([0.5, 0.5, 0.5], [1, 1, 0])
    assert clf.predict([0.5]).tolist() == [True]


def test_predict_proba_agrees_with_predict() -> None:
    rng = np.random.default_rng(4)
    s = rng.random(500)
    y = rng.random(500) < s
    clf = ThresholdClassifier().fit(s, y)
    grid = np.concatenate([np.linspace(0, 1, 1001), [clf.threshold_]])
    p = clf.predict_proba(grid)
    assert p.shape == (len(grid), 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert ((p[:, 1] >= 0.5) == clf.predict(grid)).all()
    assert np.all(np.diff(p[:-1, 1]) >= 0)  # monotone in the score


def test_column_by_name_and_best_column() -> None:
    rng = np.random.default_rng(5)
    y = rng.random(300) < 0.5
    df = pd.DataFrame({"noise": rng.random(300), "good": y * 0.5 + rng.random(300) * 0.6})
    named = ThresholdClassifier(column="good").fit(df, y)
    best = ThresholdClassifier(column="best").fit(df, y)
    assert best.column_ == "good"
    assert best.threshold_ == named.threshold_
    # Applied to a frame with reordered/extra columns it still reads "good".
    shuffled = df[["good", "noise"]].assign(extra=1.0)
    assert (best.predict(shuffled) == named.predict(df)).all()


def test_round_trip_through_json_is_exact() -> None:
    rng = np.random.default_rng(6)
    s = rng.random(200)
    y = rng.random(200) < s
    clf = ThresholdClassifier(objective="f1").fit(s, y)
    again = model_from_dict(json.loads(json.dumps(clf.to_dict())))
    assert isinstance(again, ThresholdClassifier)
    np.testing.assert_array_equal(again.predict_proba(s), clf.predict_proba(s))


def test_bad_parameters_and_labels_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="objective='auc' is not valid; choose one of"):
        ThresholdClassifier(objective="auc").fit([0.1, 0.9], [0, 1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Map the 3-point scale"):
        ThresholdClassifier().fit([0.1, 0.5, 0.9], [0, 1, 2])
    with pytest.raises(ValueError, match="pass column=<name or index>"):
        ThresholdClassifier().fit(np.ones((3, 2)), [0, 1, 1])
    with pytest.raises(ValueError, match="NaN"):
        ThresholdClassifier().fit([0.1, np.nan], [0, 1])


def test_from_dict_rejects_broken_fields() -> None:
    good = ThresholdClassifier().fit([0.1, 0.9], [0, 1]).to_dict()
    with pytest.raises(ConfigError, match="lacks the field 'threshold'"):
        ThresholdClassifier.from_dict({k: v for k, v in good.items() if k != "threshold"})
    with pytest.raises(ConfigError, match="threshold must be a number, got str"):
        ThresholdClassifier.from_dict({**good, "threshold": "0.5"})
    with pytest.raises(ConfigError, match="slope must be > 0"):
        ThresholdClassifier.from_dict({**good, "slope": -1.0})
    with pytest.raises(ConfigError, match="type is 'magic'; expected one of"):
        model_from_dict({**good, "type": "magic"})
