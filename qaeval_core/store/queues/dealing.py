"""What every deal shares: checking annotators, locking a dataset, recording the deal, and
choosing who gets each item.

Every deal is recorded (table ``deals``): its kind (``queue``: :func:`~.assignment.deal`;
``audit`` and ``triage``: :mod:`.sampled`), seed, parameters, who made it and when, and each
assignment it writes points at it (``assignments.deal_id``; a reassignment keeps the deal of the
assignment it moves).

Dealing reads the assignments a dataset has, then writes; two dealers on one dataset must not
interleave, or both would count an item as still needing an annotator and give it one each.
Every deal and reassignment therefore runs in :func:`write_scope` (``BEGIN IMMEDIATE``: SQLite's
one write lock) and first locks the dataset's row (:func:`lock_dataset`: ``SELECT ... FOR NO KEY
UPDATE`` on PostgreSQL, whose transactions do not otherwise exclude each other; it does not
block imports, labels or reads).

A deal says what it left alone and why (:class:`DealResult`): items already at their target
(``already_covered``, with who holds them in :attr:`DealResult.held_by`) and items too few
picked annotators could take (``skipped_items``). A team that first queued a whole dataset for
one person ("Queue it for me") sees that person named, and releases that queue
(:func:`~.release.release_queue`) before dealing it to others.

Why it is one module: every deal kind plans its rows, writes them and reports what it skipped
inside one locked transaction, reading the same ``existing`` holders map; the planner, the
writer and the report are the three halves of that one contract, and the deal modules
(:mod:`.assignment`, :mod:`.sampled`) only choose which items and in what order.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from qaeval_core.errors import ConfigError, InputError
from qaeval_core.jsonable import to_jsonable
from qaeval_core.store.datasets import DatasetRef, find_dataset
from qaeval_core.store.labels import labelled_by
from qaeval_core.store.orm import DEAL_KINDS, Assignment, Dataset, Deal, ItemRecord, User
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.session import session_scope
from qaeval_core.store.users import find_user

__all__ = [
    "QUEUE_ROLES",
    "DealOptions",
    "DealResult",
    "Holder",
    "Order",
    "DealSelection",
    "check_queue_users",
    "lock_dataset",
]

#: Roles that can hold a queue (``external`` raters come from imported files only).
QUEUE_ROLES = ("annotator", "researcher", "admin")

Order = Literal["dataset", "shuffled"]


@dataclass(frozen=True)
class DealOptions:
    """How a deal hands out the items its selection chose: the options every deal shares.

    ``base`` annotators per item; a seeded sample of ``extra_fraction`` of the items goes to
    ``extra_k`` annotators in all (the overlap that measures agreement), e.g. ``base=1,
    extra_fraction=0.2, extra_k=3``. ``seed`` seeds that sample, a shuffled order and the draw of
    an audit sample or a by-chance triage deal (those two need one and refuse ``None``; the
    other deals read ``None`` as 0). ``order``: ``"dataset"`` serves the dealt items in import
    order, ``"shuffled"`` in a seeded random order (the same for every annotator), ``None`` in
    the selection's own (import order for the whole dataset or a batch, shuffled for an audit
    sample; a triage deal serves its items most doubtful first and a by-chance deal shuffled,
    and both refuse another order). ``created_by`` (a user name) is recorded with the deal.
    The values are checked by the deal, with the messages it always gave.
    """

    base: int = 1
    extra_fraction: float = 0.0
    extra_k: int = 2
    seed: int | None = None
    order: Order | None = None
    created_by: str | None = None

    def seed_or_zero(self) -> int:
        """The seed of a deal that does not need one given (0 when ``None``)."""
        return 0 if self.seed is None else self.seed

    def order_or(self, default: Order) -> Order:
        """The serving order: the one given, else the selection's ``default``."""
        return default if self.order is None else self.order

    def fixed_order(self, order: Order, kind: str) -> Order:
        """The order of a selection that serves in one order only: ``order``; another one given
        is refused rather than silently ignored."""
        if self.order is not None and self.order != order:
            raise InputError(
                f"order does not apply to {kind}: it serves its items {_ORDER_WORDS[order]}; "
                "leave order as None.",
                param="order",
            )
        return order


_ORDER_WORDS = {"dataset": "in the order given", "shuffled": "in a seeded random order"}


class DealSelection(Protocol):
    """Which items a deal hands out, and how it records them: :class:`~.assignment.AllItems`,
    :class:`~.batch.ItemBatch`, :class:`~.sampled.AuditSample`, :class:`~.sampled.TriageItems`,
    :class:`~.by_chance.TriageByChance`. Dealt only through :func:`~.assignment.deal`, which
    runs the deal in its own transaction."""

    def _deal(
        self, db: StoreURL, dataset: DatasetRef, annotators: Sequence[str], options: DealOptions
    ) -> DealResult: ...


