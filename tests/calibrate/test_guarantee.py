"""Triage with a guarantee (issue 24, item 3): fixed-sequence testing on calibration labels.

The simulations draw calibration sets from a judge whose chance of being right at each doubt
is known, so the accuracy of the chosen band on the whole population is known exactly and the
promise (accuracy >= target with probability >= 1 - risk) can be checked over seeded draws.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from qaeval_core.calibrate import fit_judge
from qaeval_core.calibrate.guarantee import (
    GuaranteeNotSupported,
    band_thresholds,
    fit_guarantee,
)
from qaeval_core.calibrate.options import CrossValidation, TriagePolicy
from qaeval_core.calibrate.triage import CURVE_SHARES, effort_curve, fit_probability
from qaeval_core.errors import ConfigError, InputError
from qaeval_core.judge import FeatureSpec, Judge, config_checksum
from qaeval_core.judge.guarantee import binomial_evidence
from qaeval_core.metrics.base import get_metric

#: Doubts are uniform on [0, MAX_D]; the judge is right with chance 1 - SLOPE * doubt, so on
#: the items with doubt below t its accuracy is 1 - SLOPE * t / 2 (SLOPE 1: calibrated doubt;
#: SLOPE 1.6: an over-confident judge whose doubt understates its errors).
MAX_D = 0.5


def _draw(seed: int, n: int, slope: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    d = rng.uniform(0, MAX_D, n)
    return d, rng.random(n) < 1 - slope * d


def _true_accuracy(share: float, threshold: float, slope: float) -> float:
    t = MAX_D if share <= 0 else min(threshold, MAX_D)
    return 1 - slope * t / 2


def _walk(d: np.ndarray, right: np.ndarray, target: float, risk: float, **kw):
    return fit_guarantee(
        d,
        right,
        CURVE_SHARES,
        band_thresholds(d, CURVE_SHARES),
        guarantee=target,
        risk=risk,
        estimate_labels=False,
        **kw,
    )


@pytest.mark.parametrize(
    ("slope", "target", "risk"), [(1.0, 0.9, 0.1), (1.0, 0.85, 0.1), (1.6, 0.85, 0.2)]
)
def test_the_guarantee_holds_in_at_least_1_minus_risk_of_calibration_draws(
    slope: float, target: float, risk: float
) -> None:
    draws, held, supported, decided = 300, 0, 0, []
    for seed in range(draws):
        d, right = _draw(seed, 300, slope)
        fit = _walk(d, right, target, risk)
        g = fit.guarantee
        if g is None:  # promising nothing never breaks the promise
            held += 1
            continue
        supported += 1
        held += _true_accuracy(g.share, g.threshold, slope) >= target
        decided.append(g.n_decided / g.n_labels)
    assert held / draws >= 1 - risk
    # ...and it is not vacuous: most draws support a band that leaves the judge real work.
    assert supported / draws >= 0.5
    assert np.mean(decided) >= 0.1


def _clustered(seed: int, n_questions: int, per_question: int = 20):
    """Many answers per question that are right or wrong together: each question shifts its
    answers' chance of being right by the same amount (sd 0.3), as hard questions do."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n_questions), per_question)
    d = rng.uniform(0, MAX_D, len(groups))
    shift = rng.normal(0, 0.3, n_questions)[groups]
    return d, rng.random(len(d)) < np.clip(1 - d + shift, 0, 1), groups


def test_correlated_answers_need_the_design_effect_to_keep_the_promise() -> None:
    d_pop, right_pop, _ = _clustered(10_000, 10_000)  # the population, to measure the truth
    order = np.argsort(d_pop)
    accuracy_below = np.cumsum(right_pop[order]) / np.arange(1, len(d_pop) + 1)

    def true_accuracy(g) -> float:
        n = len(d_pop) if g.share <= 0 else int(np.searchsorted(d_pop[order], g.threshold))
        return float(accuracy_below[max(n, 1) - 1])

    held = {"plain": 0, "design effect": 0}
    draws, target, risk = 200, 0.8, 0.1
    for seed in range(draws):
        d, right, groups = _clustered(seed, 15)  # 300 labels on 15 questions
        for test, by in (("plain", None), ("design effect", groups)):
            g = _walk(d, right, target, risk, groups=by).guarantee
            held[test] += g is None or true_accuracy(g) >= target
    assert held["design effect"] / draws >= 1 - risk
    assert held["plain"] / draws < 1 - risk  # the plain test promises too much here


