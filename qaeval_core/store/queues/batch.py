"""Dealing a batch: part of a dataset, with a quota per annotator.

:class:`~.assignment.AllItems` covers the whole dataset. A new team rather deals "the next 40
items, a quarter of them to both of us", or "items 1-100", or "20 each": :class:`ItemBatch`
picks the items (a range in import order, given item ids, the next ``n`` items nobody holds
yet) and caps what each annotator gets from this deal (``quota``). It is recorded as a ``queue``
deal (its choice of items in the deal's parameters), queued after everything the dataset
already has, and locked as :mod:`.dealing` describes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select

from qaeval_core.errors import InputError
from qaeval_core.store.datasets import DatasetRef
from qaeval_core.store.orm import ItemRecord
from qaeval_core.store.own_transaction import StoreURL
from qaeval_core.store.queues.dealing import (
    DealOptions,
    DealResult,
    check_deal_options,
    finish_deal,
    holders_by_item,
    open_deal,
    plan_rows,
    queue_end,
    record_deal,
    stable_rank,
)
from qaeval_core.store.session import write_scope

__all__ = ["ItemBatch", "batch_items"]


def _positive(value: int | None, name: str, what: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise InputError(f"{name} must be a whole number >= 1 ({what}), got {value!r}.")


def batch_items(
    import_order: Sequence[int],
    serving_order: Sequence[int],
    existing: Mapping[int, set[int]],
    *,
    n: int | None = None,
    item_range: tuple[int, int] | None = None,
    item_ids: Sequence[int] | None = None,
    dataset: str = "the dataset",
) -> list[int]:
    """The batch's items in serving order: those in ``item_range`` (1-based, inclusive, in
    import order) and in ``item_ids``, then the first ``n`` of them nobody holds yet
    (``existing``: who holds each item)."""
    keep = set(import_order)
    if item_range is not None:
        first, last = (int(v) for v in item_range)
        if not 1 <= first <= last <= len(import_order):
            raise InputError(
                f"Item range {first}-{last} does not fit dataset {dataset!r} with "
                f"{len(import_order)} item(s); give FIRST-LAST with 1 <= FIRST <= LAST <= "
                f"{len(import_order)}."
            )
        keep = set(import_order[first - 1 : last])
    if item_ids is not None:
        wanted = {int(i) for i in item_ids}
        foreign = sorted(wanted - set(import_order))
        if foreign:
            shown = ", ".join(str(i) for i in foreign[:5])
            raise InputError(
                f"{len(foreign)} item id(s) are not in dataset {dataset!r} (e.g. {shown})."
            )
        keep &= wanted
    chosen = [i for i in serving_order if i in keep]
    if n is not None:
        chosen = [i for i in chosen if not existing.get(i)][:n]
    return chosen


@dataclass(frozen=True)
class ItemBatch:
    """Part of a dataset, in the annotators' queues (a ``queue`` deal).

    The part (:func:`batch_items`): ``item_range`` = (first, last) in import order and/or the
    internal ``item_ids``; then, with ``n``, the next ``n`` of them in serving order that are in
    nobody's queue yet, so dealing ``n=20`` twice deals the next 20. The options work as for
    :class:`~.assignment.AllItems`, within the batch; existing assignments count towards an
    item's target. ``quota`` caps the new items any one annotator gets from this deal; the items
    it leaves are counted in ``quota_left``. The result's ``item_ids`` are the batch;
    :meth:`~.dealing.DealResult.notes` says what was left and why.
    """

    n: int | None = None
    item_range: tuple[int, int] | None = None
    item_ids: Sequence[int] | None = None
    quota: int | None = None

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult:
        order = options.order_or("dataset")
        seed = options.seed_or_zero()
        check_deal_options(order, options.extra_fraction)
        _positive(self.n, "n", "items in the batch")
        _positive(self.quota, "quota", "new items per annotator")
        with write_scope(db) as session:
            ds, users = open_deal(session, dataset, annotators, options, order=order)
            all_ids = list(
                session.scalars(
                    select(ItemRecord.id)
                    .where(ItemRecord.dataset_id == ds.id)
                    .order_by(ItemRecord.id)
                )
            )
            existing = holders_by_item(session, ds.id)
            serving = (
                sorted(all_ids, key=lambda i: stable_rank(seed, i))
                if order == "shuffled"
                else all_ids
            )
            batch = batch_items(
                all_ids,
                serving,
                existing,
                n=self.n,
                item_range=self.item_range,
                item_ids=self.item_ids,
                dataset=ds.name,
            )
            chosen = {
                "n": self.n,
                "item_range": list(self.item_range) if self.item_range is not None else None,
                "item_ids": len(self.item_ids) if self.item_ids is not None else None,
                "quota": self.quota,
                "selected": len(batch),
            }
            record = record_deal(
                session,
                ds.id,
                "queue",
                seed=seed,
                params={
                    "annotators": [u.name for u in users],
                    "batch": chosen,
                    "base": options.base,
                    "extra_fraction": options.extra_fraction,
                    "extra_k": options.extra_k,
                    "order": order,
                },
                created_by=options.created_by,
            )
            start = queue_end(session, ds.id)
            plan = plan_rows(
                batch,
                users,
                existing,
                {item_id: start + k for k, item_id in enumerate(batch)},
                base=options.base,
                extra_fraction=options.extra_fraction,
                extra_k=options.extra_k,
                seed=seed,
                deal_id=record.id,
                quota=self.quota,
            )
            return finish_deal(
                session,
                record,
                ds.name,
                users,
                plan.rows,
                plan.short,
                len(batch),
                covered=plan.covered,
                item_ids=tuple(batch),
                quota_left=plan.quota_left,
            )
