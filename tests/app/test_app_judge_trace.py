"""The Explorer's judge trace judges a stored item as the dataset's judging does (issue 25).

Why: the trace used to rebuild the item by hand from the Explorer's dict (question, references,
candidate, context, QA model) and dropped what a metric may also read: the choices (A-VERT's
targets), the wrong answers, the dataset and the question id in ``meta``. It then explained a
verdict the judge never gave. Now it reads the item through the store's own conversion
(``qstore.load_item``, the one ``workflows.judge_dataset`` reads through ``load_items``); a judge
whose only input reads choices and wrong answers checks that nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from app.components.judge_trace import item_judge_trace
from qaeval_core import store as qstore
from qaeval_core import workflows
from qaeval_core.calibrate import feature_scores, fit_judge
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.errors import NotFoundError
from qaeval_core.judge import Judge
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item

DATASET = "offered"
CALIBRATION = "reads-the-offer"


@register
class _OfferedAnswerMetric(Metric):
    """1 when the candidate is one of the item's choices and not one of its wrong answers: a
    signal that exists only in the fields the old trace dropped."""

    id = "_test_offered_answer"
    version = "1"

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        def offered(it: Item) -> bool:
            answer = (it.candidate or "").strip().lower()
            choices = {c.lower() for c in it.choices or ()}
            wrong = {w.lower() for w in it.wrong_answers or ()}
            return answer in choices and answer not in wrong

        scores = np.array([1.0 if offered(it) else 0.0 for it in items])
        return MetricResult(scores, scores >= 0.5)


def _rows(n: int = 48) -> list[dict]:
    """Two answers per question: the reference (a choice) and a known wrong answer (a choice
    and a listed wrong answer); every item carries choices and wrong answers."""
    rows = []
    for i in range(n):
        q = i // 2
        right, wrong = f"answer {q}", f"decoy {q}"
        rows.append(
            {
                "id": f"r{i}",
                "question": f"Question {q}?",
                "references": [right],
                "candidate": right if i % 2 == 0 else wrong,
                "choices": [right, wrong],
                "wrong_answers": [wrong],
                "meta": {"qid": f"q{q}"},
            }
        )
    return rows


@pytest.fixture
def store(sqlite_url: str) -> str:
    """A dataset whose items carry choices and wrong answers, and a saved judge reading them."""
    qstore.import_items(sqlite_url, DATASET, _rows())
    items = qstore.load_items(sqlite_url, DATASET)
    y = np.array([it.candidate.startswith("answer") for it in items])
    scores, decisions, specs = feature_scores(items, [_OfferedAnswerMetric()])
    judge, _ = fit_judge(
        scores,
        y,
        specs,
        candidates=["threshold"],
        groups=[it.question for it in items],
        default_decisions=decisions,
        cv=CrossValidation(n_splits=3, n_boot=50),
        name=CALIBRATION,
    )
    qstore.save_calibration(sqlite_url, CALIBRATION, judge.to_config(), dataset=DATASET)
    return sqlite_url


def test_the_trace_of_an_item_is_the_verdict_judging_its_dataset_gives(store: str) -> None:
    judge = Judge.from_config(qstore.get_calibration(store, CALIBRATION).config)
    judged, _ = workflows.judge_dataset(store, DATASET, judge)
    assert judged["judge_correct"].any() and not judged["judge_correct"].all()
    for row in judged.itertuples(index=False):
        traced = item_judge_trace(store, CALIBRATION, int(row.item_id))
        assert (traced["judge_correct"], traced["judge_outcome"], traced["judge_reason"]) == (
            row.judge_correct,
            row.judge_outcome,
            row.judge_reason,
        ), row.external_id
        assert traced["trace"]["inputs"]["_test_offered_answer"] == (
            1.0 if row.judge_correct else 0.0
        )


def test_the_trace_reads_the_fields_the_hand_built_item_dropped(store: str) -> None:
    """What the old trace judged (question, references, candidate, context, QA model only)
    loses the choices, so a right answer came out wrong; the stored item keeps them."""
    judge = Judge.from_config(qstore.get_calibration(store, CALIBRATION).config)
    first = int(qstore.list_items(store, DATASET)["item_id"].iloc[0])  # a right answer
    stored = qstore.load_item(store, first)
    assert stored.choices and stored.wrong_answers and stored.dataset == DATASET
    assert stored.meta["qid"] == "q0" and stored.meta["item_id"] == first
    hand_built = Item(
        question=stored.question, references=list(stored.references), candidate=stored.candidate
    )
    assert not judge.judge([hand_built])["judge_correct"].iloc[0]
    assert item_judge_trace(store, CALIBRATION, first)["judge_correct"]


def test_load_item_is_load_items_conversion_and_refuses_an_unknown_id(store: str) -> None:
    every = qstore.load_items(store, DATASET)
    assert [qstore.load_item(store, int(it.meta["item_id"])) for it in every] == every
    with pytest.raises(NotFoundError, match="No item with id 999999"):
        qstore.load_item(store, 999_999)
