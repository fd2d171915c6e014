"""Metric vs human: statistics against scikit-learn/scipy, paired bootstrap, per-model tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from qaeval_core.analysis.agreement import aggregate_labels, bootstrap_weights
from qaeval_core.analysis.compare import (
    STATISTICS,
    accuracy_deviation,
    bootstrap_statistics,
    confusion_table,
    join_scores,
    metric_vs_human,
    model_leaderboard,
    point_statistics,
    ranking_changes,
    statistics_wide,
    worst_disagreements,
)
from qaeval_core.errors import QAEvalError


def human_frame(finals: list[int], scores: list[float] | None = None) -> pd.DataFrame:
    """A human aggregate with given final values (item ids 0..n-1)."""
    finals_arr = np.asarray(finals)
    return pd.DataFrame(
        {
            "item_id": np.arange(len(finals)),
            "final": finals_arr,
            "human_correct": finals_arr == 2,
            "human_score": finals_arr / 2 if scores is None else scores,
        }
    )


def sample(seed: int, n: int = 80) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n)
    x = np.clip(y + rng.normal(0, 0.3, n), 0, 1).round(2)
    return x, x >= 0.5, y >= 0.5, y


# -- vectorised statistics ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_point_statistics_match_sklearn_and_scipy(seed: int) -> None:
    x, d, h, y = sample(seed)
    got = point_statistics(x, d, h, y)
    assert got["accuracy"] == pytest.approx(accuracy_score(h, d))
    assert got["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(h, d))
    assert got["f1"] == pytest.approx(f1_score(h, d))
    assert got["pearson"] == pytest.approx(stats.pearsonr(x, y)[0])
    assert got["spearman"] == pytest.approx(stats.spearmanr(x, y)[0])
    assert got["kendall_tau_b"] == pytest.approx(stats.kendalltau(x, y)[0])


@pytest.mark.parametrize("seed", range(4))
def test_bootstrap_statistics_equal_point_statistics_on_repeated_data(seed: int) -> None:
    x, d, h, y = sample(seed, n=50)
    ones = bootstrap_statistics(np.ones((1, len(x))), x, d, h, y)
    point = point_statistics(x, d, h, y)
    for s in STATISTICS:
        assert ones[s][0] == pytest.approx(point[s], abs=1e-12), s
    weights = next(bootstrap_weights(len(x), 10, seed=seed))
    fast = bootstrap_statistics(weights, x, d, h, y)
    for b in range(len(weights)):
        idx = np.repeat(np.arange(len(x)), weights[b].astype(int))
        slow = point_statistics(x[idx], d[idx], h[idx], y[idx])
        for s in STATISTICS:
            assert fast[s][b] == pytest.approx(slow[s], abs=1e-10, nan_ok=True), s


def test_kendall_with_continuous_human_scores_and_ties() -> None:
    rng = np.random.default_rng(9)
    x = rng.integers(0, 4, 40).astype(float)  # few levels: the roles swap internally
    y = rng.random(40)
    weights = next(bootstrap_weights(40, 5, seed=1))
    fast = bootstrap_statistics(weights, x, None, y > 0.5, y)["kendall_tau_b"]
    for b in range(5):
        idx = np.repeat(np.arange(40), weights[b].astype(int))
        assert fast[b] == pytest.approx(stats.kendalltau(x[idx], y[idx])[0], abs=1e-10)


def test_undefined_statistics_are_nan() -> None:
    x = np.array([0.1, 0.2, 0.9])
    got = point_statistics(x, np.array([False, False, False]), np.array([True] * 3), np.ones(3))
    assert np.isnan(got["precision"]) and np.isnan(got["balanced_accuracy"])
    assert np.isnan(got["pearson"]) and np.isnan(got["kendall_tau_b"])
    assert got["recall"] == 0.0 and got["accuracy"] == 0.0
    boot = bootstrap_statistics(
        np.ones((1, 3)), x, np.array([False] * 3), np.array([True] * 3), np.ones(3)
    )
    assert np.isnan(boot["precision"][0]) and np.isnan(boot["pearson"][0])


# -- metric_vs_human -------------------------------------------------------------------------
def test_perfect_metric_gives_one_and_ci_collapses() -> None:
    human = human_frame([0, 2, 2, 0, 1, 2, 0, 2, 1, 0])
    scores = pd.DataFrame(
        {
            "item_id": human.item_id,
            "metric_id": "oracle",
            "value": human.human_score,
            "decision": human.human_correct,
        }
    )
    table = metric_vs_human(scores, human, n_boot=200, seed=0).set_index("statistic")
    for s in STATISTICS:
        assert table.loc[s, "estimate"] == pytest.approx(1.0), s
        assert table.loc[s, "ci_low"] == pytest.approx(1.0), s
        assert table.loc[s, "ci_high"] == pytest.approx(1.0), s


def test_metric_vs_human_against_scipy_and_paired_bootstrap() -> None:
    x, d, h, y = sample(5, n=120)
    human = human_frame(np.where(h, 2, 0).tolist(), y.tolist())
    a = pd.DataFrame({"item_id": human.item_id, "metric_id": "a", "value": x, "decision": d})
    b = a.assign(metric_id="b")
    table = metric_vs_human(pd.concat([a, b]), human, n_boot=300, seed=3)
    wide = statistics_wide(table).set_index("metric_id")
    assert wide.loc["a", "spearman"] == pytest.approx(stats.spearmanr(x, y)[0])
    assert wide.loc["a", "kendall_tau_b"] == pytest.approx(stats.kendalltau(x, y)[0])
    # the same scores under two names see the same resamples: identical intervals
    low = table.pivot(index="statistic", columns="metric_id", values="ci_low")
    assert (low["a"] == low["b"]).all()
    row = table[(table.metric_id == "a") & (table.statistic == "pearson")].iloc[0]
    assert row.ci_low < row.estimate < row.ci_high
    assert row.n_items == 120 and row.n_boot_valid == 300


def test_thresholds_fill_missing_decisions() -> None:
    human = human_frame([0, 2, 2, 0])
    scores = pd.DataFrame({"item_id": range(4), "metric_id": "m", "value": [0.1, 0.9, 0.7, 0.6]})
    no_threshold = metric_vs_human(scores, human, n_boot=10).set_index("statistic")
    assert np.isnan(no_threshold.loc["accuracy", "estimate"])
    with_threshold = metric_vs_human(scores, human, thresholds={"m": 0.65}, n_boot=10)
    assert with_threshold.set_index("statistic").loc["accuracy", "estimate"] == 1.0


def test_join_ignores_items_without_verdict_and_checks_columns() -> None:
    labels = pd.DataFrame({"item_id": [1, 1], "rater": ["a", "b"], "value": [2, 2]})
    human = aggregate_labels(labels, items=pd.DataFrame({"item_id": [1, 2]}))
    scores = pd.DataFrame({"item_id": [1, 2], "metric_id": "m", "value": [0.9, 0.1]})
    assert join_scores(scores, human).item_id.tolist() == [1]
    with pytest.raises(QAEvalError, match="missing metric_id"):
        join_scores(scores.drop(columns="metric_id"), human)


# -- per model -------------------------------------------------------------------------------
@pytest.fixture
def leaderboard_data() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    # model A: humans 3/4 correct, model B: 1/4; the lenient metric says everything is correct,
    # the contrarian inverts every verdict. Item 0 was answered by both A and B.
    items = pd.DataFrame(
        {
            "item_id": range(7),
            "dataset": "nq",
            "qa_model": ["A | B", "A", "A", "A", "B", "B", "B"],
        }
    )
    human = human_frame([2, 2, 2, 0, 0, 0, 1])
    correct = human.human_correct.to_numpy()
    scores = pd.concat(
        [
            pd.DataFrame(
                {"item_id": range(7), "metric_id": "lenient", "value": 1.0, "decision": True}
            ),
            pd.DataFrame(
                {
                    "item_id": range(7),
                    "metric_id": "contrarian",
                    "value": np.where(correct, 0.2, 0.8),
                    "decision": ~correct,
                }
            ),
        ]
    )
    return items, human, scores


def test_accuracy_deviation_per_model(leaderboard_data) -> None:
    items, human, scores = leaderboard_data
    dev = accuracy_deviation(scores, human, items).set_index(["qa_model", "metric_id"])
    assert dev.loc[("A", "lenient"), "human_accuracy"] == 0.75
    assert dev.loc[("A", "lenient"), "deviation"] == pytest.approx(0.25)
    assert dev.loc[("B", "lenient"), "human_accuracy"] == 0.25
    assert dev.loc[("B", "lenient"), "deviation"] == pytest.approx(0.75)
    assert dev.loc[("B", "contrarian"), "agreement"] == 0.0
    assert dev.loc[("A", "lenient"), "n_items"] == 4


def test_ranking_flips(leaderboard_data) -> None:
    items, human, scores = leaderboard_data
    board = model_leaderboard(scores, human, items)
    first = board[board.metric_id == "contrarian"].set_index("qa_model")
    assert first.loc["A", "human_rank"] == 1 and first.loc["A", "metric_rank"] == 2
    changes = ranking_changes(board).set_index("metric_id")
    assert changes.loc["contrarian", "n_flips"] == 1
    assert changes.loc["contrarian", "flips"] == ["A > B"]
    assert changes.loc["contrarian", "kendall_tau_b"] == pytest.approx(-1.0)
    assert changes.loc["lenient", "n_flips"] == 0  # a tie is not a flip
    assert np.isnan(changes.loc["lenient", "kendall_tau_b"])


def test_worst_disagreements_order_and_strictness(leaderboard_data) -> None:
    items, human, scores = leaderboard_data
    scores = scores.copy()
    scores.loc[scores.metric_id == "contrarian", "value"] = [0.3, 0.1, 0.2, 0.9, 0.7, 0.8, 0.6]
    worst = worst_disagreements(scores, human, items, metric_id="contrarian", limit=None)
    assert len(worst) == 7
    assert worst.item_id.iloc[0] == 3  # "correct" with the highest score, humans say 0
    assert worst.confidence.is_monotonic_decreasing
    assert {"question", "qa_model"} & set(worst.columns) == {"qa_model"}
    strict = worst_disagreements(scores, human, metric_id="contrarian", strict=True, limit=None)
    assert 6 not in strict.item_id.tolist()  # humans found item 6 unclear
    assert len(worst_disagreements(scores, human, limit=2)) == 2


def test_confusion_table(leaderboard_data) -> None:
    _, human, scores = leaderboard_data
    table = confusion_table(scores, human, "contrarian")
    assert table.loc[True].tolist() == [3, 1, 0]
    assert table.loc[False].tolist() == [0, 0, 3]