def test_the_walk_is_fixed_sequence_testing_with_the_exact_binomial_test() -> None:
    d, right = _draw(7, 300)
    fit = _walk(d, right, 0.85, 0.1)
    tests = fit.tests
    assert tests["share"].is_monotonic_decreasing  # most confident band first
    walking, chosen = True, None
    for row in tests.itertuples(index=False):
        kept = np.ones(len(d), bool) if row.share == 0 else d < row.threshold
        assert row.n_decided == kept.sum() and row.n_right == right[kept].sum()
        p = stats.binomtest(int(row.n_right), int(row.n_decided), 0.85, alternative="greater")
        assert row.p_value == pytest.approx(p.pvalue, rel=1e-9)
        if not row.testable:
            continue
        assert row.tested == walking
        if walking and row.p_value <= 0.1:
            chosen = row
        elif walking:
            walking = False
    assert chosen is not None and fit.guarantee is not None
    assert fit.guarantee.share == chosen.share and fit.guarantee.n_right == chosen.n_right
    p, lower = binomial_evidence(chosen.n_right, chosen.n_decided, 0.85, 0.1)
    assert fit.guarantee.p_value == pytest.approx(p) and lower >= 0.85


def test_band_thresholds_are_the_effort_curves() -> None:
    d, right = _draw(1, 200)
    score = np.clip(np.where(right, 1 - d, d) + 0.01, 0.02, 0.98)  # any scores will do
    calibrator = fit_probability(score, right)
    curve = effort_curve(score, right, calibrator, n_boot=20)
    from qaeval_core.judge.triage import doubt

    item_doubt = doubt(calibrator.predict(score), score >= 0.5)
    np.testing.assert_allclose(
        band_thresholds(item_doubt, curve["share"]), curve["threshold"], rtol=0, atol=0
    )


def test_unsupported_says_so_and_how_many_more_labels_would_do() -> None:
    d, right = _draw(3, 150)
    fit = fit_guarantee(
        d, right, CURVE_SHARES, band_thresholds(d, CURVE_SHARES), guarantee=0.9, risk=0.1
    )
    assert fit.guarantee is None and fit.more_labels is not None
    message = fit.message()
    assert "cannot support" in message and f"About {fit.more_labels} more labels" in message
    # With that many labels from the same judge, most calibration sets support it.
    n = 150 + fit.more_labels
    ok = [_walk(*_draw(100 + s, n), 0.9, 0.1).supported for s in range(60)]
    assert np.mean(ok) >= 0.6
    # ...and with the labels there are, most do not (the estimate is not just "a few").
    assert np.mean([_walk(*_draw(200 + s, 150), 0.9, 0.1).supported for s in range(60)]) < 0.6


def test_a_target_above_what_the_judge_reaches_asks_for_no_labels() -> None:
    rng = np.random.default_rng(0)
    d = rng.uniform(0, 0.5, 300)
    right = rng.random(300) < 0.8  # 80% right whatever its doubt
    fit = fit_guarantee(
        d, right, CURVE_SHARES, band_thresholds(d, CURVE_SHARES), guarantee=0.95, risk=0.1
    )
    assert fit.guarantee is None and fit.more_labels is None
    assert "lower the target accuracy" in fit.message()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"guarantee": 1.0}, "guarantee must be a number in"),
        ({"guarantee": 0.9, "risk": 0}, "risk must be a number in"),
        ({"guarantee": True}, "guarantee must be"),
        ({"guarantee": 0.9, "start_errors": -1}, "start_errors"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, match: str) -> None:
    d, right = _draw(0, 50)
    with pytest.raises(InputError, match=match):
        fit_guarantee(d, right, [0.0], [1.0], **kwargs)


# -- the judge file ---------------------------------------------------------------------------


def _data(seed: int = 0, n: int = 400) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f1, recall = rng.random(n), rng.random(n)
    p = 1 / (1 + np.exp(-10 * (0.7 * f1 + 0.3 * recall - 0.45)))
    return pd.DataFrame({"f1": f1, "recall": recall}), rng.random(n) < p, np.arange(n) // 2


