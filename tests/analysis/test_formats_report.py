"""Harness logs end to end: ``qaeval import`` -> ``qaeval score`` -> ``qaeval report --json``.

Two models' lm-eval logs of the same questions (tests/data/formats/lm_eval, written by lm-eval
itself): ``acme/qa-small`` answers briefly and misses three; ``acme/qa-large`` is always right
but wordy, so the harness's exact match ranks it below ``qa-small`` and a lenient judge (f1)
ranks it above: the report must show that flip, per model and task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _calibration_data import fake_cost_measuring, write_labelled_dataset
from _paths import TEST_DATA

from qaeval_core import store
from qaeval_core.cli.main import main as cli_main
from qaeval_core.workflows.harness import harness_results

FIX = TEST_DATA / "formats" / "lm_eval"
SMALL, LARGE = "acme/qa-small", "acme/qa-large"
WRONG = {"saturn", "ag", "buzz aldrin"}  # qa-small's wrong answers; every other one is right


def _samples(model: str) -> Path:
    (path,) = (FIX / model.replace("/", "__")).glob("samples_nq_local_*.jsonl")
    return path


def _import_and_score(url: str) -> None:
    for model in (SMALL, LARGE):
        assert cli_main(["import", str(_samples(model)), "-d", "nq", "--db", url]) == 0
    assert cli_main(["score", "--dataset", "nq", "-m", "em,f1", "--db", url]) == 0


def _report(url: str, tmp_path: Path) -> dict:
    out = tmp_path / "r.json"
    args = ["report", "-d", "nq", "-o", str(tmp_path / "r.html"), "--json", str(out)]
    assert cli_main([*args, "--n-boot", "0", "--db", url]) == 0
    return json.loads(out.read_text())


def _row(numbers: dict, model: str, variant: str = "remove_whitespace") -> dict:
    (row,) = [
        r for r in numbers["harness"]["rows"] if (r["model"], r["variant"]) == (model, variant)
    ]
    return row


def test_import_score_report_gives_per_model_numbers_and_the_flip(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _import_and_score(sqlite_url)
    numbers = _report(sqlite_url, tmp_path)
    assert "4 (model, task) row(s), 2 ranking flip(s)" in capsys.readouterr().out
    harness = numbers["harness"]
    assert harness["judges"] == ["em", "f1"]
    small, large = _row(numbers, SMALL), _row(numbers, LARGE)
    assert (small["task"], small["n_items"], small["harness_format"]) == ("nq_local", 12, "lm-eval")
    # the harness's own metric, as lm-eval reported it in results_*.json
    assert small["harness"] == {"exact_match": 0.75} and large["harness"] == {"exact_match": 0.5}
    assert small["judges"]["f1"]["accuracy"] == pytest.approx(0.75)
    assert large["judges"]["f1"]["accuracy"] > small["judges"]["f1"]["accuracy"]
    assert large["judges"]["em"]["n_scored"] == 12
    # no labels yet: no PPI, and the reason says so
    assert small["judges"]["f1"]["ppi"] is None
    assert "human label" in small["judges"]["f1"]["reason"]
    flips = [f for f in harness["flips"] if f["variant"] == "remove_whitespace"]
    assert [(f["judge"], f["by"], f["harness_higher"], f["judge_higher"]) for f in flips] == [
        ("f1", "accuracy", SMALL, LARGE)
    ]
    assert "Where the ranking flips" in (tmp_path / "r.html").read_text()


def test_random_audit_labels_add_ppi_intervals(sqlite_url: str, tmp_path: Path) -> None:
    _import_and_score(sqlite_url)
    store.add_user(sqlite_url, "ann1", "annotator", password="a-long-password-1")
    store.deal(sqlite_url, "nq", ["ann1"], store.AuditSample(n=48), store.DealOptions(seed=7))
    while (item := store.next_item(sqlite_url, "ann1", "nq")) is not None:
        store.save_label(sqlite_url, "ann1", item.id, 0 if item.candidate.lower() in WRONG else 2)
    numbers = _report(sqlite_url, tmp_path)
    small, large = _row(numbers, SMALL), _row(numbers, LARGE)
    assert small["human"] == {"n_labelled": 12, "accuracy": 0.75}
    assert large["human"] == {"n_labelled": 12, "accuracy": 1.0}
    for row in (small, large):
        for judge in ("em", "f1"):
            ppi = row["judges"][judge]["ppi"]
            assert ppi["n_labelled"] == 12
            assert ppi["ci_low"] <= ppi["estimate"] <= ppi["ci_high"]
            # every item labelled: PPI is the human accuracy, whatever the judge
            assert ppi["estimate"] == pytest.approx(row["human"]["accuracy"])
    flips = {(f["judge"], f["by"]) for f in numbers["harness"]["flips"]}
    assert ("em", "ppi") in flips and ("f1", "ppi") in flips  # corrected: qa-large is better
    ppi_flip = next(f for f in numbers["harness"]["flips"] if f["by"] == "ppi")
    assert isinstance(ppi_flip["significant"], bool)


def test_no_harness_items_no_section(sqlite_url: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"question": "q", "references": ["a"], "candidate": "a"}) + "\n")
    assert cli_main(["import", str(plain), "-d", "nq", "--db", sqlite_url]) == 0
    assert harness_results(sqlite_url, "nq") is None
    assert cli_main(["score", "--dataset", "nq", "-m", "em", "--db", sqlite_url]) == 0
    assert "harness" not in _report(sqlite_url, tmp_path)


def test_a_saved_calibration_is_one_more_judge(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--calibration NAME``: the calibrated judge's accuracy and PPI beside the metrics'."""
    fake_cost_measuring(monkeypatch, tmp_path / "cache")
    train = write_labelled_dataset(tmp_path / "train.jsonl", n=60, seed=2)
    assert cli_main(["import", str(train), "-d", "toy", "--db", sqlite_url]) == 0
    args = ["calibrate", "-d", "toy", "-m", "f1,recall", "--candidates", "threshold"]
    out = ["-o", str(tmp_path / "judge.json"), "--name", "cal", "--db", sqlite_url]
    assert cli_main([*args, *out]) == 0
    _import_and_score(sqlite_url)
    numbers = harness_results(sqlite_url, "nq", calibration="cal")
    assert numbers is not None and numbers["judges"] == ["em", "f1", "judge"]
    rows = {(r["model"], r["variant"]): r for r in numbers["rows"]}
    small = rows[(SMALL, "remove_whitespace")]["judges"]["judge"]
    large = rows[(LARGE, "remove_whitespace")]["judges"]["judge"]
    assert small["n_scored"] == 12 and 0.0 <= small["accuracy"] <= 1.0
    assert large["accuracy"] >= small["accuracy"]  # a lenient f1/recall judge credits qa-large
    assert small["ppi"] is None and "human label" in small["reason"]
    # Its accuracy is the share it judged correct (judge_correct), the report's and the
    # Leaderboard's "judge accuracy" (issue 32.7), not the share of P(correct) >= 0.5.
    from qaeval_core.workflows import estimation_frame

    decided = estimation_frame(sqlite_url, "nq", "cal").set_index("item_id")["judge_correct"]
    items = store.list_items(sqlite_url, "nq").to_dict("records")
    ids = [
        int(r["item_id"])
        for r in items
        if r["qa_model"] == SMALL and (r["meta"] or {}).get("variant") == "remove_whitespace"
    ]
    assert small["accuracy"] == pytest.approx(decided.loc[ids].astype(float).mean())