@dataclass(frozen=True)
class Holder:
    """Someone who already held items a deal left alone: how many, and how many they labelled.

    ``unlabelled`` are the items :func:`~.release.release_queue` would free for dealing again.
    """

    name: str
    role: str
    items: int
    labelled: int

    @property
    def unlabelled(self) -> int:
        return self.items - self.labelled


@dataclass(frozen=True)
class DealResult:
    """What a deal did: assignments added in total and per annotator.

    ``items`` is how many items the deal covered (the whole dataset for :func:`deal`, the sample
    for an audit, the routed items for triage); ``skipped_items`` those that could not get as
    many annotators as asked. ``deal_id`` and ``kind`` identify the recorded deal; ``item_ids``
    are the items an audit or triage deal drew (empty for a queue deal). A triage deal leaves
    out items that already have a human label (``skipped_labelled``) or are already in someone's
    queue (``skipped_queued``). ``already_covered`` counts the items of the deal that already had
    as many annotators as asked and got no new assignment; ``held_by`` says who holds them
    (:class:`Holder`, most items first). ``quota_left`` counts the items a per-annotator quota
    left undealt (:class:`~.batch.ItemBatch`).
    """

    dataset: str
    items: int
    added: int
    per_annotator: dict[str, int]
    skipped_items: int = 0
    deal_id: int | None = None
    kind: str = "queue"
    item_ids: tuple[int, ...] = ()
    skipped_labelled: tuple[int, ...] = ()
    skipped_queued: tuple[int, ...] = ()
    already_covered: int = 0
    held_by: tuple[Holder, ...] = ()
    quota_left: int = 0

    def notes(self) -> list[str]:
        """What the deal left alone and why, one plain sentence each (empty: nothing skipped).

        The Assign page and the CLI show these, so a deal that adds less than expected says so.
        """
        out: list[str] = []
        if self.already_covered:
            holders = ", ".join(
                f"{h.name} ({h.role}) holds {h.items}, {h.labelled} labelled" for h in self.held_by
            )
            releasable = [h.name for h in self.held_by if h.unlabelled]
            hint = (
                f" Release {' or '.join(releasable)}'s queue (Assign page, 'Release a queue') to "
                "deal those items again, or raise 'Annotators per item'."
                if releasable
                else " Raise 'Annotators per item' to add more people to them."
            )
            out.append(
                f"{self.already_covered} item(s) already had as many annotators as asked and got "
                f"nobody new{': ' + holders if holders else ''}.{hint}"
            )
        if self.skipped_items:
            out.append(
                f"{self.skipped_items} item(s) could not get as many annotators as asked: too "
                "few of the picked annotators were free for them (pick more annotators)."
            )
        if self.quota_left:
            out.append(
                f"{self.quota_left} item(s) were left undealt: every annotator reached the "
                "quota of this deal."
            )
        for ids, why in (
            (self.skipped_labelled, "already have a human label"),
            (self.skipped_queued, "are already in someone's queue"),
        ):
            if ids:
                out.append(f"{len(ids)} item(s) were left out: they {why}.")
        return out


def stable_rank(seed: int, item_id: int) -> bytes:
    """A stable pseudo-random sort key: the same seed and item give the same place forever.

    Hashing (rather than ``random.sample``) keeps an item's membership of the overlap sample
    stable when items are added to the dataset later, so re-dealing only tops queues up.
    """
    return hashlib.sha256(f"{seed}:{item_id}".encode()).digest()


def insert_new_assignments(session: Session, rows: list[dict[str, Any]]) -> int:
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


def check_annotators(session: Session, names: Sequence[str]) -> list[User]:
    if not names:
        raise ConfigError("Pick at least one annotator to deal items to.")
    if len(set(names)) != len(names):
        dupes = sorted(n for n, c in Counter(names).items() if c > 1)
        raise ConfigError(f"Annotators listed twice: {', '.join(dupes)}. List each once.")
    users = [find_user(session, n) for n in names]
    for u in users:
        if u.role not in QUEUE_ROLES:
            raise ConfigError(
                f"User {u.name!r} has role {u.role!r} and cannot label in the app; "
                f"pick users with one of the roles {', '.join(QUEUE_ROLES)}."
            )
        if not u.active:
            raise ConfigError(f"User {u.name!r} is deactivated; reactivate them or pick another.")
    return users


@own_transaction
def check_queue_users(
    db: StoreURL,
    annotators: Sequence[str],
    *,
    base: int = 1,
    extra_fraction: float = 0.0,
    extra_k: int = 2,
) -> None:
    """Raise the error a deal would for these annotators (unknown, listed twice, a role that
    cannot label, deactivated) and overlap options; for callers that do slow work first."""
    check_fraction(extra_fraction)
    with session_scope(db) as session:
        users = check_annotators(session, list(annotators))
        _check_overlap(len(users), base, extra_fraction, extra_k, "dataset")


