"""A calibrated judge on a stored dataset marks the rows whose stored inputs failed.

When a metric raised on a row (or gave a non-finite score), the scoring loop stores 0.0 with
``details["error"]``. Judging a file reports such rows as ``judge_reason == "judge_error"``
(not correct, routed to people); judging the stored dataset must do the same instead of
treating the substituted 0.0 as a real score. Runs on SQLite and PostgreSQL (``db_url``).
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select

from qaeval_core import store
from qaeval_core.judge import FeatureSpec, Judge, ThresholdClassifier
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import content_hash
from qaeval_core.store.orm import Dataset, User
from qaeval_core.store.orm import ItemRecord as Item
from qaeval_core.store.session import write_scope
from qaeval_core.workflows.stored_scoring import judge_dataset, score_rows


def _store(url: str, n: int = 4) -> list[int]:
    """``n`` items whose candidate equals the reference (token F1 = 1: certainly correct)."""
    with write_scope(url) as s:
        ds = Dataset(name="ds")
        s.add(ds)
        s.flush()
        items = [
            Item(
                dataset_id=ds.id,
                external_id=f"ds-{i}",
                question=f"question {i}?",
                references=[f"answer {i}"],
                candidate=f"answer {i}",
                qa_model="m0",
                content_hash=content_hash(f"question {i}?", [f"answer {i}"], f"answer {i}"),
            )
            for i in range(n)
        ]
        s.add_all(items)
        if s.scalar(select(User).where(User.name == "boss")) is None:
            s.add(User(name="boss", role="researcher"))
        s.flush()
        return [it.id for it in items]


def _judge() -> Judge:
    """A judge on token F1 alone: correct from F1 0.5 up, no triage band."""
    clf = ThresholdClassifier().fit(
        pd.DataFrame({"f1": [0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0]}), [0, 0, 0, 0, 1, 1, 1, 1]
    )
    return Judge([FeatureSpec.from_metric(get_metric("f1"))], clf, name="t")


def _store_f1(url: str, ids: list[int], failed: int) -> None:
    """Store the real F1 of every item, except that ``failed`` carries an error (score 0.0, as
    the scoring loop stores a metric that raised)."""
    metric = get_metric("f1")
    items = [it for it in store.load_items(url, "ds") if int(it.meta["item_id"]) in ids]
    result = metric.score_batch(items)
    rows = score_rows("f1", metric, items, result)
    for row in rows:
        if row["item_id"] == failed:
            row.update(value=0.0, decision=False, details={"error": "ValueError: boom"})
    store.add_scores(url, rows)


def test_stored_error_gives_judge_error(db_url: str) -> None:
    ids = _store(db_url)
    _store_f1(db_url, ids, failed=ids[1])
    out, summary = judge_dataset(db_url, "ds", _judge())
    assert summary["f1"]["scored"] == 0  # every input was reused, error included
    by_id = out.set_index("item_id")
    assert by_id.loc[ids[1], "judge_reason"] == "judge_error"
    assert by_id.loc[ids[1], "judge_outcome"] == "uncertain"
    assert not by_id.loc[ids[1], "judge_correct"]
    others = by_id.drop(index=ids[1])
    assert (others["judge_reason"] == "matched").all()
    assert others["judge_correct"].all()


def test_no_stored_error_no_judge_error(db_url: str) -> None:
    ids = _store(db_url)
    out, _ = judge_dataset(db_url, "ds", _judge())  # scored here, nothing failed
    assert set(out["item_id"]) == set(ids)
    assert (out["judge_reason"] == "matched").all()
