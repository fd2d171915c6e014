"""Reading labels as tables: the current label per (item, user) and the whole history.

Labels are written by the app through :mod:`qaeval_core.store.annotation` and by imports
(:mod:`.imports`); this module only reads them, for exports, comparisons and calibration.
:func:`label_history_frame` is the DataFrame of every label ever written (one user's records
are :func:`qaeval_core.store.annotation.label_history`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import exists, func, select

from qaeval_core.store.orm import Dataset, ItemRecord, Label, User, visible_dataset
from qaeval_core.store.repo._common import Store, store_scope
from qaeval_core.store.repo.datasets import find_dataset

__all__ = ["LABEL_COLUMNS", "current_labels", "label_history_frame", "labelled_by"]

LABEL_COLUMNS = [
    "label_id",
    "item_id",
    "external_id",
    "dataset",
    "user",
    "role",
    "value",
    "rule",
    "note",
    "seconds",
    "source",
    "created_at",
]


def _labels_frame(db: Store, dataset: str | None, *, current: bool) -> pd.DataFrame:
    stmt = (
        select(
            Label.id,
            Label.item_id,
            ItemRecord.external_id,
            Dataset.name,
            User.name,
            User.role,
            Label.value,
            Label.rule,
            Label.note,
            Label.seconds,
            Label.source,
            Label.created_at,
        )
        .join(ItemRecord, ItemRecord.id == Label.item_id)
        .join(Dataset, (Dataset.id == ItemRecord.dataset_id) & visible_dataset())
        .join(User, User.id == Label.user_id)
        .order_by(Label.id)
    )
    with store_scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == find_dataset(s, dataset).id)
        if current:
            latest = select(func.max(Label.id)).group_by(Label.item_id, Label.user_id)
            stmt = stmt.where(Label.id.in_(latest))
        rows = s.execute(stmt).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=LABEL_COLUMNS)
    frame["rule"] = frame["rule"].astype("Int64")
    return frame


def current_labels(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """The current label per (item, user): the latest row of the append-only history."""
    return _labels_frame(db, dataset, current=True)


def label_history_frame(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """Every label ever written, oldest first (columns: :data:`LABEL_COLUMNS`)."""
    return _labels_frame(db, dataset, current=False)


def labelled_by(user_id: Any, item_col: Any) -> Any:
    """``EXISTS`` a label by ``user_id`` for the item in ``item_col`` (uses ix_labels_item_user):
    the one "has this user labelled it" test of reassigning, releasing and the progress counts."""
    return exists().where(Label.item_id == item_col, Label.user_id == user_id)