def lock_dataset(session: Session, dataset_id: int) -> None:
    """Serialise dealing on one dataset until the transaction ends (see the module docstring).

    ``FOR NO KEY UPDATE`` conflicts with itself but not with the key-share lock that inserting
    items or scores takes, so imports and labelling go on; SQLite ignores it (``BEGIN
    IMMEDIATE`` already holds the database's write lock).
    """
    stmt = select(Dataset.id).where(Dataset.id == dataset_id).with_for_update(key_share=True)
    session.execute(stmt)


def open_deal(
    session: Session,
    dataset: Any,
    annotators: Sequence[str],
    options: DealOptions,
    *,
    order: str,
) -> tuple[Dataset, list[User]]:
    """The start every deal shares: the dataset and annotators checked, the overlap options
    checked (``order`` is the one the selection deals in), and the dataset locked for the rest
    of the transaction (:func:`lock_dataset`)."""
    ds = find_dataset(session, dataset)
    users = check_annotators(session, list(annotators))
    _check_overlap(len(users), options.base, options.extra_fraction, options.extra_k, order)
    lock_dataset(session, ds.id)
    return ds, users


def _check_overlap(
    n_annotators: int, base: int, extra_fraction: float, extra_k: int, order: str
) -> None:
    check_deal_options(order, extra_fraction)
    if not 1 <= base <= n_annotators:
        raise ConfigError(
            f"base must be between 1 and the number of annotators ({n_annotators}), got {base}."
        )
    if extra_fraction > 0 and not base <= extra_k <= n_annotators:
        raise ConfigError(
            f"extra_k (annotators per overlap item) must be between base ({base}) and the "
            f"number of annotators ({n_annotators}), got {extra_k}. Add annotators or lower "
            "extra_k."
        )


def check_fraction(extra_fraction: float) -> None:
    if not 0.0 <= extra_fraction <= 1.0:
        raise ConfigError(f"extra_fraction must be between 0 and 1, got {extra_fraction}.")


def check_deal_options(order: str, extra_fraction: float) -> None:
    """The options a deal can check before it opens its write transaction (and takes the
    dataset's lock): the serving order and the overlap share."""
    if order not in ("dataset", "shuffled"):
        raise ConfigError(f"order must be 'dataset' or 'shuffled', got {order!r}.")
    check_fraction(extra_fraction)


def record_deal(
    session: Session,
    dataset_id: int,
    kind: str,
    *,
    seed: int | None,
    params: Mapping[str, Any],
    created_by: str | None,
) -> Deal:
    """Add the ``deals`` row (its counts are filled in by :func:`finish_deal`)."""
    if kind not in DEAL_KINDS:  # pragma: no cover - callers pass constants
        raise ConfigError(f"Unknown deal kind {kind!r}; expected one of {', '.join(DEAL_KINDS)}.")
    author = find_user(session, created_by).id if created_by is not None else None
    row = Deal(
        dataset_id=dataset_id,
        kind=kind,
        seed=seed,
        params=to_jsonable(dict(params)),
        n_items=0,
        added=0,
        created_by=author,
    )
    session.add(row)
    session.flush()
    return row


def holders_by_item(session: Session, dataset_id: int) -> dict[int, set[int]]:
    """Who holds each item of the dataset, whoever dealt it."""
    existing: dict[int, set[int]] = defaultdict(set)
    assignees = select(Assignment.item_id, Assignment.user_id).join(
        ItemRecord, ItemRecord.id == Assignment.item_id
    )
    for item_id, user_id in session.execute(assignees.where(ItemRecord.dataset_id == dataset_id)):
        existing[item_id].add(user_id)
    return existing


def queue_end(session: Session, dataset_id: int) -> float:
    """One past the last queue position in the dataset (0 when nothing is queued)."""
    last = session.scalar(
        select(func.max(Assignment.position))
        .join(ItemRecord, ItemRecord.id == Assignment.item_id)
        .where(ItemRecord.dataset_id == dataset_id)
    )
    return 0.0 if last is None else float(last) + 1.0


@dataclass(frozen=True)
class DealPlan:
    """The assignments a deal will write, and what it could not do."""

    rows: list[dict[str, Any]]
    short: int  # items that could not get as many annotators as asked
    quota_left: int = 0  # items left undealt because the annotators with room were too few
    covered: tuple[int, ...] = ()  # items already at their target (nobody new)


