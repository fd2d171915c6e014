"""The store API: datasets, imports, users, label readers, scores and calibrations.

Every function takes ``db``: a store URL (``None`` = ``QAEVAL_DATABASE_URL`` or the default
SQLite file) or an open :class:`~sqlalchemy.orm.Session`. With a URL the function runs in its
own transaction; with a Session it joins the caller's, so several calls can commit together.

Tables come back as pandas DataFrames (what the app, comparisons and exports consume); single
objects as small frozen dataclasses, so callers never hold ORM objects after the session closes.

Item identity: ``items.external_id`` is the file's id (or 16 hex digits of the content hash when
the file has none) and ``items.content_hash`` hashes id *and* content. Re-importing a file skips
the ids already present, so an import is idempotent; an id that comes back with different
content is reported as an error instead of being overwritten.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError, NoSuchModuleError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.errors import (
    ConfigError,
    NotFoundError,
    RowError,
    StoreError,
    ValidationError,
)
from qaeval_core.io.files import plain_value
from qaeval_core.schema import Item as SchemaItem
from qaeval_core.store import auth
from qaeval_core.store.models import ROLES, Calibration, Dataset, Item, Label, Score, User, utcnow
from qaeval_core.store.session import session_scope, write_scope

__all__ = [
    "EXPORTS",
    "export_records",
    "Store",
    "DatasetInfo",
    "UserInfo",
    "user_info",
    "CalibrationInfo",
    "ImportReport",
    "create_dataset",
    "get_dataset",
    "list_datasets",
    "delete_dataset",
    "import_items",
    "import_file",
    "list_items",
    "load_items",
    "add_user",
    "get_user",
    "list_users",
    "set_password",
    "authenticate",
    "current_labels",
    "label_history",
    "scores",
    "add_scores",
    "save_calibration",
    "get_calibration",
    "list_calibrations",
]

#: A store URL, ``None`` for the default store, or an open Session (joins its transaction).
Store = str | Session | None

IMPORT_SOURCE = "import"
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
SCORE_COLUMNS = [
    "score_id",
    "item_id",
    "external_id",
    "dataset",
    "metric_id",
    "config_hash",
    "value",
    "decision",
    "details",
    "created_at",
]


@dataclass(frozen=True)
class DatasetInfo:
    id: int
    name: str
    description: str | None
    source: str | None
    created_at: datetime
    n_items: int = 0


@dataclass(frozen=True)
class UserInfo:
    id: int
    name: str
    role: str
    active: bool
    has_password: bool
    created_at: datetime


@dataclass(frozen=True)
class CalibrationInfo:
    id: int
    name: str
    config: dict[str, Any]
    dataset: str | None
    created_by: str | None
    created_at: datetime


@dataclass(frozen=True)
class ImportReport:
    """What an import did. ``items_skipped``: ids already in the dataset (re-import)."""

    dataset: str
    dataset_created: bool
    rows: int
    items_added: int
    items_skipped: int
    labels_added: int
    labels_skipped: int
    raters_created: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [
            f"{self.items_added} item(s) added",
            f"{self.items_skipped} already present",
            f"{self.labels_added} label(s) added",
        ]
        if self.labels_skipped:
            parts.append(f"{self.labels_skipped} label(s) already present")
        if self.raters_created:
            parts.append(f"{len(self.raters_created)} external rater(s) created")
        new = " (new dataset)" if self.dataset_created else ""
        return f"Dataset {self.dataset!r}{new}: {self.rows} row(s) read; " + ", ".join(parts) + "."


# -- sessions ------------------------------------------------------------------------------


def _store_error(exc: Exception) -> StoreError:
    text = str(getattr(exc, "orig", exc)).strip().splitlines()[0]
    if any(s in text for s in ("no such table", "does not exist", "UndefinedTable")):
        return StoreError(
            f"The store has no qaeval schema (or an outdated one): {text}. "
            "Run `qaeval db upgrade` first."
        )
    if isinstance(exc, IntegrityError):
        return StoreError(
            f"The store refused the change ({text}); another process may have written the same "
            "data at the same time. Run the command again."
        )
    return StoreError(f"Store error: {text}")


@contextmanager
def _scope(db: Store, *, write: bool = False) -> Iterator[Session]:
    """The caller's session, or a new transaction (write: takes the write lock first)."""
    if isinstance(db, Session):
        yield db
        return
    scope = write_scope if write else session_scope
    try:
        with scope(db) as session:
            yield session
    except (OperationalError, ProgrammingError, IntegrityError) as exc:
        raise _store_error(exc) from exc
    except NoSuchModuleError as exc:
        raise ConfigError(
            f"Invalid database URL: {exc}. Expected e.g. sqlite:///path/to/file.sqlite or "
            "postgresql+psycopg2://user:pass@host/dbname."
        ) from exc


