"""Importing into an *existing* dataset in bounded chunks, all-or-nothing for every reader
(issue 21, item 21; issue 31, item 1).

Why not one transaction: on SQLite annotators' saves would wait for the whole copy (12.8 s for
200,000 rows on the 2-core test machine; bench/README.md), and the whole file would sit in
memory. Why not move rows into the dataset chunk by chunk after a commit point (issue 21's
design): readers saw the dataset grow chunk by chunk, and a killed import left part of the file
visible, with nothing saying so, until the next cleanup finished it (issue 31). Now:

1. **Open** (:func:`_open`): one short write transaction checks that no other import into the
   dataset is under way, creates the raters and a hidden dataset (:mod:`.import_pending`) that
   records the target, and notes the target's item count and newest item id.
2. **Check and write**, :data:`EXISTING_IMPORT_CHUNK_ROWS` items at a time from the stream: the
   chunk's ids are looked up in the dataset (a read), conflicts are collected (an id with other
   content, or other choices, wrong answers or meta), and the chunk is written straight into
   ``items`` and ``labels`` in its own short write transaction, every row marked with the hidden
   dataset (``import_id``, migration 0010): new items with their labels, and for items the
   dataset already has only the labels that are not already that rater's current one. Every
   reader skips marked rows while their import is pending (the filter of
   :mod:`~qaeval_core.store.orm`). Any conflict: the marked rows and the hidden dataset are
   deleted and every conflicting row is reported (:class:`ValidationError`), as before.
3. **Commit point** (:func:`_commit`): one short write transaction checks the target is
   unchanged (same item count and newest id) and marks the hidden dataset committed (a suffix
   on its name). That one row makes every row of the import visible at once. Before it, a
   failure or a kill leaves nothing anyone sees (the marked rows are deleted, by this import or
   the next cleanup); after it, the import is finished and never undone.
4. **Adopt** (:func:`.import_adopt.adopt`): the marks are cleared a chunk per short
   transaction and the hidden dataset deleted; what readers see does not change. A kill here is
   finished by the next cleanup.

Each row is written once, then its mark cleared (an update of the partial index only). The
stream is read once, holding one chunk at a time (plus what the file scan keeps: ids and
digests), so peak memory is about that of a new dataset's import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from qaeval_core import io
from qaeval_core.errors import RowError, StoreError, ValidationError
from qaeval_core.store.items.import_adopt import adopt, let_writers_in, marker
from qaeval_core.store.items.import_pending import discard_import, hidden_name, rater_ids
from qaeval_core.store.items.import_staging import IMPORT_SOURCE, item_values
from qaeval_core.store.orm import (
    IMPORT_COMMITTED_SUFFIX,
    Dataset,
    ItemRecord,
    Label,
    utcnow,
    visible_dataset,
)
from qaeval_core.store.scope import store_scope

__all__ = ["EXISTING_IMPORT_CHUNK_ROWS", "ExistingImport", "import_into_existing"]

#: Items per chunk: read, checked, written, and adopted. Each write transaction holds
#: SQLite's write lock for one chunk, about 0.1 s for 2,000 rows on the loaded 2-core test
#: machine (bench/README.md); smaller chunks made the import slower (more commits, pauses).
EXISTING_IMPORT_CHUNK_ROWS = 2000


@dataclass(frozen=True)
class ExistingImport:
    """What an import into an existing dataset did (the numbers of its ImportReport)."""

    items_added: int
    items_skipped: int
    labels_added: int
    labels_skipped: int
    raters_created: list[str]


@dataclass(frozen=True)
class _Target:
    """The dataset imported into, and where its import is staged."""

    id: int
    name: str
    hidden_id: int
    snapshot: tuple[int, int]
    users: dict[str, int]
    created: list[str]


def changed_fields(row: io.ItemRow, choices: Any, wrong: Any, meta: Any) -> str:
    """Which of choices, wrong answers, meta differ from the stored item ('' when none), so a
    re-import never drops a change without a word (the content is checked by its hash)."""
    fields = [
        name
        for name, old, new in (
            ("choices", choices, row.choices),
            ("wrong_answers", wrong, row.wrong_answers),
            ("meta", meta, row.meta),
        )
        if (old or None) != (new or None)
    ]
    if not fields:
        return ""
    return (
        f"different {', '.join(fields)}; nothing was changed (give the changed item a new id, "
        "or import into a new dataset)"
    )


def _snapshot(s: Session, dataset_id: int) -> tuple[int, int]:
    """(item count, newest item id) of a dataset: changes whenever items are added."""
    stmt = select(func.count(ItemRecord.id), func.max(ItemRecord.id)).where(
        ItemRecord.dataset_id == dataset_id
    )
    items, newest = s.execute(stmt).one()
    return int(items or 0), int(newest or 0)


def _changed_meanwhile(name: str) -> StoreError:
    return StoreError(
        f"Dataset {name!r} changed while the file was being imported (another import?); "
        "nothing was imported. Run the import again."
    )


def _open(url: str | None, name: str, raters: set[str], source: str | None) -> _Target:
    """Step 1: the target checked and locked for this import, raters and hidden dataset made.

    PostgreSQL: the target's row is locked (``FOR NO KEY UPDATE``, as deals do) so two imports
    opening at once see each other's hidden dataset; SQLite's ``BEGIN IMMEDIATE`` does that.
    """
    with store_scope(url, write=True) as s:
        stmt = select(Dataset.id).where(Dataset.name == name, visible_dataset())
        target = s.execute(stmt.with_for_update(key_share=True)).scalar_one_or_none()
        if target is None:
            raise _changed_meanwhile(name)
        hidden = select(Dataset.name, Dataset.description).where(~visible_dataset())
        if any(marker(d).get("into") == target for _, d in s.execute(hidden)):
            raise StoreError(
                f"Another import into {name!r} is under way; nothing was imported. Run this "
                "one again when it has finished."
            )
        users, created = rater_ids(s, raters)
        ds = Dataset(
            name=hidden_name(),
            description=json.dumps({"raters": created, "into": target}),
            source=source,
        )
        s.add(ds)
        s.flush()
        return _Target(target, name, ds.id, _snapshot(s, target), users, created)


def _chunks(items: Iterable[io.ItemRow]) -> Iterator[list[io.ItemRow]]:
    chunk: list[io.ItemRow] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == EXISTING_IMPORT_CHUNK_ROWS:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _current(s: Session, item_ids: list[int]) -> dict[tuple[int, int], int]:
    """The current label value per (item, user) of these items (the newest row of each)."""
    if not item_ids:
        return {}
    latest = (
        select(func.max(Label.id))
        .where(Label.item_id.in_(item_ids))
        .group_by(Label.item_id, Label.user_id)
    )
    stmt = select(Label.item_id, Label.user_id, Label.value).where(Label.id.in_(latest))
    return {(i, u): v for i, u, v in s.execute(stmt).tuples()}


@dataclass
class _Checked:
    """One chunk checked against the dataset: what to stage and what it counts."""

    stage: list[tuple[io.ItemRow, int | None]]  # (row, the dataset's item id if it has it)
    errors: list[RowError]
    new: int = 0
    old: int = 0
    labels: int = 0
    skipped: int = 0


def _check(url: str | None, target: _Target, chunk: list[io.ItemRow]) -> _Checked:
    """Step 2, the read: the chunk's conflicts with the dataset, its new items, and shadows of
    its known items carrying only the labels that are not already the rater's current one."""
    with store_scope(url) as s:
        stmt = select(
            ItemRecord.external_id,
            ItemRecord.id,
            ItemRecord.content_hash,
            ItemRecord.choices,
            ItemRecord.wrong_answers,
            ItemRecord.meta,
        ).where(
            ItemRecord.dataset_id == target.id,
            ItemRecord.external_id.in_([r.external_id for r in chunk]),
        )
        stored = {row[0]: row[1:] for row in s.execute(stmt).tuples()}
        current = _current(s, [v[0] for v in stored.values()])
    out = _Checked([], [])
    for r in chunk:
        found = stored.get(r.external_id)
        if found is None:
            out.stage.append((r, None))
            out.new += 1
            out.labels += len(r.labels)
            continue
        item_id, digest, choices, wrong, meta = found
        out.old += 1
        if digest != r.content_hash:
            out.errors.append(
                RowError(
                    r.row,
                    f"id {r.external_id!r} is already in dataset {target.name!r} with different "
                    "content (give the changed item a new id, or import into a new dataset)",
                )
            )
        elif what := changed_fields(r, choices, wrong, meta):
            msg = f"id {r.external_id!r} is already in dataset {target.name!r} with {what}"
            out.errors.append(RowError(r.row, msg))
        keep = [
            lab for lab in r.labels if current.get((item_id, target.users[lab.rater])) != lab.value
        ]
        out.skipped += len(r.labels) - len(keep)
        out.labels += len(keep)
        if keep:
            out.stage.append((replace(r, labels=keep), item_id))  # only its labels to add
    return out


