"""Files and raw records: the formats (JSON lines, JSON, CSV/TSV, Parquet), nothing of the schema.

Reading gives plain dicts with their 1-based row numbers plus the rows that could not be decoded
at all, so :mod:`qaeval_core.io.rows` can validate the rest and report every bad row in one go.
Writing turns any records (or a DataFrame) into a file the readers take back unchanged. Kept
apart from validation because the CLI's ``score`` command and the exports need the formats
without the item schema.
"""

from __future__ import annotations

import csv
import io as _stdio
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.jsonable import to_jsonable

__all__ = [
    "FORMATS",
    "FORMULA_TRIGGERS",
    "MAX_DEPTH",
    "describe_kind",
    "describe_utf8_error",
    "detect_format",
    "plain_records",
    "read_plain_records",
    "write_records",
]

#: Input/output formats by file suffix.
FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}

_FORMAT_HINT = (
    " (or name the format: fmt=jsonl|json|csv|tsv|parquet, or a harness log's: "
    "lm-eval|lighteval|inspect|helm|opencompass)"
)
_SURROGATE = re.compile("[\udc80-\udcff]")

#: Characters a spreadsheet reads as the start of a formula (OWASP "CSV injection"): a text
#: cell starting with one is written with a leading ``'``; a cell of quotes then one of these
#: gets one more quote, and the CSV/TSV reader drops exactly one, so exports import back exact.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_GUARDED = re.compile("'*[=+\\-@\t\r]")
#: How deep objects and lists may nest in one value (``meta``, ``human``, any JSON cell): deep
#: enough for any real annotation, far from the recursion limit that would break exports.
#: Checked by :func:`qaeval_core.io.cells.check_depth`.
MAX_DEPTH = 32
_TOO_DEEP = f"objects/lists nest too deeply to read (a value may nest {MAX_DEPTH} levels)"
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


# -- reading -------------------------------------------------------------------------------


def detect_format(path: str | os.PathLike[str], *, hint: str = "") -> str:
    """The format named by the file's suffix; a :class:`ConfigError` for anything else."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError(
            f"Cannot tell the format of {os.fspath(path)!r} from its suffix "
            f"{suffix or '(none)'!r}: use one of {', '.join(sorted(FORMATS))}{hint}."
        )
    return FORMATS[suffix]


def check_format(fmt: str) -> str:
    fmt = fmt.lower().lstrip(".")
    if fmt in ("ndjson",):
        return "jsonl"
    if fmt not in set(FORMATS.values()):
        raise ConfigError(
            f"Unknown format {fmt!r}: expected one of {', '.join(sorted(set(FORMATS.values())))}."
        )
    return fmt


def read_plain_records(
    source: str | os.PathLike[str] | bytes, *, fmt: str | None = None, name: str | None = None
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    """Raw records with their 1-based row numbers, and the rows that could not be decoded.

    ``source`` is a path or the file's bytes (then give ``fmt`` or a ``name`` with a suffix).
    The plain formats only: :func:`qaeval_core.io.read_records` (``io.formats``) also reads
    harness logs, and hands everything else to this function.
    """
    if isinstance(source, bytes | bytearray):
        label = name or "<upload>"
        if fmt is None:
            if name is None:
                raise ConfigError("Reading bytes needs fmt= or a file name with a suffix.")
            fmt = detect_format(name, hint=_FORMAT_HINT)
        data = bytes(source)
    else:
        label = os.fspath(source)
        fmt = detect_format(label, hint=_FORMAT_HINT) if fmt is None else fmt
        try:
            data = Path(label).read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"No such file: {label}") from None
        except OSError as exc:
            raise ConfigError(f"Cannot read {label}: {exc.strerror or exc}") from None
    fmt = check_format(fmt)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if fmt == "jsonl":
        return _read_jsonl(data)
    if fmt == "json":
        return _read_json(data, label)
    if fmt in ("csv", "tsv"):
        return _read_csv(data, "\t" if fmt == "tsv" else ",")
    return _read_parquet(data, label)


def describe_utf8_error(exc: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8, in words a user can act on (shared with cell checks)."""
    bad = exc.object[exc.start : exc.start + 1].hex()
    return f"undecodable bytes: 0x{bad} at byte {exc.start} is not valid UTF-8 (save as UTF-8)"


