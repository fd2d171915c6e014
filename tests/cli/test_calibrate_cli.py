"""``qaeval calibrate`` end to end: import labels, fit, write and reuse the judge config."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _calibration_data import fake_cost_measuring, write_labelled_dataset

from qaeval_core import store
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.calibrate.progress import CalibrationProgress
from qaeval_core.cli.main import main
from qaeval_core.judge import Judge


@pytest.fixture(autouse=True)
def _no_cost_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """These tests are not about costs: the default (cheap) calibration measures nothing real."""
    return fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")


def test_calibrate_writes_a_judge_that_scores_new_data(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "store.sqlite")
    data = write_labelled_dataset(tmp_path / "train.jsonl")
    assert main(["import", str(data), "--dataset", "toy", "--db", db]) == 0
    out = tmp_path / "judge.json"
    code = main(
        [
            "calibrate",
            "--dataset",
            "toy",
            "--metrics",
            "em,f1,recall,number_agree",
            "--max-labels",
            "100",
            "--seed",
            "3",
            "-o",
            str(out),
            "--name",
            "toy-judge",
            "--db",
            db,
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "Cross-validated quality on" in printed.out
    assert "winner" in printed.out
    judge = Judge.from_config(out)
    assert judge.fitted_on["dataset"] == "toy"
    assert judge.fitted_on["n_labels"] <= 100
    assert set(judge.columns) <= {"em", "f1", "recall", "number_agree"}
    saved = store.get_calibration(db, "toy-judge")
    assert saved.config == json.loads(out.read_text())
    assert Judge.from_config(saved.config).to_config() == judge.to_config()

    # The config scores a new file with no store, through `qaeval score --config`.
    new = write_labelled_dataset(tmp_path / "new.jsonl", n=40, seed=9, labels=False)
    scored = tmp_path / "scored.jsonl"
    assert main(["score", str(new), "--config", str(out), "-o", str(scored)]) == 0
    frame = pd.read_json(scored, lines=True)
    assert {"judge_score", "judge_correct", "id", "question"} <= set(frame.columns)
    direct = judge.judge(pd.read_json(new, lines=True))
    np.testing.assert_allclose(frame["judge_score"], direct["judge_score"])


def test_max_labels_leaves_the_rest_unseen(tmp_path: Path) -> None:
    from qaeval_core.workflows import calibrate_dataset

    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    result = calibrate_dataset(
        db, "toy", metrics=["f1", "recall"], max_labels=60, cv=CrossValidation(n_boot=100)
    )
    assert len(result.used_item_ids) <= 60
    assert not set(result.used_item_ids) & set(result.unseen_item_ids)
    assert len(result.used_item_ids) + len(result.unseen_item_ids) == result.n_labelled


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-labels", "5"], "too few to calibrate"),
        (["--metrics", "nope"], "Unknown metric 'nope'"),
        (["--folds", "1"], "--folds must be >= 2"),
    ],
)
def test_user_errors_are_one_line_messages(tmp_path: Path, capsys, args, message) -> None:
    db = str(tmp_path / "store.sqlite")
    main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
    capsys.readouterr()
    code = main(["calibrate", "-d", "toy", "-o", str(tmp_path / "j.json"), "--db", db, *args])
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and "Traceback" not in err


def test_unlabelled_dataset_is_refused(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "store.sqlite")
    data = write_labelled_dataset(tmp_path / "d.jsonl", labels=False)
    main(["import", str(data), "-d", "bare", "--db", db])
    capsys.readouterr()
    code = main(["calibrate", "-d", "bare", "-o", str(tmp_path / "j.json"), "--db", db])
    assert code == 1
    assert "has no human labels yet" in capsys.readouterr().err


def test_a_second_calibration_reuses_every_stored_score(tmp_path: Path, monkeypatch) -> None:
    """Two configurations of one metric id (as SMILE's code and paper variants in the defaults)
    are both reused: the store is read per (metric id, config hash), not one config per id."""
    from qaeval_core import workflows
    from qaeval_core.calibrate import inputs

    monkeypatch.setattr(
        inputs,
        "DEFAULT_METRICS",
        (("f1", "f1", {}), ("f1_strict", "f1", {"threshold": 0.8}), ("recall", "recall", {})),
    )
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    runs = []
    for _ in range(2):
        heard: list[CalibrationProgress] = []
        result = workflows.calibrate_dataset(
            db, "toy", cv=CrossValidation(n_boot=50), progress=heard.append
        )
        said = [p.message for p in heard]
        runs.append((said, result))
    first, second = runs[0][0], runs[1][0]
    assert sum("scoring" in line for line in first) == 3
    assert [line for line in second if line.endswith("reusing stored scores.")] == [
        "f1: reusing stored scores.",
        "f1_strict: reusing stored scores.",
        "recall: reusing stored scores.",
    ]
    assert not [line for line in second if "scoring" in line]
    fitted = [result.judge.to_config() for _, result in runs]
    assert fitted[0]["model"] == fitted[1]["model"]  # same scores in, same judge out


def _glued(text: str, reference: str) -> str:
    """The answer with the spaces around its mention removed and a footnote digit glued on
    (after a word: "19451" could be a number)."""
    at = text.find(reference)
    if at < 0 or not reference[-1].isalpha():
        return text
    head, tail = text[:at], text[at + len(reference) :]
    return f"{head.rstrip(' ')}{reference}1{tail}"


def test_a_robust_judge_round_trips_and_reads_glued_answers_like_the_originals(
    tmp_path: Path,
) -> None:
    """By default (``--normalize robust`` since issue 33) every input that normalises is fitted
    at the robust profile, the config records it, and ``qaeval score --config`` then reads
    "isParis1" as "is Paris"; ``--normalize spaced`` fits the metrics' own reading."""
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    out = tmp_path / "robust.json"
    flags = ["--metrics", "panda,f1,recall,number_agree", "--inputs", "all", "--db", db]
    assert main(["calibrate", "-d", "toy", "-o", str(out), *flags]) == 0  # the default
    judge = Judge.from_config(out)
    assert judge.fitted_on["normalize"] == "robust"
    assert {f.column: f.params.get("normalize") for f in judge.features} == dict.fromkeys(
        ["panda", "f1", "recall", "number_agree"], "robust"
    )
    assert Judge.from_config(judge.to_config()).to_config() == judge.to_config()

    new = write_labelled_dataset(tmp_path / "new.jsonl", n=40, seed=9, labels=False)
    rows = [json.loads(line) for line in new.read_text().splitlines()]
    glued = tmp_path / "glued.jsonl"
    glued.write_text(
        "".join(
            json.dumps({**r, "candidate": _glued(r["candidate"], r["references"][0])}) + "\n"
            for r in rows
        )
    )
    assert sum(_glued(r["candidate"], r["references"][0]) != r["candidate"] for r in rows) > 10
    scored = {}
    for name, path in (("plain", new), ("glued", glued)):
        target = tmp_path / f"{name}.scored.jsonl"
        assert main(["score", str(path), "--config", str(out), "-o", str(target)]) == 0
        scored[name] = pd.read_json(target, lines=True)
    np.testing.assert_allclose(scored["glued"]["judge_score"], scored["plain"]["judge_score"])
    assert scored["glued"]["judge_correct"].tolist() == scored["plain"]["judge_correct"].tolist()

    # The spaced judge on the same labels does not read them alike (PANDA moves).
    squad = tmp_path / "squad.json"
    assert main(["calibrate", "-d", "toy", "-o", str(squad), "--normalize", "spaced", *flags]) == 0
    assert "normalize" not in {k for f in Judge.from_config(squad).features for k in f.params}
    frames = {}
    for name, path in (("plain", new), ("glued", glued)):
        target = tmp_path / f"{name}.squad.jsonl"
        assert main(["score", str(path), "--config", str(squad), "-o", str(target)]) == 0
        frames[name] = pd.read_json(target, lines=True)
    assert not np.allclose(frames["glued"]["judge_score"], frames["plain"]["judge_score"])


def test_default_inputs_have_distinct_metric_ids() -> None:
    """The store's analyses show one configuration per metric id, so two default inputs sharing
    an id (SMILE's two variants once did) would hide one of them after a calibration."""
    from qaeval_core.calibrate.inputs import metric_specs

    ids = [metric.id for _, metric in metric_specs()]
    assert len(ids) == len(set(ids))


def test_judging_a_scored_dataset_scores_nothing_again(tmp_path: Path, monkeypatch) -> None:
    """``qaeval score --dataset D --config J`` reuses the inputs stored under the judge's
    config hashes; what it had to compute it stores, so a second run computes nothing."""
    from qaeval_core.metrics.base import metric_class

    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    judge = tmp_path / "judge.json"
    args = ["calibrate", "-d", "toy", "-m", "f1,recall", "--max-labels", "60", "-o", str(judge)]
    assert main([*args, "--db", db]) == 0
    scored: list[int] = []
    for metric_id in ("f1", "recall"):
        cls = metric_class(metric_id)
        original = cls.score_batch

        def counting(self, items, _original=original):
            scored.append(len(items))
            return _original(self, items)

        monkeypatch.setattr(cls, "score_batch", counting)
    first_out, second_out = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    assert (
        main(["score", "-d", "toy", "--config", str(judge), "-o", str(first_out), "--db", db]) == 0
    )
    assert 0 < sum(scored) <= 2 * (160 - 60)  # only what calibration had not stored
    scored.clear()
    assert (
        main(["score", "-d", "toy", "--config", str(judge), "-o", str(second_out), "--db", db]) == 0
    )
    assert scored == []
    first, second = pd.read_json(first_out, lines=True), pd.read_json(second_out, lines=True)
    assert len(first) == 160
    pd.testing.assert_frame_equal(first, second)
    # The same verdicts as the judge applied afresh to the stored items.
    fresh = Judge.from_config(judge).judge(store.list_items(db, "toy"))
    assert first["judge_correct"].tolist() == fresh["judge_correct"].tolist()
    np.testing.assert_allclose(first["judge_score"], fresh["judge_score"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--candidates", "foo"], "Unknown candidate combiner"),
        (["--candidates", ","], "No candidate combiners"),
        (["--metrics", "nosuch"], "Unknown metric 'nosuch'"),
        (["--max-labels", "5"], "too few to calibrate"),
        (["--folds", "1"], "--folds must be >= 2"),
        (["--name", "taken"], "already exists"),
        (["--normalize", "fancy"], "--normalize must be one of spaced, squad, robust"),
    ],
)
def test_bad_calibrate_flags_fail_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    from qaeval_core import analysis, workflows

    db = str(tmp_path / "store.sqlite")
    assert (
        main(
            [
                "import",
                str(write_labelled_dataset(tmp_path / "d.jsonl", n=40)),
                "-d",
                "toy",
                "--db",
                db,
            ]
        )
        == 0
    )
    store.save_calibration(db, "taken", {"kind": "placeholder"})

    def no_work(*_args, **_kwargs):
        raise AssertionError("labels or scores were read before the flags were checked")

    monkeypatch.setattr(workflows, "calibrate_dataset", no_work)
    monkeypatch.setattr(analysis, "load_frames", no_work)
    capsys.readouterr()
    code = main(["calibrate", "-d", "toy", "-o", str(tmp_path / "j.json"), *flags, "--db", db])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--metrics", "f1,nosuch"], "Unknown metric 'nosuch'"),
        (["--metrics", "f1:nope=1"], "has no parameter(s) nope"),
        (["--config", "missing.json"], "does not exist"),
        (["--metrics", "f1", "-o", "out.xyz"], "Cannot tell the format"),
    ],
)
def test_bad_score_flags_fail_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    from qaeval_core import io, workflows

    data = write_labelled_dataset(tmp_path / "d.jsonl", n=20)

    def no_work(*_args, **_kwargs):
        raise AssertionError("data was read or scored before the flags were checked")

    monkeypatch.setattr(workflows, "score_dataset", no_work)
    monkeypatch.setattr(io, "read_records", no_work)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["score", str(data), *flags])
    err = capsys.readouterr().err
    assert code != 0
    assert message in err
    assert "Traceback" not in err


