"""The one ranking of QA models (:mod:`qaeval_core.analysis.ranking`) and its users."""

from __future__ import annotations

import pandas as pd

from qaeval_core.analysis.compare import model_leaderboard
from qaeval_core.analysis.estimates import ALL_MODELS
from qaeval_core.analysis.ranking import RANK_RULE, rankable, ranked_models


def _table(models: list[str], ppi: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"model": [*models, ALL_MODELS], "ppi_estimate": [*ppi, 0.7]})


def test_ties_share_a_rank_and_are_listed_by_name_whatever_the_table_order() -> None:
    """Issue 34.3: the Leaderboard kept the table's order for equal estimates and numbered
    them 1, 2; now both share rank 1 and are listed by name, as analysis.estimates orders."""
    for models, ppi in ((["b", "a", "c"], [0.8, 0.8, 0.6]), (["c", "a", "b"], [0.6, 0.8, 0.8])):
        out = ranked_models(_table(models, ppi))
        assert out["model"].tolist() == ["a", "b", "c", ALL_MODELS]
        assert out["rank"].tolist()[:3] == [1, 1, 3] and out["rank"].isna().iloc[-1]


def test_no_rank_unless_every_model_has_an_estimate() -> None:
    table = _table(["b", "a"], [0.9, float("nan")])
    assert not rankable(table)
    out = ranked_models(table)
    assert out["model"].tolist() == ["a", "b", ALL_MODELS] and out["rank"].isna().all()
    assert "every QA model has a PPI estimate" in RANK_RULE


def test_the_metric_leaderboard_ranks_ties_alike() -> None:
    items = pd.DataFrame({"item_id": range(6), "qa_model": list("aabbcc"), "dataset": "d"})
    correct = [True, False, True, False, True, True]
    human = pd.DataFrame(
        {
            "item_id": range(6),
            "human_correct": correct,
            "final": [2 * c for c in correct],
            "human_score": correct,
        }
    )
    scores = pd.DataFrame(
        {
            "item_id": range(6),
            "metric_id": "m",
            "value": [1.0, 0, 1, 0, 1, 1],
            "decision": [True, False, True, False, True, True],
        }
    )
    board = model_leaderboard(scores, human, items)
    ranks = dict(zip(board["qa_model"], board["human_rank"], strict=True))
    assert ranks == {"c": 1, "a": 2, "b": 2}
