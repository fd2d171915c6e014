"""A trace per judged item (issue 16, part 3): each input's push, the matched reference, the
NAQT rule the evidence points to; written by ``qaeval score --config ... --trace``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qaeval_core.cli.main import main
from qaeval_core.judge import FeatureSpec, Judge
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.combiners.threshold import ThresholdClassifier
from qaeval_core.judge.trace import contributions, matched_reference, naqt_rule
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

ROWS = [
    {
        "question": "Capital of France?",
        "references": ["Paris"],
        "candidate": "It is Paris, on the Seine.",
    },
    {
        "question": "Who wrote Hamlet?",
        "references": ["William Shakespeare", "Shakespeare"],
        "candidate": "Shakespeare",
    },
    {"question": "When did WW2 end?", "references": ["1945"], "candidate": "It ended in 1939."},
    {
        "question": "Which show?",
        "references": ["The Late Late Show with James Corden"],
        "candidate": "The Late Show",
    },
    {"question": "What is it?", "references": ["a boulder"], "candidate": "a rock"},
    {"question": "Capital of Italy?", "references": ["Rome"], "candidate": "I don't know."},
]


def _judge(model_type: str = "stacker") -> Judge:
    metrics = [get_metric("f1"), get_metric("recall"), get_metric("contains")]
    features = [FeatureSpec.from_metric(m) for m in metrics]
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((80, 3)), columns=[f.column for f in features])
    y = (0.6 * X["f1"] + 0.4 * X["contains"] + rng.normal(0, 0.1, 80)) > 0.5
    if model_type == "stacker":
        model = StackerClassifier(Cs=(1.0,)).fit(X, y)
    else:
        model = ThresholdClassifier(column="f1").fit(X, y)
    return Judge(features, model)


def _traces(out: pd.DataFrame) -> list[dict]:
    return [json.loads(t) for t in out["judge_trace"]]


def test_stacker_pushes_sum_to_the_logit_of_the_score() -> None:
    out = _judge().judge(pd.DataFrame(ROWS), trace=True)
    for trace, score in zip(_traces(out), out["judge_score"], strict=True):
        total = sum(trace["contributions"].values())
        assert total == pytest.approx(math.log(score / (1 - score)), abs=1e-9)
        pushes = [p["logit"] for p in trace["pushed_by"]]
        assert [abs(p) for p in pushes] == sorted((abs(p) for p in pushes), reverse=True)
        assert set(trace["inputs"]) == {"f1", "recall", "contains"}


def test_threshold_push_is_the_slope_times_the_distance_to_the_cut() -> None:
    judge = _judge("threshold")
    X = pd.DataFrame({"f1": [0.2, 0.9], "recall": [0.0, 0.0], "contains": [0.0, 1.0]})
    parts = contributions(judge.model, X)
    assert parts is not None
    d = judge.model.decision_function(X)
    assert [p["f1"] for p in parts] == pytest.approx((judge.model.slope_ * d).tolist())


def test_a_judge_of_one_input_traces_its_push() -> None:
    """A threshold fitted on one column (``column=None``) has no column index to look up: the
    Explorer's trace of a one-input judge used to raise."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"f1": rng.random(60)})
    model = ThresholdClassifier().fit(X, X["f1"] + rng.normal(0, 0.1, 60) > 0.5)
    assert model.column_ is None
    parts = contributions(model, pd.DataFrame({"f1": [0.1, 0.8]}))
    assert parts is not None
    assert [p["f1"] for p in parts] == pytest.approx(
        (model.slope_ * (np.array([0.1, 0.8]) - model.threshold_)).tolist()
    )