def test_calibrate_with_a_human_share_writes_a_band_and_prints_the_effort_curve(
    tmp_path: Path, capsys
) -> None:
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    judge_path = tmp_path / "judge.json"
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-m",
            "f1,recall",
            "--human-share",
            "0.2",
            "-o",
            str(judge_path),
            "--db",
            db,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Human effort" in out and "Triage band: about 20%" in out
    judge = Judge.from_config(judge_path)
    assert judge.triage is not None and judge.triage.share == 0.2
    scored = tmp_path / "scored.jsonl"
    new = write_labelled_dataset(tmp_path / "new.jsonl", n=200, seed=7, labels=False)
    assert main(["score", str(new), "--config", str(judge_path), "-o", str(scored)]) == 0
    frame = pd.read_json(scored, lines=True)
    assert set(frame["judge_outcome"]) <= {"correct", "incorrect", "uncertain"}
    assert "share uncertain" in capsys.readouterr().out
    # Another share at scoring time, read off the stored curve.
    wider = tmp_path / "wider.jsonl"
    assert (
        main(
            [
                "score",
                str(new),
                "--config",
                str(judge_path),
                "--human-share",
                "0.5",
                "-o",
                str(wider),
            ]
        )
        == 0
    )
    assert (pd.read_json(wider, lines=True)["judge_outcome"] == "uncertain").sum() >= (
        frame["judge_outcome"] == "uncertain"
    ).sum()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--human-share", "1"], r"must be a number in [0, 1)"),
        (["--human-share", "0.2", "--target-accuracy", "0.9"], "not both"),
        (["--target-accuracy", "2"], "must be in (0, 1]"),
    ],
)
def test_bad_triage_flags_fail_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    from qaeval_core import workflows

    def no_work(*_args, **_kwargs):
        raise AssertionError("calibrated before the flags were checked")

    monkeypatch.setattr(workflows, "calibrate_dataset", no_work)
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-o",
            str(tmp_path / "j.json"),
            *flags,
            "--db",
            str(tmp_path / "s.sqlite"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0
    assert message in err


def test_calibrate_with_a_guarantee_records_it_and_scoring_uses_its_band(
    tmp_path: Path, capsys
) -> None:
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    judge_path = tmp_path / "judge.json"
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-m",
            "f1,recall",
            "--guarantee",
            "0.9",
            "--risk",
            "0.2",
            "-o",
            str(judge_path),
            "--db",
            db,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    judge = Judge.from_config(judge_path)
    g = judge.guarantee
    assert g is not None and judge.triage is not None
    assert (g.target, g.risk, g.labels) == (0.9, 0.2, "calibration")
    assert g.n_labels == judge.fitted_on["n_labels"] and g.share == judge.triage.share
    assert "Guarantee: With 80% confidence, the judge is right on at least 90%" in " ".join(
        out.split()
    )
    scored = tmp_path / "scored.jsonl"
    new = write_labelled_dataset(tmp_path / "new.jsonl", n=60, seed=7, labels=False)
    assert main(["score", str(new), "--config", str(judge_path), "-o", str(scored)]) == 0
    frame = pd.read_json(scored, lines=True)
    assert set(frame["judge_outcome"]) <= {"correct", "incorrect", "uncertain"}
    assert "Guarantee from calibration: With 80% confidence" in " ".join(
        capsys.readouterr().out.split()
    )


def test_a_guarantee_the_labels_cannot_support_says_how_many_more(tmp_path: Path, capsys) -> None:
    db = str(tmp_path / "store.sqlite")
    assert (
        main(["import", str(write_labelled_dataset(tmp_path / "d.jsonl")), "-d", "toy", "--db", db])
        == 0
    )
    judge_path = tmp_path / "judge.json"
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-m",
            "f1,recall",
            "--guarantee",
            "0.999",
            "-o",
            str(judge_path),
            "--db",
            db,
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code != 0 and not judge_path.exists()
    assert "cannot support a guarantee" in err
    assert "more labels would be needed" in err or "lower the target accuracy" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--guarantee", "0.9", "--human-share", "0.2"], "one of them"),
        (["--risk", "0.1"], "--risk goes with --guarantee"),
        (["--guarantee", "1.2"], "--guarantee must be in (0, 1)"),
        (["--guarantee", "0.9", "--risk", "0"], "--risk must be in (0, 1)"),
        (
            ["--guarantee", "0.9", "--llm", "qwen-coder-1.5b"],
            "--guarantee is not available with an LLM tier",
        ),
    ],
)
def test_bad_guarantee_flags_fail_before_any_work(
    tmp_path: Path, monkeypatch, capsys, flags: list[str], message: str
) -> None:
    from qaeval_core import workflows

    def no_work(*_args, **_kwargs):
        raise AssertionError("calibrated before the flags were checked")

    monkeypatch.setattr(workflows, "calibrate_dataset", no_work)
    code = main(
        [
            "calibrate",
            "-d",
            "toy",
            "-o",
            str(tmp_path / "j.json"),
            *flags,
            "--db",
            str(tmp_path / "s.sqlite"),
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code != 0
    assert message in err
