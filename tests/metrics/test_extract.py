"""Short-answer extraction: span decoding, the offline fallback, a tiny self-built extractive QA
model, and the wrapper metric in front of exact match."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _tiny_models import tiny_extractive_qa

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.extract import (
    answer_kind,
    best_span,
    candidate_spans,
    extract_answers,
    split_sentences,
    type_match,
)
from qaeval_core.schema import Item

LONG = [
    (
        "What is the capital of France?",
        "Great question! The capital of France is Paris. It is also the largest city in the "
        "country.",
        "Paris",
    ),
    (
        "When did World War II end?",
        "World War II ended in 1945, when Japan formally surrendered on September 2.",
        "1945",
    ),
    (
        "Who wrote Hamlet?",
        "Hamlet is a tragedy. It was written by William Shakespeare around 1600.",
        "William Shakespeare",
    ),
    (
        "What is the Conversion Rate for Event?",
        "Looking at the table, the conversion rate for the event is 8.",
        "8",
    ),
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("extract-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(path))
        yield path


# -- pure helpers -----------------------------------------------------------------------------
def test_split_sentences() -> None:
    text = "It is Paris. It has 2.1 million people!\nSee also: Lyon"
    assert split_sentences(text) == ["It is Paris.", "It has 2.1 million people!", "See also: Lyon"]


def test_candidate_spans_remove_question_words() -> None:
    spans = candidate_spans("The capital of France is Paris.", "What is the capital of France?")
    assert spans == ["Paris"]
    spans = candidate_spans("It was written by William Shakespeare around 1600.", "Who wrote it?")
    assert "William Shakespeare" in spans and "1600" in spans


def test_answer_kinds() -> None:
    assert answer_kind("How many moons does Mars have?") == "number"
    assert answer_kind("What year did the war end?") == "date"
    assert answer_kind("Who wrote Hamlet?") == "name"
    assert answer_kind("What is the capital of France?") == "other"
    assert type_match("two small moons", "number") and type_match("Sep 2", "date")
    assert type_match("William Shakespeare", "name") and not type_match("a tragedy", "name")


def test_best_span() -> None:
    start = np.array([0.0, 5.0, 1.0, 0.0, 9.0])
    end = np.array([0.0, 1.0, 6.0, 0.0, 0.0])
    allowed = np.array([False, True, True, True, False])  # position 4 is not in the context
    assert best_span(start, end, allowed, max_answer_len=3)[:2] == (1, 2)
    assert best_span(start, end, allowed, max_answer_len=1)[:2] == (2, 2)
    assert best_span(start, end, np.zeros(5, dtype=bool), 3)[0] == -1


# -- offline fallback and wrapper (real embedding model) ---------------------------------------
@pytest.mark.slow
def test_fallback_extracts_the_answer(cache_dir) -> None:
    got = extract_answers([q for q, _, _ in LONG], [c for _, c, _ in LONG])
    assert [g.text for g in got] == [a for _, _, a in LONG]
    assert {g.method for g in got} == {"fallback"}
    short = extract_answers(["q", "q"], ["Paris, France", "  "])
    assert short[0].text == "Paris, France" and short[0].method == "short"
    assert short[1].method == "empty"


@pytest.mark.slow
def test_wrapper_metric_in_front_of_exact_match(cache_dir) -> None:
    items = [Item(q, (a,), c) for q, c, a in LONG]
    plain = get_metric("em").score_batch(items)
    wrapped = get_metric("extract", metric="em").score_batch(items)
    assert not plain.decisions.any()
    assert wrapped.decisions.all()
    assert [d["extracted"] for d in wrapped.details] == [a for _, _, a in LONG]
    wrong = get_metric("extract", metric="em").score_batch(
        [Item("Who wrote Hamlet?", ("William Shakespeare",), "It was written by Marlowe in 1600.")]
    )
    assert not wrong.decisions[0]
    with pytest.raises(ConfigError, match="cannot wrap itself"):
        get_metric("extract", metric="extract").score_batch(items)


# -- a tiny extractive QA model built here (random weights: checks the plumbing) ---------------
@pytest.mark.slow
def test_extractive_qa_model_path(tmp_path: Path) -> None:
    texts = [q + " " + c for q, c, _ in LONG]
    folder = tiny_extractive_qa(tmp_path / "tiny-qa", texts)
    long_context = " ".join(c for _, c, _ in LONG) * 20  # several windows (stride)
    contexts = [c for _, c, _ in LONG] + [long_context]
    questions = [q for q, _, _ in LONG] + ["Who wrote Hamlet?"]
    got = extract_answers(questions, contexts, qa_model=str(folder), max_answer_len=5)
    for g, ctx in zip(got, contexts, strict=True):
        assert g.method == "model"
        assert g.text and g.text in ctx
        assert len(g.text.split()) <= 8  # at most 5 word pieces, plus punctuation
    res = get_metric("extract", metric="f1", qa_model=str(folder)).score_batch(
        [Item(q, (a,), c) for q, c, a in LONG]
    )
    assert all(d["extraction"] == "model" for d in res.details)
    assert ((res.scores >= 0.0) & (res.scores <= 1.0)).all()