def _write_chunk(
    url: str | None, target: _Target, rows: list[tuple[io.ItemRow, int | None]]
) -> None:
    """Step 2, the write: one short write transaction puts a checked chunk into ``items`` and
    ``labels``, every row marked with the import (hidden from readers until it commits). The
    items are built before it starts (hashing and copying every field is most of the Python
    work), so the lock covers the two batched inserts and reading the new items' ids back."""
    items = [
        {"dataset_id": target.id, "import_id": target.hidden_id, **item_values(r)}
        for r, known in rows
        if known is None
    ]
    with store_scope(url, write=True) as s:
        conn = s.connection()  # Core statements: no reader's filter, no ORM bulk overhead
        if conn.execute(select(Dataset.id).where(Dataset.id == target.id)).first() is None:
            raise _changed_meanwhile(target.name)  # deleted meanwhile
        if items:
            conn.execute(insert(ItemRecord.__table__), items)
            it = ItemRecord.__table__
            new = select(it.c.external_id, it.c.id).where(
                it.c.dataset_id == target.id,
                it.c.external_id.in_([i["external_id"] for i in items]),
            )
            ids = dict(conn.execute(new).tuples().all())
        labels = [
            {
                "item_id": known if known is not None else ids[r.external_id],
                "user_id": target.users[lab.rater],
                "value": lab.value,
                "rule": lab.rule,
                "note": lab.note,
                "seconds": lab.seconds,
                "source": IMPORT_SOURCE,
                "import_id": target.hidden_id,
            }
            for r, known in rows
            for lab in r.labels
        ]
        if labels:
            conn.execute(insert(Label.__table__), labels)
        touched = update(Dataset).where(Dataset.id == target.hidden_id)
        conn.execute(touched.values(created_at=utcnow()))


