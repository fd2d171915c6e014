"""Large files in passes instead of in memory: validate once, then read again and stream items.

:func:`scan_items` validates a file like :func:`qaeval_core.io.read_items` (the same messages,
row numbers and all-or-nothing :class:`ValidationError`) but keeps per id only what the checks
need: the first row, a digest of the content and the raters' values. :meth:`ItemScan.items`
then reads the file again and yields the validated items in file order, repeated ids merged, so
an import holds one chunk of rows at a time instead of the whole file (issue 13). JSON lines are
read line by line; the other formats are read whole, as before.

It is the one reader behind every door (``qaeval import``, the Data page, ``store.import_file``):
a source is a file, or a folder of harness logs (:func:`qaeval_core.io.formats.log_files`), and
the scan says what it detected (:class:`~qaeval_core.io.import_summary.Detected`).
``on_invalid="skip"`` keeps the valid rows and lists the refused ones (:class:`Reject`, written
by :func:`write_rejects`); the default refuses the whole source.
"""

from __future__ import annotations

import hashlib
import io as _stdio
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from qaeval_core.errors import ConfigError, RowError, ValidationError
from qaeval_core.io.cells import BadValue
from qaeval_core.io.files import (
    check_format,
    detect_format,
    jsonl_line,
    read_plain_records,
    write_records,
)
from qaeval_core.io.import_summary import Detected
from qaeval_core.io.labels import RATING_SCALE
from qaeval_core.io.repair import repair_item, repaired_fields
from qaeval_core.io.rows import ItemRow, check_options, merge_repeated_row, parse_record

__all__ = ["ON_INVALID", "ItemScan", "Reject", "iter_records", "scan_items", "write_rejects"]

#: What an import does with invalid rows: refuse the whole source (the default), or import the
#: valid rows and list the refused ones.
ON_INVALID = ("refuse", "skip")

Source = str | os.PathLike[str] | bytes


@dataclass(frozen=True)
class Reject:
    """A row an import refused: its file, row number, id (when the row got that far), why."""

    file: str
    row: int
    reason: str
    id: str | None = None

    def as_record(self) -> dict[str, Any]:
        return {"file": self.file, "row": self.row, "id": self.id, "reason": self.reason}


def write_rejects(rejects: Sequence[Reject], path: str | os.PathLike[str]) -> Path:
    """The refused rows as JSON lines (``file``, ``row``, ``id``, ``reason``), written whole
    under a temporary name and renamed."""
    return write_records([r.as_record() for r in rejects], path, fmt="jsonl")


def _jsonl_handle(source: Source, fmt: str | None, name: str | None) -> IO[bytes] | None:
    """An open JSON lines source, or None (another format, or an error that
    ``read_plain_records`` reports)."""
    try:
        if fmt is None:
            fmt = detect_format(name if isinstance(source, bytes | bytearray) else source)  # type: ignore[arg-type]
        if check_format(fmt) != "jsonl":
            return None
    except (ConfigError, TypeError):
        return None
    if isinstance(source, bytes | bytearray):
        return _stdio.BytesIO(bytes(source))
    try:
        return open(source, "rb")  # closed by iter_records
    except OSError:
        return None


def _parts(source: Source, fmt: str | None) -> list[Source]:
    """The files (or run folders) a source stands for: bytes and a file are themselves."""
    if isinstance(source, bytes | bytearray):
        return [source]
    from qaeval_core.io.formats import log_files

    return list(log_files(source, fmt))


def _part_records(
    part: Source, fmt: str | None, name: str | None, model: str | None
) -> Iterator[tuple[int, dict[str, Any]] | RowError]:
    from qaeval_core.io.formats import harness_format

    harness = harness_format(part, fmt)
    if harness is not None:  # a harness log: its module reads it (row by row where it can)
        yield from harness.read(Path(os.fspath(part)), model=model)  # type: ignore[arg-type]
        return
    named = (lambda rec: {**rec, "model": model}) if model else (lambda rec: rec)
    handle = _jsonl_handle(part, fmt, name)
    if handle is None:
        records, errors = read_plain_records(part, fmt=fmt, name=name)
        yield from errors
        for row, rec in records:
            yield row, named(rec)
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            value = jsonl_line(number, raw)
            if isinstance(value, RowError):
                yield value
            elif value is not None:
                yield number, named(value)


def iter_records(
    source: Source, *, fmt: str | None = None, name: str | None = None, model: str | None = None
) -> Iterator[tuple[int, dict[str, Any]] | RowError]:
    """:func:`~qaeval_core.io.read_records` as a stream: ``(row, record)`` or a RowError
    (a folder's logs one after another, each numbered from 1); ``model`` names the model of
    every row."""
    for part in _parts(source, fmt):
        yield from _part_records(part, fmt, name, model)


