"""``qaeval estimate`` on a file scored from the store (issue 32, item 7): ``--dataset`` joins
the store's labels, the terminal shows one compact row per model, pairs only on request, and
the judge's two numbers under their own names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _triage_store import import_label, make_store

from qaeval_core import store
from qaeval_core.cli.main import main


def _scored_file(path: Path, ids: list[int]) -> Path:
    """What ``qaeval score --dataset ds --config J -o FILE`` writes (the columns read here)."""
    rows = [
        {
            "item_id": i,
            "dataset": "ds",
            "qa_model": f"m{k % 2}",
            "question": f"question {k}?",
            "judge_probability": 0.2 + 0.6 * (i % 3 != 0),
            "judge_correct": i % 3 != 0,
        }
        for k, i in enumerate(ids)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_estimate_joins_the_store_labels_and_prints_a_compact_table(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = make_store(sqlite_url, n_items=60)
    for item_id in ids:
        import_label(sqlite_url, item_id, 2 if item_id % 3 else 0)
    scored = _scored_file(tmp_path / "judged.jsonl", ids)
    out = tmp_path / "e.json"

    assert main(["estimate", str(scored), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "add --dataset ds to join the store's labels" in err and not out.exists()

    joined = ["estimate", str(scored), "-o", str(out), "--dataset", "ds", "--db", sqlite_url]
    # Labels, but none from a random sample: the judge's numbers, and how to get such labels.
    assert main(joined) == 0
    printed = capsys.readouterr().out
    assert "No PPI estimate for any model: no labels from a random audit sample yet" in printed
    assert f"qaeval audit --dataset ds --n 60 --annotator NAME --db {sqlite_url}" in printed
    assert json.loads(out.read_text("utf-8"))["estimates"]["m0"]["ppi"]["estimate"] is None

    store.deal(sqlite_url, "ds", ["ann1"], store.AuditSample(n=40), store.DealOptions(seed=1))
    assert main(joined) == 0
    printed = capsys.readouterr().out
    assert "judge accuracy" in printed and "judge mean prob." in printed
    assert "judge only" not in printed and "no PPI estimate for" not in printed
    assert "model pair(s) compared" in printed  # the pairs are counted, not listed
    data = json.loads(out.read_text("utf-8"))
    overall = data["estimates"]["(all)"]
    assert overall["n_labelled"] == 40 and overall["n_not_random"] == 20
    assert overall["judge_accuracy"]["estimate"] == pytest.approx(40 / 60)
    assert overall["judge_mean_probability"]["estimate"] == pytest.approx(
        (20 * 0.2 + 40 * 0.8) / 60
    )
    assert data["comparisons"]

    assert main([*joined, "--pairs", "all"]) == 0
    assert "PPI accuracy differences" in capsys.readouterr().out


def test_estimate_dataset_refuses_a_file_without_item_ids(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_store(sqlite_url, n_items=4)
    src = tmp_path / "a.jsonl"
    src.write_text('{"qa_model": "m0", "judge_probability": 0.5}\n', "utf-8")
    assert main(["estimate", str(src), "--dataset", "ds", "--db", sqlite_url]) == 1
    assert "has no item_id column" in capsys.readouterr().err


def test_the_terminal_ranks_models_as_the_leaderboard_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 34.3: one ranking (analysis.ranking.ranked_models) for the terminal, the report
    and the Leaderboard: best first, equal estimates share a rank and are listed by name."""
    import pandas as pd

    from qaeval_core.analysis.estimates import ALL_MODELS
    from qaeval_core.analysis.ranking import RANK_RULE
    from qaeval_core.cli.estimate_print import print_estimates

    def row(model: str, ppi: float) -> dict:
        est = {
            f"{k}_{s}": v
            for k in ("ppi", "human_only")
            for s, v in (("estimate", ppi), ("ci_low", ppi - 0.1), ("ci_high", ppi + 0.1))
        }
        return {
            "model": model,
            "n_items": 50,
            "n_labelled": 20,
            "n_not_random": 0,
            **est,
            "judge_accuracy": 0.7,
            "judge_mean_probability": 0.7,
            "reason": "",
            "ppi_note": "",
        }

    table = pd.DataFrame(
        [row("zeta", 0.8), row("alpha", 0.6), row("beta", 0.8), row(ALL_MODELS, 0.7)]
    )
    pairs = pd.DataFrame(
        columns=["model_a", "model_b", "difference", "ci_low", "ci_high", "significant", "reason"]
    )
    print_estimates(table, pairs, 0.95, show_pairs=False)
    printed = capsys.readouterr().out
    lines = [ln for ln in printed.splitlines() if any(m in ln for m in ("zeta", "alpha", "beta"))]
    firsts = [ln.strip("│ ").split("│")[0].strip() + " " + ln.split("│")[2].strip() for ln in lines]
    assert firsts == ["1 beta", "1 zeta", "3 alpha"]
    assert " ".join(RANK_RULE.split()[:6]) in " ".join(printed.split())
