"""Answer-shape features: number parsing and agreement, hedges, length."""

from __future__ import annotations

import pytest

from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.shape import (
    Brevity,
    NoHedge,
    NumberAgree,
    NumberMatch,
    extract_numbers,
    is_hedge,
    number_features,
    numbers_equal,
)
from qaeval_core.schema import Item


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("264g", [264.0]),
        ("$2,700 and $400", [2700.0, 400.0]),
        ("1.6%", [1.6, 0.016]),
        ("7.97$10^3$", [7970.0]),
        ("7.97 x 10^3 m", [7970.0]),
        ("1.2e-3", [0.0012]),
        ("10^{-3}", [0.001]),
        ("twelve apples", [12.0]),
        ("no numbers here", []),
    ],
)
def test_extract_numbers(text: str, values: list[float]) -> None:
    assert [v for v, _ in extract_numbers(text)] == pytest.approx(values)


def test_numbers_equal_at_the_precision_of_the_less_precise() -> None:
    assert numbers_equal((0.070095, 5), (0.0701, 3))  # 7.01% read as a fraction
    assert numbers_equal((7970.0, 4), (7970.0, 3))
    assert not numbers_equal((1984.0, 4), (1990.0, 4))  # years are exact
    assert not numbers_equal((1.0, 1), (-1.0, 1))


@pytest.mark.parametrize(
    ("candidate", "references", "match", "agree"),
    [
        ("264", ["264g"], 1.0, 1.0),  # unit glued to the number (MMLU-Pro)
        ("1.6%", ["0.016"], 1.0, 1.0),
        ("7970", ["7.97$10^3$"], 1.0, 1.0),
        ("1990", ["1984", "May 1984"], 0.0, 0.0),  # a different year conflicts
        ("Paris", ["Paris"], 0.0, 1.0),  # nothing to compare
        ("It happened in 1945", ["Sep 2, 1945"], 0.5, 1.0),
        ("$3,100", ["$400 and $2,700"], 0.0, 0.0),
        ("about twenty", ["20"], 1.0, 1.0),
    ],
)
def test_number_features(candidate: str, references: list[str], match: float, agree: float) -> None:
    assert number_features(candidate, references) == (pytest.approx(match), agree)


def test_hedges() -> None:
    assert is_hedge("I'm not sure, but maybe Paris")
    assert is_hedge("The answer cannot be determined from the information given.")
    assert is_hedge("There is no record of that.")
    assert not is_hedge("Paris is the capital of France.")


def test_feature_metrics_score_batches() -> None:
    items = [
        Item("When did WW2 end?", ("1945",), "It ended in 1945."),
        Item("When did WW2 end?", ("1945",), "1939"),
        Item("Capital of France?", ("Paris",), "I don't know."),
    ]
    assert NumberMatch().score_batch(items).scores.tolist() == [1.0, 0.0, 0.0]
    assert NumberAgree().score_batch(items).scores.tolist() == [1.0, 0.0, 1.0]
    assert NoHedge().score_batch(items).scores.tolist() == [1.0, 1.0, 0.0]
    brev = Brevity().score_batch(items).scores
    assert brev[1] > brev[0]
    # Registered: a judge config can name them.
    assert get_metric("number_agree").config_hash() == NumberAgree().config_hash()
