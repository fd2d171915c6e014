"""One value of a row: text, lists of text and JSON-encoded cells, within the size limits.

Every field of the schema is checked by these few functions, so the same value gets the same
verdict and the same message wherever it appears (question, reference, rater name, note).
A bad value raises :class:`BadValue`; the row parser collects those into one message per row.
"""

from __future__ import annotations

import json
import math
from typing import Any

from qaeval_core.io.files import MAX_DEPTH, describe_kind, describe_utf8_error

__all__ = [
    "MAX_DEPTH",
    "MAX_ID_CHARS",
    "MAX_LIST_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_RATER_CHARS",
    "MAX_TEXT_CHARS",
    "BadValue",
    "as_text",
    "decode_json",
    "check_depth",
    "check_nul",
    "is_missing",
    "nesting_depth",
    "record_problems",
    "text_list",
]

#: Limits per value, so one runaway cell cannot bloat the store or the labelling page.
MAX_TEXT_CHARS = 100_000
MAX_ID_CHARS = 300
MAX_RATER_CHARS = 200
#: Most entries one list field of an item may hold (references, choices, wrong answers). Why:
#: the labelling page shows every reference, and one imported item with 10 million aliases
#: froze the browser; real alias lists (TriviaQA's are the longest we know) stay in the
#: dozens to low hundreds.
MAX_LIST_ITEMS = 1_000
#: Most characters one list field may hold in all, the same budget as one answer text.
MAX_LIST_CHARS = 100_000


class BadValue(Exception):
    """A reason why one value of a row is invalid."""


def is_missing(value: Any) -> bool:
    """None (JSON or Parquet null) or NaN (a gap in a float column): the cell is absent."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def as_text(value: Any, what: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    """A value as text (numbers are accepted: ids and answers are often numeric in files)."""
    if isinstance(value, bytes | bytearray):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadValue(f"{what}: {describe_utf8_error(exc)}") from None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise BadValue(f"{what} must be text, got {describe_kind(value)}")
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    text = value if isinstance(value, str) else str(value)
    check_nul(text, what)
    if len(text) > limit:
        raise BadValue(f"{what} has {len(text):,} characters; the limit is {limit:,}")
    return text


def nesting_depth(value: Any, stop: int = MAX_DEPTH) -> int:
    """Levels of objects/lists in ``value`` (a scalar is 0), counted without recursion; the
    count stops just past ``stop`` so a hostile value costs little."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: Any = current.values()
        elif isinstance(current, list | tuple):
            children = current
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > stop:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_depth(value: Any, what: str) -> Any:
    """``value`` unchanged, or :class:`BadValue` when it nests deeper than :data:`MAX_DEPTH`."""
    if nesting_depth(value) > MAX_DEPTH:
        raise BadValue(f"{what} nests objects/lists more than {MAX_DEPTH} levels deep; flatten it")
    return value


def check_nul(value: Any, what: str) -> Any:
    """``value`` unchanged, or :class:`BadValue` when a text in it (keys included) holds a NUL
    character, which PostgreSQL cannot store: refused on every store, so both behave alike."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            if "\x00" in current:
                raise BadValue(f"{what} contains a NUL character (\\u0000); remove it")
        elif isinstance(current, dict):
            stack.extend(current.keys())
            stack.extend(current.values())
        elif isinstance(current, list | tuple):
            stack.extend(current)
    return value


def record_problems(rec: Any) -> list[str]:
    """What makes a raw record unsafe to go on with: a value nesting too deep (checked first,
    so the walk for NUL stays short) or a NUL in any text, column names included."""
    problems = []
    for column, value in rec.items():
        try:
            check_nul(check_depth(value, str(column)), str(column))
        except BadValue as exc:
            problems.append(str(exc))
    try:
        check_nul(list(rec), "a column name")
    except BadValue as exc:
        problems.append(str(exc))
    return problems


def decode_json(value: Any, what: str, *, want: type) -> Any:
    """Decode a JSON-encoded value (CSV/Parquet cells); plain strings come back unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            if want is dict:
                raise BadValue(f"{what} is not valid JSON: {exc.msg}") from None
            return value
        except RecursionError:
            raise BadValue(
                f"{what} nests objects/lists more than {MAX_DEPTH} levels deep; flatten it"
            ) from None
        if isinstance(decoded, want):
            return check_depth(decoded, what)
    return value


def _too_many(count: int, what: str) -> BadValue:
    return BadValue(
        f"{what} has {count:,} entries; the limit is {MAX_LIST_ITEMS:,} per item "
        "(keep the aliases a reader needs)"
    )


def text_list(value: Any, what: str, *, sep: str | None) -> list[str]:
    """A list of non-empty texts from a list, a JSON-encoded list or a ``sep``-joined string,
    with at most :data:`MAX_LIST_ITEMS` entries (a list is counted before its entries are
    walked, so a runaway one costs little) and :data:`MAX_LIST_CHARS` characters in all."""
    value = decode_json(value, what, want=list)
    if isinstance(value, str):
        parts = value.split(sep) if sep else [value]
        items = [p.strip() for p in parts if p.strip()]
        if len(items) > MAX_LIST_ITEMS:
            raise _too_many(len(items), what)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        items = [as_text(value, what)]
    elif isinstance(value, list | tuple):
        if len(value) > MAX_LIST_ITEMS:
            raise _too_many(len(value), what)
        items = []
        for i, v in enumerate(value, start=1):
            if is_missing(v):
                raise BadValue(f"{what}[{i}] is null")
            text = as_text(v, f"{what}[{i}]")
            if not text.strip():
                raise BadValue(f"{what}[{i}] is empty")
            items.append(text)
    else:
        raise BadValue(
            f"{what} must be a list of strings (or one string), got {describe_kind(value)}"
        )
    for i, text in enumerate(items, start=1):
        if len(text) > MAX_TEXT_CHARS:
            raise BadValue(
                f"{what}[{i}] has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}"
            )
    total = sum(len(text) for text in items)
    if total > MAX_LIST_CHARS:
        raise BadValue(
            f"{what} hold {total:,} characters in all; the limit is {MAX_LIST_CHARS:,} per item"
        )
    return items