def _fit(**kwargs):
    X, y, groups = _data()
    features = [FeatureSpec.from_metric(get_metric(m)) for m in ("f1", "recall")]
    return fit_judge(
        X,
        y,
        features,
        groups=groups,
        cv=CrossValidation(n_boot=100),
        candidates=["threshold"],
        triage=TriagePolicy(**kwargs),
    )


@pytest.fixture(scope="module")
def guaranteed() -> tuple[Judge, object]:
    return _fit(guarantee=0.9, risk=0.1)


def test_fit_judge_records_the_guarantee_on_its_own_band(guaranteed) -> None:
    judge, report = guaranteed
    g = judge.guarantee
    assert g is not None and judge.triage is not None
    assert (g.share, g.threshold) == (judge.triage.share, judge.triage.threshold)
    assert g.n_labels == report.n_labels == judge.fitted_on["n_labels"]
    assert g.labels == "calibration" and g.target == 0.9 and g.risk == 0.1
    assert report.guarantee.guarantee == g
    assert "With 90% confidence, the judge is right on at least 90%" in g.statement()
    again = Judge.from_config(judge.to_config())
    assert again.guarantee == g and again.to_config() == judge.to_config()
    # Scoring applies the band unchanged; another share drops the guarantee.
    X, _, _ = _data(seed=5)
    assert (judge.judge_scores(X)["judge_outcome"] == "uncertain").any()
    assert judge.with_share(0.05).guarantee is None
    assert judge.with_share(judge.triage.share).guarantee == g


def test_a_judge_without_a_guarantee_writes_no_guarantee_key() -> None:
    judge, _ = _fit(human_share=0.2)
    assert judge.guarantee is None and "guarantee" not in judge.to_config()


def _resigned(config: dict, **changes) -> dict:
    edited = copy.deepcopy(config)
    edited["guarantee"].update(changes)
    edited["checksum"] = config_checksum(edited)
    return edited


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"target": 0.99}, "do not support|its counts give"),
        ({"risk": 0.001}, "do not support|its counts give"),
        ({"share": 0.05}, "tested for the band"),
        ({"n_labels": 10}, "impossible for a band"),
        ({"n_right": 0}, "its counts give"),
        ({"labels": "audit"}, "calibration"),
        ({"target": 1.5}, r"target must be in \(0, 1\)"),
        ({"design_effect": 0.5}, r"design_effect must be in"),
        ({"design_effect": 3.0}, "do not support|its counts give"),
    ],
)
def test_a_tampered_guarantee_is_refused(guaranteed, changes: dict, match: str) -> None:
    judge, _ = guaranteed
    with pytest.raises(ConfigError, match=match):
        Judge.from_config(_resigned(judge.to_config(), **changes))


def test_a_guarantee_needs_its_band_and_no_llm_tier(guaranteed) -> None:
    judge, _ = guaranteed
    config = judge.to_config()
    config["triage"] = None
    config["checksum"] = config_checksum(config)
    with pytest.raises(ConfigError, match="needs a triage band"):
        Judge.from_config(config)
    # The evidence re-checked also when only the counts were edited consistently with p.
    config = judge.to_config()
    config["fitted_on"]["n_labels"] += 1
    config["checksum"] = config_checksum(config)
    with pytest.raises(ConfigError, match="fitted on"):
        Judge.from_config(config)


def test_unsupported_guarantee_in_fit_judge_is_an_input_error_with_the_labels_needed() -> None:
    with pytest.raises(GuaranteeNotSupported, match="more labels|lower the target") as info:
        _fit(guarantee=0.995, risk=0.1)
    assert isinstance(info.value, InputError) and info.value.fit.guarantee is None
    with pytest.raises(InputError, match="one of"):
        _fit(guarantee=0.9, human_share=0.2)


def test_an_llm_tier_is_refused_on_a_guaranteed_judge(guaranteed) -> None:
    from qaeval_core.calibrate.cascade import add_llm_tier

    judge, report = guaranteed
    with pytest.raises(InputError, match="tested without an LLM tier"):
        add_llm_tier(judge, report, [], [])
