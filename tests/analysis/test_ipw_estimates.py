"""Selection-aware (inverse-probability-weighted) estimates: labels chosen by the judge's doubt
still give valid, narrower intervals (issue 24, item 1).

The simulations (500 seeded draws per model) draw labels with :func:`inclusion_probabilities`
(growing with the judge's doubt, a floor of half the uniform rate) and compare the weighted
PPI interval with the human-only Wilson interval of a uniform random sample of the same number
of labels. The population (each answer's chance to be correct ``q`` and the judge's
probability ``f``) is fixed per model; each draw redraws the labels ``y ~ Bernoulli(q)`` and the
sample, and the true accuracy is ``mean(q)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from qaeval_core.analysis.estimates import ALL_MODELS, estimate_accuracy
from qaeval_core.analysis.ipw_estimates import weighted_estimate
from qaeval_core.analysis.selection_design import (
    doubt_of_probability,
    inclusion_probabilities,
    poisson_draw,
)
from qaeval_core.errors import InputError
from qaeval_core.stats import wilson_interval as wilson

N_ITEMS, BUDGET, DRAWS, ALPHA = 600, 60, 500, 0.05
ACCURACIES = (0.55, 0.75, 0.9)
Z = 1.959963984540054


def _population(accuracy: float, judge: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, f): each answer's chance to be correct and the judge's probability for it."""
    rng = np.random.default_rng(seed)
    if judge == "informative":  # calibrated and sharp: q near 0 or 1, f = q
        q = rng.beta(accuracy * 0.6, (1 - accuracy) * 0.6, N_ITEMS)
        return q, q
    q = np.full(N_ITEMS, accuracy)
    if judge == "noise":  # says anything, unrelated to the answer
        return q, rng.random(N_ITEMS)
    return q, np.full(N_ITEMS, 0.5)  # "constant": says nothing


