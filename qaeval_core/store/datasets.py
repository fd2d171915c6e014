"""Datasets: create, look up, list with their item counts, delete.

A dataset is a named collection of items; every other table hangs off it. :func:`find_dataset`
is the one lookup by name or id every store module uses, so a typo always gets the same "known
datasets: ..." message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from qaeval_core.errors import NotFoundError, StoreError
from qaeval_core.store.orm import (
    INCLUDE_PENDING_IMPORTS,
    Dataset,
    ItemRecord,
    pending_imports,
    visible_dataset,
)
from qaeval_core.store.scope import Store, check_name, store_scope

__all__ = [
    "DatasetInfo",
    "DatasetRef",
    "find_dataset",
    "find_dataset_id",
    "create_dataset",
    "delete_dataset",
    "get_dataset",
    "list_datasets",
]


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    description: str | None
    source: str | None
    created_at: datetime
    n_items: int = 0


def _dataset_info(ds: Dataset, n_items: int = 0) -> DatasetInfo:
    return DatasetInfo(ds.id, ds.name, ds.description, ds.source, ds.created_at, n_items)


#: A dataset by name (from the UI or the CLI) or by id (hot paths that already resolved it).
DatasetRef = int | str


def find_dataset(session: Session, dataset: DatasetRef) -> Dataset:
    """The dataset with this name (or id): the one resolver of datasets, so a typo always gets
    the same "known datasets: ..." message, whichever function was called."""
    key = Dataset.id == dataset if isinstance(dataset, int) else Dataset.name == dataset
    ds = session.execute(select(Dataset).where(key, visible_dataset())).scalar_one_or_none()
    if ds is None:
        stmt = select(Dataset.name).where(visible_dataset()).order_by(Dataset.name)
        known = session.execute(stmt).scalars().all()
        hint = f"known datasets: {', '.join(known)}" if known else "the store has no datasets yet"
        what = f"with id {dataset}" if isinstance(dataset, int) else f"named {dataset!r}"
        raise NotFoundError(f"No dataset {what} ({hint}).")
    return ds


def find_dataset_id(session: Session, dataset: DatasetRef) -> int:
    """The id of ``dataset``; an int is trusted as an id (hot paths skip the lookup)."""
    return dataset if isinstance(dataset, int) else find_dataset(session, dataset).id


def dataset_filter(session: Session, dataset: str | None) -> Any:
    """A WHERE clause keeping one dataset's items (``None``: every dataset but imports in
    progress)."""
    if dataset is None:  # every dataset but imports in progress
        return ItemRecord.dataset_id.in_(select(Dataset.id).where(visible_dataset()))
    # the lookup gives the "known datasets: ..." message for a typo
    return ItemRecord.dataset_id == find_dataset(session, dataset).id


def create_dataset(
    db: Store,
    name: str,
    *,
    description: str | None = None,
    source: str | None = None,
    exist_ok: bool = False,
) -> DatasetInfo:
    """Create an empty dataset (``exist_ok``: return the existing one instead of failing)."""
    name = check_name(name, "dataset")
    with store_scope(db, write=True) as s:
        ds = s.execute(select(Dataset).where(Dataset.name == name)).scalar_one_or_none()
        if ds is not None:
            if not exist_ok:
                raise StoreError(f"A dataset named {name!r} already exists.")
            return _dataset_info(ds)
        ds = Dataset(name=name, description=description, source=source)
        s.add(ds)
        s.flush()
        return _dataset_info(ds)


def get_dataset(db: Store, name: str) -> DatasetInfo:
    with store_scope(db) as s:
        ds = find_dataset(s, name)
        n = s.execute(
            select(func.count(ItemRecord.id)).where(ItemRecord.dataset_id == ds.id)
        ).scalar_one()
        return _dataset_info(ds, n)


def _count_by_dataset(where: Any) -> Any:
    stmt = select(ItemRecord.dataset_id, func.count(ItemRecord.id).label("n"))
    if where is not None:
        stmt = stmt.where(where)
    return stmt.group_by(ItemRecord.dataset_id).subquery()


def list_datasets(db: Store) -> list[DatasetInfo]:
    """Every dataset with its item count, by name.

    The count skips the items of imports not yet committed (as every reader does), but counts
    all items, from the index on ``dataset_id`` alone, less those, from the partial index of
    marked items: the readers' filter itself would read every item's row (0.07 s -> 0.19 s at
    200,000 items on the loaded 2-core machine, on each page that lists the datasets)."""
    every = _count_by_dataset(None)
    pending = _count_by_dataset(ItemRecord.import_id.in_(pending_imports()))
    n = func.coalesce(every.c.n, 0) - func.coalesce(pending.c.n, 0)
    stmt = (
        select(Dataset, n)
        .outerjoin(every, every.c.dataset_id == Dataset.id)
        .outerjoin(pending, pending.c.dataset_id == Dataset.id)
        .where(visible_dataset())
        .order_by(Dataset.name)
        .execution_options(**{INCLUDE_PENDING_IMPORTS: True})
    )
    with store_scope(db) as s:
        return [_dataset_info(ds, n) for ds, n in s.execute(stmt).all()]


def delete_dataset(db: Store, name: str) -> None:
    """Delete a dataset with its items, labels, assignments and scores."""
    with store_scope(db, write=True) as s:
        s.delete(find_dataset(s, name))
