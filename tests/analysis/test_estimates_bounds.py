"""``qaeval estimate`` never claims certainty its labels cannot give, bounds its pairwise work,
and reads qaeval's own final-labels export (issue 21, items 18 and 11)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _triage_store import make_store, save_judge

from qaeval_core import store, workflows
from qaeval_core.analysis.estimates import (
    ALL_MODELS,
    ALL_PAIRS_MODELS,
    DEGENERATE_NOTE,
    MAX_PAIRS,
    compare_estimates,
    estimate_accuracy,
    estimates_to_json,
)
from qaeval_core.cli.main import main
from qaeval_core.errors import InputError

# -- no zero-width interval --------------------------------------------------------------------


def _agreeing(n_items: int = 200, n_labels: int = 12, seed: int = 0) -> pd.DataFrame:
    """A judge saying 'correct' on 90% of the items, and 12 random labels that all agree with it
    (all 'correct'): the PPI variance estimate is exactly zero."""
    rng = np.random.default_rng(seed)
    judge = (rng.random(n_items) < 0.9).astype(float)
    judge[:n_labels] = 1.0
    gold = np.full(n_items, np.nan)
    gold[:n_labels] = 1.0
    return pd.DataFrame({"judge_correct": judge, "gold_label": gold})


def test_twelve_equal_labels_never_give_a_point_interval() -> None:
    table = estimate_accuracy(_agreeing(), label_scale="binary")
    row = table.set_index("model").loc[ALL_MODELS]
    assert row["ppi_estimate"] == 1.0
    assert row["ppi_ci_high"] - row["ppi_ci_low"] > 0.2  # was [1.0, 1.0]
    # as wide as the twelve labels alone justify: their Wilson interval (12 of 12: 0.76-1.00)
    assert row["ppi_ci_low"] <= row["human_only_ci_low"] < 0.8
    assert row["ppi_ci_high"] == row["human_only_ci_high"] == 1.0
    assert row["ppi_se"] > 0.05 and row["ppi_note"] == DEGENERATE_NOTE
    assert estimates_to_json(table)[ALL_MODELS]["ppi"]["note"] == DEGENERATE_NOTE


def test_labels_exactly_matching_the_judge_are_degenerate_too() -> None:
    """Varied labels, each what the judge said: the rectifier is zero on every labelled item."""
    rng = np.random.default_rng(1)
    judge = (rng.random(300) < 0.7).astype(float)
    gold = np.full(300, np.nan)
    gold[:15] = judge[:15]
    table = estimate_accuracy(
        pd.DataFrame({"judge_correct": judge, "gold_label": gold}), label_scale="binary"
    )
    row = table.iloc[0]
    assert row["ppi_note"] == DEGENERATE_NOTE
    assert row["ppi_ci_low"] <= row["human_only_ci_low"]
    assert row["ppi_ci_high"] >= row["human_only_ci_high"]
    assert row["ppi_ci_low"] <= row["ppi_estimate"] <= row["ppi_ci_high"]


def test_labels_that_vary_against_the_judge_keep_the_ppi_interval() -> None:
    frame = _agreeing()
    frame.loc[3, "gold_label"] = 0.0  # one disagreement: the variance is estimated
    row = estimate_accuracy(frame, label_scale="binary").iloc[0]
    assert row["ppi_note"] == ""
    assert row["ppi_ci_low"] < row["ppi_estimate"] < row["ppi_ci_high"]


# -- bounded pairwise work -------------------------------------------------------------------


def _table(n_models: int, seed: int = 0) -> pd.DataFrame:
    """An estimate table as estimate_accuracy returns it (PPI columns only matter here)."""
    rng = np.random.default_rng(seed)
    est = rng.uniform(0.3, 0.9, n_models)
    table = pd.DataFrame(
        {
            "model": [f"m{i:04d}" for i in range(n_models)],
            "ppi_estimate": est,
            "ppi_se": rng.uniform(0.01, 0.05, n_models),
        }
    )
    table.loc[5, ["ppi_estimate", "ppi_se"]] = np.nan  # one model without enough labels
    overall = pd.DataFrame({"model": [ALL_MODELS], "ppi_estimate": [0.6], "ppi_se": [0.01]})
    out = pd.concat([table, overall], ignore_index=True)
    out.attrs["confidence"] = 0.95
    return out


def test_1500_models_give_adjacent_pairs_not_a_million() -> None:
    table = _table(1500)
    pairs = compare_estimates(table)
    assert len(pairs) == 1498  # 1,499 ranked models; not 1,124,250 pairs
    assert pairs.attrs["pairs"] == "adjacent"
    assert "adjacent-rank pairs only" in pairs.attrs["note"]
    assert "1 model(s) without a PPI estimate are not compared" in pairs.attrs["note"]
    ranked = (
        table[table["model"] != ALL_MODELS]
        .dropna()
        .sort_values(["ppi_estimate", "model"], ascending=[False, True])
    )
    names = ranked["model"].tolist()
    assert list(zip(pairs["model_a"], pairs["model_b"], strict=True)) == list(
        zip(names, names[1:], strict=False)
    )
    assert (pairs["difference"] >= 0).all()  # best first: a - b is never negative
    with pytest.raises(InputError, match="1,500 models make 1,124,250 pairs"):
        compare_estimates(table, pairs="all")
    top = compare_estimates(table, pairs="top", top=10)
    assert len(top) == 45 and set(top["model_a"]) | set(top["model_b"]) == set(names[:10])
    assert "every pair of the 10 best-ranked models only" in top.attrs["note"]


def test_a_small_leaderboard_still_gets_every_pair() -> None:
    table = _table(ALL_PAIRS_MODELS)
    pairs = compare_estimates(table)
    assert len(pairs) == ALL_PAIRS_MODELS * (ALL_PAIRS_MODELS - 1) // 2
    assert pairs.attrs == {"pairs": "all", "note": ""}
    assert "no PPI estimate for m0005" in set(pairs["reason"])
    assert len(pairs) <= MAX_PAIRS
    with pytest.raises(InputError, match="pairs must be one of"):
        compare_estimates(table, pairs="every")


def test_cli_with_many_models_writes_a_bounded_comparison(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(4)
    rows = []
    for m in range(60):
        for i in range(12):
            y = bool(rng.random() < 0.5 + m / 200)
            rows.append(
                {
                    "qa_model": f"model{m:02d}",
                    "judge_probability": float(np.clip(0.6 * y + 0.4 * rng.random(), 0, 1)),
                    "gold_label": int(y) if i < 10 else None,
                    "label_sample": "random",
                }
            )
    src = tmp_path / "judged.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "e.json"
    assert main(["estimate", str(src), "-o", str(out), "--label-scale", "binary"]) == 0
    data = json.loads(out.read_text("utf-8"))
    assert len(data["comparisons"]) == 59  # not 1,770
    assert data["comparisons_scope"]["pairs"] == "adjacent"
    assert "adjacent-rank pairs only" in data["comparisons_scope"]["note"]
    assert "Comparisons: adjacent-rank pairs only" in capsys.readouterr().out
    out_top = tmp_path / "top.json"
    args = ["--label-scale", "binary", "--pairs", "top", "--top", "5"]
    assert main(["estimate", str(src), "-o", str(out_top), *args]) == 0
    assert len(json.loads(out_top.read_text("utf-8"))["comparisons"]) == 10


# -- qaeval's own final-labels export --------------------------------------------------------


def _final_export(url: str, tmp_path: Path, suffix: str) -> Path:
    target = tmp_path / f"final{suffix}"
    args = ["export", "-d", "ds", "--what", "final", "--calibration", "cal", "-o", str(target)]
    assert main([*args, "--db", url]) == 0
    return target


def test_estimate_reads_the_final_labels_export_and_only_its_human_labels(
    sqlite_url: str, tmp_path: Path
) -> None:
    make_store(sqlite_url, n_items=60)
    save_judge(sqlite_url)
    store.deal(sqlite_url, "ds", ["ann1"], store.AuditSample(n=30), store.DealOptions(seed=3))
    while (item := store.next_item(sqlite_url, "ann1", "ds")) is not None:
        store.save_label(sqlite_url, "ann1", item.id, 2 if item.id % 3 else 0)
    final = workflows.final_labels(sqlite_url, "ds", "cal")
    assert set(final["source"]) == {"annotators", "judge"}  # the judge decided the other 30
    expected = estimate_accuracy(
        workflows.estimation_frame(sqlite_url, "ds", "cal"), prediction="judge_probability"
    ).set_index("model")
    for suffix in (".jsonl", ".csv"):
        src = _final_export(sqlite_url, tmp_path, suffix)
        out = tmp_path / f"est{suffix}.json"
        assert main(["estimate", str(src), "-o", str(out)]) == 0  # no --label needed
        data = json.loads(out.read_text("utf-8"))
        assert data["label"] == "final_label" and data["prediction"] == "judge_probability"
        overall = data["estimates"][ALL_MODELS]
        assert overall["n_items"] == 60 and overall["n_labelled"] == 30  # not the judge's 30
        assert overall["ppi"]["estimate"] == pytest.approx(expected.loc[ALL_MODELS, "ppi_estimate"])
        # naming the column gives the same: judge-decided rows are never labels
        again = tmp_path / f"again{suffix}.json"
        assert main(["estimate", str(src), "-o", str(again), "--label", "final_label"]) == 0
        assert json.loads(again.read_text("utf-8"))["estimates"] == data["estimates"]


def test_no_label_column_error_names_the_files_columns_and_the_option(
    sqlite_url: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    make_store(sqlite_url, n_items=8)
    save_judge(sqlite_url)
    src = _final_export(sqlite_url, tmp_path, ".jsonl")  # nobody labelled: all from the judge
    capsys.readouterr()
    assert main(["estimate", str(src), "-o", str(tmp_path / "e.json")]) == 1
    err = capsys.readouterr().err
    assert "final_label comes only from the judge (or nobody) on every row" in err
    assert "__label__" not in err and "item_id, external_id, qa_model, final_label" in err
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"judge_correct": 1, "verdict": 2}) + "\n", "utf-8")
    assert main(["estimate", str(plain), "-o", str(tmp_path / "p.json")]) == 1
    err = capsys.readouterr().err
    assert "its columns are judge_correct, verdict" in err and "--label COLUMN" in err
    assert "__label__" not in err
    assert not (tmp_path / "e.json").exists() and not (tmp_path / "p.json").exists()