# -- datasets ------------------------------------------------------------------------------


def _dataset_info(ds: Dataset, n_items: int = 0) -> DatasetInfo:
    return DatasetInfo(ds.id, ds.name, ds.description, ds.source, ds.created_at, n_items)


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"The {what} name must not be empty.")
    name = name.strip()
    if len(name) > 200:
        raise ConfigError(f"The {what} name has {len(name)} characters; the limit is 200.")
    return name


def _find_dataset(session: Session, name: str) -> Dataset:
    ds = session.execute(select(Dataset).where(Dataset.name == name)).scalar_one_or_none()
    if ds is None:
        known = session.execute(select(Dataset.name).order_by(Dataset.name)).scalars().all()
        hint = f"known datasets: {', '.join(known)}" if known else "the store has no datasets yet"
        raise NotFoundError(f"No dataset named {name!r} ({hint}).")
    return ds


def create_dataset(
    db: Store,
    name: str,
    *,
    description: str | None = None,
    source: str | None = None,
    exist_ok: bool = False,
) -> DatasetInfo:
    """Create an empty dataset (``exist_ok``: return the existing one instead of failing)."""
    name = _check_name(name, "dataset")
    with _scope(db, write=True) as s:
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
    with _scope(db) as s:
        ds = _find_dataset(s, name)
        n = s.execute(select(func.count(Item.id)).where(Item.dataset_id == ds.id)).scalar_one()
        return _dataset_info(ds, n)


def list_datasets(db: Store) -> list[DatasetInfo]:
    """Every dataset with its item count, by name."""
    counts = (
        select(Item.dataset_id, func.count(Item.id).label("n")).group_by(Item.dataset_id).subquery()
    )
    stmt = (
        select(Dataset, func.coalesce(counts.c.n, 0))
        .outerjoin(counts, counts.c.dataset_id == Dataset.id)
        .order_by(Dataset.name)
    )
    with _scope(db) as s:
        return [_dataset_info(ds, n) for ds, n in s.execute(stmt).all()]


def delete_dataset(db: Store, name: str) -> None:
    """Delete a dataset with its items, labels, assignments and scores."""
    with _scope(db, write=True) as s:
        s.delete(_find_dataset(s, name))


# -- import --------------------------------------------------------------------------------


def _parse_rows(
    rows: Sequence[io.ItemRow] | Iterable[Mapping[str, Any]], source: str
) -> list[io.ItemRow]:
    rows = list(rows)
    if all(isinstance(r, io.ItemRow) for r in rows):
        return rows  # type: ignore[return-value]
    return io.parse_records(rows, source=source)  # type: ignore[arg-type]


def _insert_items(s: Session, dataset_id: int, rows: list[io.ItemRow]) -> dict[str, int]:
    if rows:
        s.execute(
            insert(Item),
            [
                {
                    "dataset_id": dataset_id,
                    "external_id": r.external_id,
                    "question": r.question,
                    "references": r.references,
                    "candidate": r.candidate,
                    "context": r.context,
                    "choices": r.choices,
                    "wrong_answers": r.wrong_answers,
                    "qa_model": r.qa_model,
                    "meta": r.meta,
                    "content_hash": r.content_hash,
                }
                for r in rows
            ],
        )
    ids = s.execute(select(Item.external_id, Item.id).where(Item.dataset_id == dataset_id))
    return dict(ids.tuples().all())


