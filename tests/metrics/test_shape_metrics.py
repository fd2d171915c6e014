"""Answer-shape features and the number reading under them (``qaeval_core/text/quantities.py``):
number parsing, exact and graded agreement, hedges, length."""

from __future__ import annotations

import pytest

from qaeval_core.calibrate.cost import input_family
from qaeval_core.calibrate.inputs import FEATURE_ONLY, metric_specs
from qaeval_core.metrics.base import get_metric, metric_ids
from qaeval_core.metrics.shape import (
    Brevity,
    NoHedge,
    NumberAgree,
    NumberCloseness,
    NumberClosenessScaled,
    NumberMatch,
)
from qaeval_core.schema import Item
from qaeval_core.text.quantities import (
    closeness,
    extract_numbers,
    number_closeness,
    number_features,
    numbers_equal,
    quantities,
)


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


def test_no_hedge_reads_the_refusal_rule() -> None:
    """Issue 34: no_hedge means "not a refusal", the judge's ``not_attempted`` rule, not a
    pattern of its own that fired on "the unknown" or "there was no publication" (two MMLU-Pro
    answers, one labelled correct) and missed empty answers."""
    texts = {
        "The answer cannot be determined from the information given.": 0.0,
        "I don't know.": 0.0,
        "": 0.0,  # empty: not attempted (version 1 gave 1)
        "I'm not sure, but maybe Paris": 1.0,  # an attempt (version 1 gave 0)
        "how inquiry into the unknown is possible": 1.0,  # version 1 gave 0
        "because there was no publication of the statement to a third party": 1.0,
        "Paris is the capital of France.": 1.0,
    }
    items = [Item("q", ("Paris",), text) for text in texts]
    assert NoHedge().score_batch(items).scores.tolist() == list(texts.values())
    assert NoHedge().version == "2"  # its numbers changed: stored scores are not reused


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


def test_closeness_is_graded_by_relative_error() -> None:
    assert closeness(100.0, 100.0) == 1.0
    assert closeness(100.0, 100.05) == 1.0  # 0.05%: at most 0.1% counts as equal
    assert closeness(100.0, 101.0, sig=4) == pytest.approx(0.5, abs=0.01)  # 1% -> 0.5
    assert closeness(100.0, 120.0, sig=4) == 0.0  # 10% and more -> 0
    assert closeness(2.0, -2.0) == 0.0
    assert closeness(0.0, 0.001) == 0.0
    assert closeness(1984.0, 1990.0, exact_integers=True) == 0.0


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (r"\( \frac{\pi - 2}{\pi} \)", [0.36338]),
        (r"\frac{3}{16\pi} \, \text{W/m}^2", [0.059683]),
        (r"\sqrt{2}", [1.41421]),
        ("4.24 × 10⁻³ M", [0.00424]),
        (r"3.56 \times 10^{10}", [3.56e10]),
        ("368 watts/m^2, 264 K", [368.0, 264.0]),  # the 2 of m^2 is no number
        (r"1 - \frac{1}{n}", [1.0, 1.0]),  # a variable: left as written
    ],
)
def test_quantities_read_latex_and_unicode(text: str, values: list[float]) -> None:
    assert [q.values[0] for q in quantities(text)] == pytest.approx(values, rel=1e-4)


@pytest.mark.parametrize(
    ("candidate", "reference", "strict", "scaled"),
    [
        ("60.68 J", "45 ft-lb", 1.0, 1.0),  # unit conversion (45 ft-lb = 61.0 J)
        ("38,875 lb", "38861.6 lb", 1.0, 1.0),  # 0.03%
        ("309 K", "35.91 °C", 1.0, 1.0),  # temperature offset
        (r"\( \frac{\pi - 2}{\pi} \)", "0.363", 1.0, 1.0),
        (r"\(\frac{3}{16\pi} \, \text{W/m}^2\)", "0.06 watt/meter^2", 1.0, 1.0),
        ("4.24 × 10⁻³ M", "4.2 × 10^-3", 1.0, 1.0),
        ("24.5", "0.0245 kPa", 0.0, 1.0),  # a prefix left unsaid: the scaled input only
        ("3.6967", "3.6597", 0.5, 0.5),  # 1% off: half
        ("54 Btu", "59.2 Btu", 0.03, 0.03),  # 9% off: almost nothing
        ("1990", "1984", 0.0, 0.0),  # a different year is not close
        ("15", "1.5", 0.0, 0.0),  # nor a factor of ten
        ("163", "164", 0.0, 0.0),  # small integers (counts) are exact
        ("2.49 km/s", "5275 m/s", 0.0, 0.0),
        ("Paris", "Paris", 0.0, 0.0),  # nothing to compare
    ],
)
def test_number_closeness(candidate: str, reference: str, strict: float, scaled: float) -> None:
    assert number_closeness(candidate, [reference]) == pytest.approx(strict, abs=0.01)
    assert number_closeness(candidate, [reference], scaled=True) == pytest.approx(scaled, abs=0.01)


def test_number_closeness_averages_a_list_and_takes_the_best_reference() -> None:
    ref = "368 watts/m^2, 264 K, 18.4 watts/m^2"
    assert number_closeness("368.55, 263.8, 18.48", [ref]) > 0.8
    assert number_closeness("368", [ref]) == pytest.approx(1 / 3)
    assert number_closeness("1990", ["1984", "1990"]) == 1.0


def test_graded_number_metrics_are_registered() -> None:
    items = [Item("q", ("0.0245 kPa",), "24.5"), Item("q", ("45 ft-lb",), "60.68 J")]
    assert NumberCloseness().score_batch(items).scores.tolist() == [0.0, 1.0]
    assert NumberClosenessScaled().score_batch(items).scores.tolist() == [1.0, 1.0]
    for metric in (NumberCloseness(), NumberClosenessScaled()):
        assert get_metric(metric.id).config_hash() == metric.config_hash()


def test_every_default_shape_input_is_an_input_and_not_a_judge() -> None:
    shape = {col for col, metric in metric_specs() if input_family(metric) == "shape"}
    assert shape == set(FEATURE_ONLY)
    assert {"number_closeness", "number_closeness_scaled"} <= shape
    # measured and not kept (experiments/numeric_inputs.py defines them)
    assert not {"number_count_ratio", "list_coverage", "yes_no_agree"} & set(metric_ids())
