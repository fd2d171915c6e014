"""``qaeval check``: a judge config against a pinned gold set, as a CI gate.

The judge is fitted once (``qaeval calibrate``, a threshold on cheap lexical inputs) on the
same labelled toy set that then serves as the gold set: it must pass there, and fail with a
one-line reason when its threshold is moved (checksum recomputed, as a hand edit plus
``config_checksum`` would) or when the gold labels are flipped.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _calibration_data import fake_cost_measuring, write_labelled_dataset

from qaeval_core.cli.main import main
from qaeval_core.judge.config_file import config_checksum


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(judge config, its gold set): a threshold judge fitted on the gold set itself."""
    folder = tmp_path_factory.mktemp("check")
    gold = write_labelled_dataset(folder / "gold.jsonl", n=60, seed=1)
    db = str(folder / "store.sqlite")
    with pytest.MonkeyPatch.context() as mp:
        fake_cost_measuring(mp, folder / "cache")
        assert main(["import", str(gold), "-d", "gold", "--db", db]) == 0
        args = ["calibrate", "-d", "gold", "--metrics", "f1,recall", "--candidates", "threshold"]
        assert main([*args, "--seed", "0", "-o", str(folder / "judge.json"), "--db", db]) == 0
    return folder / "judge.json", gold


def _moved_threshold(config: Path, target: Path, value: float) -> Path:
    data = json.loads(config.read_text())
    assert data["model"]["type"] == "threshold"
    data["model"]["threshold"] = value
    data["checksum"] = config_checksum(data)
    target.write_text(json.dumps(data))
    return target


def test_passes_on_its_own_gold_set(fitted, tmp_path: Path, capsys) -> None:
    config, gold = fitted
    junit, baseline = tmp_path / "junit.xml", tmp_path / "baseline.json"
    args = ["check", "--config", str(config), "--gold", str(gold)]
    assert main([*args, "--junit", str(junit), "--save-baseline", str(baseline)]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("qaeval check passed: agreement ") and "on 60 gold item(s)" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0" and suite.get("tests") == "1"
    saved = json.loads(baseline.read_text())
    assert saved["kind"] == "qaeval-check-baseline" and len(saved["verdicts"]) == 60
    # the baseline holds: same verdicts again, also with an explicit bound
    assert main([*args, "--baseline", str(baseline), "--min-accuracy", "0.8"]) == 0
    assert "60 verdict(s) as in the baseline" in capsys.readouterr().out


def test_a_moved_threshold_fails_with_a_one_line_reason(fitted, tmp_path: Path, capsys) -> None:
    config, gold = fitted
    baseline, junit = tmp_path / "baseline.json", tmp_path / "junit.xml"
    args = ["check", "--gold", str(gold)]
    assert main([*args, "--config", str(config), "--save-baseline", str(baseline)]) == 0
    capsys.readouterr()
    moved = _moved_threshold(config, tmp_path / "moved.json", 2.0)  # nothing passes now
    code = main(
        [*args, "--config", str(moved), "--min-accuracy", "0.9", "--baseline", str(baseline),
         "--junit", str(junit)]
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "qaeval check failed: agreement" in err and "is below the bound 0.900" in err
    assert "verdict(s) changed since the baseline" in err and "(correct -> incorrect)" in err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "2"
    # the baseline alone catches it too, without any accuracy bound
    assert main([*args, "--config", str(moved), "--baseline", str(baseline)]) == 1
    assert "is below" not in capsys.readouterr().err


def test_flipped_gold_labels_fail_below_the_calibrated_bound(fitted, tmp_path: Path, capsys):
    config, gold = fitted
    flipped = tmp_path / "flipped.jsonl"
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    flipped.write_text("".join(json.dumps({**r, "label": 1 - r["label"]}) + "\n" for r in rows))
    assert main(["check", "--config", str(config), "--gold", str(flipped)]) == 1
    err = capsys.readouterr().err
    bound = json.loads(config.read_text())["quality"]["cv_accuracy_ci"][0]
    assert f"is below the bound {bound:.3f}" in err  # the config's own cross-validated floor


def test_bad_inputs_are_clear_errors(fitted, tmp_path: Path, capsys) -> None:
    config, gold = fitted
    unlabelled = write_labelled_dataset(tmp_path / "u.jsonl", n=5, labels=False)
    assert main(["check", "--config", str(config), "--gold", str(unlabelled)]) == 1
    assert "has no item with a clear human label" in capsys.readouterr().err
    tampered = json.loads(config.read_text())
    tampered["model"]["threshold"] += 0.25  # edited without recomputing the checksum
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(tampered))
    assert main(["check", "--config", str(path), "--gold", str(gold)]) == 1
    assert "checksum" in capsys.readouterr().err
    missing = tmp_path / "none.json"
    args = ["check", "--config", str(config), "--gold", str(gold), "--baseline", str(missing)]
    assert main(args) == 1
    assert "No such baseline" in capsys.readouterr().err
