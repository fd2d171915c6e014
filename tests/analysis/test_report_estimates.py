"""``qaeval report --calibration NAME``: the three per-model accuracy estimates in HTML + JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _triage_store import make_store, save_judge

from qaeval_core.cli.main import main
from qaeval_core.store import annotation as ann


def test_report_adds_model_accuracies_with_valid_cis(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_store(sqlite_url, n_items=60)
    save_judge(sqlite_url)
    ann.deal_audit_sample(sqlite_url, "ds", ["ann1"], n=40, seed=3)
    while (item := ann.next_item(sqlite_url, "ann1", "ds")) is not None:
        ann.save_label(sqlite_url, "ann1", item.id, 2 if item.id % 3 else 0)
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
    assert overall["judge_only"]["ci_low"] is None and overall["judge_only"]["ci_high"] is None
    assert {"m0", "m1"} <= set(data["estimates"])
    assert np.isfinite(data["estimates"]["m0"]["ppi"]["estimate"])
    page = html.read_text()
    assert "Model accuracies (judge + random human labels)" in page
    assert "no valid interval" in page
    capsys.readouterr()
    assert main([*args, "--calibration", "nope", "--db", sqlite_url]) == 1
    assert "No calibration named 'nope'" in capsys.readouterr().err
