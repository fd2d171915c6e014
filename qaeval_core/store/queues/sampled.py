"""Dealing part of a dataset: a random audit sample, or the items a judge routes to people.

* :class:`AuditSample` draws a seeded **uniform random sample** of a dataset's items and
  deals it (an ``audit`` deal). Its labels are the random sample that prediction-powered
  inference (PPI) needs: an estimate that corrects the judge with human labels is unbiased only
  if the labelled items were chosen at random, never because the judge doubted them. Items
  labelled for any other reason (the queue, triage) are not a random sample and must not stand
  in for one. The sample is drawn from *every* item, labelled or not, and is recorded item by
  item (``deal_items``): an item already in a queue or already labelled gets no new assignment
  but stays in the audit's sample, so the random sample does not lose exactly the items
  triage sent to people first. Each drawn item is recorded with its inclusion probability
  ``size / items`` (migration 0008).
* :class:`TriageItems` deals items chosen elsewhere (by
  :func:`qaeval_core.workflows.route_uncertain`, most doubtful first) as a ``triage`` deal,
  leaving out items that already have a human label or are already in someone's queue.

Both are selections of :func:`~.assignment.deal` and take its :class:`~.dealing.DealOptions`,
add their items after everything already queued in the dataset, and record and
lock as :mod:`.dealing` describes, so concurrent deals never give an item more annotators than
asked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, insert, select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.store.datasets import DatasetRef
from qaeval_core.store.orm import Adjudication, DealItem, ItemRecord, Label, User
from qaeval_core.store.own_transaction import StoreURL
from qaeval_core.store.queues.dealing import (
    DealOptions,
    DealPlan,
    DealResult,
    check_deal_options,
    check_fraction,
    finish_deal,
    holders_by_item,
    open_deal,
    plan_rows,
    queue_end,
    record_deal,
)
from qaeval_core.store.session import write_scope

__all__ = ["AuditSample", "TriageItems", "audit_sample_ids"]


def _audit_rank(seed: int, item_id: int) -> bytes:
    """The audit's sort key: a seeded hash, so the first ``n`` items are a uniform sample.

    Salted apart from the overlap sample's key, so an audit never coincides with the overlap
    items of a queue deal that used the same seed.
    """
    return hashlib.sha256(f"audit:{seed}:{item_id}".encode()).digest()


def _sample_size(n: int | None, fraction: float | None, n_items: int, dataset: str) -> int:
    if (n is None) == (fraction is None):
        raise InputError(
            "Give the audit sample's size as n (items) or fraction (of the dataset), not "
            f"{'both' if n is not None else 'neither'}."
        )
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise InputError(f"n must be a whole number of items >= 1, got {n!r}.")
        if n > n_items:
            raise InputError(
                f"n={n} but dataset {dataset!r} has {n_items} item(s); ask for at most "
                f"{n_items} or use fraction=1."
            )
        return n
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction <= 1:
        raise InputError(
            f"fraction must be in (0, 1] (e.g. 0.1 audits a tenth of the items), got {fraction!r}."
        )
    if n_items == 0:
        raise InputError(f"Dataset {dataset!r} has no items to sample; import some first.")
    return max(1, round(fraction * n_items))


def audit_sample_ids(item_ids: Sequence[int], size: int, seed: int) -> list[int]:
    """The seeded uniform sample of ``size`` of ``item_ids``, in its random order.

    The same seed and items give the same sample; every item is equally likely to be drawn.
    """
    return sorted(item_ids, key=lambda i: _audit_rank(seed, i))[:size]


@dataclass(frozen=True)
class AuditSample:
    """A seeded uniform random sample of the dataset's items (an ``audit`` deal).

    The sample has ``n`` items or ``fraction`` of them (at least one), drawn from every item
    whether labelled, queued or not (see the module docstring: these are the labels PPI
    needs); ``options.seed`` is required, and the same seed on the same items draws the same
    sample. The options work as for :class:`~.assignment.AllItems`; existing assignments count
    towards an item's target. Served in the sample's random order unless ``options.order`` is
    ``"dataset"`` (import order), so the part labelled so far is itself a random sample. The
    result's ``item_ids`` are the sample.
    """

    n: int | None = None
    fraction: float | None = None

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult:
        order = options.order_or("shuffled")
        seed = options.seed
        check_deal_options(order, options.extra_fraction)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError(f"seed must be an integer, got {seed!r}.")
        with write_scope(db) as session:
            ds, users = open_deal(session, dataset, annotators, options, order=order)
            item_ids = list(
                session.scalars(select(ItemRecord.id).where(ItemRecord.dataset_id == ds.id))
            )
            size = _sample_size(self.n, self.fraction, len(item_ids), ds.name)
            sample = audit_sample_ids(item_ids, size, seed)
            record = record_deal(
                session,
                ds.id,
                "audit",
                seed=seed,
                params={
                    "annotators": [u.name for u in users],
                    "n": self.n,
                    "fraction": self.fraction,
                    "sample_size": size,
                    "dataset_items": len(item_ids),
                    "base": options.base,
                    "extra_fraction": options.extra_fraction,
                    "extra_k": options.extra_k,
                    "order": order,
                },
                created_by=options.created_by,
            )
            served = sample if order == "shuffled" else sorted(sample)
            existing = holders_by_item(session, ds.id)
            plan = deal_in_order(
                session,
                ds.id,
                existing,
                served,
                users,
                options,
                seed,
                record.id,
            )
            record_deal_items(session, record.id, sample, probability=size / len(item_ids))
            # ``covered``: the sampled items already at their target, not every held item of the
            # dataset (issue 21, item 6: 20 of 100 sampled were reported as 60, all held items).
            return finish_deal(
                session,
                record,
                ds.name,
                users,
                plan.rows,
                plan.short,
                len(sample),
                covered=plan.covered,
                item_ids=tuple(sample),
            )


@dataclass(frozen=True)
class TriageItems:
    """``item_ids`` routed to people, served in the order given, first to last (a ``triage``
    deal).

    Items that already have a human label (any rater's, or an adjudication) are left out as
    ``skipped_labelled``; items already in anyone's queue as ``skipped_queued``; both are decided
    under the dataset's lock, so two triage deals at once never deal an item twice. ``params``
    (e.g. the calibration and how items were chosen) is recorded with the deal. When nothing is
    left to deal no deal is recorded (``deal_id`` is None).
    """

    item_ids: Sequence[int]
    params: Mapping[str, Any] | None = None

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult:
        seed = options.seed_or_zero()
        options.fixed_order("dataset", "a triage deal")
        check_fraction(options.extra_fraction)
        ids = list(dict.fromkeys(int(i) for i in self.item_ids))
        with write_scope(db) as session:
            ds, users = open_deal(session, dataset, annotators, options, order="dataset")
            known = set(
                session.scalars(select(ItemRecord.id).where(ItemRecord.dataset_id == ds.id))
            )
            foreign = [i for i in ids if i not in known]
            if foreign:
                shown = ", ".join(str(i) for i in foreign[:5])
                raise ConfigError(
                    f"{len(foreign)} item id(s) are not in dataset {ds.name!r} (e.g. {shown})."
                )
            labelled = items_with_human_label(session, ds.id)
            existing = holders_by_item(session, ds.id)
            queued = set(existing)
            skip_labelled = tuple(i for i in ids if i in labelled)
            skip_queued = tuple(i for i in ids if i not in labelled and i in queued)
            todo = [i for i in ids if i not in labelled and i not in queued]
            skipped = {"skipped_labelled": skip_labelled, "skipped_queued": skip_queued}
            if not todo:
                names = {u.name: 0 for u in users}
                return DealResult(ds.name, 0, 0, names, kind="triage", **skipped)
            record = record_deal(
                session,
                ds.id,
                "triage",
                seed=seed,
                params={
                    **dict(self.params or {}),
                    "annotators": [u.name for u in users],
                    "requested": len(ids),
                    "skipped_labelled": len(skip_labelled),
                    "skipped_queued": len(skip_queued),
                    "base": options.base,
                    "extra_fraction": options.extra_fraction,
                    "extra_k": options.extra_k,
                },
                created_by=options.created_by,
            )
            plan = deal_in_order(
                session,
                ds.id,
                existing,
                todo,
                users,
                options,
                seed,
                record.id,
            )
            record_deal_items(session, record.id, todo)
            return finish_deal(
                session,
                record,
                ds.name,
                users,
                plan.rows,
                plan.short,
                len(todo),
                covered=plan.covered,
                item_ids=tuple(todo),
                **skipped,
            )


def deal_in_order(
    session: Session,
    dataset_id: int,
    existing: Mapping[int, set[int]],
    item_ids: Sequence[int],
    users: Sequence[User],
    options: DealOptions,
    seed: int,
    deal_id: int,
) -> DealPlan:
    """The plan dealing ``item_ids`` in this order, queued after everything the dataset has
    (its ``covered`` are the items of ``item_ids`` already at their target)."""
    start = queue_end(session, dataset_id)
    position = {item_id: start + k for k, item_id in enumerate(item_ids)}
    plan = plan_rows(
        item_ids,
        users,
        existing,
        position,
        base=options.base,
        extra_fraction=options.extra_fraction,
        extra_k=options.extra_k,
        seed=seed,
        deal_id=deal_id,
    )
    return plan


def record_deal_items(
    session: Session,
    deal_id: int,
    item_ids: Sequence[int],
    probability: float | Mapping[int, float] | None = None,
) -> None:
    """Record the items a deal drew, with the probability it drew each: one for all (an audit's
    uniform ``size / items``), one per item (a draw by chance), or None (deterministic triage,
    which chose them)."""
    per_item = probability if isinstance(probability, Mapping) else None
    rows = [
        {
            "deal_id": deal_id,
            "item_id": i,
            "inclusion_probability": per_item[i] if per_item is not None else probability,
        }
        for i in item_ids
    ]
    for start in range(0, len(rows), 5000):
        session.execute(insert(DealItem), rows[start : start + 5000])


def items_with_human_label(session: Session, dataset_id: int) -> set[int]:
    """Items of the dataset with a label by anyone or an adjudication."""
    in_dataset = ItemRecord.dataset_id == dataset_id
    labelled = select(ItemRecord.id).where(
        in_dataset,
        exists().where(Label.item_id == ItemRecord.id)
        | exists().where(Adjudication.item_id == ItemRecord.id),
    )
    return set(session.scalars(labelled))