def _label(source: Source, name: str | None) -> str:
    return name or (os.fspath(source) if not isinstance(source, bytes | bytearray) else "<upload>")


def _part_label(source: Source, part: Source, name: str | None) -> str:
    """A file of a folder by its path in the folder; a lone file by its label."""
    if isinstance(part, bytes | bytearray) or os.fspath(part) == os.fspath(source):  # type: ignore[arg-type]
        return _label(part, name)
    return Path(os.fspath(part)).relative_to(os.fspath(source)).as_posix()  # type: ignore[arg-type]


def _describe_part(part: Source, fmt: str | None, name: str | None) -> tuple[str, str, str | None]:
    """(format name, title, harness version) of one file."""
    from qaeval_core.io.formats import get, harness_format

    harness = harness_format(part, fmt)
    if harness is not None:
        return harness.name, harness.title, harness.version(Path(os.fspath(part)))  # type: ignore[arg-type]
    try:
        plain = check_format(fmt) if fmt else detect_format(_label(part, name))
        return plain, get(plain).title, None
    except ConfigError:
        return fmt or "?", "unknown format", None


def _digest(item: ItemRow) -> bytes:
    """What two rows of one id must share (see ``ItemRow._same_item``), in 16 bytes."""
    key = json.dumps([item.content_key, item.choices, item.wrong_answers])
    return hashlib.blake2b(key.encode(), digest_size=16).digest()


@dataclass
class ItemScan:
    """A validated source: counts, raters, repeated ids, what was detected and (with
    ``on_invalid="skip"``) the rows refused; :meth:`items` streams its valid items."""

    source: Source
    label: str
    options: dict[str, Any]
    rows: int = 0
    n_items: int = 0
    raters: set[str] = field(default_factory=set)
    repeated: set[str] = field(default_factory=set)
    repaired: int = 0
    #: ``(row, fields)`` of each row ``--fix-text`` changed, in file order.
    repairs: list[tuple[int, list[str]]] = field(default_factory=list)
    #: The files read (a folder's logs), in order.
    parts: list[Source] = field(default_factory=list)
    detected: Detected = field(default_factory=Detected)
    #: The rows refused with ``on_invalid="skip"`` (empty otherwise: any refusal raises).
    rejects: list[Reject] = field(default_factory=list)
    #: ``(part index, row)`` of the refused rows, left out by :meth:`items`.
    skipped: set[tuple[int, int]] = field(default_factory=set)

    def _entries(self) -> Iterator[tuple[int, tuple[int, dict[str, Any]] | RowError]]:
        opts = self.options
        for index, part in enumerate(self.parts):
            for entry in _part_records(part, opts["fmt"], opts["name"], opts["model"]):
                yield index, entry

    def _parsed(self) -> Iterator[ItemRow]:
        opts = self.options
        for index, entry in self._entries():
            if isinstance(entry, RowError):
                if (index, entry.row) in self.skipped:
                    continue
                raise self._changed()
            row, rec = entry
            if (index, row) in self.skipped:
                continue
            try:
                item = parse_record(
                    rec, opts["mapping"], opts["scale"], opts["sep"], row, opts["rating_scale"]
                )
            except BadValue:
                raise self._changed() from None
            yield repair_item(item) if opts.get("fix_text") else item

    def _changed(self) -> ConfigError:
        return ConfigError(f"{self.label} changed while it was being imported; run it again.")

    def items(self) -> Iterator[ItemRow]:
        """The items in file order, each repeated id merged into its first row (as read_items)."""
        merged: dict[str, ItemRow] = {}
        if self.repeated:
            for item in self._parsed():
                if item.external_id in self.repeated:
                    first = merged.setdefault(item.external_id, item)
                    if first is not item and merge_repeated_row(first, item) is not None:
                        raise self._changed()
        n = 0
        for item in self._parsed():
            if item.external_id in self.repeated:
                first = merged.pop(item.external_id, None)
                if first is None:
                    continue  # a later row of an id already given
                item = first
            n += 1
            yield item
        if n != self.n_items:
            raise self._changed()

    def write_rejects(self, path: str | os.PathLike[str]) -> Path:
        """:func:`write_rejects` of this scan's refused rows."""
        return write_rejects(self.rejects, path)


