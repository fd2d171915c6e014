"""``qaeval score`` with an LLM endpoint that fails part way: the output is written, the exit
code is non-zero and the message says how many items have no verdict and why; a rerun after
the server is fixed asks only for the missing ones (files, stored datasets on SQLite and
PostgreSQL, and a judge whose LLM tier fails) (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _fake_llm import fake_llm
from _triage_store import make_judge

from qaeval_core import store
from qaeval_core.cli.main import main
from qaeval_core.judge import FeatureSpec
from qaeval_core.judge.cascade import LLMTier
from qaeval_core.metrics.base import get_metric

ROWS = [
    {
        "id": f"r{i}",
        "question": f"Who wrote play number {i}?",
        "references": ["William Shakespeare"],
        "candidate": "Shakespeare" if i % 2 == 0 else f"Marlowe {i}",
    }
    for i in range(8)
]

CURVE_ROW = {"human_share": 0.0, "people_threshold": 1.0, "coef_cheap": 1.0, "intercept": 0.0}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.delenv("QAEVAL_DEBUG", raising=False)
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path / "cache"))
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


def _spec(url: str) -> str:
    return f"llm_judge:model=m,url={url},timeout=2,max_retries=0,concurrency=1"


def test_a_file_scored_by_a_dying_endpoint_exits_non_zero_and_the_rerun_completes(
    capsys, items_file: Path, tmp_path: Path
) -> None:
    out_file = tmp_path / "scored.jsonl"
    with fake_llm(die_after=3) as server:
        code, out, err = run(
            capsys, "score", str(items_file), "-m", _spec(server.url), "-o", str(out_file)
        )
        assert code == 1
        message = " ".join(err.split())
        assert "5 of 8 items have no verdict" in message and "could not reach" in message
        assert "Traceback" not in err
        assert f"Wrote 8 rows to {out_file}" in " ".join(out.split())
        frame = pd.read_json(out_file, lines=True)
        label = _spec(server.url)
        assert frame[label].isna().sum() == 5 and frame[f"{label}_correct"].isna().sum() == 5
        assert not (frame[label] == 0.0).any()  # a failure never reads as "incorrect"

        server.die_after = None
        asked = server.requests
        code, out, err = run(
            capsys, "score", str(items_file), "-m", _spec(server.url), "-o", str(out_file)
        )
        assert code == 0, err
        assert server.requests == asked + 5  # the three verdicts came from the cache
    frame = pd.read_json(out_file, lines=True)
    assert frame[label].notna().all()


def test_a_stored_dataset_keeps_no_score_for_no_verdict_and_the_rerun_fills_it(
    capsys, db_url: str, items_file: Path
) -> None:
    code, _, err = run(capsys, "import", str(items_file), "-d", "toy", "--db", db_url)
    assert code == 0, err
    with fake_llm(die_after=3) as server:
        code, out, err = run(capsys, "score", "-d", "toy", "-m", _spec(server.url), "--db", db_url)
        assert code == 1
        assert "5 of 8 items have no verdict" in " ".join(err.split())
        stored = store.scores(db_url, "toy")
        assert len(stored) == 3 and stored["value"].notna().all()

        server.die_after = None
        code, out, err = run(capsys, "score", "-d", "toy", "-m", _spec(server.url), "--db", db_url)
        assert code == 0, err
    assert len(store.scores(db_url, "toy")) == 8


def test_a_judge_whose_llm_tier_fails_sends_those_rows_to_people_and_exits_non_zero(
    capsys, items_file: Path, tmp_path: Path
) -> None:
    with fake_llm(mode="dead") as server:
        judge = make_judge(band=False)
        llm = get_metric("llm_judge", model="m", url=server.url, timeout=2, max_retries=0)
        judge.cascade = LLMTier(
            feature=FeatureSpec.from_metric(llm),
            llm_share=1.0,
            human_share=0.0,
            llm_threshold=0.0,  # every row goes to the LLM
            people_threshold=1.0,
            coef_cheap=1.0,
            coef_llm=1.0,
            intercept=0.0,
            cv_accuracy=0.9,
            llm_seconds_per_item=0.1,
            curve=[  # the grid a calibration writes (a judge file's tier is checked against it)
                {
                    **CURVE_ROW,
                    "llm_share": 0.0,
                    "llm_threshold": 1.0,
                    "coef_llm": 0.0,
                    "cv_accuracy": 0.8,
                    "s_per_1000": 0.0,
                },
                {
                    **CURVE_ROW,
                    "llm_share": 1.0,
                    "llm_threshold": 0.0,
                    "coef_llm": 1.0,
                    "cv_accuracy": 0.9,
                    "s_per_1000": 100.0,
                },
            ],
        )
        config = judge.save(tmp_path / "judge.json")
        out_file = tmp_path / "judged.jsonl"
        code, out, err = run(
            capsys, "score", str(items_file), "--config", str(config), "-o", str(out_file)
        )
        assert server.requests <= 3 + 3  # given up after three in a row (four in flight at most)
    assert code == 1
    assert "judge: 8 of 8 rows are judge_error" in " ".join(err.split())
    frame = pd.read_json(out_file, lines=True)
    assert (frame["judge_tier"] == "people").all()
    assert (frame["judge_reason"] == "judge_error").all()
    assert frame["judge_llm_probability"].isna().all()