def _commit(url: str | None, target: _Target) -> None:
    """Step 3, the commit point: the target unchanged since :func:`_open` (its visible items:
    this import's own are still hidden), the hidden dataset renamed committed, which shows
    every row of the import at once (a kill after this is finished by the next cleanup)."""
    with store_scope(url, write=True) as s:
        lock = select(Dataset.id).where(Dataset.id == target.id, visible_dataset())
        if s.execute(lock.with_for_update(key_share=True)).first() is None:
            raise _changed_meanwhile(target.name)
        if _snapshot(s, target.id) != target.snapshot:
            raise _changed_meanwhile(target.name)
        s.execute(
            update(Dataset)
            .where(Dataset.id == target.hidden_id)
            .values(name=Dataset.name + IMPORT_COMMITTED_SUFFIX, created_at=utcnow())
        )


def import_into_existing(
    url: str | None,
    name: str,
    items: Iterable[io.ItemRow],
    raters: set[str],
    *,
    source: str | None,
) -> ExistingImport:
    """Import validated ``items`` into the existing dataset ``name`` (see the module docstring):
    all or nothing, reading ``items`` once, no write transaction longer than one chunk."""
    target = _open(url, name, raters, source)
    totals = _Checked([], [])
    try:
        for chunk in _chunks(items):
            checked = _check(url, target, chunk)
            totals.errors += checked.errors
            totals.new += checked.new
            totals.old += checked.old
            totals.labels += checked.labels
            totals.skipped += checked.skipped
            if checked.stage and not totals.errors:
                _write_chunk(url, target, checked.stage)
                let_writers_in(url, pause=False)
        if totals.errors:
            raise ValidationError(source or "<rows>", sorted(totals.errors, key=lambda e: e.row))
        _commit(url, target)
    except BaseException:
        discard_import(url, target.hidden_id, target.created)
        raise
    adopt(url, target.hidden_id, chunk=EXISTING_IMPORT_CHUNK_ROWS)
    return ExistingImport(totals.new, totals.old, totals.labels, totals.skipped, target.created)
