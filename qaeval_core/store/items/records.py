"""Reading a dataset's items: as a table (for the app and exports) or as metric inputs.

Items are written only by imports (:mod:`.imports`); the store's integer ``item_id`` is what
labels, assignments and scores refer to, and :func:`load_items` keeps it in
``Item.meta["item_id"]`` so scores can be written back. :func:`load_item` gives one item the
same way (every field a metric may read: choices, wrong answers, dataset, meta), so judging one
item (the Explorer's trace) reads what judging its dataset reads.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import select

from qaeval_core.errors import NotFoundError
from qaeval_core.io.cells import is_missing
from qaeval_core.schema import Item as SchemaItem
from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import Dataset, ItemRecord, visible_dataset
from qaeval_core.store.scope import Store, store_scope

__all__ = ["ITEM_COLUMNS", "list_items", "load_item", "load_items"]

ITEM_COLUMNS = [
    "item_id",
    "dataset",
    "external_id",
    "question",
    "references",
    "candidate",
    "context",
    "choices",
    "wrong_answers",
    "qa_model",
    "meta",
    "content_hash",
    "created_at",
]


def list_items(db: Store, dataset: str, *, item_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """A dataset's items in import order (columns: :data:`ITEM_COLUMNS`)."""
    with store_scope(db) as s:
        ds = find_dataset(s, dataset)
        stmt = select(ItemRecord).where(ItemRecord.dataset_id == ds.id).order_by(ItemRecord.id)
        if item_ids is not None:
            stmt = stmt.where(ItemRecord.id.in_(list(item_ids)))
        rows = [
            (
                it.id,
                ds.name,
                it.external_id,
                it.question,
                it.references,
                it.candidate,
                it.context,
                it.choices,
                it.wrong_answers,
                it.qa_model,
                it.meta,
                it.content_hash,
                it.created_at,
            )
            for it in s.execute(stmt).scalars()
        ]
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def load_items(db: Store, dataset: str) -> list[SchemaItem]:
    """A dataset's items as :class:`qaeval_core.schema.Item` (for metrics).

    ``Item.id`` is the external id; the store's integer id is in ``Item.meta["item_id"]``.
    """
    return _schema_items(list_items(db, dataset), dataset)


def load_item(db: Store, item_id: int) -> SchemaItem:
    """One stored item as :func:`load_items` gives it (the same conversion), by its store id.

    Raises :class:`~qaeval_core.errors.NotFoundError` when no item of a visible dataset has
    that id (an import still in progress is not visible).
    """
    with store_scope(db) as s:
        dataset = s.execute(
            select(Dataset.name)
            .join(ItemRecord, ItemRecord.dataset_id == Dataset.id)
            .where(ItemRecord.id == int(item_id), visible_dataset())
        ).scalar_one_or_none()
        if dataset is None:
            raise NotFoundError(f"No item with id {item_id}.")
        return _schema_items(list_items(s, dataset, item_ids=[int(item_id)]), dataset)[0]


def _schema_items(frame: pd.DataFrame, dataset: str) -> list[SchemaItem]:
    """Rows of :func:`list_items` as :class:`qaeval_core.schema.Item` (see :func:`load_items`)."""

    def present(value: object) -> object:
        # A NULL read into a frame column that also holds text can come back as NaN, which is
        # truthy and not text: an Item's optional fields are None when absent.
        return None if is_missing(value) else value

    return [
        SchemaItem(
            question=r.question,
            references=tuple(r.references),
            candidate=r.candidate,
            context=present(r.context),
            choices=present(r.choices),
            wrong_answers=present(r.wrong_answers),
            id=present(r.external_id),
            dataset=dataset,
            qa_model=present(r.qa_model),
            meta={**(r.meta or {}), "item_id": int(r.item_id)},
        )
        for r in frame.itertuples(index=False)
    ]
