"""The reads behind :mod:`qaeval_core.analysis.frames`: one dataset's tables for analysis.

Every analysis (the app pages, ``qaeval report``, calibration inputs) starts from these frames,
so they see exactly the same rows. The analysis layer opens one read transaction with
:func:`~qaeval_core.store.scope.store_scope` and passes the session as ``db`` to each
reader here, then chooses score configurations and builds its frames with pandas alone. The
column lists are defined here (and imported by :mod:`qaeval_core.analysis.frames`); the
``FRAME_`` prefix keeps them apart from this package's export columns
(:data:`~qaeval_core.store.items.records.ITEM_COLUMNS`, ...).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pandas as pd
from sqlalchemy import func, select

from qaeval_core.store.datasets import dataset_filter
from qaeval_core.store.orm import (
    Adjudication,
    Dataset,
    ItemRecord,
    Label,
    Score,
    User,
    visible_dataset,
)
from qaeval_core.store.scope import Store, store_scope

__all__ = [
    "FRAME_ITEM_COLUMNS",
    "FRAME_LABEL_COLUMNS",
    "FRAME_SCORE_COLUMNS",
    "SCORE_CONFIG_COLUMNS",
    "data_fingerprint",
    "frame_items",
    "frame_labels",
    "frame_scores",
    "item_row",
    "item_scores",
    "score_config_rows",
]

FRAME_ITEM_COLUMNS = [
    "item_id",
    "dataset",
    "external_id",
    "question",
    "references",
    "candidate",
    "context",
    "qa_model",
]
FRAME_LABEL_COLUMNS = [
    "item_id",
    "rater",
    "role",
    "value",
    "rule",
    "note",
    "source",
    "created_at",
]
FRAME_SCORE_COLUMNS = ["item_id", "metric_id", "config_hash", "value", "decision", "details"]
#: One row per scored (metric, configuration); ``last_id`` breaks ties of ``last_scored``.
SCORE_CONFIG_COLUMNS = ["metric_id", "config_hash", "n_items", "last_scored", "last_id"]


def data_fingerprint(db: Store) -> tuple[Any, ...]:
    """Counts and newest ids/times of items, labels, adjudications and scores (one query).

    Every write changes at least one of them, so it serves as a cache key for analyses.
    """
    with store_scope(db) as s:
        row = s.execute(
            select(
                select(func.count(ItemRecord.id)).scalar_subquery(),
                select(func.max(ItemRecord.id)).scalar_subquery(),
                select(func.max(Label.id)).scalar_subquery(),
                select(func.max(Adjudication.id)).scalar_subquery(),
                select(func.count(Score.id)).scalar_subquery(),
                select(func.max(Score.created_at)).scalar_subquery(),
            )
        ).one()
    return tuple(row)


def score_config_rows(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """Every (metric, configuration) scored on the dataset, unordered.

    Columns :data:`SCORE_CONFIG_COLUMNS`: the number of scored items, the newest ``created_at``
    and the newest score id of each configuration.
    """
    with store_scope(db) as s:
        stmt = (
            select(
                Score.metric_id,
                Score.config_hash,
                func.count(Score.id),
                func.max(Score.created_at),
                func.max(Score.id),
            )
            .join(ItemRecord, ItemRecord.id == Score.item_id)
            .where(dataset_filter(s, dataset))
            .group_by(Score.metric_id, Score.config_hash)
        )
        rows = [tuple(r) for r in s.execute(stmt).all()]
    return pd.DataFrame(rows, columns=SCORE_CONFIG_COLUMNS)


def frame_items(db: Store, dataset: str | None) -> pd.DataFrame:
    """The items of a dataset (``None``: all) in import order (:data:`FRAME_ITEM_COLUMNS`)."""
    with store_scope(db) as s:
        stmt = (
            select(
                ItemRecord.id,
                Dataset.name,
                ItemRecord.external_id,
                ItemRecord.question,
                ItemRecord.references,
                ItemRecord.candidate,
                ItemRecord.context,
                ItemRecord.qa_model,
            )
            .join(Dataset, Dataset.id == ItemRecord.dataset_id)
            .where(dataset_filter(s, dataset))
            .order_by(ItemRecord.id)
        )
        rows = [tuple(r) for r in s.execute(stmt).all()]
    return pd.DataFrame(rows, columns=FRAME_ITEM_COLUMNS)


def frame_labels(db: Store, dataset: str | None, item_id: int | None = None) -> pd.DataFrame:
    """The current label per (item, user) of a dataset or one item (:data:`FRAME_LABEL_COLUMNS`;
    ``value`` as int, ``rule`` as nullable Int64), oldest first."""
    with store_scope(db) as s:
        latest = select(func.max(Label.id)).group_by(Label.item_id, Label.user_id)
        stmt = (
            select(
                Label.item_id,
                User.name,
                User.role,
                Label.value,
                Label.rule,
                Label.note,
                Label.source,
                Label.created_at,
            )
            .join(ItemRecord, ItemRecord.id == Label.item_id)
            .join(User, User.id == Label.user_id)
            .where(Label.id.in_(latest), dataset_filter(s, dataset))
            .order_by(Label.id)
        )
        if item_id is not None:
            stmt = stmt.where(Label.item_id == item_id)
        rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=FRAME_LABEL_COLUMNS)
    frame["value"] = frame["value"].astype(int)
    frame["rule"] = frame["rule"].astype("Int64")
    return frame


def frame_scores(db: Store, dataset: str | None, config_hashes: Collection[str]) -> pd.DataFrame:
    """Every score of a dataset under one of ``config_hashes`` (:data:`FRAME_SCORE_COLUMNS`;
    ``value`` as float, ``decision`` as nullable boolean), by metric id and item."""
    with store_scope(db) as s:
        stmt = (
            select(
                Score.item_id,
                Score.metric_id,
                Score.config_hash,
                Score.value,
                Score.decision,
                Score.details,
            )
            .join(ItemRecord, ItemRecord.id == Score.item_id)
            .where(dataset_filter(s, dataset), Score.config_hash.in_(set(config_hashes)))
            .order_by(Score.metric_id, Score.item_id)
        )
        rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=FRAME_SCORE_COLUMNS)
    frame["value"] = frame["value"].astype(float)
    frame["decision"] = frame["decision"].astype("boolean")
    return frame


def item_row(db: Store, item_id: int) -> dict[str, Any] | None:
    """One item's text as a dict (the :data:`FRAME_ITEM_COLUMNS`), or None when no such item."""
    with store_scope(db) as s:
        row = s.execute(
            select(ItemRecord, Dataset.name)
            .join(Dataset, Dataset.id == ItemRecord.dataset_id)
            .where(ItemRecord.id == int(item_id), visible_dataset())
        ).one_or_none()
        if row is None:
            return None
        it, dataset = row
        return {
            "item_id": it.id,
            "dataset": dataset,
            "external_id": it.external_id,
            "question": it.question,
            "references": list(it.references),
            "candidate": it.candidate,
            "context": it.context,
            "qa_model": it.qa_model,
        }


def item_scores(db: Store, item_id: int) -> pd.DataFrame:
    """Every stored score of one item, every configuration (:data:`FRAME_SCORE_COLUMNS`), by
    metric id, newest first within a metric."""
    with store_scope(db) as s:
        stmt = (
            select(*(getattr(Score, c) for c in FRAME_SCORE_COLUMNS))
            .where(Score.item_id == int(item_id))
            .order_by(Score.metric_id, Score.created_at.desc())
        )
        rows = [tuple(r) for r in s.execute(stmt).all()]
    return pd.DataFrame(rows, columns=FRAME_SCORE_COLUMNS)
