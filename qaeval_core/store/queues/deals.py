"""Reading the recorded deals: which deals a dataset had, which items each audit or triage deal
drew, and through which kind of deal each current label's item reached its rater.

Deals are written by :func:`qaeval_core.store.deal`;
:func:`qaeval_core.workflows.final_labels` reads them here to say where an item's human labels
came from (``label_sample``), since only an audit deal's random sample may stand in for the
whole dataset in an estimate.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import and_, func, select

from qaeval_core.store.datasets import find_dataset
from qaeval_core.store.orm import Assignment, Dataset, Deal, DealItem, ItemRecord, Label, User
from qaeval_core.store.scope import Store, store_scope

__all__ = [
    "DEAL_COLUMNS",
    "DEAL_ITEM_COLUMNS",
    "LABEL_ORIGIN_COLUMNS",
    "LEGACY_DEAL_KIND",
    "deal_item_rows",
    "label_origins",
    "list_deals",
]

DEAL_COLUMNS = [
    "deal_id",
    "dataset",
    "kind",
    "seed",
    "params",
    "n_items",
    "added",
    "created_by",
    "created_at",
]
DEAL_ITEM_COLUMNS = ["deal_id", "kind", "item_id", "inclusion_probability"]
LABEL_ORIGIN_COLUMNS = ["item_id", "rater", "source", "deal_id", "deal_kind"]
#: The kind of an assignment dealt before deals were recorded (migration 0004): ``deal`` was
#: the only way to queue items then.
LEGACY_DEAL_KIND = "queue"


def list_deals(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """Every recorded deal (of one dataset, or all), oldest first (:data:`DEAL_COLUMNS`)."""
    stmt = (
        select(
            Deal.id,
            Dataset.name,
            Deal.kind,
            Deal.seed,
            Deal.params,
            Deal.n_items,
            Deal.added,
            User.name,
            Deal.created_at,
        )
        .join(Dataset, Dataset.id == Deal.dataset_id)
        .outerjoin(User, User.id == Deal.created_by)
        .order_by(Deal.id)
    )
    with store_scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Deal.dataset_id == find_dataset(s, dataset).id)
        rows = [tuple(r) for r in s.execute(stmt).all()]
    return pd.DataFrame(rows, columns=DEAL_COLUMNS)


def deal_item_rows(db: Store, dataset: str, kind: str | None = None) -> pd.DataFrame:
    """The items audit and triage deals of a dataset drew (``kind``: only those deals), one row
    per (deal, item) (:data:`DEAL_ITEM_COLUMNS`; ``inclusion_probability``: the probability the
    deal drew the item, NaN where not recorded). Queue deals cover the whole dataset and list
    no items."""
    stmt = (
        select(DealItem.deal_id, Deal.kind, DealItem.item_id, DealItem.inclusion_probability)
        .join(Deal, Deal.id == DealItem.deal_id)
        .order_by(DealItem.deal_id, DealItem.item_id)
    )
    with store_scope(db) as s:
        stmt = stmt.where(Deal.dataset_id == find_dataset(s, dataset).id)
        if kind is not None:
            stmt = stmt.where(Deal.kind == kind)
        rows = [tuple(r) for r in s.execute(stmt).all()]
    frame = pd.DataFrame(rows, columns=DEAL_ITEM_COLUMNS)
    frame["inclusion_probability"] = frame["inclusion_probability"].astype(float)
    return frame


def label_origins(db: Store, dataset: str) -> pd.DataFrame:
    """The current label per (item, rater) with how the item reached the rater
    (:data:`LABEL_ORIGIN_COLUMNS`).

    ``deal_kind`` is the kind of the deal behind the rater's assignment of the item
    (:data:`LEGACY_DEAL_KIND` for an assignment older than recorded deals), or None when the
    rater had no assignment (imported raters: ``source`` then says where the label came from).
    """
    latest = select(func.max(Label.id)).group_by(Label.item_id, Label.user_id)
    stmt = (
        select(Label.item_id, User.name, Label.source, Assignment.deal_id, Deal.kind, Assignment.id)
        .join(ItemRecord, ItemRecord.id == Label.item_id)
        .join(User, User.id == Label.user_id)
        .outerjoin(
            Assignment,
            and_(Assignment.item_id == Label.item_id, Assignment.user_id == Label.user_id),
        )
        .outerjoin(Deal, Deal.id == Assignment.deal_id)
        .where(Label.id.in_(latest))
        .order_by(Label.item_id, Label.id)
    )
    with store_scope(db) as s:
        stmt = stmt.where(ItemRecord.dataset_id == find_dataset(s, dataset).id)
        rows = [
            (item_id, rater, source, deal_id, kind or (LEGACY_DEAL_KIND if assigned else None))
            for item_id, rater, source, deal_id, kind, assigned in s.execute(stmt).all()
        ]
    frame = pd.DataFrame(rows, columns=LABEL_ORIGIN_COLUMNS)
    frame["deal_id"] = frame["deal_id"].astype("Int64")
    return frame
