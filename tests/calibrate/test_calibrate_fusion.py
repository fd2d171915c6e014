"""Fusion (paper's two layers with calibrated thresholds) and the logistic stacker."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from qaeval_core.errors import ConfigError
from qaeval_core.judge.combiners.base import model_from_dict, rho
from qaeval_core.judge.combiners.fusion import FusionClassifier, fit_filters, select_voters
from qaeval_core.judge.combiners.stacker import StackerClassifier


def _scores(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """An exact-match-like metric (precise, low recall) plus three noisy graded metrics."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.55
    em = (y & (rng.random(n) < 0.5)).astype(float)  # fires only on correct items
    base = y + rng.normal(0, 0.45, n)
    frame = pd.DataFrame(
        {
            "em": em,
            "a": base + rng.normal(0, 0.3, n),
            "b": base + rng.normal(0, 0.3, n),
            "c": y + rng.normal(0, 0.6, n),
            "noise": rng.random(n),
        }
    )
    return frame, y


def test_rho_is_the_mean_of_three_correlations() -> None:
    a = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    assert rho(a, a) == pytest.approx(1.0)
    assert rho(a, -a) == pytest.approx(-1.0)
    assert rho(a, np.ones(5)) == 0.0  # constant: no information, not NaN


def test_precise_metric_becomes_a_layer1_filter() -> None:
    X, y = _scores()
    clf = FusionClassifier(target_precision=0.97).fit(X, y)
    first = clf.filters_[0]
    assert first["column"] in {"em", "a", "b"}
    assert all(f["precision"] >= 0.97 and f["support"] >= 10 for f in clf.filters_)
    em_filter = [f for f in clf.filters_ if f["column"] == "em"]
    if em_filter:
        assert em_filter[0]["threshold"] == 1.0
    # Items a filter fires on are decided correct.
    explained = clf.explain(X)
    fired = np.array([e.startswith("filter:") for e in explained])
    assert clf.predict(X)[fired].all()
    assert fired.any() and (~fired).any()


def test_filters_are_judged_on_what_earlier_filters_left() -> None:
    X, y = _scores()
    filters, remaining = fit_filters(
        X.to_numpy(),
        y,
        list(X.columns),
        target_precision=0.95,
        min_support=5,
        reject=True,
        max_filters=6,
    )
    left = np.ones(len(y), dtype=bool)
    for f in filters:
        j = list(X.columns).index(f["column"])
        s = X.to_numpy()[:, j]
        fired = (s >= f["threshold"]) if f["side"] == "accept" else (s < f["threshold"])
        hit = left & fired
        truth = y[hit] if f["side"] == "accept" else ~y[hit]
        assert truth.mean() == pytest.approx(f["precision"])
        assert hit.sum() == f["support"]
        left &= ~fired
    np.testing.assert_array_equal(left, remaining)


def test_voting_subset_follows_the_papers_objective() -> None:
    acc = np.array([0.80, 0.78, 0.75, 0.70])
    rho_h = np.array([0.5, 0.5, 0.4, 0.3])
    pairs = np.array(
        [
            [1.0, 0.95, 0.7, 0.65],
            [0.95, 1.0, 0.7, 0.65],
            [0.7, 0.7, 1.0, 0.62],
            [0.65, 0.65, 0.62, 1.0],
        ]
    )
    kw = dict(beta=1.0, lam=1.0, gamma=1.0, rho_min=0.6, rho_max=0.9, max_voters=3)
    subset, value = select_voters(acc, pairs, rho_h, **kw)
    # Brute force with the constraint: 0 and 1 can never vote together (rho 0.95 > 0.9).
    best, best_val = None, -np.inf
    for size in (1, 3):
        for s in combinations(range(4), size):
            ps = [pairs[i, j] for i, j in combinations(s, 2)]
            if any(p < 0.6 or p > 0.9 for p in ps):
                continue
            v = sum(acc[i] + rho_h[i] for i in s) - sum(ps)
            if v > best_val:
                best, best_val = s, v
    assert subset == best and value == pytest.approx(best_val)
    assert not {0, 1} <= set(subset)
    assert len(subset) % 2 == 1


def test_fusion_voters_are_odd_and_respect_the_correlation_band() -> None:
    # Five graded metrics sharing one latent signal: pairwise rho about 0.7, so a committee of
    # several voters is feasible and the paper's objective prefers it to a lone metric.
    rng = np.random.default_rng(3)
    n = 800
    y = rng.random(n) < 0.5
    latent = y + rng.normal(0, 0.5, n)
    X = pd.DataFrame({f"m{k}": latent + rng.normal(0, 0.25 + 0.05 * k, n) for k in range(5)})
    X["twin"] = X["m0"] + rng.normal(0, 0.01, n)  # too correlated with m0 to vote beside it
    clf = FusionClassifier(target_precision=0.99, max_voters=5).fit(X, y)
    assert len(clf.voters_) >= 3 and len(clf.voters_) % 2 == 1
    assert not {"m0", "twin"} <= set(clf.voters_)
    pairs = clf.selection_["rho_pairs"]
    for a, b in combinations(clf.voters_, 2):
        r = pairs.get(f"{a}|{b}", pairs.get(f"{b}|{a}"))
        assert 0.6 <= r <= 0.9
    assert clf.score(X, y) > 0.8


def test_fusion_proba_agrees_with_predict_and_round_trips() -> None:
    X, y = _scores(seed=4)
    clf = FusionClassifier(reject_filters=True).fit(X, y)
    p = clf.predict_proba(X)[:, 1]
    assert ((p >= 0.5) == clf.predict(X)).all()
    again = model_from_dict(json.loads(json.dumps(clf.to_dict())))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    # Columns are read by name from a frame, whatever their order.
    np.testing.assert_array_equal(again.predict(X[X.columns[::-1]]), clf.predict(X))


def test_fusion_from_dict_validates() -> None:
    X, y = _scores()
    d = FusionClassifier().fit(X, y).to_dict()
    with pytest.raises(ConfigError, match="voters must be an odd"):
        FusionClassifier.from_dict({**d, "voters": d["voters"] * 2})
    with pytest.raises(ConfigError, match="params are invalid"):
        FusionClassifier.from_dict({**d, "params": {**d["params"], "max_voters": 4}})
    with pytest.raises(ConfigError, match="is not one of"):
        bad = [{**d["filters"][0], "column": "zzz"}] if d["filters"] else [{"column": "zzz"}]
        FusionClassifier.from_dict({**d, "filters": bad})


def test_fusion_parameter_errors() -> None:
    X, y = _scores()
    with pytest.raises(ValueError, match="max_voters must be a positive odd"):
        FusionClassifier(max_voters=2).fit(X, y)
    with pytest.raises(ValueError, match="swap them"):
        FusionClassifier(rho_min=0.9, rho_max=0.6).fit(X, y)


def test_stacker_weights_informative_metrics_and_round_trips() -> None:
    X, y = _scores(seed=5)
    clf = StackerClassifier().fit(X, y, groups=np.arange(len(y)) // 4)
    w = clf.weights_
    assert abs(w["noise"]) < min(abs(w["a"]), abs(w["b"]))
    assert clf.C_ in (0.01, 0.1, 1.0, 10.0, 100.0)
    assert clf.score(X, y) > 0.85
    again = model_from_dict(json.loads(json.dumps(clf.to_dict())))
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), rtol=0, atol=0)


def test_stacker_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="one class only"):
        StackerClassifier().fit(np.random.default_rng(0).random((20, 2)), np.ones(20))
