"""Large files in passes instead of in memory: validate once, then read again and stream items.

:func:`scan_items` validates a file like :func:`qaeval_core.io.read_items` (the same messages,
row numbers and all-or-nothing :class:`ValidationError`) but keeps per id only what the checks
need: the first row, a digest of the content and the raters' values. :meth:`ItemScan.items`
then reads the file again and yields the validated items in file order, repeated ids merged, so
an import holds one chunk of rows at a time instead of the whole file (issue 13). JSON lines are
read line by line; the other formats are read whole, as before.
"""

from __future__ import annotations

import hashlib
import io as _stdio
import json
import os
import sys
from collections.abc import Iterator, Mapping
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
)
from qaeval_core.io.labels import RATING_SCALE
from qaeval_core.io.repair import repair_item, repaired_fields
from qaeval_core.io.rows import ItemRow, check_options, merge_repeated_row, parse_record

__all__ = ["ItemScan", "iter_records", "scan_items"]


def _jsonl_handle(
    source: str | os.PathLike[str] | bytes, fmt: str | None, name: str | None
) -> IO[bytes] | None:
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


def iter_records(
    source: str | os.PathLike[str] | bytes, *, fmt: str | None = None, name: str | None = None
) -> Iterator[tuple[int, dict[str, Any]] | RowError]:
    """:func:`~qaeval_core.io.read_records` as a stream: ``(row, record)`` or a RowError."""
    from qaeval_core.io.formats import harness_format

    harness = harness_format(source, fmt)
    if harness is not None:  # a harness log: its module reads it (row by row where it can)
        yield from harness.read(Path(os.fspath(source)))  # type: ignore[arg-type]
        return
    handle = _jsonl_handle(source, fmt, name)
    if handle is None:
        records, errors = read_plain_records(source, fmt=fmt, name=name)
        yield from errors
        yield from records
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            value = jsonl_line(number, raw)
            if isinstance(value, RowError):
                yield value
            elif value is not None:
                yield number, value


def _digest(item: ItemRow) -> bytes:
    """What two rows of one id must share (see ``ItemRow._same_item``), in 16 bytes."""
    key = json.dumps([item.content_key, item.choices, item.wrong_answers])
    return hashlib.blake2b(key.encode(), digest_size=16).digest()


@dataclass
class ItemScan:
    """A validated file: counts, raters, repeated ids; :meth:`items` streams its items."""

    source: str | os.PathLike[str] | bytes
    label: str
    options: dict[str, Any]
    rows: int = 0
    n_items: int = 0
    raters: set[str] = field(default_factory=set)
    repeated: set[str] = field(default_factory=set)
    repaired: int = 0
    #: ``(row, fields)`` of each row ``--fix-text`` changed, in file order.
    repairs: list[tuple[int, list[str]]] = field(default_factory=list)

    def _parsed(self) -> Iterator[ItemRow]:
        opts = self.options
        for entry in iter_records(self.source, fmt=opts["fmt"], name=opts["name"]):
            if isinstance(entry, RowError):
                raise self._changed()
            row, rec = entry
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


def scan_items(
    source: str | os.PathLike[str] | bytes,
    *,
    fmt: str | None = None,
    name: str | None = None,
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    rating_scale: str = RATING_SCALE,
    fix_text: bool = False,
) -> ItemScan:
    """Validate a file (path or bytes) like :func:`~qaeval_core.io.read_items`, holding only
    ids, digests and label values; a :class:`ValidationError` lists every bad row.

    ``fix_text``: the items it streams have mojibake repaired (:mod:`.repair`, originals kept
    in ``meta["original_text"]``); ``repaired`` counts the rows that needed it and
    ``repairs`` lists each one's row and changed fields."""
    mapping, rating_scale = check_options(mapping, label_scale, rating_scale)
    label = name or (os.fspath(source) if not isinstance(source, bytes | bytearray) else "<upload>")
    sep = alias_separator or None
    opts = dict(fmt=fmt, name=name, mapping=mapping, scale=label_scale, sep=sep)
    scan = ItemScan(source, label, {**opts, "rating_scale": rating_scale, "fix_text": fix_text})
    errors: list[RowError] = []
    seen: dict[str, tuple[int, bytes, tuple[tuple[str, int], ...]]] = {}
    any_record = False
    for entry in iter_records(source, fmt=fmt, name=name):
        if isinstance(entry, RowError):
            errors.append(entry)
            continue
        row, rec = entry
        any_record = True
        try:
            item = parse_record(rec, mapping, label_scale, sep, row, rating_scale)
        except BadValue as exc:
            errors.append(RowError(row, str(exc)))
            continue
        if fix_text and (fixed := repair_item(item)) is not item:
            scan.repaired += 1
            scan.repairs.append((row, repaired_fields(fixed)))
        ext = item.external_id
        pairs = tuple((sys.intern(lab.rater), lab.value) for lab in item.labels)
        scan.raters.update(r for r, _ in pairs)
        first = seen.get(ext)
        if first is None:
            seen[ext] = (row, _digest(item), pairs)
            scan.rows += 1
            continue
        if (reason := _merge_state(seen, ext, first, item, pairs)) is not None:
            errors.append(RowError(row, reason))
            continue
        scan.repeated.add(ext)
        scan.rows += 1
    if not any_record and not errors:
        raise ConfigError(f"{label} contains no rows; nothing to import.")
    if errors:
        raise ValidationError(label, sorted(errors, key=lambda e: e.row))
    scan.n_items = len(seen)
    return scan


def _merge_state(
    seen: dict[str, Any], ext: str, first: tuple[Any, ...], item: ItemRow, pairs: tuple
) -> str | None:
    """``rows.merge_repeated_row`` on the kept state: the reason a repeated row cannot merge,
    or None."""
    row, digest, have_pairs = first
    if digest != _digest(item):
        return f"duplicate id {ext!r} (first at row {row}) with different content"
    have = dict(have_pairs)
    reason = None
    for rater, value in pairs:
        old = have.get(rater)
        if old is None:
            have[rater] = value
        elif old != value:
            reason = f"rater {rater!r} labels id {ext!r} {value} here but {old} at row {row}"
            break
    seen[ext] = (row, digest, tuple(have.items()))
    return reason
