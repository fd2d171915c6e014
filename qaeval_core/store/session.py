"""Opening a store: URL resolution, engine with SQLite pragmas, schema upgrade via Alembic.

The default store is one SQLite file in WAL mode with a busy timeout and foreign keys on, so
many annotators (threads or processes) can write without "database is locked".
``QAEVAL_DATABASE_URL`` or an explicit URL selects PostgreSQL or any SQLAlchemy URL.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import resources
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from qaeval_core.errors import ConfigError, StoreBusy, StoreError
from qaeval_core.store.nul_guard import guard_engine

__all__ = [
    "DEFAULT_DB_PATH",
    "resolve_url",
    "get_engine",
    "session_scope",
    "write_scope",
    "upgrade",
    "downgrade",
    "current_revision",
    "head_revision",
    "map_busy",
]

ENV_URL = "QAEVAL_DATABASE_URL"
#: Where the default store lives when neither --db nor QAEVAL_DATABASE_URL is given.
DEFAULT_DB_PATH = Path(".qaeval") / "qaeval.sqlite"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def resolve_url(url: str | None = None) -> str:
    """The store URL: explicit argument, else ``QAEVAL_DATABASE_URL``, else the default file.

    A bare file path is accepted and turned into a ``sqlite:///`` URL.
    """
    raw = url or os.environ.get(ENV_URL) or str(DEFAULT_DB_PATH)
    if "://" not in raw:
        path = Path(raw).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        raw = f"sqlite:///{path.resolve()}"
    try:
        make_url(raw)
    except ArgumentError as exc:
        raise ConfigError(
            f"Invalid database URL {raw!r}: {exc}. Expected e.g. sqlite:///path/to/file.sqlite "
            "or postgresql+psycopg2://user:pass@host/dbname."
        ) from exc
    return raw


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
        # Let SQLAlchemy own transaction boundaries so BEGIN IMMEDIATE works (pysqlite quirk).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:  # type: ignore[no-untyped-def]
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


@cache
def get_engine(url: str | None = None) -> Engine:
    """One engine per resolved URL (cached: engines own connection pools)."""
    resolved = resolve_url(url)
    try:
        if resolved.startswith("sqlite"):
            engine = create_engine(
                resolved,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            )
            _configure_sqlite(engine)
        else:
            engine = create_engine(resolved, pool_pre_ping=True)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"No database driver for {resolved.split('://')[0]}: {exc}. "
            "For PostgreSQL install the extra: pip install 'qaeval[postgres]'."
        ) from exc
    return guard_engine(engine)  # no NUL in text, on every backend alike


#: Driver messages of a lock wait that ran out: SQLite's busy timeout, PostgreSQL's
#: ``lock_timeout`` (SQLSTATE 55P03) and ``statement_timeout`` while waiting for a lock.
_BUSY_MARKERS = (
    "database is locked",
    "database table is locked",
    "lock timeout",
    "could not obtain lock",
    "canceling statement due to lock timeout",
)


def map_busy(exc: BaseException) -> StoreBusy | None:
    """A :class:`StoreBusy` for a driver error saying the store was locked too long, else None."""
    if not isinstance(exc, OperationalError):
        return None
    orig = getattr(exc, "orig", None)
    text = str(orig if orig is not None else exc).lower()
    if getattr(orig, "pgcode", None) == "55P03" or any(m in text for m in _BUSY_MARKERS):
        return StoreBusy(
            "The store is busy (another user or an import is writing); nothing was saved. "
            "Try again in a moment."
        )
    return None


@contextmanager
def _busy_mapped() -> Iterator[None]:
    try:
        yield
    except OperationalError as exc:
        busy = map_busy(exc)
        if busy is None:
            raise
        raise busy from exc


@contextmanager
def session_scope(url: str | None = None) -> Iterator[Session]:
    """A session for reads and ordinary writes; commits on success, rolls back on error.

    A lock wait that runs out raises :class:`~qaeval_core.errors.StoreBusy` (as in
    :func:`write_scope`), never the raw driver error.
    """
    factory = sessionmaker(bind=get_engine(url), expire_on_commit=False)
    with _busy_mapped(), factory() as session, session.begin():
        yield session


@contextmanager
def write_scope(url: str | None = None) -> Iterator[Session]:
    """A short write transaction that takes the write lock first (``BEGIN IMMEDIATE`` on SQLite).

    Use for read-then-write sequences (dealing queues, next-item claims) so two writers cannot
    interleave and lose an update.
    """
    engine = get_engine(url)
    if engine.dialect.name == "sqlite":
        engine = engine.execution_options(sqlite_begin="IMMEDIATE")
    factory = sessionmaker(bind=engine, expire_on_commit=False)
    with _busy_mapped(), factory() as session, session.begin():
        yield session


def _alembic_config(url: str):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    script_dir = resources.files("qaeval_core.migrations")
    cfg = Config()
    cfg.set_main_option("script_location", str(script_dir))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["engine"] = get_engine(url)
    return cfg


def upgrade(url: str | None = None, revision: str = "head") -> str:
    """Bring the schema to ``revision`` (default: newest). Returns the resolved URL."""
    from alembic import command

    resolved = resolve_url(url)
    try:
        with _upgrade_lock(resolved):
            command.upgrade(_alembic_config(resolved), revision)
    except Exception as exc:  # any driver error becomes a clear message
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"Could not upgrade the store at {_safe(resolved)}: {exc}") from exc
    return resolved


#: ``pg_advisory_lock`` key serialising schema upgrades of one PostgreSQL database ("qaeval").
_PG_UPGRADE_LOCK_KEY = 0x716165_76616C


@contextmanager
def _upgrade_lock(url: str) -> Iterator[None]:
    """Hold a lock that serialises schema upgrades of one store across processes.

    Two processes upgrading an empty store at once (the app and an import started together)
    would both create the tables: the second fails on a unique violation (PostgreSQL) or
    "database is locked" (SQLite). PostgreSQL: a session advisory lock on its own connection,
    held while Alembic runs; the waiter then finds the schema at head and does nothing.
    SQLite: an exclusive lock on the file ``<store>.upgrade.lock`` next to the database (none
    for an in-memory store, which no other process can see).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        with get_engine(url).connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({_PG_UPGRADE_LOCK_KEY})")
            conn.commit()
            try:
                yield
            finally:
                conn.exec_driver_sql(f"SELECT pg_advisory_unlock({_PG_UPGRADE_LOCK_KEY})")
                conn.commit()
        return
    database = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    with _file_lock(Path(f"{database}.upgrade.lock")):
        yield


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive inter-process lock on ``path`` (``filelock`` when installed, else fcntl)."""
    try:
        from filelock import FileLock
    except ImportError:
        FileLock = None
    if FileLock is not None:
        with FileLock(str(path)):
            yield
        return
    try:
        import fcntl
    except ImportError:  # Windows without filelock: no lock (upgrades may then collide)
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def downgrade(url: str | None = None, revision: str = "base") -> None:
    """Step the schema down to ``revision`` (``base`` drops every table)."""
    from alembic import command

    command.downgrade(_alembic_config(resolve_url(url)), revision)


def current_revision(url: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with get_engine(url).connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_alembic_config("sqlite://")).get_current_head()


def _safe(url: str) -> str:
    """The URL with any password hidden, for messages."""
    return make_url(url).render_as_string(hide_password=True)
