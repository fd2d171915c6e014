"""Agreement: alpha against hand computation, the textbook, nltk and the package; aggregation."""

from __future__ import annotations

import doctest
import itertools
import json

import krippendorff
import numpy as np
import pandas as pd
import pytest
from _paths import SHARED_DATA
from nltk.metrics.agreement import AnnotationTask
from sklearn.metrics import cohen_kappa_score

from qaeval_core.analysis import agreement, compare
from qaeval_core.analysis.agreement import (
    aggregate_labels,
    alpha_by_group,
    alpha_from_counts,
    alpha_with_ci,
    bootstrap_weights,
    check_labels,
    krippendorff_alpha,
    label_count_table,
    lave_soft_score,
    pairwise_kappa,
    rater_vs_rest,
    value_counts,
)
from qaeval_core.errors import QAEvalError

KAMALLOO = SHARED_DATA / "kamalloo_nq301.jsonl"

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers,
# 12 units, values 1-5, missing values. Published nominal alpha = 0.743.
TEXTBOOK = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]
# Same paper, section A: binary data, two observers, ten units. Published alpha = 0.095.
BINARY_A = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
BINARY_B = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]


def frame_from_matrix(matrix: list[list[float]]) -> pd.DataFrame:
    rows = [
        {"item_id": unit, "rater": f"r{coder}", "value": int(v)}
        for coder, row in enumerate(matrix)
        for unit, v in enumerate(row)
        if not np.isnan(v)
    ]
    return pd.DataFrame(rows)


def counts_from_matrix(matrix: list[list[float]], domain: list[int]) -> np.ndarray:
    data = np.asarray(matrix, dtype=float)
    return np.array([[np.sum(data[:, u] == v) for v in domain] for u in range(data.shape[1])])


