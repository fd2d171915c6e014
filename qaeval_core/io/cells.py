"""One value of a row: text, lists of text and JSON-encoded cells, within the size limits.

Every field of the schema is checked by these few functions, so the same value gets the same
verdict and the same message wherever it appears (question, reference, rater name, note).
A bad value raises :class:`BadValue`; the row parser collects those into one message per row.
"""

from __future__ import annotations

import json
import math
from typing import Any

from qaeval_core.io.files import describe_kind, describe_utf8_error

__all__ = [
    "MAX_ID_CHARS",
    "MAX_RATER_CHARS",
    "MAX_TEXT_CHARS",
    "BadValue",
    "as_text",
    "decode_json",
    "is_missing",
    "text_list",
]

#: Limits per value, so one runaway cell cannot bloat the store or the labelling page.
MAX_TEXT_CHARS = 100_000
MAX_ID_CHARS = 300
MAX_RATER_CHARS = 200


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
    if len(text) > limit:
        raise BadValue(f"{what} has {len(text):,} characters; the limit is {limit:,}")
    return text


def decode_json(value: Any, what: str, *, want: type) -> Any:
    """Decode a JSON-encoded value (CSV/Parquet cells); plain strings come back unchanged."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            if want is dict:
                raise BadValue(f"{what} is not valid JSON: {exc.msg}") from None
            return value
        if isinstance(decoded, want):
            return decoded
    return value


def text_list(value: Any, what: str, *, sep: str | None) -> list[str]:
    """A list of non-empty texts from a list, a JSON-encoded list or a ``sep``-joined string."""
    value = decode_json(value, what, want=list)
    if isinstance(value, str):
        parts = value.split(sep) if sep else [value]
        items = [p.strip() for p in parts if p.strip()]
    elif isinstance(value, int | float) and not isinstance(value, bool):
        items = [as_text(value, what)]
    elif isinstance(value, list | tuple):
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
    return items