def describe_kind(value: Any) -> str:
    """The JSON kind of a value ("an object", "a list", ...) for messages about wrong types."""
    return {
        dict: "an object",
        list: "a list",
        bool: "a boolean",
        str: "a string",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def jsonl_line(number: int, raw: bytes) -> dict[str, Any] | RowError | None:
    """One line of a JSON lines file: its object, the reason it is bad, or None when blank."""
    try:
        line = raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        return RowError(number, describe_utf8_error(exc))
    if not line:
        return None
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return RowError(number, f"invalid JSON: {exc.msg} at column {exc.colno}")
    except RecursionError:
        return RowError(number, _TOO_DEEP)
    if not isinstance(value, dict):
        return RowError(number, f"expected a JSON object, got {describe_kind(value)}")
    return value


def _read_jsonl(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[RowError] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        value = jsonl_line(number, raw)
        if isinstance(value, RowError):
            errors.append(value)
        elif value is not None:
            records.append((number, value))
    return records, errors


def _read_json(data: bytes, label: str) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{label}: {describe_utf8_error(exc)}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{label}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{label}: {_TOO_DEEP}.") from None
    if not isinstance(value, list):
        raise ConfigError(f"{label}: expected a JSON array of objects, got {describe_kind(value)}.")
    records, errors = [], []
    for number, rec in enumerate(value, start=1):
        if isinstance(rec, dict):
            records.append((number, rec))
        else:
            errors.append(RowError(number, f"expected a JSON object, got {describe_kind(rec)}"))
    return records, errors


def _read_csv(
    data: bytes, delimiter: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    # surrogateescape keeps undecodable bytes as markers so each bad row can be reported.
    text = data.decode("utf-8", errors="surrogateescape")
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    reader = csv.reader(_stdio.StringIO(text, newline=""), delimiter=delimiter)
    records: list[tuple[int, dict[str, Any]]] = []
    errors: list[RowError] = []
    try:
        header = next(reader, None)
        if header is None:
            return records, errors
        if any(_SURROGATE.search(h) for h in header):
            raise ConfigError("The header row has undecodable bytes: save the file as UTF-8.")
        header = [h.strip() for h in header]
        for number, values in enumerate(reader, start=1):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                errors.append(
                    RowError(number, f"has {len(values)} values but the header has {len(header)}")
                )
                continue
            bad = next((v for v in values if _SURROGATE.search(v)), None)
            if bad is not None:
                raw = bad.encode("utf-8", errors="surrogateescape")
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    errors.append(RowError(number, describe_utf8_error(exc)))
                continue
            values = [_unguard(v) for v in values]
            records.append((number, dict(zip(header, values, strict=True))))
    except csv.Error as exc:
        errors.append(RowError(len(records) + len(errors) + 1, f"unreadable CSV: {exc}"))
    return records, errors


def _read_parquet(
    data: bytes, label: str
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise ConfigError(f"Cannot read {label} as Parquet: {exc}") from None
    return [(i, rec) for i, rec in enumerate(table.to_pylist(), start=1)], []


# -- writing -------------------------------------------------------------------------------


def plain_records(data: Any) -> list[dict[str, Any]]:
    """Records (or a DataFrame's rows) as dicts of plain JSON values, ready to write."""
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        data = data.to_dict(orient="records")
    return [{str(k): to_jsonable(v) for k, v in rec.items()} for rec in data]


def _guard(text: str) -> str:
    """A text cell a spreadsheet will not run: ``'`` before a formula trigger (OWASP).

    A plain number written as text ("-0.5") is left alone: a spreadsheet reads it as that
    number and runs nothing."""
    if _GUARDED.match(text) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def _unguard(text: str) -> str:
    """The inverse of :func:`_guard` for cells read from CSV/TSV."""
    return text[1:] if text[:1] == "'" and _GUARDED.match(text, 1) else text


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        return _guard(value)
    return str(value)  # numbers stay numbers (-0.5 is not a formula)


def write_records(
    records: Iterable[Mapping[str, Any]] | Any,
    path: str | os.PathLike[str],
    *,
    fmt: str | None = None,
) -> Path:
    """Write records (or a DataFrame) to ``path``; the format comes from the suffix.

    Lists and objects become JSON strings in CSV/TSV (objects also in Parquet), which the
    readers decode again, so exported files import back unchanged. In CSV/TSV a text cell
    starting with a formula trigger (:data:`FORMULA_TRIGGERS`) gets a leading ``'`` so a
    spreadsheet shows it as text; the CSV/TSV reader removes it again. The file is written to a
    temporary name and renamed, so a failed export never leaves half a file.
    """
    target = Path(path)
    fmt = check_format(fmt) if fmt else detect_format(target)
    rows = plain_records(records)
    columns: list[str] = []
    for rec in rows:
        columns += [k for k in rec if k not in columns]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if fmt in ("jsonl", "json"):
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                if fmt == "jsonl":
                    for rec in rows:
                        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                else:
                    json.dump(rows, fh, ensure_ascii=False, indent=1)
        elif fmt in ("csv", "tsv"):
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                writer = csv.writer(fh, delimiter="\t" if fmt == "tsv" else ",")
                writer.writerow(columns)
                for rec in rows:
                    writer.writerow([_cell(rec.get(c)) for c in columns])
        else:
            _write_parquet(rows, columns, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def _write_parquet(rows: list[dict[str, Any]], columns: list[str], path: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def cell(value: Any) -> Any:
        if isinstance(value, dict) or (
            isinstance(value, list) and any(isinstance(v, dict | list) for v in value)
        ):
            return json.dumps(value, ensure_ascii=False)
        return value

    data = {c: [cell(rec.get(c)) for rec in rows] for c in columns}
    try:
        table = pa.table(data) if columns else pa.table({})
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # A column mixing types: store it as JSON text rather than fail the export.
        fixed = {}
        for c, values in data.items():
            try:
                fixed[c] = pa.array(values)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                fixed[c] = pa.array([None if v is None else json.dumps(v) for v in values])
        table = pa.table(fixed)
    pq.write_table(table, path)