def test_the_trace_names_the_match_and_the_rule() -> None:
    out = _judge().judge(pd.DataFrame(ROWS), trace=True)
    t = _traces(out)
    assert t[0]["matched_reference"]["reference"] == "paris"
    assert t[0]["matched_reference"]["how"] == "contained"
    assert t[0]["rule"]["rule"] == 4
    assert t[1]["matched_reference"] == {
        "index": 1,
        "reference": "shakespeare",
        "how": "exact",
        "f1": 1.0,
    }
    assert t[1]["rule"]["rule"] == 1  # an alias
    assert t[2]["rule"]["rule"] == 2 and "differ" in t[2]["rule"]["evidence"]
    assert t[3]["matched_reference"]["how"] == "inside" and t[3]["rule"]["rule"] == 3
    assert t[4]["rule"] is None  # semantic equivalence needs judgement
    assert t[5]["reason"] == "not_attempted" and t[5]["answer_evidence"] == "I don't know."
    assert out["judge_reason"].iloc[5] == "not_attempted"


def test_rules_from_numbers_and_references() -> None:
    item = Item(question="q", references=["1945"], candidate="Sep 2, 1945")
    rule = naqt_rule(item, matched_reference(item.candidate, item.references))
    assert rule is not None and rule["rule"] == 2 and "format ignored" in rule["evidence"]
    exact = Item(question="q", references=["Paris"], candidate="paris!")
    match = matched_reference(exact.candidate, exact.references)
    assert match is not None and match["how"] == "exact"
    assert naqt_rule(exact, match) is None  # the first reference itself: no rule needed
    assert matched_reference("completely different", ["Paris"]) is None


def test_no_trace_unless_asked_and_with_trace_turns_it_on() -> None:
    judge = _judge()
    frame = pd.DataFrame(ROWS)
    assert "judge_trace" not in judge.judge(frame).columns
    traced = judge.with_trace()
    assert "judge_trace" in traced.judge(frame).columns
    assert "judge_trace" not in judge.judge(frame).columns  # a copy
    # the trace never changes a verdict
    plain, with_trace = judge.judge(frame), traced.judge(frame)
    pd.testing.assert_frame_equal(plain, with_trace.drop(columns="judge_trace"))


def test_cli_trace_writes_a_judge_trace_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("QAEVAL_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    items = tmp_path / "answers.jsonl"
    items.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    config = _judge().save(tmp_path / "judge.json")
    target = tmp_path / "judged.jsonl"
    code = main(["score", str(items), "--config", str(config), "--trace", "-o", str(target)])
    out, err = capsys.readouterr()
    assert code == 0, err
    judged = pd.read_json(target, lines=True)
    traces = [json.loads(t) for t in judged["judge_trace"]]
    assert traces[0]["rule"]["rule"] == 4
    assert judged["judge_reason"].iloc[5] == "not_attempted"
    assert "not_attempted 1" in out
    code = main(["score", str(items), "-m", "em", "--trace"])
    _, err = capsys.readouterr()
    assert code != 0 and "--trace needs --config" in err


def test_the_trace_shows_the_logit_the_judge_applies() -> None:
    """Issue 34.3: the trace clipped the score 1e-12 from 0 and 1 where the judge's probability
    calibrator clips it 1e-6 away, so a near-certain score showed a logit of 20.7 that the
    judge never applied (it applies 13.8)."""
    from qaeval_core.judge.outcomes import AnswerReason
    from qaeval_core.judge.trace import item_trace
    from qaeval_core.judge.triage import ProbabilityCalibrator, score_logit

    item = Item(question="Capital of France?", references=["Paris"], candidate="Paris")
    calibrator = ProbabilityCalibrator(coef=1.5, intercept=-0.2)
    for score in (1 - 1e-9, 0.3, 1e-9):
        trace = item_trace(
            item,
            inputs={"f1": 1.0},
            contribution=None,
            score=score,
            probability=float(calibrator.predict([score])[0]),
            reason="matched",
            answer=AnswerReason(None),
        )
        assert trace["logit"] == pytest.approx(float(score_logit(score)))
        applied = 1 / (1 + math.exp(-(1.5 * trace["logit"] - 0.2)))
        assert applied == pytest.approx(trace["probability"])
    assert trace["logit"] == pytest.approx(-13.8155, abs=1e-3)
