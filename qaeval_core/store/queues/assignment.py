"""Dealing items into annotators' queues and moving an absent annotator's items to others.

Queues are dealt up front (one ``assignments`` row per item and annotator), so serving the next
item is a read and never a write race; dealing again only tops queues up. Reassigning happens
in one write transaction so a label saved meanwhile is either kept or refused, never lost.
Both record and lock as :mod:`.dealing` describes; :mod:`.sampled` deals a chosen part of a
dataset (a random audit sample, the items a judge routes to people).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError
from qaeval_core.store.datasets import DatasetRef, find_dataset
from qaeval_core.store.labels import labelled_by
from qaeval_core.store.orm import Assignment, ItemRecord, User
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.queues.dealing import (
    QUEUE_ROLES,
    DealOptions,
    DealResult,
    DealSelection,
    check_annotators,
    check_deal_options,
    finish_deal,
    holders_by_item,
    insert_new_assignments,
    lock_dataset,
    open_deal,
    plan_rows,
    record_deal,
    stable_rank,
)
from qaeval_core.store.queues.labelling_progress import annotator_counts
from qaeval_core.store.session import session_scope, write_scope
from qaeval_core.store.users import find_user

__all__ = [
    "QUEUE_ROLES",
    "AllItems",
    "DealResult",
    "ReassignResult",
    "deal",
    "queue_users",
    "reassign",
]


@dataclass(frozen=True)
class ReassignResult:
    """What :func:`reassign` did: items moved away from ``absent`` and who received them.

    ``kept`` counts items nobody eligible could take (every recipient already had them); they
    stay in the absent annotator's queue.
    """

    absent: str
    moved: int
    kept: int
    per_recipient: dict[str, int]


@own_transaction
def deal(
    db: StoreURL,
    dataset: DatasetRef,
    annotators: Sequence[str],
    selection: DealSelection | None = None,
    options: DealOptions | None = None,
) -> DealResult:
    """Deal the ``selection`` of a dataset's items into the annotators' queues, handed out as
    ``options`` say (:class:`~.dealing.DealOptions`), in one transaction: the one deal function.

    ``selection`` (default :class:`AllItems`) chooses the items and the deal's kind: every item
    (:class:`AllItems`, a ``queue`` deal), part of the dataset (:class:`~.batch.ItemBatch`), a
    seeded random audit sample (:class:`~.sampled.AuditSample`, ``audit``), items routed to
    people (:class:`~.sampled.TriageItems`, ``triage``) or drawn by chance with known
    probabilities (:class:`~.by_chance.TriageByChance`). Every deal is recorded, counts existing
    assignments towards an item's target (dealing again adds nothing) and says what it left
    alone and why (:class:`~.dealing.DealResult`).
    """
    chosen = AllItems() if selection is None else selection
    return chosen._deal(db, dataset, annotators, DealOptions() if options is None else options)


@dataclass(frozen=True)
class AllItems:
    """Every item of the dataset, in its queue (a ``queue`` deal).

    Every item goes to ``base`` annotators; a seeded sample of ``extra_fraction`` of the items
    goes to ``extra_k`` annotators in all (the overlap used to measure agreement). Annotators
    are chosen round-robin, least loaded first, so queues stay balanced.

    Idempotent: existing assignments count towards an item's target, so dealing again with the
    same options adds nothing, and dealing after an import only tops queues up. Assignments are
    never removed here (use :func:`reassign`). Served in import order unless ``options.order``
    is ``"shuffled"`` (a seeded random order, the same for every annotator, so overlapping
    labels arrive early).
    """

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult:
        order = options.order_or("dataset")
        check_deal_options(order, options.extra_fraction)
        seed = options.seed_or_zero()
        with write_scope(db) as session:
            ds, users = open_deal(session, dataset, annotators, options, order=order)
            record = record_deal(
                session,
                ds.id,
                "queue",
                seed=seed,
                params={
                    "annotators": [u.name for u in users],
                    "base": options.base,
                    "extra_fraction": options.extra_fraction,
                    "extra_k": options.extra_k,
                    "order": order,
                },
                created_by=options.created_by,
            )
            item_ids = list(
                session.scalars(
                    select(ItemRecord.id)
                    .where(ItemRecord.dataset_id == ds.id)
                    .order_by(ItemRecord.id)
                )
            )
            existing = holders_by_item(session, ds.id)
            queue_order = (
                sorted(item_ids, key=lambda i: stable_rank(seed, i))
                if order == "shuffled"
                else item_ids
            )
            position = {item_id: float(p) for p, item_id in enumerate(queue_order)}
            plan = plan_rows(
                item_ids,
                users,
                existing,
                position,
                base=options.base,
                extra_fraction=options.extra_fraction,
                extra_k=options.extra_k,
                seed=seed,
                deal_id=record.id,
            )
            return finish_deal(
                session, record, ds.name, users, plan.rows, plan.short, len(item_ids)
            )


@own_transaction
def reassign(
    db: StoreURL,
    dataset: DatasetRef,
    absent: str,
    to: Sequence[str],
) -> ReassignResult:
    """Move an absent annotator's remaining (unlabelled) items to the annotators in ``to``.

    Each item goes to the recipient with the fewest remaining items who does not hold it yet,
    so nobody gets an item twice; a moved item keeps the deal that queued it (an audit item
    stays in the audit). Items ``absent`` already labelled stay theirs. Runs in one
    ``BEGIN IMMEDIATE`` transaction: a label ``absent`` saves concurrently either lands first
    (the item stays) or is refused as "no longer assigned" - never silently dropped. On
    PostgreSQL the same holds through row locks (see :func:`lock_queue`).
    """
    with write_scope(db) as session:
        ds = find_dataset(session, dataset)
        gone = find_user(session, absent)
        others = [n for n in to if n != gone.name]
        if not others:
            raise ConfigError(f"Pick at least one annotator other than {gone.name!r}.")
        recipients = check_annotators(session, others)
        lock_dataset(session, ds.id)
        lock_queue(session, ds.id, gone.id)
        remaining = list(
            session.execute(
                select(Assignment.item_id, Assignment.position, Assignment.deal_id)
                .join(ItemRecord, ItemRecord.id == Assignment.item_id)
                .where(
                    ItemRecord.dataset_id == ds.id,
                    Assignment.user_id == gone.id,
                    ~labelled_by(gone.id, Assignment.item_id),
                )
                .order_by(Assignment.position, Assignment.item_id)
            )
        )
        rec_ids = [u.id for u in recipients]
        holders: dict[int, set[int]] = defaultdict(set)
        if remaining:
            held = session.execute(
                select(Assignment.item_id, Assignment.user_id)
                .join(ItemRecord, ItemRecord.id == Assignment.item_id)
                .where(ItemRecord.dataset_id == ds.id, Assignment.user_id.in_(rec_ids))
            )
            for item_id, uid in held:
                holders[item_id].add(uid)
        load = Counter({uid: 0 for uid in rec_ids})
        for prog in annotator_counts(session, ds.id, rec_ids):
            load[prog[0]] = prog[1] - prog[2]
        rows: list[dict[str, Any]] = []
        moved_items: list[int] = []
        for item_id, pos, deal_id in remaining:
            free = [uid for uid in rec_ids if uid not in holders[item_id]]
            if not free:
                continue
            uid = min(free, key=lambda u: (load[u], rec_ids.index(u)))
            load[uid] += 1
            rows.append({"item_id": item_id, "user_id": uid, "position": pos, "deal_id": deal_id})
            moved_items.append(item_id)
        insert_new_assignments(session, rows)
        for start in range(0, len(moved_items), 500):
            chunk = moved_items[start : start + 500]
            session.execute(
                delete(Assignment).where(
                    Assignment.user_id == gone.id, Assignment.item_id.in_(chunk)
                )
            )
        per = Counter(r["user_id"] for r in rows)
        names = {u.id: u.name for u in recipients}
        return ReassignResult(
            absent=gone.name,
            moved=len(moved_items),
            kept=len(remaining) - len(moved_items),
            per_recipient={names[uid]: per.get(uid, 0) for uid in rec_ids},
        )


def lock_queue(session: Session, dataset_id: int, user_id: int) -> None:
    """Lock ``user_id``'s assignment rows in the dataset ``FOR UPDATE`` (PostgreSQL).

    ``save_label`` holds the row of the item it writes ``FOR SHARE`` until it commits, so this
    waits for labels being saved; the next statement (a fresh snapshot under READ COMMITTED)
    then sees them, and their items stay. Saves that come later wait for this transaction and
    are refused when their row was moved. SQLite's ``BEGIN IMMEDIATE`` already excludes both.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    rows = (
        select(Assignment.item_id)
        .join(ItemRecord, ItemRecord.id == Assignment.item_id)
        .where(ItemRecord.dataset_id == dataset_id, Assignment.user_id == user_id)
        .order_by(Assignment.item_id)
        .with_for_update(of=Assignment)
    )
    session.execute(rows).all()


@own_transaction
def queue_users(db: StoreURL) -> list[tuple[str, str]]:
    """(name, role) of active users who can hold a queue, for the assignment page's pickers."""
    with session_scope(db) as session:
        rows = session.execute(
            select(User.name, User.role)
            .where(User.role.in_(QUEUE_ROLES), User.active.is_(True))
            .order_by(User.name)
        )
        return [(n, r) for n, r in rows]
