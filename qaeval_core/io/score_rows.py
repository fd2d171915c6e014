"""Rows of a file to score (``qaeval score FILE``), checked the same way on every engine.

Why: the local engine reads a file into a DataFrame, where a number in ``candidate`` or a string
in ``references`` is simply read as text; the Ray engine hands the file to Arrow, which refused
a column mixing JSON types with a ~300-line traceback, no row number and nothing written. So
both engines now run :func:`check_record` on every row, on the driver, before anything is
scored: the same rules, the same one-line :class:`~qaeval_core.errors.ValidationError` listing
every bad row by number. The values are checked with the import's cell checks
(:mod:`.cells`: text, lists of text, the size caps), so a row that scores is a row that imports.

Rules per field (the column of a field is the first of its aliases present in the row, as
:func:`~qaeval_core.io.item_frames.items_from_frame` reads them):

* ``question`` (required) and ``candidate``: text, or a number read as text; a missing or null
  ``candidate`` is an empty answer (it scores as wrong), a missing ``question`` is an error;
* ``references`` (required, non-empty): a list of texts, a JSON-encoded list, or one string of
  ``/``-separated aliases;
* ``context``, ``id``, ``dataset``: text or a number; ``choices``, ``wrong_answers``: lists of
  text; ``model``: text or a list of texts; all optional.

For Ray, :func:`scan_jsonl` also notes which columns mix JSON types across rows (Arrow reads
one type per column) and :func:`write_uniform` writes a copy with one type per column: the
item fields as the scorers read them (text; references as a list), any other mixed column as
text (JSON for objects and lists).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from qaeval_core.errors import RowError, ValidationError
from qaeval_core.io.cells import BadValue, as_text, is_missing, text_list
from qaeval_core.io.item_frames import field_aliases
from qaeval_core.schema import join_models

__all__ = [
    "ITEM_FIELDS",
    "OUTCOME",
    "JsonlScan",
    "check_parquet",
    "check_record",
    "check_records",
    "scan_jsonl",
    "write_uniform",
]

#: The item fields a scorer reads, and whether each is a list.
ITEM_FIELDS: dict[str, bool] = {
    "question": False,
    "references": True,
    "candidate": False,
    "context": False,
    "choices": True,
    "wrong_answers": True,
    "id": False,
    "dataset": False,
    "model": False,
}
#: What a refused file says happened (nothing is scored or written).
OUTCOME = "nothing was scored"


def _column(rec: Mapping[str, Any], name: str) -> str | None:
    return next((c for c in field_aliases(name) if c in rec), None)


def _item_columns(rec: Mapping[str, Any]) -> set[str]:
    """The columns of ``rec`` that feed an item field."""
    return {c for name in ITEM_FIELDS if (c := _column(rec, name)) is not None}


def check_record(rec: Mapping[str, Any], *, sep: str | None = "/") -> dict[str, Any]:
    """The item fields of one row as the scorers read them (column -> checked value); a
    :class:`~qaeval_core.io.cells.BadValue` naming every problem of the row otherwise."""
    problems: list[str] = []
    out: dict[str, Any] = {}
    for name, is_list in ITEM_FIELDS.items():
        column = _column(rec, name)
        value = None if column is None else rec[column]
        if is_missing(value):
            if name == "question":
                problems.append(
                    "missing field 'question'" if column is None else "question is null"
                )
            elif name == "references":
                problems.append(
                    "missing field 'references' (a list of gold answers)"
                    if column is None
                    else "references is null (need at least one gold answer)"
                )
            continue
        assert column is not None
        try:
            if name == "references":
                checked: Any = text_list(value, name, sep=sep)
                if not checked:
                    problems.append("references is empty (need at least one gold answer)")
                    continue
            elif name == "model" and isinstance(value, list | tuple):
                checked = join_models(text_list(value, name, sep=None))
            elif is_list:
                checked = text_list(value, name, sep=None)
            else:
                checked = as_text(value, name)
        except BadValue as exc:
            problems.append(str(exc))
            continue
        out[column] = checked
    if problems:
        raise BadValue("; ".join(problems))
    return out


def check_records(
    records: Iterable[tuple[int, Mapping[str, Any]]], source: str, *, sep: str | None = "/"
) -> None:
    """:func:`check_record` on every row; a ValidationError listing every bad one."""
    errors = []
    for row, rec in records:
        try:
            check_record(rec, sep=sep)
        except BadValue as exc:
            errors.append(RowError(row, str(exc)))
    if errors:
        raise ValidationError(source, errors, outcome=OUTCOME)


def check_parquet(path: str | os.PathLike[str], *, sep: str | None = "/") -> int:
    """:func:`check_records` on a Parquet file, a batch of rows at a time (Parquet holds one
    type per column, so nothing needs rewriting); its row count."""
    import pyarrow.parquet as pq

    errors: list[RowError] = []
    row = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=10_000):
        for rec in batch.to_pylist():
            row += 1
            try:
                check_record(rec, sep=sep)
            except BadValue as exc:
                errors.append(RowError(row, str(exc)))
    if errors:
        raise ValidationError(os.fspath(path), errors, outcome=OUTCOME)
    return row


def _kind(value: Any) -> str | None:
    """A value's JSON type as Arrow distinguishes it (int and float are one: Arrow widens)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "list", dict: "object"}.get(type(value), type(value).__name__)


