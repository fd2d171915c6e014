"""No NUL character (``\\x00``) in text sent to the store, on every backend alike.

Why: PostgreSQL cannot hold NUL in text; its driver raises a bare ``ValueError`` when a
statement carries one (a traceback on a page, nothing saved), while SQLite keeps it. So the
same note, reason or taught answer was saved on one store and crashed on the other. Checking
each write function's fields would miss the next one; instead every statement an engine of
:func:`qaeval_core.store.session.get_engine` runs passes :func:`guard_engine`'s check, ORM
flushes, Core inserts and raw SQL alike, and a NUL anywhere is refused with one message
(:func:`nul_message`) before the statement reaches the database, on both stores. The error
is raised inside the caller's transaction, which then rolls back: nothing is written.

JSON columns are left alone: JSON writes a NUL as the escape ``\\u0000``, which both stores
keep. Imported files are checked earlier, row by row (:mod:`qaeval_core.io.cells`), so an
import names the row; this guard is the store's own floor under every other door.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.types import JSON

from qaeval_core.errors import InputError

__all__ = ["guard_engine", "nul_message", "refuse_nul"]

NUL = "\x00"
#: SQLAlchemy's suffix on a repeated or multi-row bind name (``name_1``, ``question_m0``).
_BIND_SUFFIX = re.compile(r"_m?\d+$")


def nul_message(what: str) -> str:
    """The one message for a NUL in text meant for the store; ``what`` names the text."""
    return (
        f"{what} contains a NUL character (\\u0000), which the store cannot keep; remove it "
        "and try again (nothing was saved)."
    )


def refuse_nul(value: str | None, what: str) -> None:
    """:class:`InputError` with :func:`nul_message` when ``value`` holds a NUL: for a check
    that should come before any work (a name, before an import stages its rows)."""
    if isinstance(value, str) and NUL in value:
        raise InputError(nul_message(what))


def _field(context: Any, key: Any) -> str:
    """``table.column`` for a bind of an INSERT/UPDATE (the column the text was for), else the
    bind's name: words a researcher can map to the field they typed into."""
    column = _BIND_SUFFIX.sub("", str(key)) if isinstance(key, str) else f"value {key}"
    table = getattr(getattr(getattr(context, "compiled", None), "statement", None), "table", None)
    name = getattr(table, "name", None)
    return f"{name}.{column}" if isinstance(name, str) else column


def _json_binds(context: Any) -> set[str]:
    binds = getattr(getattr(context, "compiled", None), "binds", None) or {}
    return {key for key, bind in binds.items() if isinstance(bind.type, JSON)}


def _parameter_sets(parameters: Any, context: Any) -> Iterable[Mapping[Any, Any]]:
    """Each row's parameters by name: the compiled statement's values before type processing
    (so JSON values are still objects), else the raw driver parameters of textual SQL."""
    compiled = getattr(context, "compiled_parameters", None)
    if getattr(context, "compiled", None) is not None and compiled:
        return compiled
    if isinstance(parameters, Mapping):
        return [parameters]
    if isinstance(parameters, list | tuple):
        if parameters and all(isinstance(p, Mapping | list | tuple) for p in parameters):
            return [p if isinstance(p, Mapping) else dict(enumerate(p)) for p in parameters]
        return [dict(enumerate(parameters))]
    return []


def _before_cursor_execute(  # type: ignore[no-untyped-def]
    conn, cursor, statement, parameters, context, executemany
) -> None:
    json_keys: set[str] | None = None
    for row in _parameter_sets(parameters, context):
        for key, value in row.items():
            if isinstance(value, str) and NUL in value:
                if json_keys is None:
                    json_keys = _json_binds(context)
                if key in json_keys:
                    continue
                raise InputError(nul_message(_field(context, key)))


def guard_engine(engine: Engine) -> Engine:
    """Check every statement ``engine`` runs for NUL in its text parameters (module doc)."""
    if not event.contains(engine, "before_cursor_execute", _before_cursor_execute):
        event.listen(engine, "before_cursor_execute", _before_cursor_execute)
    return engine