def _wilson_widths(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Widths of the Wilson intervals of k of n (vectorised; the formula scipy uses)."""
    share = k / n
    denom = 1 + Z * Z / n
    centre = (share + Z * Z / (2 * n)) / denom
    half = Z / denom * np.sqrt(share * (1 - share) / n + Z * Z / (4 * n * n))
    return np.minimum(centre + half, 1) - np.maximum(centre - half, 0)


def _simulate(accuracy: float, judge: str, seed: int) -> tuple[float, float]:
    """(coverage of the weighted PPI interval, its mean width / the human-only mean width)."""
    q, f = _population(accuracy, judge, seed)
    truth = float(q.mean())
    pi = inclusion_probabilities(f, BUDGET, 0.5 * BUDGET / N_ITEMS)
    rng = np.random.default_rng(seed + 1)
    y = (rng.random((DRAWS, N_ITEMS)) < q).astype(float)
    chosen = rng.random((DRAWS, N_ITEMS)) < pi
    covered, widths, n_labels = 0, np.empty(DRAWS), chosen.sum(axis=1)
    for d in range(DRAWS):
        lab = chosen[d]
        e = weighted_estimate(y[d, lab], f[lab], f, pi[lab], ALPHA)
        covered += e.ci_low <= truth <= e.ci_high
        widths[d] = e.ci_high - e.ci_low
    # Human-only: the same number of labels from a uniform random sample (k ~ Binomial(n, acc)).
    human = _wilson_widths(rng.binomial(n_labels, truth), n_labels)
    return covered / DRAWS, float(widths.mean() / human.mean())


def test_the_vectorised_wilson_reference_is_scipys() -> None:
    for k, n in ((0, 12), (7, 40), (55, 60)):
        ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert _wilson_widths(np.array(k), np.array(n)) == pytest.approx(ci.high - ci.low)
        assert wilson(k / n, n, Z) == pytest.approx((ci.low, ci.high))


@pytest.mark.parametrize("accuracy", ACCURACIES)
def test_informative_judge_covers_and_is_at_least_30_percent_narrower(accuracy: float) -> None:
    coverage, ratio = _simulate(accuracy, "informative", seed=int(accuracy * 100))
    assert coverage >= 0.93
    assert ratio <= 0.70


@pytest.mark.parametrize("judge", ["noise", "constant"])
@pytest.mark.parametrize("accuracy", ACCURACIES)
def test_uninformative_judge_covers_and_is_at_most_10_percent_wider(
    accuracy: float, judge: str
) -> None:
    coverage, ratio = _simulate(accuracy, judge, seed=int(accuracy * 100) + 7)
    assert coverage >= 0.93
    assert ratio <= 1.10


def test_inclusion_probabilities_follow_doubt_within_floor_and_budget() -> None:
    f = np.array([0.0, 0.02, 0.2, 0.5, 0.7, 0.98, 1.0, 0.5])
    pi = inclusion_probabilities(f, 3.0, 0.1)
    assert pi.sum() == pytest.approx(3.0)
    assert pi.min() == pytest.approx(0.1) and pi.max() <= 1.0
    order = np.argsort(doubt_of_probability(f), kind="stable")
    assert np.all(np.diff(pi[order]) >= -1e-12)  # grows with the doubt
    assert inclusion_probabilities(np.ones(5), 2, 0.1) == pytest.approx(np.full(5, 0.4))
    assert poisson_draw(pi, 3).tolist() == poisson_draw(pi, 3).tolist()
    with pytest.raises(InputError, match="floor=0.5 on 8 item"):
        inclusion_probabilities(f, 3.0, 0.5)
    with pytest.raises(InputError, match="floor must be a probability"):
        inclusion_probabilities(f, 3.0, 0.0)
    with pytest.raises(InputError, match="budget"):
        inclusion_probabilities(f, 9, 0.1)
    with pytest.raises(InputError, match="judge_probability"):
        inclusion_probabilities([0.5, 1.5], 1, 0.1)


def test_zero_spread_is_widened_to_the_weighted_wilson_interval() -> None:
    y = np.ones(12)
    e = weighted_estimate(y, np.ones(12), np.ones(100), np.linspace(0.2, 0.9, 12), ALPHA)
    assert e.degenerate and e.ci_high == pytest.approx(1.0)
    assert e.ci_low < 0.85  # twelve labels never prove certainty


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    q = rng.beta(0.45, 0.15, 1200)
    pi = inclusion_probabilities(q, 240, 0.05)
    chosen = poisson_draw(pi, seed)
    y = (rng.random(1200) < q).astype(int)
    return pd.DataFrame(
        {
            "qa_model": np.repeat(["a", "b"], 600),
            "judge_probability": q,
            "gold_label": np.where(chosen, y, np.nan),
            "label_scale": "binary",
            "label_sample": np.where(chosen, "triage", ""),
            "sample_probability": np.where(chosen, pi, np.nan),
        }
    )


def test_estimate_accuracy_weights_rows_with_known_probability_and_counts_the_rest() -> None:
    frame = _frame()
    n_chosen = int(frame["gold_label"].notna().sum())
    unknown = frame.index[frame["gold_label"].isna()][:7]
    frame.loc[unknown, "gold_label"] = 1  # labelled for another reason: no known probability
    table = estimate_accuracy(frame).set_index("model")
    assert table.attrs["weighted"] is True
    overall = table.loc[ALL_MODELS]
    assert overall["n_labelled"] == n_chosen and overall["n_weighted"] == n_chosen
    assert overall["n_not_random"] == 7
    assert "inverse-probability weighted" in overall["ppi_note"]
    assert overall["ppi_ci_low"] < overall["ppi_estimate"] < overall["ppi_ci_high"]
    # Equal probabilities are a uniform sample: the classical (unweighted) PPI as before.
    uniform = frame.assign(sample_probability=np.where(frame["gold_label"].notna(), 0.2, np.nan))
    plain = estimate_accuracy(uniform)
    assert plain.attrs["weighted"] is False and (plain["n_weighted"] == 0).all()


def test_bad_sample_probability_is_a_clear_error() -> None:
    frame = _frame()
    labelled = frame.index[frame["gold_label"].notna()]
    with pytest.raises(InputError, match=r"sample_probability must be a probability in \(0, 1\]"):
        estimate_accuracy(frame.assign(sample_probability=frame["sample_probability"] * 0 + 1.5))
    bad = frame.astype({"sample_probability": object})
    bad.loc[labelled[0], "sample_probability"] = "often"
    with pytest.raises(InputError, match=rf"row {labelled[0] + 1} has 'often', not a number"):
        estimate_accuracy(bad)


def _one_heavy_row(p: object) -> pd.DataFrame:
    """Two models with 20 labels each at probability 0.5, the first row of ``a`` at ``p``."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "qa_model": np.repeat(["a", "b"], 40),
            "judge_probability": rng.random(80),
            "gold_label": np.where(np.arange(80) % 40 < 20, rng.random(80) < 0.7, np.nan),
            "label_scale": "binary",
            "sample_probability": np.where(np.arange(80) % 40 < 20, 0.5, np.nan),
        }
    ).astype({"sample_probability": object})
    frame.loc[0, ["gold_label", "sample_probability"]] = [0.0, p]
    return frame