def _rater_ids(s: Session, names: set[str]) -> tuple[dict[str, int], list[str]]:
    """User ids by name; unknown raters become ``external`` users (they cannot log in)."""
    known = dict(s.execute(select(User.name, User.id)).tuples().all())
    missing = sorted(names - known.keys())
    if missing:
        s.execute(
            insert(User), [{"name": n, "role": "external", "password_hash": None} for n in missing]
        )
        known = dict(s.execute(select(User.name, User.id)).tuples().all())
    return known, missing


def _insert_labels(s: Session, labels: list[dict[str, Any]]) -> None:
    if labels:
        s.execute(insert(Label), labels)


def import_items(
    db: Store,
    dataset_name: str,
    rows: Sequence[io.ItemRow] | Iterable[Mapping[str, Any]],
    *,
    source: str | None = None,
    description: str | None = None,
) -> ImportReport:
    """Add items and their human labels to a dataset (created if needed), all-or-nothing.

    ``rows`` are validated :class:`~qaeval_core.io.ItemRow` (from :func:`io.read_items`) or
    raw dicts in the file schema. Items whose id is already in the dataset are skipped; a
    rater's label is added unless it already is that rater's current label, so importing the
    same file twice adds nothing. Raters become ``external`` users; labels get source "import".
    """
    name = _check_name(dataset_name, "dataset")
    items = _parse_rows(rows, source or "<rows>")
    with _scope(db, write=True) as s:
        ds = s.execute(select(Dataset).where(Dataset.name == name)).scalar_one_or_none()
        created = ds is None
        if ds is None:
            ds = Dataset(name=name, description=description, source=source)
            s.add(ds)
            s.flush()
        existing = dict(
            s.execute(select(Item.external_id, Item.content_hash).where(Item.dataset_id == ds.id))
            .tuples()
            .all()
        )
        conflicts = [
            RowError(
                r.row,
                f"id {r.external_id!r} is already in dataset {name!r} with different content "
                "(give the changed item a new id, or import into a new dataset)",
            )
            for r in items
            if r.external_id in existing and existing[r.external_id] != r.content_hash
        ]
        if conflicts:
            raise ValidationError(source or "<rows>", conflicts)
        new = [r for r in items if r.external_id not in existing]
        item_ids = _insert_items(s, ds.id, new)
        users, created_raters = _rater_ids(s, {lab.rater for r in items for lab in r.labels})
        current = _current_values(s, ds.id) if len(new) < len(items) else {}
        labels, skipped = [], 0
        for r in items:
            for lab in r.labels:
                key = (item_ids[r.external_id], users[lab.rater])
                if current.get(key) == lab.value:
                    skipped += 1
                    continue
                labels.append(
                    {
                        "item_id": key[0],
                        "user_id": key[1],
                        "value": lab.value,
                        "rule": lab.rule,
                        "note": lab.note,
                        "seconds": lab.seconds,
                        "source": IMPORT_SOURCE,
                    }
                )
        _insert_labels(s, labels)
        return ImportReport(
            dataset=name,
            dataset_created=created,
            rows=sum(len(r.rows) for r in items),
            items_added=len(new),
            items_skipped=len(items) - len(new),
            labels_added=len(labels),
            labels_skipped=skipped,
            raters_created=created_raters,
        )


def import_file(
    db: Store,
    path: str,
    dataset_name: str,
    *,
    fmt: str | None = None,
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
) -> ImportReport:
    """Read, validate and import one file (see :mod:`qaeval_core.io` for the schema)."""
    rows = io.read_items(
        path, fmt=fmt, mapping=mapping, label_scale=label_scale, alias_separator=alias_separator
    )
    return import_items(db, dataset_name, rows, source=str(path))


