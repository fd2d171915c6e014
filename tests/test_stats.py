"""The shared statistics of :mod:`qaeval_core.stats` against the libraries that define them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, norm
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from qaeval_core import stats
from qaeval_core.judge.cascade import LLM_EPS, llm_logit
from qaeval_core.judge.triage import SCORE_EPS, score_logit


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_ci_is_scipys_and_statsmodels(confidence: float) -> None:
    for n in (1, 2, 5, 17, 100, 1000):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ci = binomtest(k, n).proportion_ci(confidence, method="wilson")
            sm = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
            got = stats.wilson_ci(k, n, confidence)
            assert got == pytest.approx((ci.low, ci.high), abs=1e-12)
            assert got == pytest.approx(sm, abs=1e-12)
            assert stats.wilson_width(k / n, n, confidence) == pytest.approx(
                ci.high - ci.low, abs=1e-12
            )


def test_wilson_interval_takes_a_fractional_n_and_any_quantile() -> None:
    """At an effective n between two whole ones the interval lies between theirs; a larger
    quantile (Student's t) widens it."""
    z = stats.normal_quantile(0.95)
    lo10, hi10 = stats.wilson_interval(0.8, 10, z)
    lo11, hi11 = stats.wilson_interval(0.8, 11, z)
    lo, hi = stats.wilson_interval(0.8, 10.5, z)
    assert lo10 < lo < lo11 and hi11 < hi < hi10
    t_lo, t_hi = stats.wilson_interval(0.8, 10.5, stats.student_quantile(0.95, 9.5))
    assert t_lo < lo and t_hi > hi


def test_quantiles_are_scipys() -> None:
    assert stats.normal_quantile(0.95) == pytest.approx(norm.ppf(0.975), abs=1e-12)
    assert stats.student_quantile(0.9, 4) == pytest.approx(2.131847, abs=1e-6)
    assert stats.student_quantile(0.9, 0.2) == stats.student_quantile(0.9, 1)  # df at least 1


def test_design_effect_wilson_is_wilson_at_the_effective_n() -> None:
    e, se, q = 0.9, 0.03, 1.96
    assert stats.design_effect_wilson(e, se, q) == pytest.approx(
        stats.wilson_interval(e, e * (1 - e) / se**2, q)
    )
    assert stats.design_effect_wilson(1.0, 0.02, q) == pytest.approx((1.0 - q * 0.02, 1.0))


def test_logit_clips_where_it_is_told() -> None:
    p = np.array([0.0, 0.25, 0.5, 1.0])
    assert stats.logit(p, 1e-6)[1:3] == pytest.approx([np.log(1 / 3), 0.0])
    assert stats.logit(p, 1e-6)[[0, 3]] == pytest.approx([-13.8155, 13.8155], abs=1e-3)
    assert stats.logit(p, 1e-4)[3] == pytest.approx(9.2102, abs=1e-3)
    assert score_logit(p) == pytest.approx(stats.logit(p, SCORE_EPS))
    assert llm_logit(p) == pytest.approx(stats.logit(p, LLM_EPS))


def test_majority_vote_says_none_on_a_tie_or_no_vote() -> None:
    counts = [[0, 0, 3], [1, 2, 0], [2, 0, 2], [1, 1, 1], [0, 0, 0], [5, 0, 0]]
    assert stats.majority_vote(counts).tolist() == [2, 1, -1, -1, -1, 0]
    assert stats.majority_vote(np.zeros((0, 3))).tolist() == []


def test_cohen_kappa_is_sklearns_and_nan_when_undefined() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    for weights in (None, "linear", "quadratic"):
        assert stats.cohen_kappa(a, b, [0, 1, 2], weights) == pytest.approx(
            cohen_kappa_score(a, b, labels=[0, 1, 2], weights=weights)
        )
    assert np.isnan(stats.cohen_kappa([1, 1], [1, 1], [0, 1]))


def test_rank_order_breaks_ties_by_name_whatever_the_input_order() -> None:
    values, names = [0.7, 0.9, 0.7, float("nan"), 0.5], ["b", "c", "a", "d", "e"]
    order = stats.rank_order(values, names)
    assert [names[i] for i in order] == ["c", "a", "b", "e"]
    flipped = stats.rank_order(values[::-1], names[::-1])
    assert [names[::-1][i] for i in flipped] == ["c", "a", "b", "e"]


def test_competition_ranks_share_the_best_rank() -> None:
    assert stats.competition_ranks([0.7, 0.9, 0.7, 0.5]) == [2, 1, 2, 4]
    assert stats.competition_ranks([]) == []