def test_one_label_with_a_tiny_probability_gives_no_certain_interval() -> None:
    """Issue 31.4: one row at 1e-6 made its model '0.000 [0.000, 0.000]' and the comparison
    'significant'. Its labels now weigh as about one uniform label: no estimate, and why."""
    from qaeval_core.analysis.estimates import compare_estimates

    table = estimate_accuracy(_one_heavy_row(1e-6)).set_index("model")
    assert np.isnan(table.loc["a", "ppi_estimate"]) and np.isnan(table.loc["a", "ppi_ci_low"])
    assert "weigh as 1.0 uniform ones (needs >= 10)" in table.loc["a", "reason"]
    assert table.loc["b", "ppi_ci_high"] - table.loc["b", "ppi_ci_low"] > 0.1
    pairs = compare_estimates(table.reset_index())
    assert not pairs["significant"].any() and pairs["reason"].iloc[0] == "no PPI estimate for a"


@pytest.mark.parametrize(
    ("p", "shown"),
    [(1e-9, "1e-09"), (1e-12, "1e-12"), (1e-300, "1e-300"), (5e-324, "4.94066e-324")],
)
def test_a_probability_below_the_floor_is_refused_with_its_row(p: float, shown: str) -> None:
    with pytest.raises(InputError) as caught:
        estimate_accuracy(_one_heavy_row(p))
    message = str(caught.value)
    assert "below the floor of 1e-06" in message and f"row 1 with {shown}" in message
    assert "np.float64" not in message


def test_a_400_digit_probability_is_refused_not_a_traceback() -> None:
    with pytest.raises(InputError, match=r"row 1 with inf\.") as caught:
        estimate_accuracy(_one_heavy_row(10**400))
    assert "np.float64" not in str(caught.value)
    with pytest.raises(
        InputError, match=r"row 1 has '10000000000000000000\.\.\.\(402 characters\)'"
    ):
        estimate_accuracy(_one_heavy_row("1" + "0" * 400 + "x"))


def test_cli_estimate_weights_sample_probability_and_says_what_it_left_out(
    tmp_path, capsys
) -> None:
    import json

    from qaeval_core.cli.main import main

    frame = _frame(3)
    extra = frame.index[frame["gold_label"].isna()][:4]
    frame.loc[extra, "gold_label"] = 0  # labels with no known probability
    rows = [
        {k: v for k, v in rec.items() if not (isinstance(v, float) and np.isnan(v))}
        for rec in frame.assign(question="q", references=[["a"]] * len(frame), candidate="c")
        .rename(columns={"label_sample": "how"})
        .to_dict("records")
    ]
    src = tmp_path / "judged.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "est.json"
    assert main(["estimate", str(src), "-o", str(out), "--label-scale", "binary"]) == 0
    printed = capsys.readouterr().out
    assert "weighted" in printed and "left out" in printed
    data = json.loads(out.read_text("utf-8"))
    overall = data["estimates"][ALL_MODELS]
    assert data["weighted"] is True and "inverse-probability" in data["method"]
    assert (
        overall["n_weighted"]
        == overall["n_labelled"]
        == int(frame["sample_probability"].notna().sum())
    )
    assert overall["n_not_random"] == 4
    assert overall["ppi"]["ci_low"] < overall["ppi"]["estimate"] < overall["ppi"]["ci_high"]
