"""Importing files: items and their human labels into a dataset, all-or-nothing.

Item identity: ``items.external_id`` is the file's id (or 16 hex digits of the content hash when
the file has none) and ``items.content_hash`` hashes id *and* content. Re-importing a file skips
the ids already present, so an import is idempotent; an id that comes back with different
content is reported as an error instead of being overwritten. Raters named in the file become
``external`` users (they cannot log in) and their labels get source ``"import"``.

On a store URL no write transaction holds more than one chunk of the file and the file is read
as a stream: a new dataset through :mod:`.import_pending`, an existing one through
:mod:`.import_existing`. An import runs its own transactions (several short ones), so it is
``@own_transaction`` and refuses a caller's Session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

from qaeval_core import io
from qaeval_core.io.labels import RATING_SCALE
from qaeval_core.io.stream import ItemScan, scan_items
from qaeval_core.store.items.import_existing import ExistingImport, import_into_existing
from qaeval_core.store.items.import_pending import cleanup_imports, import_new_dataset
from qaeval_core.store.items.import_staging import IMPORT_SOURCE
from qaeval_core.store.orm import Dataset
from qaeval_core.store.own_transaction import StoreURL, own_transaction
from qaeval_core.store.scope import check_name, store_scope

__all__ = ["IMPORT_SOURCE", "ImportReport", "import_file", "import_items", "import_scan"]


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
    #: What the cleanup before it did with imports of killed processes (deleted or finished
    #: them; :class:`~.import_pending.ImportCleanup`), '' when it found none.
    cleanup: str = ""

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
        done = f"Dataset {self.dataset!r}{new}: {self.rows} row(s) read; " + ", ".join(parts)
        return f"{self.cleanup} {done}." if self.cleanup else f"{done}."


def _parse_rows(
    rows: Sequence[io.ItemRow] | Iterable[Mapping[str, Any]], source: str
) -> list[io.ItemRow]:
    rows = list(rows)
    if all(isinstance(r, io.ItemRow) for r in rows):
        return rows  # type: ignore[return-value]
    return io.parse_records(rows, source=source)  # type: ignore[arg-type]


@own_transaction
def import_items(
    db: StoreURL,
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

    Never holds the store's write lock for long. A new dataset is written in chunks under a
    hidden name and renamed at the end (:mod:`.import_pending`); rows for an existing dataset
    are checked and written chunk by chunk the same way, hidden from readers until one short
    transaction commits them all (:mod:`.import_existing`). It runs its own transactions, so
    it refuses a caller's Session (:func:`~qaeval_core.store.own_transaction.own_transaction`).
    """
    name = check_name(dataset_name, "dataset")
    items = _parse_rows(rows, source or "<rows>")
    n_rows = sum(len(r.rows) for r in items)
    raters = {lab.rater for r in items for lab in r.labels}
    cleaned = cleanup_imports(db).summary()
    if _is_new(db, name):
        n_labels, created = import_new_dataset(
            db, name, items, raters, source=source, description=description
        )
        return ImportReport(
            name, True, n_rows, len(items), 0, n_labels, 0, created, cleanup=cleaned
        )
    done = import_into_existing(db, name, items, raters, source=source)
    return _existing_report(name, n_rows, done, cleaned)


def _existing_report(name: str, rows: int, done: ExistingImport, cleanup: str) -> ImportReport:
    """The report of an import into an existing dataset."""
    return ImportReport(
        dataset=name,
        dataset_created=False,
        rows=rows,
        items_added=done.items_added,
        items_skipped=done.items_skipped,
        labels_added=done.labels_added,
        labels_skipped=done.labels_skipped,
        raters_created=done.raters_created,
        cleanup=cleanup,
    )


@own_transaction
def import_file(
    db: StoreURL,
    path: str,
    dataset_name: str,
    *,
    fmt: str | None = None,
    mapping: Mapping[str, str] | None = None,
    label_scale: str = "binary",
    alias_separator: str | None = "/",
    rating_scale: str = RATING_SCALE,
) -> ImportReport:
    """Read, validate and import one file (see :mod:`qaeval_core.io` for the schema).

    The file is validated in one pass that keeps only ids, digests and label values, then read
    again and imported chunk by chunk (:func:`qaeval_core.io.stream.scan_items`), so memory
    stays a fraction of the file, into a new or an existing dataset.
    """
    scan = scan_items(
        path,
        fmt=fmt,
        mapping=mapping,
        label_scale=label_scale,
        alias_separator=alias_separator,
        rating_scale=rating_scale,
    )
    return import_scan(db, dataset_name, scan, source=str(path))


@own_transaction
def import_scan(db: StoreURL, dataset_name: str, scan: ItemScan, *, source: str) -> ImportReport:
    """Import a file already validated by :func:`qaeval_core.io.stream.scan_items` (the CLI
    validates before it touches the store); its items are read once more, chunk by chunk, into
    a new or an existing dataset (never the whole file in memory)."""
    name = check_name(dataset_name, "dataset")
    cleaned = cleanup_imports(db).summary()
    if _is_new(db, name):
        labels, created = import_new_dataset(
            db, name, scan.items(), scan.raters, source=source, description=None
        )
        return ImportReport(
            name, True, scan.rows, scan.n_items, 0, labels, 0, created, cleanup=cleaned
        )
    done = import_into_existing(db, name, scan.items(), set(scan.raters), source=source)
    return _existing_report(name, scan.rows, done, cleaned)


def _is_new(db: StoreURL, name: str) -> bool:
    """Whether ``name`` is a new dataset to import under a hidden name (run after the cleanup
    of killed imports)."""
    with store_scope(db) as s:
        return s.scalar(select(Dataset.id).where(Dataset.name == name)) is None
