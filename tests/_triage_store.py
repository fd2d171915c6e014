"""A store for the triage tests: items whose token F1 puts them certain or uncertain under a
small threshold judge, annotators, a researcher and an external rater; and helpers that read
deals and run store calls at once.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select

from qaeval_core import store
from qaeval_core.judge import (
    FeatureSpec,
    Judge,
    ProbabilityCalibrator,
    ThresholdClassifier,
    TriageBand,
)
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import content_hash
from qaeval_core.store.orm import Assignment, Dataset, Deal, DealItem, Score, User
from qaeval_core.store.orm import ItemRecord as Item
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.workflows import triage as triage_mod

ANNOTATORS = ("ann1", "ann2", "ann3")


#: Candidates by item index mod 4, with their token F1 against "answer {i}": exact (1.0), the
#: number only (0.33), nothing (0.0), the answer padded (0.57). Under :func:`make_judge` the
#: first and third are certain, the second uncertain, the fourth uncertain only at share 0.5.
CANDIDATES = ("answer {i}", "something else entirely {i}", "nothing here", "answer {i} x y z")


def make_store(url: str, n_items: int = 20, dataset: str = "ds") -> list[int]:
    """Items of :data:`CANDIDATES` in turn, QA models m0 / m1 alternating; annotators ann1-3,
    researcher boss, external rater ext."""
    with write_scope(url) as s:
        ds = Dataset(name=dataset)
        s.add(ds)
        s.flush()
        items = []
        for i in range(n_items):
            cand = CANDIDATES[i % 4].format(i=i)
            items.append(
                Item(
                    dataset_id=ds.id,
                    external_id=f"{dataset}-{i}",
                    question=f"question {i}?",
                    references=[f"answer {i}"],
                    candidate=cand,
                    qa_model=f"m{i % 2}",
                    content_hash=content_hash(f"question {i}?", [f"answer {i}"], cand),
                )
            )
        s.add_all(items)
        roles = {**dict.fromkeys(ANNOTATORS, "annotator"), "boss": "researcher", "ext": "external"}
        for name, role in roles.items():
            if s.scalar(select(User).where(User.name == name)) is None:
                s.add(User(name=name, role=role))
        s.flush()
        return [it.id for it in items]


def make_judge(*, band: bool = True, share: float = 0.25) -> Judge:
    """A real judge on token F1 with a calibrated probability and (optionally) a triage band."""
    clf = ThresholdClassifier().fit(
        pd.DataFrame({"f1": [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]}), [0, 0, 0, 0, 1, 1, 1, 1]
    )
    curve = [
        {
            "share": s,
            "threshold": t,
            "combined_accuracy": 0.9,
            "combined_lo": 0.8,
            "combined_hi": 0.95,
            "random_accuracy": 0.85,
            "random_lo": 0.8,
            "random_hi": 0.9,
            "confident_accuracy": 0.88,
        }
        for s, t in ((0.0, 1.0), (0.25, 0.2), (0.5, 0.1))
    ]
    triage = (
        TriageBand(
            threshold=0.2,
            share=share,
            cv_accuracy_confident=0.9,
            cv_accuracy_combined=0.95,
            curve=curve,
        )
        if band
        else None
    )
    return Judge(
        [FeatureSpec.from_metric(get_metric("f1"))],
        clf,
        name="test-judge",
        probability=ProbabilityCalibrator(coef=10.0, intercept=0.0),
        triage=triage,
    )


def save_judge(url: str, name: str = "cal", **kwargs: Any) -> Judge:
    judge = make_judge(**kwargs)
    store.save_calibration(url, name, judge.to_config(), dataset="ds")
    return judge


def fake_judgments(monkeypatch: pytest.MonkeyPatch, probs: dict[int, float], uncertain: set[int]):
    """Replace judge_dataset: item -> P(correct) as given (0.9 when not given), and the
    outcome ``uncertain`` exactly for the items in ``uncertain``."""
    calls: list[str] = []

    def fake(db: Any, dataset: str, judge: Judge, **_: Any):
        calls.append(dataset)
        frame = store.list_items(db, dataset)
        p = np.array([probs.get(int(i), 0.9) for i in frame["item_id"]])
        correct = p >= 0.5
        doubt = np.where(correct, 1 - p, p)
        outcome = np.where(correct, "correct", "incorrect").astype(object)
        outcome[[int(i) in uncertain for i in frame["item_id"]]] = "uncertain"
        out = frame.assign(
            judge_score=p,
            judge_correct=correct,
            judge_probability=p,
            judge_doubt=doubt,
            judge_outcome=outcome,
        )
        return out, {}

    monkeypatch.setattr(triage_mod, "judge_dataset", fake)
    return calls


def assignment_rows(url: str) -> list[tuple[int, str, int | None]]:
    with session_scope(url) as s:
        rows = s.execute(
            select(Assignment.item_id, User.name, Assignment.deal_id).join(
                User, User.id == Assignment.user_id
            )
        )
        return [tuple(r) for r in rows]


def counts(url: str) -> tuple[int, int, int, int]:
    """(deals, deal items, assignments, scores): what a refused call must leave unchanged."""
    with session_scope(url) as s:
        return tuple(
            s.scalar(select(func.count()).select_from(t))
            for t in (Deal, DealItem, Assignment, Score)
        )


def import_label(url: str, item_id: int, value: int, rater: str = "ext") -> None:
    store.save_label(url, rater, item_id, value, require_assignment=False, source="import")


def at_once(*calls: Any) -> list[Any]:
    """Run the calls in threads released together; re-raise the first error."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        barrier.wait()
        try:
            results[k] = calls[k]()
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
