"""``qaeval metrics`` and ``qaeval score``: files in every format, stored datasets, judges,
and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qaeval_core import store
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.cli.main import main

ROWS = [
    {
        "id": "a",
        "question": "Capital of France?",
        "references": ["Paris"],
        "candidate": "It is Paris.",
        "label": 1,
    },
    {
        "id": "b",
        "question": "Who wrote Hamlet?",
        "references": ["William Shakespeare", "Shakespeare"],
        "candidate": "Christopher Marlowe",
        "label": 0,
    },
    {
        "id": "c",
        "question": "When did WW2 end?",
        "references": ["1945"],
        "candidate": "1945",
        "label": 1,
    },
]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def items_file(tmp_path: Path) -> Path:
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_metrics_lists_ids_defaults_and_model_needs(capsys) -> None:
    code, out, _ = run(capsys, "metrics", "--json")
    assert code == 0
    rows = {r["id"]: r for r in json.loads(out)}
    assert rows["f1"]["defaults"] == {"threshold": 0.5, "normalize": "spaced"}
    assert rows["f1"]["kind"] == "lexical" and rows["f1"]["needs_models"] is False
    assert rows["bertscore"]["needs_models"] is True
    # What each metric declares (issue 34): its cost family, whether it is a default input.
    assert rows["bertscore"]["family"] == "encoder" and rows["f1"]["family"] == "lexical"
    assert rows["brevity"]["calibrate_by_default"] and rows["brevity"]["feature_only"]
    assert not rows["llm_judge"]["calibrate_by_default"] and not rows["f1"]["feature_only"]
    code, out, _ = run(capsys, "metrics")
    assert code == 0 and "soft_vqa_accuracy" in out and "Groups for --metrics" in out


def test_metrics_listing_is_readable_in_an_80_column_terminal() -> None:
    """Issue 33: the table folded the defaults into one-word lines ("ranker='embed", "ding',")
    at 80 columns. Each metric is now a block; no line is wider than the terminal and no
    parameter is cut in two."""
    from typer.testing import CliRunner

    from qaeval_core.cli.main import app
    from qaeval_core.metrics.base import metric_class, metric_ids

    result = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    text = " ".join(line.strip() for line in lines)
    for mid in metric_ids():
        assert any(line.startswith(f"{mid}  (") for line in lines), mid
        for key, value in metric_class(mid).default_params().items():
            assert f"{key}={value!r}" in text, (mid, key)  # whole, on one line
    assert "Groups for --metrics" in result.output


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_score_a_file_writes_one_column_per_metric(
    capsys, items_file: Path, tmp_path: Path, suffix: str
) -> None:
    out_path = tmp_path / f"scored{suffix}"
    code, out, err = run(
        capsys, "score", str(items_file), "-m", "em,contains,f1:threshold=0.4", "-o", str(out_path)
    )
    assert code == 0, err
    assert f"Wrote 3 rows to {out_path}" in out
    if suffix == ".jsonl":
        frame = pd.read_json(out_path, lines=True)
    elif suffix == ".csv":
        frame = pd.read_csv(out_path)
    else:
        frame = pd.read_parquet(out_path)
    assert frame["em"].tolist() == [0.0, 0.0, 1.0]
    assert frame["contains_correct"].astype(bool).tolist() == [True, False, True]
    assert frame["f1:threshold=0.4"].tolist() == pytest.approx([0.5, 0.0, 1.0])
    assert json.loads(frame["contains_details"][0]) == {"best_reference": "Paris"}
    assert frame["id"].tolist() == ["a", "b", "c"]  # input columns kept


def test_score_a_file_default_output_and_metric_groups(capsys, items_file: Path) -> None:
    code, out, err = run(capsys, "score", str(items_file), "-m", "lexical")
    assert code == 0, err
    written = items_file.with_name("answers.scored.jsonl")
    frame = pd.read_json(written, lines=True)
    for mid in ("em", "contains", "f1", "rougeL", "bleu", "meteor", "vqa_accuracy"):
        assert mid in frame.columns and f"{mid}_details" in frame.columns
    assert "embed_cosine" not in frame.columns


def test_score_a_stored_dataset_then_skip_what_is_stored(capsys, db_url: str, items_file) -> None:
    code, _, err = run(capsys, "import", str(items_file), "-d", "toy", "--db", db_url)
    assert code == 0, err
    code, out, err = run(capsys, "score", "-d", "toy", "-m", "em,recall", "--db", db_url)
    assert code == 0, err
    assert "scores saved in the store" in out
    stored = store.scores(db_url, "toy")
    assert sorted(stored["metric_id"].unique()) == ["em", "recall"] and len(stored) == 6
    code, out, err = run(capsys, "score", "-d", "toy", "-m", "em", "--db", db_url)
    assert code == 0, err
    assert len(store.scores(db_url, "toy")) == 6
    assert "│ 0      │ 3" in out  # scored 0, already stored 3


def test_score_with_a_judge_config_calls_the_judge(
    capsys, items_file: Path, tmp_path: Path, monkeypatch
) -> None:
    from qaeval_core import judge as judge_module

    seen: dict[str, object] = {}

    class FakeJudge:
        @classmethod
        def from_config(cls, path):
            seen["path"] = Path(path)
            return cls()

        def judge(self, frame: pd.DataFrame) -> pd.DataFrame:
            seen["columns"] = list(frame.columns)
            out = frame.copy()
            out["judge_score"] = np.array([0.2, 0.4, 0.8])[: len(frame)]
            out["judge_correct"] = out["judge_score"] >= 0.5
            return out

    monkeypatch.setattr(judge_module, "Judge", FakeJudge)
    config = tmp_path / "judge.json"
    config.write_text("{}")
    target = tmp_path / "judged.csv"
    code, out, err = run(
        capsys, "score", str(items_file), "--config", str(config), "-m", "em", "-o", str(target)
    )
    assert code == 0, err
    assert seen["path"] == config and "em" in seen["columns"]
    frame = pd.read_csv(target)
    assert frame["judge_correct"].tolist() == [False, False, True]
    assert "judge: share correct 0.333" in out


def test_score_with_a_real_judge_config(capsys, items_file: Path, tmp_path: Path) -> None:
    from qaeval_core.calibrate import feature_scores, fit_judge
    from qaeval_core.judge import frame_to_items
    from qaeval_core.metrics.base import get_metric

    frame = pd.DataFrame(ROWS * 10)
    scores, decisions, specs = feature_scores(frame_to_items(frame), [get_metric("recall")])
    judge, _ = fit_judge(
        scores,
        frame["label"].to_numpy(),
        specs,
        candidates=("threshold",),
        default_decisions=decisions,
        cv=CrossValidation(n_splits=2, n_boot=50),
    )
    config = judge.save(tmp_path / "judge.json")
    target = tmp_path / "judged.jsonl"
    code, out, err = run(
        capsys, "score", str(items_file), "--config", str(config), "-o", str(target)
    )
    assert code == 0, err
    judged = pd.read_json(target, lines=True)
    assert judged["judge_correct"].tolist() == [True, False, True]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["score", "-m", "em"], "Give either FILE or --dataset"),
        (["score", "answers.jsonl"], "Give --metrics"),
        (["score", "answers.jsonl", "-m", "em,nope"], "Unknown metric 'nope'"),
        (["score", "answers.jsonl", "-m", "f1:thresh=1"], "has no parameter(s) thresh"),
        (["score", "missing.jsonl", "-m", "em"], "No such file"),
        (["score", "-d", "toy", "-m", "em", "-o", "x.csv"], "export --dataset NAME --what scores"),
    ],
)
def test_errors_are_one_line_with_the_fix(capsys, items_file: Path, args, message) -> None:
    code, _, err = run(capsys, *args)
    assert code == 1
    assert message in err and "Traceback" not in err
