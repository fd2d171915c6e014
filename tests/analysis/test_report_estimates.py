"""``qaeval report --calibration NAME``: the three per-model accuracy estimates in HTML + JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _triage_store import make_store, save_judge

from qaeval_core import store
from qaeval_core.cli.main import main


def test_report_adds_model_accuracies_with_valid_cis(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_store(sqlite_url, n_items=60)
    save_judge(sqlite_url)
    store.deal(sqlite_url, "ds", ["ann1"], store.AuditSample(n=40), store.DealOptions(seed=3))
    while (item := store.next_item(sqlite_url, "ann1", "ds")) is not None:
        store.save_label(sqlite_url, "ann1", item.id, 2 if item.id % 3 else 0)
    html, numbers = tmp_path / "r.html", tmp_path / "r.json"
    args = ["report", "-d", "ds", "-o", str(html), "--json", str(numbers), "--n-boot", "50"]
    assert main([*args, "--calibration", "cal", "--db", sqlite_url]) == 0
    data = json.loads(numbers.read_text())["model_accuracies"]
    assert data["calibration"] == "cal"
    overall = data["estimates"]["(all)"]
    assert overall["n_items"] == 60 and overall["n_labelled"] == 40
    for kind in ("ppi", "human_only"):
        est = overall[kind]
        assert est["ci_low"] <= est["estimate"] <= est["ci_high"]
    assert (
        overall["judge_accuracy"]["ci_low"] is None
        and overall["judge_mean_probability"]["ci_high"] is None
    )
    assert {"m0", "m1"} <= set(data["estimates"])
    assert np.isfinite(data["estimates"]["m0"]["ppi"]["estimate"])
    page = html.read_text()
    assert "Model accuracies (judge + random human labels)" in page
    assert "no valid interval" in page
    capsys.readouterr()
    assert main([*args, "--calibration", "nope", "--db", sqlite_url]) == 1
    assert "No calibration named 'nope'" in capsys.readouterr().err


def test_report_without_audit_labels_shows_the_judge_and_how_to_deal_a_sample(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32.6: with labels but none from a random audit sample, ``report --calibration``
    exited 1 and wrote nothing. Now: the judge's accuracy and mean probability per model, PPI
    empty with the reason and the command; after ``qaeval audit`` the PPI columns fill."""
    from _triage_store import import_label

    ids = make_store(sqlite_url, n_items=60)
    save_judge(sqlite_url)
    for item_id in ids:
        import_label(sqlite_url, item_id, 2 if item_id % 3 else 0)
    html, numbers = tmp_path / "r.html", tmp_path / "r.json"
    args = ["report", "-d", "ds", "-o", str(html), "--json", str(numbers), "--n-boot", "20"]
    assert main([*args, "--calibration", "cal", "--db", sqlite_url]) == 0
    data = json.loads(numbers.read_text())["model_accuracies"]
    assert data["audit_labels"] is False
    for model in ("m0", "m1", "(all)"):
        entry = data["estimates"][model]
        assert entry["ppi"]["estimate"] is None and entry["human_only"]["estimate"] is None
        assert 0 <= entry["judge_accuracy"]["estimate"] <= 1
        assert 0 <= entry["judge_mean_probability"]["estimate"] <= 1
        assert "no labels from a random audit sample" in entry["reason"]
    page = html.read_text()
    assert "no random audit labels yet" in page
    assert f"qaeval audit --dataset ds --n 30 --annotators NAME --db {sqlite_url}" in page

    capsys.readouterr()
    assert main(["audit", "-d", "ds", "--n", "40", "--annotator", "ann1", "--db", sqlite_url]) == 0
    assert "Audit sample of 40 item(s)" in capsys.readouterr().out
    assert main([*args, "--calibration", "cal", "--db", sqlite_url]) == 0
    data = json.loads(numbers.read_text())["model_accuracies"]
    overall = data["estimates"]["(all)"]
    assert data["audit_labels"] is True and overall["n_labelled"] == 40
    assert overall["ppi"]["ci_low"] <= overall["ppi"]["estimate"] <= overall["ppi"]["ci_high"]


def test_a_failed_report_leaves_no_file_half_written(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qaeval_core.analysis.report import Report

    make_store(sqlite_url, n_items=20)
    out = tmp_path / "out"
    out.mkdir()
    html, numbers = out / "r.html", out / "r.json"
    numbers.write_text("earlier run\n")

    def broken(self: Report) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(Report, "to_json", broken)
    args = ["report", "-d", "ds", "-o", str(html), "--json", str(numbers), "--n-boot", "0"]
    with pytest.raises(RuntimeError, match="disk full"):
        main([*args, "--db", sqlite_url])
    assert not html.exists() and numbers.read_text() == "earlier run\n"
    assert sorted(p.name for p in out.iterdir()) == ["r.json"]