# -- items ---------------------------------------------------------------------------------


def list_items(db: Store, dataset: str, *, item_ids: Sequence[int] | None = None) -> pd.DataFrame:
    """A dataset's items in import order (columns: :data:`ITEM_COLUMNS`)."""
    with _scope(db) as s:
        ds = _find_dataset(s, dataset)
        stmt = select(Item).where(Item.dataset_id == ds.id).order_by(Item.id)
        if item_ids is not None:
            stmt = stmt.where(Item.id.in_(list(item_ids)))
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
    frame = list_items(db, dataset)
    return [
        SchemaItem(
            question=r.question,
            references=tuple(r.references),
            candidate=r.candidate,
            context=r.context,
            choices=r.choices,
            wrong_answers=r.wrong_answers,
            id=r.external_id,
            dataset=dataset,
            qa_model=r.qa_model,
            meta={**(r.meta or {}), "item_id": int(r.item_id)},
        )
        for r in frame.itertuples(index=False)
    ]


# -- users ---------------------------------------------------------------------------------


def user_info(u: User) -> UserInfo:
    """The public view of an account row (never the password hash)."""
    return UserInfo(u.id, u.name, u.role, u.active, u.password_hash is not None, u.created_at)


def add_user(db: Store, name: str, role: str, password: str | None = None) -> UserInfo:
    """Create an account. Roles that log in need a password; ``external`` raters have none."""
    name = _check_name(name, "user")
    if role not in ROLES:
        raise ConfigError(f"Unknown role {role!r}: expected one of {', '.join(ROLES)}.")
    if role == "external":
        if password:
            raise ConfigError("External raters cannot log in, so they take no password.")
        password_hash = None
    else:
        if not password:
            raise ConfigError(f"A {role} account needs a password (it is used to log in).")
        password_hash = auth.hash_password(password)
    with _scope(db, write=True) as s:
        if s.execute(select(User.id).where(User.name == name)).first() is not None:
            raise StoreError(f"A user named {name!r} already exists.")
        user = User(name=name, role=role, password_hash=password_hash, active=True)
        s.add(user)
        s.flush()
        return user_info(user)


def _find_user(s: Session, name: str) -> User:
    user = s.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise NotFoundError(f"No user named {name!r} (see `qaeval user list`).")
    return user


def get_user(db: Store, name: str) -> UserInfo:
    with _scope(db) as s:
        return user_info(_find_user(s, name))


def list_users(db: Store, *, role: str | None = None) -> list[UserInfo]:
    stmt = select(User).order_by(User.name)
    if role is not None:
        stmt = stmt.where(User.role == role)
    with _scope(db) as s:
        return [user_info(u) for u in s.execute(stmt).scalars()]


def set_password(db: Store, name: str, password: str) -> None:
    if not password:
        raise ConfigError("The password must not be empty.")
    with _scope(db, write=True) as s:
        user = _find_user(s, name)
        if user.role == "external":
            raise ConfigError(f"{name!r} is an external rater and cannot log in.")
        user.password_hash = auth.hash_password(password)


def authenticate(db: Store, name: str, password: str) -> UserInfo | None:
    """The user when the name and password match an active account that may log in."""
    with _scope(db) as s:
        user = s.execute(select(User).where(User.name == name)).scalar_one_or_none()
        if user is None or not user.active or user.role == "external":
            auth.verify_password(None, password)
            return None
        return user_info(user) if auth.verify_password(user.password_hash, password) else None


# -- labels (readers; writing for the app lives in store/annotation/) ----------------------


def _current_values(s: Session, dataset_id: int) -> dict[tuple[int, int], int]:
    latest = (
        select(func.max(Label.id))
        .join(Item, Item.id == Label.item_id)
        .where(Item.dataset_id == dataset_id)
        .group_by(Label.item_id, Label.user_id)
    )
    stmt = select(Label.item_id, Label.user_id, Label.value).where(Label.id.in_(latest))
    return {(i, u): v for i, u, v in s.execute(stmt).tuples()}


