"""Annotator quality and the Dawid-Skene aggregate (issue 14): the pure functions on synthetic
raters with known accuracies, and ``final_labels(aggregate=...)`` on SQLite and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _annotation_store import make_store
from crowdkit.aggregation import DawidSkene

from qaeval_core import analysis, store, workflows
from qaeval_core.analysis.aggregation import annotator_quality, dawid_skene
from qaeval_core.analysis.agreement import aggregate_labels, rater_vs_rest
from qaeval_core.errors import QAEvalError
from qaeval_core.store.orm import User
from qaeval_core.store.session import write_scope


def synthetic(n_items: int = 300, seed: int = 3) -> tuple[pd.DataFrame, pd.Series]:
    """A careful rater (95% right) and two careless ones (60% right) on every item; truth is
    0 or 2. Majority vote follows the careless pair whenever they agree on a mistake."""
    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.choice([0, 2], size=n_items), index=np.arange(1, n_items + 1))
    rows = []
    for rater, accuracy in (("careful", 0.95), ("noisy1", 0.6), ("noisy2", 0.6)):
        right = rng.random(n_items) < accuracy
        values = np.where(right, truth.to_numpy(), 2 - truth.to_numpy())
        rows += [
            {"item_id": int(i), "rater": rater, "value": int(v)}
            for i, v in zip(truth.index, values, strict=True)
        ]
    return pd.DataFrame(rows), truth


def test_dawid_skene_beats_majority_when_raters_differ() -> None:
    labels, truth = synthetic()
    ds = dawid_skene(labels).set_index("item_id")["label"]
    majority = aggregate_labels(labels).set_index("item_id")["majority"]
    ds_acc = float((ds.reindex(truth.index) == truth).mean())
    majority_acc = float((majority.reindex(truth.index) == truth).mean())
    assert ds_acc > majority_acc + 0.05
    assert ds_acc > 0.85


def test_dawid_skene_is_crowd_kits() -> None:
    labels, _ = synthetic(n_items=80, seed=5)
    ours = dawid_skene(labels).set_index("item_id")["label"].astype(int)
    data = labels.rename(columns={"item_id": "task", "rater": "worker", "value": "label"})
    theirs = DawidSkene(n_iter=100, tol=1e-5).fit_predict(data).astype(int)
    pd.testing.assert_series_equal(ours.sort_index(), theirs.sort_index(), check_names=False)


def test_unclear_is_a_class_and_a_tie_is_unclear() -> None:
    labels = pd.DataFrame(
        {
            "item_id": [1, 1, 2, 2, 3, 3, 4, 4],
            "rater": list("abababab"),
            "value": [1, 1, 2, 2, 0, 0, 2, 0],
        }
    )
    out = dawid_skene(labels).set_index("item_id")
    assert out.loc[1, "label"] == 1  # both said "unclear": the aggregate says so too
    assert out.loc[2, "label"] == 2 and out.loc[3, "label"] == 0
    assert out.loc[4, "label"] == 1  # two equally trusted raters split: a tie
    assert dawid_skene(labels.iloc[:0]).empty


def test_annotator_quality_against_adjudication_and_the_rest() -> None:
    labels, truth = synthetic()
    adjudications = pd.DataFrame({"item_id": truth.index[:50], "value": truth.to_numpy()[:50]})
    quality = annotator_quality(labels, adjudications).set_index("rater")
    assert list(quality.index) == ["careful", "noisy1", "noisy2"]
    assert (quality["n_adjudicated"] == 50).all()
    own = labels[labels["rater"] == "careful"].set_index("item_id")["value"]
    expected = float((own.loc[truth.index[:50]] == truth.iloc[:50]).mean())
    assert quality.loc["careful", "agree_adjudicated"] == pytest.approx(expected)
    assert quality.loc["careful", "ds_accuracy"] > quality.loc["noisy1", "ds_accuracy"] + 0.15
    assert quality.loc["careful", "agree_adjudicated"] > quality.loc["noisy2", "agree_adjudicated"]
    rest = rater_vs_rest(labels).set_index("rater")
    assert quality["n_vs_rest"].tolist() == rest["n_items"].tolist()
    assert quality["agree_rest"].tolist() == rest["agreement"].tolist()
    no_adj = annotator_quality(labels)
    assert no_adj["agree_adjudicated"].isna().all() and (no_adj["n_adjudicated"] == 0).all()


def test_final_labels_with_the_dawid_skene_aggregate(db_url: str) -> None:
    labels, _ = synthetic(n_items=120, seed=9)  # a draw where the two aggregates differ
    ids = make_store(db_url, n_items=120, users=("careful", "noisy1", "noisy2"))
    with write_scope(db_url) as s:
        s.add(User(name="boss", role="researcher"))
    store.deal(db_url, "ds", ["careful", "noisy1", "noisy2"], options=store.DealOptions(base=3))
    for row in labels.itertuples(index=False):
        store.save_label(db_url, row.rater, ids[row.item_id - 1], row.value)
    analysis.adjudicate(db_url, ids[0], "boss", 1, "rule 4")
    majority = workflows.final_labels(db_url, "ds").set_index("item_id")
    weighted = workflows.final_labels(db_url, "ds", aggregate="dawid_skene").set_index("item_id")
    assert majority.loc[ids[0], "final_label"] == weighted.loc[ids[0], "final_label"] == 1
    assert (weighted["source"] == majority["source"]).all()
    expected = dawid_skene(labels).set_index("item_id")["label"]
    rated = [i for i in ids if i != ids[0]]
    got = weighted.loc[rated, "final_label"].astype(int).tolist()
    assert got == [int(expected[ids.index(i) + 1]) for i in rated]
    assert (weighted["final_label"] != majority["final_label"]).any()
    with pytest.raises(QAEvalError, match="aggregate must be one of majority, dawid_skene"):
        workflows.final_labels(db_url, "ds", aggregate="mace")


def test_cli_export_final_with_the_dawid_skene_aggregate(sqlite_url: str, tmp_path) -> None:
    from qaeval_core.analysis.aggregation import AGGREGATES
    from qaeval_core.cli import import_export as cli_data
    from qaeval_core.cli.main import main as cli_main

    assert cli_data.AGGREGATES == AGGREGATES
    assert cli_main(["demo", "--no-score", "--db", sqlite_url]) == 0
    out = tmp_path / "final.csv"
    args = ["export", "-d", "demo-nq301", "--what", "final", "-o", str(out), "--db", sqlite_url]
    assert cli_main([*args, "--aggregate", "dawid_skene"]) == 0
    exported = pd.read_csv(out)
    expected = workflows.final_labels(sqlite_url, "demo-nq301", aggregate="dawid_skene")
    assert exported["final_label"].tolist() == expected["final_label"].astype(int).tolist()
    assert cli_main([*args, "--aggregate", "mace"]) == 1
    assert cli_main([*args[:4], "labels", *args[5:], "--aggregate", "dawid_skene"]) == 1
