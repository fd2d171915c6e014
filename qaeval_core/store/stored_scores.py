"""Metric scores: writing them (insert or replace) and reading them back as a table.

A score is keyed by (item, metric id, config hash): scoring again under the same configuration
replaces the old value, a changed configuration adds rows beside it. ``details`` are
informational, so they are stored as lenient JSON (:func:`qaeval_core.jsonable.to_jsonable`:
NaN becomes null, unknown objects their text). The module is not called ``scores`` so that it
cannot shadow the :func:`scores` reader on the package.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd
from sqlalchemy import insert, select, update

from qaeval_core.errors import StoreError
from qaeval_core.jsonable import to_jsonable
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import Dataset, ItemRecord, Score, utcnow, visible_dataset
from qaeval_core.store.scope import Store, store_scope

__all__ = ["SCORE_COLUMNS", "add_scores", "scores"]

SCORE_COLUMNS = [
    "score_id",
    "item_id",
    "external_id",
    "dataset",
    "metric_id",
    "config_hash",
    "value",
    "decision",
    "details",
    "created_at",
]


def add_scores(db: Store, rows: Iterable[Mapping[str, Any]]) -> int:
    """Insert or replace scores, keyed by (item_id, metric_id, config_hash). Returns the count.

    Each row: ``item_id``, ``metric_id``, ``config_hash``, ``value`` (finite), optional
    ``decision`` and ``details``.
    """
    payload = []
    for r in rows:
        value = float(r["value"])
        if not math.isfinite(value):
            raise StoreError(
                f"Score of item {r['item_id']} by {r['metric_id']} is {value}; scores must be "
                "finite numbers."
            )
        decision = r.get("decision")
        payload.append(
            {
                "item_id": int(r["item_id"]),
                "metric_id": str(r["metric_id"]),
                "config_hash": str(r["config_hash"]),
                "value": value,
                "decision": None if decision is None else bool(decision),
                "details": None if r.get("details") is None else to_jsonable(r["details"]),
                "created_at": utcnow(),
            }
        )
    if not payload:
        return 0
    with store_scope(db, write=True) as s:
        dialect = s.get_bind().dialect.name
        if dialect in ("sqlite", "postgresql"):
            if dialect == "sqlite":
                from sqlalchemy.dialects.sqlite import insert as upsert
            else:
                from sqlalchemy.dialects.postgresql import insert as upsert
            stmt = upsert(Score.__table__)
            stmt = stmt.on_conflict_do_update(
                index_elements=["item_id", "metric_id", "config_hash"],
                set_={c: stmt.excluded[c] for c in ("value", "decision", "details", "created_at")},
            )
            for start in range(0, len(payload), 5000):
                s.execute(stmt, payload[start : start + 5000])
        else:  # portable fallback: update what exists, insert the rest
            for row in payload:
                key = (
                    (Score.item_id == row["item_id"])
                    & (Score.metric_id == row["metric_id"])
                    & (Score.config_hash == row["config_hash"])
                )
                if s.execute(update(Score).where(key).values(**row)).rowcount == 0:
                    s.execute(insert(Score).values(**row))
    return len(payload)


def scores(
    db: Store,
    dataset: str | None = None,
    *,
    metric_id: str | None = None,
    config_hash: str | None = None,
) -> pd.DataFrame:
    """Stored scores (columns: :data:`SCORE_COLUMNS`), optionally for one metric/config."""
    stmt = (
        select(
            Score.id,
            Score.item_id,
            ItemRecord.external_id,
            Dataset.name,
            Score.metric_id,
            Score.config_hash,
            Score.value,
            Score.decision,
            Score.details,
            Score.created_at,
        )
        .join(ItemRecord, ItemRecord.id == Score.item_id)
        .join(Dataset, (Dataset.id == ItemRecord.dataset_id) & visible_dataset())
        .order_by(Score.item_id, Score.metric_id, Score.id)
    )
    if metric_id is not None:
        stmt = stmt.where(Score.metric_id == metric_id)
    if config_hash is not None:
        stmt = stmt.where(Score.config_hash == config_hash)
    with store_scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == find_dataset(s, dataset).id)
        rows = s.execute(stmt).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=SCORE_COLUMNS)
