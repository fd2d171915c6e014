"""Dealing items into annotators' queues and moving an absent annotator's items to others.

Queues are dealt up front (one ``assignments`` row per item and annotator), so serving the next
item is a read and never a write race; dealing again only tops queues up. Reassigning happens
in one write transaction so a label saved meanwhile is either kept or refused, never lost.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError
from qaeval_core.store.annotation.lookups import (
    DatasetRef,
    labelled_by,
    lookup_dataset,
    lookup_user,
)
from qaeval_core.store.annotation.progress import annotator_counts
from qaeval_core.store.orm import Assignment, ItemRecord, User
from qaeval_core.store.session import session_scope, write_scope

__all__ = [
    "QUEUE_ROLES",
    "DealResult",
    "ReassignResult",
    "deal",
    "queue_users",
    "reassign",
]

#: Roles that can hold a queue (``external`` raters come from imported files only).
QUEUE_ROLES = ("annotator", "researcher", "admin")


@dataclass(frozen=True)
class DealResult:
    """What :func:`deal` did: assignments added in total and per annotator."""

    dataset: str
    items: int
    added: int
    per_annotator: dict[str, int]
    skipped_items: int = 0


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


def _rank(seed: int, item_id: int) -> bytes:
    """A stable pseudo-random sort key: the same seed and item give the same place forever.

    Hashing (rather than ``random.sample``) keeps an item's membership of the overlap sample
    stable when items are added to the dataset later, so re-dealing only tops queues up.
    """
    return hashlib.sha256(f"{seed}:{item_id}".encode()).digest()


def _insert_ignore(session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert assignments, skipping any (item, user) pair that already exists."""
    if not rows:
        return 0
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert
    elif dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    else:  # pragma: no cover - other backends: plain insert inside the write transaction
        session.connection().execute(insert(Assignment), rows)
        return len(rows)
    stmt = dialect_insert(Assignment).on_conflict_do_nothing(index_elements=["item_id", "user_id"])
    conn = session.connection()
    total = 0
    for start in range(0, len(rows), 5000):
        chunk = rows[start : start + 5000]
        count = conn.execute(stmt, chunk).rowcount
        total += count if count is not None and count >= 0 else len(chunk)
    return total


def _check_annotators(session: Session, names: Sequence[str]) -> list[User]:
    if not names:
        raise ConfigError("Pick at least one annotator to deal items to.")
    if len(set(names)) != len(names):
        dupes = sorted(n for n, c in Counter(names).items() if c > 1)
        raise ConfigError(f"Annotators listed twice: {', '.join(dupes)}. List each once.")
    users = [lookup_user(session, n) for n in names]
    for u in users:
        if u.role not in QUEUE_ROLES:
            raise ConfigError(
                f"User {u.name!r} has role {u.role!r} and cannot label in the app; "
                f"pick users with one of the roles {', '.join(QUEUE_ROLES)}."
            )
        if not u.active:
            raise ConfigError(f"User {u.name!r} is deactivated; reactivate them or pick another.")
    return users