def _labels_frame(db: Store, dataset: str | None, *, current: bool) -> pd.DataFrame:
    stmt = (
        select(
            Label.id,
            Label.item_id,
            Item.external_id,
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
        .join(Item, Item.id == Label.item_id)
        .join(Dataset, Dataset.id == Item.dataset_id)
        .join(User, User.id == Label.user_id)
        .order_by(Label.id)
    )
    with _scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == _find_dataset(s, dataset).id)
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


def label_history(db: Store, dataset: str | None = None) -> pd.DataFrame:
    """Every label ever written, oldest first (columns: :data:`LABEL_COLUMNS`)."""
    return _labels_frame(db, dataset, current=False)


# -- scores --------------------------------------------------------------------------------


def _numpy_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _jsonable(value: Any, *, strict: bool = False) -> Any:
    """Plain JSON (numpy numbers, tuples would break the JSON column).

    ``strict``: fail on anything else (calibration configs must load back exactly); otherwise
    unknown objects become their text and NaN becomes null (score details are informational).
    """
    if strict:
        return json.loads(json.dumps(value, default=_numpy_default, allow_nan=False))
    return json.loads(json.dumps(plain_value(value), allow_nan=False))


def add_scores(db: Store, rows: Iterable[Mapping[str, Any]]) -> int:
    """Insert or replace scores, keyed by (item_id, metric_id, config_hash). Returns the count.

    Each row: ``item_id``, ``metric_id``, ``config_hash``, ``value`` (finite), optional
    ``decision`` and ``details``.
    """
    payload = []
    for r in rows:
        value = float(r["value"])
        if not math.isfinite(value):
            raise StoreError(
                f"Score of item {r['item_id']} by {r['metric_id']} is {value}; scores must be "
                "finite numbers."
            )
        decision = r.get("decision")
        payload.append(
            {
                "item_id": int(r["item_id"]),
                "metric_id": str(r["metric_id"]),
                "config_hash": str(r["config_hash"]),
                "value": value,
                "decision": None if decision is None else bool(decision),
                "details": None if r.get("details") is None else _jsonable(r["details"]),
                "created_at": utcnow(),
            }
        )
    if not payload:
        return 0
    with _scope(db, write=True) as s:
        dialect = s.get_bind().dialect.name
        if dialect in ("sqlite", "postgresql"):
            if dialect == "sqlite":
                from sqlalchemy.dialects.sqlite import insert as upsert
            else:
                from sqlalchemy.dialects.postgresql import insert as upsert
            stmt = upsert(Score.__table__)
            stmt = stmt.on_conflict_do_update(
                index_elements=["item_id", "metric_id", "config_hash"],
                set_={c: stmt.excluded[c] for c in ("value", "decision", "details", "created_at")},
            )
            for start in range(0, len(payload), 5000):
                s.execute(stmt, payload[start : start + 5000])
        else:  # portable fallback: update what exists, insert the rest
            for row in payload:
                key = (
                    (Score.item_id == row["item_id"])
                    & (Score.metric_id == row["metric_id"])
                    & (Score.config_hash == row["config_hash"])
                )
                if s.execute(update(Score).where(key).values(**row)).rowcount == 0:
                    s.execute(insert(Score).values(**row))
    return len(payload)


