"""The ORM schema (SQLAlchemy 2.0 typed declarative). Changed only through Alembic migrations.

Outside the store only the Alembic environment (``migrations/env.py``) and tests import it; the
rest of qaeval goes through the functions of :mod:`qaeval_core.store`, which hand out DataFrames
and frozen dataclasses, never these classes. The item row is :class:`ItemRecord`, so that it is
not mistaken for :class:`qaeval_core.schema.Item` (the metric input).

Labels and adjudications are append-only histories: a new row supersedes the previous one for
the same (item, annotator) / item; nothing is updated in place, so an acknowledged label is
never lost or silently overwritten.

Why it is one module: it is the schema, one declarative registry that Alembic compares with the
migrations table by table (``tests/store/test_migrations.py``); split across modules, a table could
be left out of the metadata the migrations are checked against.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    event,
    false,
    select,
    text,
)
from sqlalchemy.orm import (
    DeclarativeBase,
    Mapped,
    ORMExecuteState,
    Session,
    mapped_column,
    relationship,
    with_loader_criteria,
)

from qaeval_core.vocabulary import ROLES  # re-exported: the roles a user row may have

__all__ = [
    "IMPORTING_PREFIX",
    "IMPORT_COMMITTED_SUFFIX",
    "INCLUDE_PENDING_IMPORTS",
    "visible_dataset",
    "pending_imports",
    "Base",
    "Dataset",
    "ItemRecord",
    "User",
    "LoginThrottle",
    "Assignment",
    "Label",
    "Adjudication",
    "Score",
    "Calibration",
    "LoginSession",
    "Deal",
    "DealItem",
    "Flag",
    "Guideline",
    "MAX_RULES",
    "ROLES",
    "DEAL_KINDS",
    "NAMING_CONVENTION",
    "utcnow",
    "AnswerKnowledgeDecision",
    "KNOWLEDGE_DECISIONS",
    "KNOWLEDGE_KINDS",
]


#: Kinds of deal: ``queue`` (every item of a dataset, :func:`~qaeval_core.store.deal`),
#: ``audit`` (a seeded uniform random sample, the labels PPI-style estimates need) and
#: ``triage`` (the items a calibrated judge is unsure of, routed to people).
DEAL_KINDS = ("queue", "audit", "triage")


def utcnow() -> datetime:
    return datetime.now(UTC)


#: Name prefix of a dataset whose import is still running: every reader skips such a dataset
#: (:func:`visible_dataset`) and no user-given name may start with it (issue 13).
IMPORTING_PREFIX = ".qaeval-import-in-progress:"


def visible_dataset() -> Any:
    """WHERE clause on ``datasets``: not an import in progress."""
    return Dataset.name.not_like(IMPORTING_PREFIX + "%")


#: Appended to the hidden name of an import into an existing dataset at its commit point: from
#: then on the rows it wrote (``import_id``) are visible (issue 31, item 1).
IMPORT_COMMITTED_SUFFIX = ":committed"

#: Execution option that shows a statement the rows of imports not yet committed (only the
#: import code, which writes and deletes them, needs it).
INCLUDE_PENDING_IMPORTS = "include_pending_imports"


def pending_imports() -> Any:
    """SELECT of the hidden datasets whose import has not reached its commit point: the rows
    of ``items`` and ``labels`` whose ``import_id`` is one of them are hidden from readers."""
    return select(Dataset.id).where(
        Dataset.name.like(IMPORTING_PREFIX + "%"),
        Dataset.name.not_like("%" + IMPORT_COMMITTED_SUFFIX),
    )


# Named constraints let Alembic's SQLite batch mode alter tables later.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _pending_index(table: str) -> Index:
    """Partial index of the rows an import has not cleared yet (``import_id``): empty when no
    import runs, so other writes never touch it; the import finds its rows by it."""
    where = "import_id IS NOT NULL"
    return Index(
        f"ix_{table}_import_id", "import_id", sqlite_where=text(where), postgresql_where=text(where)
    )


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Dataset(Base):
    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    items: Mapped[list[ItemRecord]] = relationship(back_populates="dataset", passive_deletes=True)


class ItemRecord(Base):
    """One question-answer item of a dataset (table ``items``)."""

    __tablename__ = "items"
    __table_args__ = (
        UniqueConstraint("dataset_id", "content_hash", name="uq_items_dataset_hash"),
        UniqueConstraint("dataset_id", "external_id", name="uq_items_dataset_external_id"),
        _pending_index("items"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    external_id: Mapped[str] = mapped_column(String(300))
    question: Mapped[str] = mapped_column(Text)
    references: Mapped[list[Any]] = mapped_column(JSON)
    candidate: Mapped[str] = mapped_column(Text)
    context: Mapped[str | None] = mapped_column(Text)
    choices: Mapped[list[Any] | None] = mapped_column(JSON)
    wrong_answers: Mapped[list[Any] | None] = mapped_column(JSON)
    qa_model: Mapped[str | None] = mapped_column(Text)
    meta: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: The hidden dataset of the import into an existing dataset that wrote the row, until that
    #: import has committed and cleared it (migration 0010); NULL for every other row.
    import_id: Mapped[int | None] = mapped_column(Integer)

    dataset: Mapped[Dataset] = relationship(back_populates="items")


class User(Base):
    __tablename__ = "users"
    __table_args__ = (
        CheckConstraint("role IN ('annotator', 'researcher', 'admin', 'external')", name="role"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    password_hash: Mapped[str | None] = mapped_column(String(300))
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: The password is a temporary one (the demo's, or set by an admin): the app asks for a new
    #: one before anything else.
    must_change_password: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false()
    )


class LoginThrottle(Base):
    """Failed logins per typed user name (known or not, so the lockout tells nothing about
    which names exist): ``failures`` since ``first_failed_at``; no attempt is checked before
    ``locked_until``. A successful login deletes the row."""

    __tablename__ = "login_throttle"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    first_failed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    locked_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Assignment(Base):
    """One item in one annotator's queue. ``position`` orders the queue."""

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("item_id", "user_id", name="uq_assignments_item_user"),
        Index("ix_assignments_user_position", "user_id", "position"),
        # Covering index for next_item(): walks one user's queue in order without table reads.
        Index("ix_assignments_user_position_item", "user_id", "position", "item_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    position: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: The deal that put the item in this queue (a reassignment keeps it); NULL for
    #: assignments dealt before deals were recorded (migration 0004), all of them queue deals.
    deal_id: Mapped[int | None] = mapped_column(
        ForeignKey("deals.id", ondelete="SET NULL"), index=True
    )
    #: When the annotator skipped the item (migration 0006): a skipped item leaves the pending
    #: queue until they revisit it, across sessions; NULL: not skipped.
    skipped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


#: A project's rule list has at most this many rules (keys 1-9; 0 clears the rule).
MAX_RULES = 9


class Label(Base):
    """One judgment; append-only. The latest row per (item, user) is the current label."""

    __tablename__ = "labels"
    __table_args__ = (
        CheckConstraint("value IN (0, 1, 2)", name="value"),
        CheckConstraint("rule IS NULL OR (rule BETWEEN 1 AND 9)", name="rule"),
        Index("ix_labels_item_user_id", "item_id", "user_id", "id"),
        Index("ix_labels_user_id", "user_id", "id"),
        _pending_index("labels"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    value: Mapped[int] = mapped_column(Integer)
    rule: Mapped[int | None] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(Text)
    #: Active seconds on the item: wall time with each idle gap cut to the project's idle cap
    #: (what progress and effort counts use).
    seconds: Mapped[float | None] = mapped_column(Float)
    #: Wall-clock seconds from the item appearing to the save, idle time included (0006).
    wall_seconds: Mapped[float | None] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(20), default="app")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: As :attr:`ItemRecord.import_id`: the import that wrote the label, until it has committed.
    import_id: Mapped[int | None] = mapped_column(Integer)


class Adjudication(Base):
    """A researcher's final label for an item; append-only, the latest row is current."""

    __tablename__ = "adjudications"
    __table_args__ = (
        CheckConstraint("value IN (0, 1, 2)", name="value"),
        Index("ix_adjudications_item_id", "item_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    value: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Score(Base):
    """A metric's score of an item under one configuration (``config_hash``)."""

    __tablename__ = "scores"
    __table_args__ = (
        UniqueConstraint("item_id", "metric_id", "config_hash", name="uq_scores_item_metric_cfg"),
        Index("ix_scores_metric", "metric_id", "config_hash"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    metric_id: Mapped[str] = mapped_column(String(100))
    config_hash: Mapped[str] = mapped_column(String(64))
    value: Mapped[float] = mapped_column(Float)
    decision: Mapped[bool | None] = mapped_column(Boolean)
    details: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Calibration(Base):
    """A saved calibrated judge config (the same JSON `qaeval calibrate` writes)."""

    __tablename__ = "calibrations"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    dataset_id: Mapped[int | None] = mapped_column(ForeignKey("datasets.id", ondelete="SET NULL"))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Deal(Base):
    """One dealing of items into queues: its kind, seed and parameters, who made it and when.

    ``params`` holds the arguments (annotators, overlap, sample size, calibration...);
    ``n_items`` is how many items the deal covered and ``added`` how many assignments it wrote.
    Audit and triage deals list the items they drew in :class:`DealItem`; a queue deal covers
    every item of the dataset at the time, so it lists none.
    """

    __tablename__ = "deals"
    __table_args__ = (CheckConstraint("kind IN ('queue', 'audit', 'triage')", name="kind"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(20))
    seed: Mapped[int | None] = mapped_column(Integer)
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    n_items: Mapped[int] = mapped_column(Integer, default=0)
    added: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class DealItem(Base):
    """An item an audit or triage deal drew (whether or not it needed a new assignment: an
    item already in a queue stays in the audit's random sample), with the probability that the
    deal drew it (``inclusion_probability``, migration 0008): an audit's ``size / items``, a
    probabilistic triage deal's per-item probability (1 for items already labelled when it
    drew, which it holds as known); NULL where the deal chose deterministically (the most
    doubtful items) or was made before 0008."""

    __tablename__ = "deal_items"

    deal_id: Mapped[int] = mapped_column(
        ForeignKey("deals.id", ondelete="CASCADE"), primary_key=True
    )
    item_id: Mapped[int] = mapped_column(
        ForeignKey("items.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    inclusion_probability: Mapped[float | None] = mapped_column(Float)


class LoginSession(Base):
    """A browser login that survives a page reload: the app keeps a random token in the page
    URL and only its SHA-256 here, so the table alone cannot be used to log in. A session
    ends when it expires or its user logs out (``revoked_at``)."""

    __tablename__ = "login_sessions"

    id: Mapped[int] = mapped_column(primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: The last request of this session (the idle timeout counts from it); NULL: never used
    #: since login, so ``created_at`` counts.
    last_seen_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Flag(Base):
    """An annotator's "flag for review" of an item, with the reason; researchers list and
    resolve them (``resolved_at``, ``resolved_by``, ``resolution``). Flagging also skips the
    item in the annotator's queue."""

    __tablename__ = "flags"
    __table_args__ = (Index("ix_flags_item_user", "item_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    resolved_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    resolution: Mapped[str | None] = mapped_column(Text)


class Guideline(Base):
    """One version of a dataset's labelling guidelines: the markdown text, the rule list, the
    label keys and the idle cap. Append-only: an edit is a new version; the highest version
    per dataset is current, so no edit silently overwrites another."""

    __tablename__ = "guidelines"
    __table_args__ = (
        UniqueConstraint("dataset_id", "version", name="uq_guidelines_dataset_version"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    rules: Mapped[list[Any]] = mapped_column(JSON)
    label_keys: Mapped[dict[str, Any]] = mapped_column(JSON)
    idle_cap_seconds: Mapped[float] = mapped_column(Float)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# ----------------------------------------------------------------------------- answer knowledge
# (issue 24, item 2; migration 0009)

#: What a researcher decided about a suggested answer (:mod:`qaeval_core.knowledge`).
KNOWLEDGE_DECISIONS = ("accepted", "rejected")
#: The kinds of suggested answer: another reference (``alias``) or a known ``wrong`` answer.
KNOWLEDGE_KINDS = ("alias", "wrong")


class AnswerKnowledgeDecision(Base):
    """A researcher's decision on one suggested answer of a question; append-only.

    A suggestion is (dataset, question key, kind, normalised answer), hashed into
    ``suggestion_hash``; its decisions are numbered ``version`` 1, 2, ... and the highest is
    current. A change of mind is a new row, so the dataset's knowledge list keeps who decided
    what and when. The unique version makes two researchers deciding the same suggestion at
    once collide instead of both landing (the second is told: :mod:`..repo.answer_knowledge`).
    """

    __tablename__ = "answer_knowledge"
    __table_args__ = (
        UniqueConstraint(
            "dataset_id", "suggestion_hash", "version", name="uq_answer_knowledge_version"
        ),
        CheckConstraint("kind IN ('alias', 'wrong')", name="kind"),
        CheckConstraint("decision IN ('accepted', 'rejected')", name="decision"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(
        ForeignKey("datasets.id", ondelete="CASCADE"), index=True
    )
    suggestion_hash: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)
    question_key: Mapped[str] = mapped_column(Text)
    question: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(10))
    answer: Mapped[str] = mapped_column(Text)
    answer_key: Mapped[str] = mapped_column(Text)
    decision: Mapped[str] = mapped_column(String(10))
    note: Mapped[str | None] = mapped_column(Text)
    decided_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# ----------------------------------------------------------------------------- pending imports
# (issue 31, item 1)


@event.listens_for(Session, "do_orm_execute")
def _hide_pending_imports(state: ORMExecuteState) -> None:
    """Every ORM SELECT, in any session, skips the items and labels of imports that have not
    reached their commit point (:func:`pending_imports`), wherever those tables appear (joins
    and subqueries included): an import into an existing dataset writes its rows in many short
    transactions, and no reader (annotators' queues, exports, estimates, counts) may see part
    of one. A statement run with :data:`INCLUDE_PENDING_IMPORTS` sees them."""
    if (
        not state.is_select
        or state.is_column_load
        or state.is_relationship_load
        or state.execution_options.get(INCLUDE_PENDING_IMPORTS)
    ):
        return
    state.statement = state.statement.options(
        with_loader_criteria(
            ItemRecord,
            lambda cls: cls.import_id.is_(None) | cls.import_id.not_in(pending_imports()),
            include_aliases=True,
        ),
        with_loader_criteria(
            Label,
            lambda cls: cls.import_id.is_(None) | cls.import_id.not_in(pending_imports()),
            include_aliases=True,
        ),
    )