def deal(
    dataset: DatasetRef,
    annotators: Sequence[str],
    *,
    base: int = 1,
    extra_fraction: float = 0.0,
    extra_k: int = 2,
    seed: int = 0,
    order: Literal["dataset", "shuffled"] = "dataset",
    url: str | None = None,
) -> DealResult:
    """Deal a dataset's items into the annotators' queues.

    Every item goes to ``base`` annotators; a seeded sample of ``extra_fraction`` of the items
    goes to ``extra_k`` annotators in all (the overlap used to measure agreement), e.g.
    ``base=1, extra_fraction=0.2, extra_k=3``. Annotators are chosen round-robin, least loaded
    first, so queues stay balanced.

    Idempotent: existing assignments count towards an item's target, so dealing again with the
    same arguments adds nothing, and dealing after an import only tops queues up. Assignments are
    never removed here (use :func:`reassign`).

    ``order="dataset"`` serves items in import order; ``"shuffled"`` in a seeded random order
    (the same for every annotator, so overlapping labels arrive early).
    """
    if order not in ("dataset", "shuffled"):
        raise ConfigError(f"order must be 'dataset' or 'shuffled', got {order!r}.")
    if not 0.0 <= extra_fraction <= 1.0:
        raise ConfigError(f"extra_fraction must be between 0 and 1, got {extra_fraction}.")
    with write_scope(url) as session:
        ds = lookup_dataset(session, dataset)
        users = _check_annotators(session, list(annotators))
        n = len(users)
        if not 1 <= base <= n:
            raise ConfigError(
                f"base must be between 1 and the number of annotators ({n}), got {base}."
            )
        if extra_fraction > 0 and not base <= extra_k <= n:
            raise ConfigError(
                f"extra_k (annotators per overlap item) must be between base ({base}) and the "
                f"number of annotators ({n}), got {extra_k}. Add annotators or lower extra_k."
            )
        item_ids = list(
            session.scalars(
                select(ItemRecord.id).where(ItemRecord.dataset_id == ds.id).order_by(ItemRecord.id)
            )
        )
        existing: dict[int, set[int]] = defaultdict(set)
        assignees = select(Assignment.item_id, Assignment.user_id).join(
            ItemRecord, ItemRecord.id == Assignment.item_id
        )
        for item_id, user_id in session.execute(assignees.where(ItemRecord.dataset_id == ds.id)):
            existing[item_id].add(user_id)

        by_rank = sorted(item_ids, key=lambda i: _rank(seed, i))
        n_extra = round(extra_fraction * len(item_ids))
        extra = set(by_rank[:n_extra])
        queue_order = by_rank if order == "shuffled" else item_ids
        position = {item_id: float(p) for p, item_id in enumerate(queue_order)}

        ids = [u.id for u in users]
        slot = {uid: k for k, uid in enumerate(ids)}
        load = Counter({uid: 0 for uid in ids})
        for assigned in existing.values():
            for uid in assigned:
                if uid in load:
                    load[uid] += 1

        rows: list[dict[str, Any]] = []
        skipped = 0
        for i, item_id in enumerate(item_ids):
            target = extra_k if item_id in extra else base
            have = existing.get(item_id, set())
            need = target - len(have)
            if need <= 0:
                continue
            free = [uid for uid in ids if uid not in have]
            if len(free) < need:
                skipped += 1
            # Least loaded first; ties broken by rotating with the item index (round-robin).
            free.sort(key=lambda uid: (load[uid], (slot[uid] - i) % n))
            for uid in free[:need]:
                load[uid] += 1
                rows.append({"item_id": item_id, "user_id": uid, "position": position[item_id]})
        added = _insert_ignore(session, rows)
        per = Counter(r["user_id"] for r in rows)
        names = {u.id: u.name for u in users}
        return DealResult(
            dataset=ds.name,
            items=len(item_ids),
            added=added,
            per_annotator={names[uid]: per.get(uid, 0) for uid in ids},
            skipped_items=skipped,
        )


def reassign(
    dataset: DatasetRef,
    absent: str,
    to: Sequence[str],
    *,
    url: str | None = None,
) -> ReassignResult:
    """Move an absent annotator's remaining (unlabelled) items to the annotators in ``to``.

    Each item goes to the recipient with the fewest remaining items who does not hold it yet,
    so nobody gets an item twice. Items ``absent`` already labelled stay theirs. Runs in one
    ``BEGIN IMMEDIATE`` transaction: a label ``absent`` saves concurrently either lands first
    (the item stays) or is refused as "no longer assigned" - never silently dropped.
    """
    with write_scope(url) as session:
        ds = lookup_dataset(session, dataset)
        gone = lookup_user(session, absent)
        others = [n for n in to if n != gone.name]
        if not others:
            raise ConfigError(f"Pick at least one annotator other than {gone.name!r}.")
        recipients = _check_annotators(session, others)
        remaining = list(
            session.execute(
                select(Assignment.item_id, Assignment.position)
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
        for item_id, pos in remaining:
            free = [uid for uid in rec_ids if uid not in holders[item_id]]
            if not free:
                continue
            uid = min(free, key=lambda u: (load[u], rec_ids.index(u)))
            load[uid] += 1
            rows.append({"item_id": item_id, "user_id": uid, "position": pos})
            moved_items.append(item_id)
        _insert_ignore(session, rows)
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


def queue_users(*, url: str | None = None) -> list[tuple[str, str]]:
    """(name, role) of active users who can hold a queue, for the assignment page's pickers."""
    with session_scope(url) as session:
        rows = session.execute(
            select(User.name, User.role)
            .where(User.role.in_(QUEUE_ROLES), User.active.is_(True))
            .order_by(User.name)
        )
        return [(n, r) for n, r in rows]