def hand_nominal_alpha(matrix: list[list[float]]) -> float:
    """Textbook procedure: coincidence matrix from pairable values, then 1 - Do/De."""
    data = np.asarray(matrix, dtype=float)
    values = sorted({v for v in data.ravel() if not np.isnan(v)})
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for u in range(data.shape[1]):
        col = [v for v in data[:, u] if not np.isnan(v)]
        m = len(col)
        if m < 2:
            continue
        for a, b in itertools.permutations(range(m), 2):
            o[index[col[a]], index[col[b]]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = (n * n - (n_c**2).sum()) / (n - 1)
    return 1 - observed / expected


def random_labels(seed: int, n_items: int = 40, raters: int = 4, p_missing: float = 0.3):
    rng = np.random.default_rng(seed)
    truth = rng.choice([0, 1, 2], size=n_items, p=[0.4, 0.2, 0.4])
    rows = []
    for item in range(n_items):
        for r in range(raters):
            if rng.random() < p_missing:
                continue
            value = truth[item] if rng.random() < 0.7 else rng.integers(0, 3)
            rows.append({"item_id": item, "rater": f"r{r}", "value": int(value)})
    return pd.DataFrame(rows)


# -- alpha -----------------------------------------------------------------------------------
def test_textbook_nominal_alpha_by_hand_package_and_vectorised() -> None:
    hand = hand_nominal_alpha(TEXTBOOK)
    assert round(hand, 3) == 0.743
    counts = counts_from_matrix(TEXTBOOK, [1, 2, 3, 4, 5])
    assert alpha_from_counts(counts, level="nominal")[0] == pytest.approx(hand, abs=1e-12)
    package = krippendorff.alpha(TEXTBOOK, level_of_measurement="nominal")
    assert package == pytest.approx(hand, abs=1e-12)


def test_textbook_ordinal_alpha_matches_package() -> None:
    counts = counts_from_matrix(TEXTBOOK, [1, 2, 3, 4, 5])
    ours = alpha_from_counts(counts, level="ordinal")[0]
    package = krippendorff.alpha(
        TEXTBOOK, value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal"
    )
    assert ours == pytest.approx(package, abs=1e-12)
    assert round(ours, 3) == 0.815


def test_binary_textbook_case_through_labels_frame() -> None:
    # 1 -> "clearly correct" (2), 0 -> "clearly incorrect" (0)
    frame = frame_from_matrix([[2 * v for v in BINARY_A], [2 * v for v in BINARY_B]])
    alpha = krippendorff_alpha(frame, level="nominal")
    assert round(alpha, 3) == 0.095
    assert alpha == pytest.approx(hand_nominal_alpha([BINARY_A, BINARY_B]), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_nominal_alpha_matches_nltk(seed: int) -> None:
    frame = random_labels(seed)
    binary = [(r.rater, r.item_id, int(r.value == 2)) for r in frame.itertuples()]
    assert krippendorff_alpha(frame, level="nominal") == pytest.approx(
        AnnotationTask(binary).alpha(), abs=1e-9
    )
    # nominal alpha on the raw three values, via the vectorised path
    _, counts = value_counts(frame, level="ordinal")
    raw = [(r.rater, r.item_id, int(r.value)) for r in frame.itertuples()]
    assert alpha_from_counts(counts, level="nominal")[0] == pytest.approx(
        AnnotationTask(raw).alpha(), abs=1e-9
    )


@pytest.mark.parametrize("level", ["nominal", "ordinal"])
def test_vectorised_resamples_equal_package_on_repeated_data(level: str) -> None:
    frame = random_labels(7, n_items=30)
    _, counts = value_counts(frame, level=level)  # type: ignore[arg-type]
    weights = next(bootstrap_weights(len(counts), 20, seed=11))
    fast = alpha_from_counts(counts, weights, level=level)  # type: ignore[arg-type]
    for b in range(len(weights)):
        repeated = np.repeat(counts, weights[b].astype(int), axis=0)
        slow = krippendorff.alpha(
            value_counts=repeated,
            value_domain=list(range(counts.shape[1])),
            level_of_measurement=level,
        )
        assert fast[b] == pytest.approx(slow, abs=1e-10)


def test_ordinal_alpha_uses_fixed_domain_even_without_middle_value() -> None:
    # no "unclear" at all: ordinal alpha must still be defined on 0 < 1 < 2
    frame = frame_from_matrix([[0, 2, 2, 0, 2], [0, 2, 0, 0, 2]])
    expected = krippendorff.alpha(
        value_counts=value_counts(frame, level="ordinal")[1],
        value_domain=[0, 1, 2],
        level_of_measurement="ordinal",
    )
    assert krippendorff_alpha(frame, level="ordinal") == pytest.approx(expected)


def test_alpha_undefined_cases_are_nan() -> None:
    single = pd.DataFrame({"item_id": [1, 2], "rater": ["a", "a"], "value": [2, 0]})
    assert np.isnan(krippendorff_alpha(single))
    constant = frame_from_matrix([[2, 2, 2], [2, 2, 2]])
    assert np.isnan(krippendorff_alpha(constant))


def test_perfect_agreement_ci_collapses_to_one() -> None:
    frame = frame_from_matrix([[0, 2, 2, 0, 1, 2], [0, 2, 2, 0, 1, 2]])
    est = alpha_with_ci(frame, level="ordinal", n_boot=300, seed=1)
    assert est.alpha == pytest.approx(1.0)
    assert est.ci_low == pytest.approx(1.0) and est.ci_high == pytest.approx(1.0)


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    frame = random_labels(3, n_items=80)
    a = alpha_with_ci(frame, n_boot=400, seed=5)
    b = alpha_with_ci(frame, n_boot=400, seed=5)
    assert a == b
    assert a.ci_low <= a.alpha <= a.ci_high
    assert a.n_boot_valid == 400


def test_bootstrap_chunks_equal_one_shot() -> None:
    one = np.concatenate(list(bootstrap_weights(10, 50, seed=2)))
    many = np.concatenate(list(bootstrap_weights(10, 50, seed=2, chunk=30)))
    assert one.shape == many.shape == (50, 10)
    assert (one.sum(axis=1) == 10).all() and (many.sum(axis=1) == 10).all()


def test_degenerate_resamples_are_skipped() -> None:
    # two items everyone marks incorrect, one disputed: resamples without it have no alpha
    frame = frame_from_matrix([[0, 0, 0], [0, 0, 2]])
    est = alpha_with_ci(frame, n_boot=200, seed=0)
    assert 0 < est.n_boot_valid < 200


def test_alpha_by_group_explodes_models_and_rules() -> None:
    labels = pd.DataFrame(
        {
            "item_id": [1, 1, 2, 2, 3, 3],
            "rater": ["a", "b"] * 3,
            "value": [2, 2, 0, 2, 0, 0],
            "rule": [1, None, 4, 4, None, None],
        }
    )
    items = pd.DataFrame(
        {"item_id": [1, 2, 3], "dataset": ["d"] * 3, "qa_model": ["m1 | m2", "m2", "m1"]}
    )
    table = alpha_by_group(labels, items, n_boot=50, min_pairable=1)
    overall = table[(table.grouping == "overall") & (table.level == "nominal")]
    assert overall.alpha.iloc[0] == pytest.approx(krippendorff_alpha(labels))
    models = table[(table.grouping == "qa_model") & (table.level == "nominal")]
    assert models.set_index("group").n_items.to_dict() == {"m1": 2, "m2": 2}
    rules = table[(table.grouping == "rule") & (table.level == "nominal")]
    assert rules.set_index("group").n_items.to_dict() == {1: 1, 4: 1}
    with pytest.raises(QAEvalError, match="by: expected"):
        alpha_by_group(labels, items, by=["rater"])


def test_kamalloo_alpha_close_to_published() -> None:
    if not KAMALLOO.exists():
        pytest.skip(f"{KAMALLOO} not present")
    rows = [json.loads(line) for line in KAMALLOO.read_text().splitlines() if line.strip()]
    labels = pd.DataFrame(
        [
            {"item_id": row["id"], "rater": r["rater"], "value": 2 * r["label"]}
            for row in rows
            for r in row["human"]["raters"]
            if r.get("label") is not None
        ]
    )
    alpha = krippendorff_alpha(labels, level="nominal")
    assert alpha == pytest.approx(0.73, abs=0.02)


# -- kappa and per-rater agreement -----------------------------------------------------------
def test_pairwise_kappa_matches_sklearn_on_co_labelled_items() -> None:
    frame = random_labels(4, n_items=50)
    table = pairwise_kappa(frame, scale="3-point", weights="linear")
    wide = frame.pivot(index="item_id", columns="rater", values="value")
    for row in table.itertuples():
        both = wide[[row.rater_a, row.rater_b]].dropna()
        expected = cohen_kappa_score(
            both[row.rater_a], both[row.rater_b], labels=[0, 1, 2], weights="linear"
        )
        assert row.n_items == len(both)
        assert row.kappa == pytest.approx(expected)
    binary = pairwise_kappa(frame)
    assert len(binary) == 6 and binary.kappa.between(-1, 1).all()


def test_kappa_undefined_is_nan() -> None:
    frame = frame_from_matrix([[2, 2, 2], [2, 2, 2]])
    assert np.isnan(pairwise_kappa(frame).kappa.iloc[0])


def test_rater_vs_rest_finds_the_odd_rater() -> None:
    good = [2, 0, 2, 0, 2, 0, 2, 2]
    odd = [0, 2, 0, 2, 2, 0, 0, 2]
    frame = frame_from_matrix([good, good, odd])
    table = rater_vs_rest(frame).set_index("rater")
    assert table.loc["r0", "agreement"] == 1.0
    assert table.loc["r2", "agreement"] == pytest.approx(np.mean(np.array(good) == odd))
    assert table.loc["r2", "alpha_without"] == pytest.approx(1.0)
    assert table.loc["r2", "n_items"] == 8


def test_rater_vs_rest_skips_items_where_the_others_split() -> None:
    frame = frame_from_matrix([[2, 2], [2, 0], [0, 2]])
    table = rater_vs_rest(frame).set_index("rater")
    assert table.loc["r0", "n_items"] == 0  # others split 1-1 on both items


def test_label_count_table() -> None:
    labels = pd.DataFrame({"item_id": [1, 2, 2, 3, 3, 3, 3], "rater": list("aababcd"), "value": 2})
    items = pd.DataFrame({"item_id": [1, 2, 3, 4]})
    table = label_count_table(labels, items)
    assert table.set_index("n_labels").n_items.to_dict() == {"0": 1, "1": 1, "2": 1, "3+": 1}
    assert label_count_table(labels).n_labels.tolist() == ["1", "2", "3+"]


# -- input checks ----------------------------------------------------------------------------
def test_labels_validation_and_last_row_wins() -> None:
    with pytest.raises(QAEvalError, match="missing rater"):
        check_labels(pd.DataFrame({"item_id": [1], "value": [2]}))
    with pytest.raises(QAEvalError, match="value must be 0"):
        check_labels(pd.DataFrame({"item_id": [1], "rater": ["a"], "value": [5]}))
    with pytest.raises(QAEvalError, match="level must be one of"):
        krippendorff_alpha(pd.DataFrame({"item_id": [1], "rater": ["a"], "value": [2]}), level="x")
    history = pd.DataFrame({"item_id": [1, 1], "rater": ["a", "a"], "value": [0, 2]})
    assert check_labels(history).value.tolist() == [2]


# -- aggregation -------------------------------------------------------------------------------
def test_soft_score_generalises_lave() -> None:
    five = lave_soft_score(np.arange(6), 5)
    assert five.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0]  # LAVE's own rule for 5 raters
    assert lave_soft_score(np.arange(4), 3).tolist() == [0.0, 0.0, 0.5, 1.0]
    assert lave_soft_score(np.arange(3), 2).tolist() == [0.0, 0.5, 1.0]
    assert np.isnan(lave_soft_score(0, 0))


def test_majority_ties_adjudication_and_missing_labels() -> None:
    labels = pd.DataFrame(
        {
            "item_id": [1, 1, 2, 2, 2, 3, 3, 3, 4],
            "rater": ["a", "b", "a", "b", "c", "a", "b", "c", "a"],
            "value": [2, 0, 2, 2, 0, 0, 1, 2, 1],
        }
    )
    adjudications = pd.DataFrame({"item_id": [3, 3, 6], "value": [0, 2, 0]})
    items = pd.DataFrame({"item_id": [1, 2, 3, 4, 5, 6]})
    agg = aggregate_labels(labels, adjudications, items).set_index("item_id")

    # 1: a 2-0 split is a tie -> unclear, flagged
    assert agg.loc[1, "majority"] == 1 and agg.loc[1, "tie"]
    assert agg.loc[1, "needs_adjudication"] and not agg.loc[1, "human_correct"]
    assert agg.loc[1, "soft"] == 0.5
    # 2: two of three say correct
    assert agg.loc[2, "majority"] == 2 and not agg.loc[2, "tie"] and agg.loc[2, "human_correct"]
    assert agg.loc[2, "disagreement"]
    # 3: three-way tie, adjudicated (the last adjudication wins) -> not flagged any more
    assert agg.loc[3, "majority"] == 1 and agg.loc[3, "tie"]
    assert agg.loc[3, "adjudicated"] == 2 and agg.loc[3, "final"] == 2
    assert not agg.loc[3, "needs_adjudication"] and agg.loc[3, "human_score"] == 1.0
    # 4: one label is its own majority
    assert agg.loc[4, "majority"] == 1 and agg.loc[4, "n_labels"] == 1
    # 5: no labels at all
    assert agg.loc[5, "n_labels"] == 0 and pd.isna(agg.loc[5, "majority"])
    assert pd.isna(agg.loc[5, "final"]) and pd.isna(agg.loc[5, "human_correct"])
    assert np.isnan(agg.loc[5, "human_score"]) and np.isnan(agg.loc[5, "soft"])
    # 6: adjudicated without any label
    assert agg.loc[6, "final"] == 0 and agg.loc[6, "n_labels"] == 0
    assert list(agg.reset_index().columns) == [
        "item_id",
        "n_labels",
        "n_correct",
        "majority",
        "tie",
        "disagreement",
        "soft",
        "needs_adjudication",
        "adjudicated",
        "final",
        "human_correct",
        "human_score",
    ]


@pytest.mark.parametrize(("policy", "expected"), [("mean", 2 / 3), ("final", 1.0), ("soft", 0.5)])
def test_human_score_policies(policy: str, expected: float) -> None:
    labels = pd.DataFrame({"item_id": [1, 1, 1], "rater": list("abc"), "value": [2, 2, 0]})
    agg = aggregate_labels(labels, score=policy)  # type: ignore[arg-type]
    assert agg.human_score.iloc[0] == pytest.approx(expected)


def test_bad_policy_is_rejected() -> None:
    labels = pd.DataFrame({"item_id": [1], "rater": ["a"], "value": [2]})
    with pytest.raises(QAEvalError, match="score must be one of"):
        aggregate_labels(labels, score="median")  # type: ignore[arg-type]


def test_docstring_examples_run() -> None:
    for module in (agreement, compare):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