def scan_items(
    source: Source,
    *,
    fmt: str | None = None,
    name: str | None = None,
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    rating_scale: str = RATING_SCALE,
    fix_text: bool = False,
    model: str | None = None,
    on_invalid: str = "refuse",
) -> ItemScan:
    """Validate a source (a file's path or bytes, or a folder of harness logs) like
    :func:`~qaeval_core.io.read_items`, holding only ids, digests and label values.

    ``on_invalid="refuse"`` (the default): a :class:`ValidationError` lists every bad row and
    nothing is imported. ``"skip"``: the bad rows are kept in ``rejects`` (and left out of
    :meth:`ItemScan.items`); a :class:`ValidationError` only when no row is valid.
    ``model`` names the model of every row instead of the name the log gives (two logs whose
    harness named the model alike can then share a dataset). ``fix_text``: the items it streams
    have mojibake repaired (:mod:`.repair`, originals kept in ``meta["original_text"]``);
    ``repaired`` counts the rows that needed it and ``repairs`` lists each one's row and
    changed fields. ``detected`` says what was found (format, version, tasks, models)."""
    if on_invalid not in ON_INVALID:
        raise ConfigError(
            f"on_invalid must be one of {', '.join(ON_INVALID)}, got {on_invalid!r}.",
            param="on_invalid",
        )
    model = model.strip() if isinstance(model, str) and model.strip() else None
    mapping, rating_scale = check_options(mapping, label_scale, rating_scale)
    label = _label(source, name)
    sep = alias_separator or None
    opts = dict(fmt=fmt, name=name, mapping=mapping, scale=label_scale, sep=sep, model=model)
    scan = ItemScan(source, label, {**opts, "rating_scale": rating_scale, "fix_text": fix_text})
    scan.parts = _parts(source, fmt)
    scan.detected.named_model = model
    labels = [_part_label(source, part, name) for part in scan.parts]
    for part, part_label in zip(scan.parts, labels, strict=True):
        scan.detected.add_file(part_label, *_describe_part(part, fmt, name))
    many = len(scan.parts) > 1
    errors: list[RowError] = []

    def refuse(index: int, row: int, reason: str, rec: Any = None) -> None:
        errors.append(RowError(row, f"{labels[index]}: {reason}" if many else reason))
        ext = rec.get("id") if isinstance(rec, dict) else None
        ext = str(ext) if isinstance(ext, str | int) and not isinstance(ext, bool) else None
        scan.rejects.append(Reject(labels[index], row, reason, ext))
        scan.skipped.add((index, row))

    seen: dict[str, tuple[int, bytes, tuple[tuple[str, int], ...]]] = {}
    any_record = False
    for index, entry in scan._entries():
        if isinstance(entry, RowError):
            refuse(index, entry.row, entry.reason)
            continue
        row, rec = entry
        any_record = True
        try:
            item = parse_record(rec, mapping, label_scale, sep, row, rating_scale)
        except BadValue as exc:
            refuse(index, row, str(exc), rec)
            continue
        if (reason := _merge_state(seen, item)) is not None:
            refuse(index, row, reason, rec)
            continue
        if fix_text and (fixed := repair_item(item)) is not item:
            scan.repaired += 1
            scan.repairs.append((row, repaired_fields(fixed)))
        scan.raters.update(lab.rater for lab in item.labels)
        scan.rows += 1
        scan.detected.add_row(item.qa_model, item.meta)
    if not any_record and not errors:
        raise ConfigError(f"{label} contains no rows; nothing to import.")
    if errors and (on_invalid == "refuse" or not seen):
        scan.rejects.clear()
        raise ValidationError(label, sorted(errors, key=lambda e: e.row))
    scan.detected.refused = len(scan.rejects)
    scan.repeated = {ext for ext, (_, _, _, n) in seen.items() if n > 1}  # type: ignore[misc]
    scan.n_items = len(seen)
    return scan


def _merge_state(seen: dict[str, Any], item: ItemRow) -> str | None:
    """``rows.merge_repeated_row`` on the kept state (first row, digest, raters' values, rows):
    the reason a row cannot join its id's first row, or None (then the state is updated)."""
    ext = item.external_id
    pairs = tuple((sys.intern(lab.rater), lab.value) for lab in item.labels)
    first = seen.get(ext)
    if first is None:
        seen[ext] = (item.row, _digest(item), pairs, 1)
        return None
    row, digest, have_pairs, n = first
    if digest != _digest(item):
        return f"duplicate id {ext!r} (first at row {row}) with different content"
    have = dict(have_pairs)
    for rater, value in pairs:
        old = have.get(rater)
        if old is not None and old != value:
            return f"rater {rater!r} labels id {ext!r} {value} here but {old} at row {row}"
        have[rater] = value
    seen[ext] = (row, digest, tuple(have.items()), n + 1)
    return None