@dataclass
class JsonlScan:
    """A checked JSON lines file: its rows, and the columns whose values mix JSON types."""

    rows: int = 0
    mixed: set[str] = field(default_factory=set)
    _kinds: dict[str, str] = field(default_factory=dict)

    def note(self, rec: Mapping[str, Any]) -> None:
        for column, value in rec.items():
            kind = _kind(value)
            if kind is None or column in self.mixed:
                continue
            if self._kinds.setdefault(column, kind) != kind:
                self.mixed.add(column)


def scan_jsonl(
    path: str | os.PathLike[str], *, sep: str | None = "/", scan: JsonlScan | None = None
) -> JsonlScan:
    """Check a JSON lines file row by row (one line in memory at a time); a ValidationError
    listing every bad row (unreadable lines included), else what :func:`write_uniform` needs
    (``scan``: go on with the scan of the files before it, so types mixed across files count)."""
    from qaeval_core.io.stream import iter_records

    scan, errors = scan or JsonlScan(), []
    for entry in iter_records(path, fmt="jsonl"):
        if isinstance(entry, RowError):
            errors.append(entry)
            continue
        row, rec = entry
        scan.rows += 1
        try:
            check_record(rec, sep=sep)
        except BadValue as exc:
            errors.append(RowError(row, str(exc)))
            continue
        scan.note(rec)
    if errors:
        raise ValidationError(os.fspath(path), errors, outcome=OUTCOME)
    return scan


def _as_text(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return as_text(value, "value") if not isinstance(value, bool) else json.dumps(value)


def write_uniform(
    path: str | os.PathLike[str], target: IO[str], mixed: set[str], *, sep: str | None = "/"
) -> int:
    """Write ``path`` (checked by :func:`scan_jsonl`) to ``target`` as JSON lines with one
    JSON type per column: item fields as :func:`check_record` reads them, the other ``mixed``
    columns as text. Returns the rows written."""
    from qaeval_core.io.stream import iter_records

    n = 0
    for entry in iter_records(path, fmt="jsonl"):
        assert not isinstance(entry, RowError)  # scan_jsonl refused those
        _, rec = entry
        out = dict(rec)
        out.update(check_record(rec, sep=sep))
        items = _item_columns(rec)
        for column in mixed - items:
            if column in out:
                out[column] = _as_text(out[column])
        target.write(json.dumps(out, ensure_ascii=False) + "\n")
        n += 1
    return n
