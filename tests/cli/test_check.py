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
        [
            *args,
            "--config",
            str(moved),
            "--min-accuracy",
            "0.9",
            "--baseline",
            str(baseline),
            "--junit",
            str(junit),
        ]
    )
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


def _baseline(path: Path, verdicts: object) -> Path:
    path.write_text(json.dumps({"kind": "qaeval-check-baseline", "verdicts": verdicts}))
    return path


def _one_line_error(capsys) -> str:  # type: ignore[no-untyped-def]
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_baseline_that_compares_nothing_fails(fitted, tmp_path: Path, capsys) -> None:
    """Issue 31, item 3: a baseline of other items, or of none, passed ("0 verdict(s) as in
    the baseline"); one that shares too few items with the gold set compares too little."""
    config, gold = fitted
    args = ["check", "--config", str(config), "--gold", str(gold), "--baseline"]
    junit = tmp_path / "junit.xml"
    other = _baseline(tmp_path / "other.json", {"x1": True, "x2": False})
    assert main([*args, str(other), "--junit", str(junit)]) == 1
    err = _one_line_error(capsys)
    assert "the baseline shares no item id with the gold set" in err and "nothing was" in err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"  # the baseline case
    assert main([*args, str(_baseline(tmp_path / "empty.json", {}))]) == 1
    assert "holds no verdicts" in _one_line_error(capsys)
    full = tmp_path / "full.json"
    assert (
        main(["check", "--config", str(config), "--gold", str(gold), "--save-baseline", str(full)])
        == 0
    )
    capsys.readouterr()
    few = dict(list(json.loads(full.read_text())["verdicts"].items())[:10])
    partial = _baseline(tmp_path / "partial.json", few)
    assert main([*args, str(partial)]) == 1
    assert "only 10 of the 60 gold item(s) are in the baseline" in _one_line_error(capsys)
    assert main([*args, str(partial), "--min-items", "10"]) == 0
    assert "10 verdict(s) as in the baseline" in capsys.readouterr().out


def test_a_bound_on_too_few_gold_items_does_not_pass(fitted, tmp_path: Path, capsys) -> None:
    """Issue 31, item 3: one gold item passed a 0.9 bound (100%, Wilson [0.21, 1])."""
    config, gold = fitted
    one = tmp_path / "one.jsonl"
    one.write_text(gold.read_text().splitlines()[0] + "\n")
    junit = tmp_path / "junit.xml"
    args = ["check", "--config", str(config), "--gold", str(one), "--min-accuracy", "0.9"]
    assert main([*args, "--junit", str(junit)]) == 1
    err = _one_line_error(capsys)
    assert "only 1 gold item(s) with a clear human label, fewer than --min-items 30" in err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    assert main([*args, "--min-items", "1"]) == 0  # a stated, smaller minimum
    assert "minimum 1 item(s)" in capsys.readouterr().out
    assert main([*args, "--min-items", "0"]) == 1
    assert "--min-items must be a whole number >= 1" in _one_line_error(capsys)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "is a directory"),
        ("{bad", "not JSON"),
        ('{"id": "r0", "verdict": true}\n{"id": "r1", "verdict": false}\n', "not JSON"),
        ("[1, 2]", "no kind 'qaeval-check-baseline'"),
        ('{"kind": "qaeval-check-baseline"}', "verdicts must map item ids to true or false"),
        ('{"kind": "qaeval-check-baseline", "verdicts": [1, 2]}', "verdicts must map"),
        ('{"kind": "qaeval-check-baseline", "verdicts": {"r1": "yes"}}', "verdicts must map"),
        (b"\xff\xfe not text", "not UTF-8 text"),
    ],
)
def test_a_bad_baseline_file_is_one_line(fitted, tmp_path: Path, capsys, content, message):
    config, gold = fitted
    path = tmp_path / "baseline.json"
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    args = ["check", "--config", str(config), "--gold", str(gold), "--baseline", str(path)]
    assert main(args) == 1
    err = _one_line_error(capsys)
    assert message in err and "is not a check baseline" in err


@pytest.mark.parametrize("flag", ["--junit", "--save-baseline"])
def test_an_output_path_that_cannot_be_written_is_one_line(
    fitted, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, flag: str
) -> None:
    """Checked before anything is scored; a failed write keeps the earlier file whole."""
    from qaeval_core.judge import gold_check

    config, gold = fitted
    args = ["check", "--config", str(config), "--gold", str(gold), flag]
    folder = tmp_path / "a folder"
    folder.mkdir()
    assert main([*args, str(folder)]) == 1
    assert f"{flag} {folder} is a directory" in _one_line_error(capsys)
    blocker = tmp_path / "a file"
    blocker.write_text("x")
    assert main([*args, str(blocker / "out.xml")]) == 1
    assert f"{blocker} is a file, not a folder" in _one_line_error(capsys)
    nested = tmp_path / "new" / "folders" / "out.xml"
    assert main([*args, str(nested)]) == 0 and nested.is_file()  # missing folders are made
    capsys.readouterr()
    earlier = nested.read_text()
    monkeypatch.setattr(gold_check, "_writable", lambda path: False)  # as for a non-root user
    assert main([*args, str(nested)]) == 1
    err = _one_line_error(capsys)
    assert "cannot be written" in err and "is read-only" in err
    monkeypatch.undo()

    def no_space(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(gold_check.tempfile, "mkstemp", no_space)
    assert main([*args, str(nested)]) == 1
    assert "cannot be written: No space left on device" in _one_line_error(capsys)
    assert nested.read_text() == earlier


def test_a_gold_verdict_is_the_majority_of_the_final_label() -> None:
    """Issue 34.3: one majority rule. The check counted only 2s against 0s, so [2, 1, 1] was a
    correct gold item although the final label everywhere else (aggregate_labels) is unclear;
    now an item whose majority is unclear, or whose raters tie, is left out."""
    import pandas as pd

    from qaeval_core.analysis.agreement import aggregate_labels
    from qaeval_core.judge.gold_check import gold_verdict

    cases = [[2, 2, 0], [0, 0, 2, 1], [2, 1, 1], [2, 1], [2, 0], [1], [2], [0, 0]]
    expected = [True, False, None, None, None, None, True, False]
    assert [gold_verdict(c) for c in cases] == expected
    labels = pd.DataFrame(
        [
            {"item_id": i, "rater": f"r{j}", "value": v}
            for i, c in enumerate(cases)
            for j, v in enumerate(c)
        ]
    )
    final = aggregate_labels(labels)["final"].tolist()
    assert [{2: True, 0: False}.get(f) for f in final] == expected


def test_the_library_runs_the_whole_check_as_the_cli_does(fitted, tmp_path: Path) -> None:
    """Every door: ``check_judge`` writes the same files and fails with the same line."""
    from qaeval_core.judge.gold_check import CheckFailed, check_judge

    config, gold = fitted
    junit, baseline = tmp_path / "junit.xml", tmp_path / "baseline.json"
    result = check_judge(config, gold, junit=junit, save_baseline=baseline)
    assert result.passed_text().startswith("qaeval check passed: agreement ")
    assert junit.exists() and len(json.loads(baseline.read_text())["verdicts"]) == 60
    moved = _moved_threshold(config, tmp_path / "moved.json", 2.0)
    with pytest.raises(CheckFailed, match=r"^qaeval check failed: .*below the bound 0\.900"):
        check_judge(moved, gold, min_accuracy=0.9)