def plan_rows(
    item_ids: Sequence[int],
    users: Sequence[User],
    existing: Mapping[int, set[int]],
    position: Mapping[int, float],
    *,
    base: int,
    extra_fraction: float,
    extra_k: int,
    seed: int,
    deal_id: int,
    quota: int | None = None,
) -> DealPlan:
    """The assignments that bring each item to its target (``extra_k`` for the seeded overlap
    sample, ``base`` otherwise), least loaded annotator first.

    Existing assignments of anyone count towards an item's target, so dealing only tops up.
    With ``quota``, nobody gets more than ``quota`` new items from this deal, and an item is
    dealt only when enough annotators with room are free for its whole target (an overlap item
    never ends up half-dealt); the rest are counted in ``quota_left``.
    """
    by_rank = sorted(item_ids, key=lambda i: stable_rank(seed, i))
    extra = set(by_rank[: round(extra_fraction * len(item_ids))])
    ids = [u.id for u in users]
    n = len(ids)
    slot = {uid: k for k, uid in enumerate(ids)}
    load = Counter({uid: 0 for uid in ids})
    for assigned in existing.values():
        for uid in assigned:
            if uid in load:
                load[uid] += 1
    given: Counter[int] = Counter()
    rows: list[dict[str, Any]] = []
    skipped = quota_left = 0
    covered: list[int] = []
    for i, item_id in enumerate(item_ids):
        target = extra_k if item_id in extra else base
        have = existing.get(item_id, set())
        need = target - len(have)
        if need <= 0:
            covered.append(item_id)
            continue
        free = [uid for uid in ids if uid not in have]
        if quota is not None:
            room = [uid for uid in free if given[uid] < quota]
            if len(room) < min(need, len(free)):
                quota_left += 1
                continue
            free = room
        if len(free) < need:
            skipped += 1
        # Least loaded first; ties broken by rotating with the item index (round-robin).
        free.sort(key=lambda uid: (load[uid], (slot[uid] - i) % n))
        for uid in free[:need]:
            load[uid] += 1
            given[uid] += 1
            rows.append(
                {
                    "item_id": item_id,
                    "user_id": uid,
                    "position": position[item_id],
                    "deal_id": deal_id,
                }
            )
    return DealPlan(rows, skipped, quota_left, tuple(covered))


def _holders(session: Session, item_ids: Sequence[int], deal_id: int) -> tuple[Holder, ...]:
    """Who held ``item_ids`` before deal ``deal_id`` (its own assignments are not counted), and
    how many of them each has labelled; most items first."""
    if not item_ids:
        return ()
    items: Counter[int] = Counter()
    done: Counter[int] = Counter()
    ids = list(item_ids)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = session.execute(
            select(Assignment.user_id, labelled_by(Assignment.user_id, Assignment.item_id))
            .where(Assignment.item_id.in_(chunk))
            .where((Assignment.deal_id != deal_id) | Assignment.deal_id.is_(None))
        )
        for user_id, labelled in rows:
            items[user_id] += 1
            done[user_id] += int(bool(labelled))
    users = {u.id: u for u in session.scalars(select(User).where(User.id.in_(list(items)))).all()}
    held = [
        Holder(users[uid].name, users[uid].role, count, done[uid]) for uid, count in items.items()
    ]
    return tuple(sorted(held, key=lambda h: (-h.items, h.name)))


def finish_deal(
    session: Session,
    record: Deal,
    ds_name: str,
    users: Sequence[User],
    rows: list[dict[str, Any]],
    skipped: int,
    n_items: int,
    *,
    covered: Sequence[int] | None = None,
    **extra: Any,
) -> DealResult:
    """Write the assignments, fill in the deal's counts and say what was done.

    ``covered``: the deal's items that already had their annotators. When not given (the whole
    dataset's queue deal), they are the dataset's items held before that the deal added nobody
    to: an item short of its target always gets someone, since a target is at most the number
    of picked annotators (:func:`_check_overlap`).
    """
    added = insert_new_assignments(session, rows)
    record.n_items, record.added = n_items, added
    session.flush()
    per = Counter(r["user_id"] for r in rows)
    if covered is None:
        covered = _covered_by_others(session, record, rows)
    return DealResult(
        dataset=ds_name,
        items=n_items,
        added=added,
        per_annotator={u.name: per.get(u.id, 0) for u in users},
        skipped_items=skipped,
        deal_id=record.id,
        kind=record.kind,
        already_covered=len(covered),
        held_by=_holders(session, covered, record.id),
        **extra,
    )


def _covered_by_others(
    session: Session, record: Deal, rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """The dataset's items this deal gave nobody that were already in someone's queue."""
    touched = {int(r["item_id"]) for r in rows}
    held = session.scalars(
        select(Assignment.item_id)
        .join(ItemRecord, ItemRecord.id == Assignment.item_id)
        .where(ItemRecord.dataset_id == record.dataset_id)
        .where((Assignment.deal_id != record.id) | Assignment.deal_id.is_(None))
        .distinct()
    )
    return sorted(i for i in held if i not in touched)
