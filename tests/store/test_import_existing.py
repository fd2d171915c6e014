"""Importing into an existing dataset in bounded chunks, all-or-nothing (issue 21, item 21), on
SQLite and PostgreSQL.

What made saves wait (2.15 s reported, 12.8 s measured at 200,000 rows; bench/README.md) was
one write transaction copying the whole file in at the end, and what made memory 3.6x the file
was holding the whole file (and the dataset) in memory. These tests check the behaviour that
fixes both, not its speed:

* no write transaction writes more than one chunk of items, however large the file;
* the file's items are read as a stream: the first chunk is written before the rest is read;
* still all-or-nothing: a conflict in the last chunk, or a failure halfway, leaves the store as
  it was; an import killed after its commit point is visible whole and finished by the next
  cleanup (kills at other points, with readers watching: test_import_visibility.py);
* two imports into one dataset at once: the second is refused, saying why.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select, update

from qaeval_core import store
from qaeval_core.errors import StoreError, ValidationError
from qaeval_core.io.stream import scan_items
from qaeval_core.store import session as store_session
from qaeval_core.store.items import import_adopt, import_existing, import_pending
from qaeval_core.store.orm import IMPORTING_PREFIX, Dataset, ItemRecord, Label, User

CHUNK = 4
ROWS = 30  # 8 chunks
KNOWN = 6  # rows already in the dataset before the import


def _row(i: int, *, rater: str = "r1", label: int | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": f"q{i}",
        "question": f"question {i}?",
        "references": [f"answer {i}"],
        "candidate": f"candidate {i}",
        "rater": rater,
        "label": i % 2 if label is None else label,
        **extra,
    }


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of CHUNK rows, so a small file spans many of them (and no pause after each:
    the pause only lets waiting saves in, which these tests do not time)."""
    monkeypatch.setattr(import_existing, "EXISTING_IMPORT_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(import_pending, "IMPORT_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(import_adopt, "IMPORT_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(import_adopt, "WRITER_PAUSE_S", 0.0)


def _existing(url: str) -> None:
    """Dataset ``d`` with the file's first KNOWN rows, labelled by r1."""
    store.import_items(url, "d", [_row(i) for i in range(KNOWN)], source="first")


def _counts(url: str) -> tuple[int, int, int, int]:
    with store_session.session_scope(url) as s:
        return tuple(  # type: ignore[return-value]
            int(s.scalar(select(func.count()).select_from(t)) or 0)
            for t in (Dataset, ItemRecord, Label, User)
        )


#: A statement writing items: inserting them, or clearing their import's marks.
_ITEM_WRITE = re.compile(r"^\s*(INSERT INTO|UPDATE) items\b", re.IGNORECASE)


class _ItemWrites:
    """Item rows written (inserted, or their marks cleared) per committed transaction, from
    the engine's own events."""

    def __init__(self, url: str) -> None:
        self.engine = store_session.get_engine(url)
        self.open: dict[int, int] = {}
        self.committed: list[int] = []
        self.on_commit: list[Any] = []
        self.contexts: list[Any] = []

    def _after(self, conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: bool):
        if not _ITEM_WRITE.match(statement):
            return
        insert = getattr(ctx.compiled, "statement", None)
        if (
            getattr(insert, "select", None) is not None
            or statement.lstrip()[:6].upper() == "UPDATE"
        ):
            n = max(cursor.rowcount, 0)  # INSERT ... SELECT, UPDATE: the rows the database wrote
        elif any(ctx is seen for seen in self.contexts):
            return  # a later batch of rows already counted
        else:  # INSERT ... VALUES of many rows (maybe in batches): every row it was given
            self.contexts.append(ctx)
            n = len(ctx.compiled_parameters)
        self.open[id(conn)] = self.open.get(id(conn), 0) + n

    def _commit(self, conn: Any) -> None:
        n = self.open.pop(id(conn), 0)
        if n:
            self.committed.append(n)
            for hook in self.on_commit:
                hook(n)

    def _rollback(self, conn: Any) -> None:
        self.open.pop(id(conn), None)

    def __enter__(self) -> _ItemWrites:
        event.listen(self.engine, "after_cursor_execute", self._after)
        event.listen(self.engine, "commit", self._commit)
        event.listen(self.engine, "rollback", self._rollback)
        return self

    def __exit__(self, *exc: object) -> None:
        event.remove(self.engine, "after_cursor_execute", self._after)
        event.remove(self.engine, "commit", self._commit)
        event.remove(self.engine, "rollback", self._rollback)


def test_no_write_transaction_holds_more_than_a_chunk(
    db_url: str, tmp_path: Path, small_chunks: None
) -> None:
    _existing(db_url)
    rows = [_row(i) for i in range(ROWS)] + [_row(i, rater="r2", label=1) for i in range(KNOWN)]
    path = _write(tmp_path / "more.jsonl", rows)
    with _ItemWrites(db_url) as writes:
        report = store.import_file(db_url, str(path), "d")
    assert (report.items_added, report.items_skipped) == (ROWS - KNOWN, KNOWN)
    # new items' labels + r2's labels on the known items; r1's known labels are already current
    assert (report.labels_added, report.labels_skipped) == (ROWS - KNOWN + KNOWN, KNOWN)
    assert writes.committed and max(writes.committed) <= CHUNK, writes.committed
    assert sum(writes.committed) >= ROWS - KNOWN  # written, then marks cleared: bounded steps
    labels = store.current_labels(db_url, "d")
    got = {(r.external_id, r.user): int(r.value) for r in labels.itertuples()}
    # binary 1 is stored as "correct" (2)
    want = {(f"q{i}", "r1"): 2 * (i % 2) for i in range(ROWS)}
    want |= {(f"q{i}", "r2"): 2 for i in range(KNOWN)}
    assert got == want
    assert [d.name for d in store.list_datasets(db_url)] == ["d"]  # no hidden dataset left
    with store_session.session_scope(db_url) as s:
        assert not s.scalars(select(Dataset.name).where(Dataset.name.startswith(".qaeval"))).all()
    again = store.import_file(db_url, str(path), "d")  # idempotent
    assert (again.items_added, again.labels_added) == (0, 0)


def test_the_file_is_read_as_a_stream(db_url: str, tmp_path: Path, small_chunks: None) -> None:
    _existing(db_url)
    new_rows = [_row(i) for i in range(KNOWN, KNOWN + ROWS)]
    scan = scan_items(_write(tmp_path / "more.jsonl", new_rows))
    yielded = [0]
    read_before_first_write: list[int] = []
    stream = scan.items

    def counted() -> Iterator[Any]:
        for item in stream():
            yielded[0] += 1
            yield item

    scan.items = counted  # type: ignore[method-assign]
    with _ItemWrites(db_url) as writes:
        writes.on_commit.append(lambda n: read_before_first_write.append(yielded[0]))
        store.import_scan(db_url, "d", scan, source="more.jsonl")
    assert yielded[0] == ROWS
    assert read_before_first_write[0] <= CHUNK  # not the whole file first


def test_a_conflict_in_the_last_chunk_imports_nothing(
    db_url: str, tmp_path: Path, small_chunks: None
) -> None:
    _existing(db_url)
    before = _counts(db_url)
    rows = [_row(i) for i in range(KNOWN, ROWS)] + [_row(1, meta={"changed": True})]
    rows.append({**_row(2), "candidate": "other content"})
    with pytest.raises(ValidationError) as err:
        store.import_items(db_url, "d", rows, source="late.jsonl")
    assert [e.row for e in err.value.errors] == [len(rows) - 1, len(rows)]
    assert "with different meta" in str(err.value) and "different content" in str(err.value)
    assert _counts(db_url) == before  # the written chunks and the hidden dataset are gone


def test_a_failure_halfway_leaves_the_store_as_it_was(
    db_url: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _existing(db_url)
    before = _counts(db_url)
    stage = import_existing._write_chunk
    calls = [0]

    def fail_on_third(*args: Any) -> int:
        calls[0] += 1
        if calls[0] == 3:
            raise RuntimeError("disk full")
        return stage(*args)

    monkeypatch.setattr(import_existing, "_write_chunk", fail_on_third)
    rows = [_row(i, rater="new-rater") for i in range(ROWS)]
    with pytest.raises(RuntimeError, match="disk full"):
        store.import_items(db_url, "d", rows)
    assert _counts(db_url) == before  # rater "new-rater" removed too


def _dead_pid() -> str:
    code = "import os; print(os.getpid())"
    done = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True, check=True)
    return done.stdout.strip()


def test_an_import_killed_after_its_commit_point_is_finished_by_the_next_cleanup(
    db_url: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _existing(db_url)
    adopt_chunk = import_adopt._adopt_chunk
    cleared = [0]

    def die_after_two(*args: Any) -> bool:
        if cleared[0] == 2:
            raise KeyboardInterrupt  # the process is killed while adopting
        cleared[0] += 1
        return adopt_chunk(*args)

    monkeypatch.setattr(import_adopt, "_adopt_chunk", die_after_two)
    rows = [_row(i, rater="r2", label=1) for i in range(ROWS)]
    with pytest.raises(KeyboardInterrupt):
        store.import_items(db_url, "d", rows)
    monkeypatch.setattr(import_adopt, "_adopt_chunk", adopt_chunk)
    assert len(store.list_items(db_url, "d")) == ROWS  # committed: all visible, none in part
    with store_session.session_scope(db_url) as s:
        marked = select(func.count(ItemRecord.id)).where(ItemRecord.import_id.is_not(None))
        assert s.scalar(marked) > 0  # marks left to clear
    dead = f"{IMPORTING_PREFIX}{socket.gethostname()[:60]}:{_dead_pid()}:killed:committed"
    with store_session.write_scope(db_url) as s:  # as if its process were gone
        s.execute(
            update(Dataset).where(Dataset.name.startswith(IMPORTING_PREFIX)).values(name=dead)
        )
    done = store.cleanup_imports(db_url)
    assert (done.removed, done.finished) == (0, ("d",))
    assert "Finished 1 committed import(s) of killed processes into 'd'" in done.summary()
    assert len(store.list_items(db_url, "d")) == ROWS
    labels = store.current_labels(db_url, "d")
    r2 = {r.external_id: int(r.value) for r in labels.itertuples() if r.user == "r2"}
    assert r2 == {f"q{i}": 2 for i in range(ROWS)}  # binary 1: "correct"
    assert _counts(db_url)[0] == 1  # the hidden dataset is gone
    with store_session.session_scope(db_url) as s:
        for table in (ItemRecord, Label):
            assert s.scalar(select(func.count(table.id)).where(table.import_id.is_not(None))) == 0


def test_a_second_import_into_the_same_dataset_meanwhile_is_refused(
    db_url: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _existing(db_url)
    stage = import_existing._write_chunk
    refused: list[str] = []

    def meanwhile(*args: Any) -> int:
        if not refused:  # while the first import stages its first chunk
            with pytest.raises(StoreError, match="Another import into 'd' is under way") as exc:
                store.import_items(db_url, "d", [_row(100)])
            refused.append(str(exc.value))
        return stage(*args)

    monkeypatch.setattr(import_existing, "_write_chunk", meanwhile)
    report = store.import_items(db_url, "d", [_row(i) for i in range(ROWS)])
    assert refused and report.items_added == ROWS - KNOWN
    monkeypatch.setattr(import_existing, "_write_chunk", stage)
    assert store.import_items(db_url, "d", [_row(100)]).items_added == 1  # now it may
