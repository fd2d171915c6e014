"""Importing files: items and their human labels into a dataset, all-or-nothing.

Item identity: ``items.external_id`` is the file's id (or 16 hex digits of the content hash when
the file has none) and ``items.content_hash`` hashes id *and* content. Re-importing a file skips
the ids already present, so an import is idempotent; an id that comes back with different
content is reported as an error instead of being overwritten. Raters named in the file become
``external`` users (they cannot log in) and their labels get source ``"import"``.

On a store URL no write transaction holds more than one chunk of the file and the file is read
as a stream: a new dataset through :mod:`.import_pending`, an existing one through
:mod:`.import_existing`. With a caller's Session the import joins its transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    insert,
    select,
)
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.errors import RowError, StoreError, ValidationError
from qaeval_core.io.labels import RATING_SCALE
from qaeval_core.io.stream import ItemScan, scan_items
from qaeval_core.store.orm import Dataset, ItemRecord, Label
from qaeval_core.store.repo._common import Store, check_name, store_scope
from qaeval_core.store.repo.import_existing import (
    ExistingImport,
    changed_fields,
    import_into_existing,
)
from qaeval_core.store.repo.import_pending import cleanup_imports, import_new_dataset, rater_ids
from qaeval_core.store.repo.import_staging import IMPORT_SOURCE, ImportStage
from qaeval_core.store.repo.labels import current_label_values

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


def _changed_fields(row: io.ItemRow, stored: tuple[Any, ...]) -> str:
    _, choices, wrong, meta = stored
    return changed_fields(row, choices, wrong, meta)


def _insert_labels(s: Session, labels: list[dict[str, Any]]) -> None:
    if labels:
        s.execute(insert(Label), labels)


def _stored(s: Session, dataset_id: int | None) -> dict[str, tuple[Any, ...]]:
    if dataset_id is None:
        return {}
    return {
        ext: (digest, choices, wrong, meta)
        for ext, digest, choices, wrong, meta in s.execute(
            select(
                ItemRecord.external_id,
                ItemRecord.content_hash,
                ItemRecord.choices,
                ItemRecord.wrong_answers,
                ItemRecord.meta,
            ).where(ItemRecord.dataset_id == dataset_id)
        ).tuples()
    }


def _ids_of(dataset_id: int) -> Any:
    return select(ItemRecord.external_id).where(ItemRecord.dataset_id == dataset_id)


def _conflicts(items: list[io.ItemRow], stored: dict[str, tuple[Any, ...]], name: str) -> list:
    existing = {ext: v[0] for ext, v in stored.items()}
    conflicts = [
        RowError(
            r.row,
            f"id {r.external_id!r} is already in dataset {name!r} with different content "
            "(give the changed item a new id, or import into a new dataset)",
        )
        for r in items
        if r.external_id in existing and existing[r.external_id] != r.content_hash
    ]
    conflicts += [
        RowError(r.row, f"id {r.external_id!r} is already in dataset {name!r} with {what}")
        for r in items
        if existing.get(r.external_id) == r.content_hash
        and (what := _changed_fields(r, stored[r.external_id]))
    ]
    return sorted(conflicts, key=lambda e: e.row)


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

    Never holds the store's write lock for long. A new dataset is written in chunks under a
    hidden name and renamed at the end (:mod:`.import_pending`); rows for an existing dataset
    are checked and written chunk by chunk the same way, hidden from readers until one short
    transaction commits them all (:mod:`.import_existing`). With a caller's Session everything
    joins its transaction (:func:`_import_in_session`).
    """
    name = check_name(dataset_name, "dataset")
    items = _parse_rows(rows, source or "<rows>")
    n_rows = sum(len(r.rows) for r in items)
    raters = {lab.rater for r in items for lab in r.labels}
    if isinstance(db, Session):
        return _import_in_session(db, name, items, source=source, description=description)
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


def _import_in_session(
    db: Session,
    name: str,
    items: list[io.ItemRow],
    *,
    source: str | None,
    description: str | None,
) -> ImportReport:
    """The import inside the caller's transaction (it commits or rolls back everything): the
    rows are checked against the dataset, staged in temporary tables (:class:`ImportStage`) and
    copied in with one ``INSERT ... SELECT`` each."""
    with store_scope(db) as s:  # validate first
        ds_id = s.execute(select(Dataset.id).where(Dataset.name == name)).scalar_one_or_none()
        stored = _stored(s, ds_id)
        if conflicts := _conflicts(items, stored, name):
            raise ValidationError(source or "<rows>", conflicts)
    new = [r for r in items if r.external_id not in stored]
    with ImportStage(db) as stage:
        stage.write(new)
        with stage.publish() as s:
            ds = s.execute(select(Dataset).where(Dataset.name == name)).scalar_one_or_none()
            created = ds is None
            if ds is None:
                ds = Dataset(name=name, description=description, source=source)
                s.add(ds)
                s.flush()
            elif set(s.scalars(_ids_of(ds.id))) != stored.keys():
                raise StoreError(
                    f"Dataset {name!r} changed while the file was being imported (another "
                    "import?); nothing was imported. Run the import again."
                )
            users, created_raters = rater_ids(s, {lab.rater for r in items for lab in r.labels})
            stage.insert_items(ds.id)
            n_new_labels = stage.insert_labels(ds.id)
            old = [r for r in items if r.external_id in stored]
            labels, skipped = _old_item_labels(s, ds.id, old, users) if old else ([], 0)
            _insert_labels(s, labels)
    return ImportReport(
        dataset=name,
        dataset_created=created,
        rows=sum(len(r.rows) for r in items),
        items_added=len(new),
        items_skipped=len(items) - len(new),
        labels_added=n_new_labels + len(labels),
        labels_skipped=skipped,
        raters_created=created_raters,
    )


def _old_item_labels(
    s: Session, dataset_id: int, old: list[io.ItemRow], users: dict[str, int]
) -> tuple[list[dict[str, Any]], int]:
    """Labels of items already in the dataset, unless already that rater's current label."""
    current = current_label_values(s, dataset_id)
    stmt = select(ItemRecord.external_id, ItemRecord.id).where(ItemRecord.dataset_id == dataset_id)
    ids = {ext: item_id for ext, item_id in s.execute(stmt)}
    labels, skipped = [], 0
    for r in old:
        for lab in r.labels:
            key = (ids[r.external_id], users[lab.rater])
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
    return labels, skipped


def import_file(
    db: Store,
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


def import_scan(db: Store, dataset_name: str, scan: ItemScan, *, source: str) -> ImportReport:
    """Import a file already validated by :func:`qaeval_core.io.stream.scan_items` (the CLI
    validates before it touches the store); its items are read once more, chunk by chunk, into
    a new or an existing dataset (never the whole file in memory)."""
    name = check_name(dataset_name, "dataset")
    if isinstance(db, Session):
        return import_items(db, name, list(scan.items()), source=source)
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


def _is_new(db: Store, name: str) -> bool:
    """Whether ``name`` is a new dataset to import under a hidden name (run after the cleanup
    of killed imports)."""
    with store_scope(db) as s:
        return s.scalar(select(Dataset.id).where(Dataset.name == name)) is None