def scores(
    db: Store,
    dataset: str | None = None,
    *,
    metric_id: str | None = None,
    config_hash: str | None = None,
) -> pd.DataFrame:
    """Stored scores (columns: :data:`SCORE_COLUMNS`), optionally for one metric/config."""
    stmt = (
        select(
            Score.id,
            Score.item_id,
            Item.external_id,
            Dataset.name,
            Score.metric_id,
            Score.config_hash,
            Score.value,
            Score.decision,
            Score.details,
            Score.created_at,
        )
        .join(Item, Item.id == Score.item_id)
        .join(Dataset, Dataset.id == Item.dataset_id)
        .order_by(Score.item_id, Score.metric_id, Score.id)
    )
    if metric_id is not None:
        stmt = stmt.where(Score.metric_id == metric_id)
    if config_hash is not None:
        stmt = stmt.where(Score.config_hash == config_hash)
    with _scope(db) as s:
        if dataset is not None:
            stmt = stmt.where(Dataset.id == _find_dataset(s, dataset).id)
        rows = s.execute(stmt).all()
    return pd.DataFrame([tuple(r) for r in rows], columns=SCORE_COLUMNS)


# -- calibrations --------------------------------------------------------------------------


def _calibration_info(c: Calibration, dataset: str | None, user: str | None) -> CalibrationInfo:
    return CalibrationInfo(c.id, c.name, c.config, dataset, user, c.created_at)


def save_calibration(
    db: Store,
    name: str,
    config: Mapping[str, Any],
    *,
    dataset: str | None = None,
    created_by: str | None = None,
    overwrite: bool = False,
) -> CalibrationInfo:
    """Store a calibrated judge config under ``name`` (``overwrite`` replaces an existing one)."""
    name = _check_name(name, "calibration")
    try:
        config = _jsonable(dict(config), strict=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"Calibration {name!r}: the config is not plain JSON ({exc}).") from exc
    with _scope(db, write=True) as s:
        ds_id = _find_dataset(s, dataset).id if dataset is not None else None
        user_id = _find_user(s, created_by).id if created_by is not None else None
        cal = s.execute(select(Calibration).where(Calibration.name == name)).scalar_one_or_none()
        if cal is not None and not overwrite:
            raise StoreError(f"A calibration named {name!r} already exists (choose another name).")
        if cal is None:
            cal = Calibration(name=name)
            s.add(cal)
        cal.config, cal.dataset_id, cal.created_by = config, ds_id, user_id
        cal.created_at = utcnow()
        s.flush()
        return _calibration_info(cal, dataset, created_by)


def _calibrations(s: Session, name: str | None) -> list[CalibrationInfo]:
    stmt = (
        select(Calibration, Dataset.name, User.name)
        .outerjoin(Dataset, Dataset.id == Calibration.dataset_id)
        .outerjoin(User, User.id == Calibration.created_by)
        .order_by(Calibration.created_at.desc(), Calibration.id.desc())
    )
    if name is not None:
        stmt = stmt.where(Calibration.name == name)
    return [_calibration_info(c, d, u) for c, d, u in s.execute(stmt).tuples()]


def get_calibration(db: Store, name: str) -> CalibrationInfo:
    with _scope(db) as s:
        found = _calibrations(s, name)
        if not found:
            known = [c.name for c in _calibrations(s, None)]
            hint = f"saved: {', '.join(known)}" if known else "none saved yet"
            raise NotFoundError(f"No calibration named {name!r} ({hint}).")
        return found[0]


def list_calibrations(db: Store) -> list[CalibrationInfo]:
    """Saved calibrations, newest first."""
    with _scope(db) as s:
        return _calibrations(s, None)


#: What ``export_records`` (``qaeval export --what``, the app's Data page) can export.
EXPORTS = ("items", "labels", "labels-history", "scores")


def export_records(
    db: Store, dataset: str, what: str = "items", *, metric_id: str | None = None
) -> list[dict[str, Any]] | pd.DataFrame:
    """The rows of one export: items with their labels, current labels, label history, scores."""
    if what == "items":
        return io.items_to_records(list_items(db, dataset), current_labels(db, dataset))
    if what == "labels":
        return current_labels(db, dataset)
    if what == "labels-history":
        return label_history(db, dataset)
    if what == "scores":
        return scores(db, dataset, metric_id=metric_id)
    raise ConfigError(f"Unknown export {what!r}; expected one of {', '.join(EXPORTS)}.")
