"""The Judge's ways in (issue 25): one main door, ``judge``, and scikit-learn's verbs
``predict``, ``predict_proba`` and ``score`` giving what ``judge`` gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from qaeval_core.calibrate import fit_judge
from qaeval_core.calibrate.options import CrossValidation, TriagePolicy
from qaeval_core.errors import InputError
from qaeval_core.io.item_frames import items_from_frame
from qaeval_core.judge import COLUMN_PREFIX, FeatureSpec, Judge
from qaeval_core.metrics.base import get_metric

ROWS = [
    {
        "question": "Capital of France?",
        "references": ["Paris"],
        "candidate": "It is Paris, on the Seine.",
        "label": 2,
    },
    {
        "question": "Who wrote Hamlet?",
        "references": ["William Shakespeare", "Shakespeare"],
        "candidate": "Shakespeare",
        "label": 2,
    },
    {
        "question": "When did WW2 end?",
        "references": ["1945"],
        "candidate": "It ended in 1939.",
        "label": 0,
    },
    {
        "question": "Which show?",
        "references": ["The Late Late Show with James Corden"],
        "candidate": "The Late Show",
        "label": 0,
    },
    {"question": "What is it?", "references": ["a boulder"], "candidate": "a rock", "label": 0},
    {
        "question": "Capital of Italy?",
        "references": ["Rome"],
        "candidate": "I don't know.",
        "label": 0,
    },
]


@pytest.fixture(scope="module")
def judge() -> Judge:
    """A judge fitted on cheap lexical scores, with a calibrated probability and a band."""
    features = [FeatureSpec.from_metric(get_metric(m)) for m in ("f1", "recall", "contains")]
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((200, 3)), columns=[f.column for f in features])
    y = (0.6 * X["f1"] + 0.4 * X["contains"] + rng.normal(0, 0.15, 200)) > 0.5
    fitted, _ = fit_judge(
        X,
        y,
        features,
        cv=CrossValidation(n_boot=100),
        triage=TriagePolicy(human_share=0.2),
        name="doors",
    )
    assert fitted.probability is not None
    return fitted


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(ROWS, index=[10, 11, 12, 13, 14, 15])


def test_judge_on_a_frame_is_the_frame_plus_the_judges_columns(judge, frame) -> None:
    out = judge.judge(frame)
    # What the frame door always gave: the inputs, decided, prefixed, joined to the frame.
    items = items_from_frame(frame)
    scores, errors = judge.input_scores(items)
    decided = judge.judge_scores(scores, items, errors=errors)
    want = pd.concat([decided, scores.add_prefix(COLUMN_PREFIX)], axis=1)
    want.index = frame.index
    want = pd.concat([frame, want], axis=1)
    pd.testing.assert_frame_equal(out, want)
    # Judging a judged frame replaces its judge columns instead of adding more.
    pd.testing.assert_frame_equal(judge.judge(out), out)


def test_judge_on_items_gives_the_judges_columns_alone(judge, frame) -> None:
    on_items = judge.judge(items_from_frame(frame))
    on_frame = judge.judge(frame)
    assert not set(on_items.columns) & set(frame.columns)
    pd.testing.assert_frame_equal(
        on_items, on_frame[on_items.columns].reset_index(drop=True), check_index_type=False
    )
    assert "judge_trace" in judge.judge(items_from_frame(frame), trace=True).columns
    with pytest.raises(InputError, match="DataFrame .* or a sequence of Item"):
        judge.judge(["not an item"])


def test_predict_and_predict_proba_are_the_judges_columns(judge, frame) -> None:
    out = judge.judge(frame)
    for data in (frame, items_from_frame(frame)):
        predicted = judge.predict(data)
        assert predicted.dtype == bool
        np.testing.assert_array_equal(predicted, out["judge_correct"].to_numpy())
        proba = judge.predict_proba(data)
        assert proba.shape == (len(frame), 2)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(proba[:, 1], out["judge_probability"].to_numpy())
    # A refusal is never correct: the rule decides it, with probability 0.
    assert not predicted[-1] and proba[-1, 1] == 0.0


def test_score_is_the_accuracy_of_predict(judge, frame) -> None:
    predicted = judge.predict(frame)
    truth = frame["label"].to_numpy() == 2
    want = float(np.mean(predicted == truth))
    assert judge.score(frame, truth) == want
    assert judge.score(frame, truth.astype(int)) == want
    assert judge.score(frame, frame["label"]) == want  # the 3-point scale, 0 and 2
    assert judge.score(items_from_frame(frame), list(truth)) == want


def test_score_refuses_unclear_and_wrong_labels(judge, frame) -> None:
    with pytest.raises(InputError, match=r"holds 1 \(unclear\)"):
        judge.score(frame, [2, 1, 0, 0, 0, 0])
    with pytest.raises(InputError, match="must hold 0 .* or 2"):
        judge.score(frame, [2, 3, 0, 0, 0, 0])
    with pytest.raises(InputError, match="binary labels"):
        judge.score(frame, [0.5, 1, 0, 0, 0, 0])
    with pytest.raises(InputError, match="y has 2 labels for 6 rows"):
        judge.score(frame, [True, False])


def test_a_saved_judge_gives_the_same_probabilities(judge, frame, tmp_path: Path) -> None:
    loaded = Judge.from_config(judge.save(tmp_path / "judge.json"))
    np.testing.assert_array_equal(loaded.predict_proba(frame), judge.predict_proba(frame))
    np.testing.assert_array_equal(loaded.predict(frame), judge.predict(frame))
