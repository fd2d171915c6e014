"""An import into an existing dataset is all-or-nothing for readers too (issue 31, item 1), on
SQLite and PostgreSQL.

Reported: a kill -9 while the import moved its rows in chunk by chunk left 168,000-188,000 of
200,000 new items visible on SQLite (78,000 on PostgreSQL), with nothing marking the dataset
incomplete, until the next import or ``qaeval db upgrade`` finished it. Here an import runs in a
child process that is killed with SIGKILL at one of several points (between two chunks, inside
a chunk's open write transaction, right after its commit point, halfway through clearing its
marks), while a thread of the test process reads the dataset the way annotators, exports and
estimates do: its item count (dataset list, items, export), its current labels, and the items
a deal puts in a queue. Every reading must be the dataset before the import or the whole import,
never part of it, throughout the import, the kill and the cleanup; the cleanup (``qaeval db
upgrade``, or the next import) says whether it removed the killed import or finished it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from qaeval_core import store
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import INCLUDE_PENDING_IMPORTS, Assignment, ItemRecord, Label, User

KNOWN = 60  # items the dataset has before the import
NEW = 540  # items the import adds
CHUNK = 60  # items per chunk of the import: 10 chunks
BOUND_S = 240  # the child must reach its stop point within this (a hang fails, never blocks)


def _row(i: int, rater: str) -> dict[str, Any]:
    return {
        "id": f"q{i}",
        "question": f"who wrote volume {i}?",
        "references": [f"editor {i}"],
        "candidate": f"editor number {i}",
        "rater": rater,
        "label": i % 2,
    }


def _setup(url: str, tmp_path: Path) -> Path:
    """Dataset ``d`` with KNOWN items labelled by r1, an annotator, and a file that adds NEW
    items labelled by r1 and r2's labels on all KNOWN + NEW items (so it adds labels to items
    the dataset already has, too)."""
    store.import_items(url, "d", [_row(i, "r1") for i in range(KNOWN)], source="first")
    with store_session.write_scope(url) as s:
        s.add(User(name="ann", role="annotator"))
    rows = [_row(i, "r1") for i in range(KNOWN, KNOWN + NEW)]
    rows += [_row(i, "r2") for i in range(KNOWN + NEW)]
    path = tmp_path / "more.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


#: The import, stopping at ``point:k`` and saying "stop" so the test can kill it there:
#: ``between:k`` after its k-th chunk committed; ``inside:k`` inside the k-th chunk's write
#: transaction, its rows written, not committed; ``committed:1`` right after its commit point;
#: ``adopting:k`` after clearing the marks of k chunks.
_IMPORT = """
import sys, time
from qaeval_core import store
from qaeval_core.store.items import import_adopt, import_existing
url, path, point, chunk = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
where, k = point.split(":")
import_existing.EXISTING_IMPORT_CHUNK_ROWS = chunk
import_adopt.WRITER_PAUSE_S = 0.0
calls = [0]

def stop():
    print("stop", flush=True)
    time.sleep(600)

def after_k(module, name):
    original = getattr(module, name)
    def wrapped(*args, **kwargs):
        out = original(*args, **kwargs)
        calls[0] += 1
        if calls[0] == int(k):
            stop()
        return out
    setattr(module, name, wrapped)

if where == "between":
    after_k(import_existing, "_write_chunk")
elif where == "inside":  # the chunk's last statement stamps the hidden dataset: utcnow() first
    after_k(import_existing, "utcnow")
elif where == "committed":
    after_k(import_existing, "_commit")
elif where == "adopting":
    after_k(import_adopt, "_adopt_chunk")
print("go", flush=True)
print(store.import_file(url, path, "d").summary(), flush=True)
"""


class _Reader(threading.Thread):
    """Reads the dataset over and over, as annotators, exports and estimates do, recording
    what it saw, until told to stop; then reads once more."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.seen: list[tuple[str, int]] = []
        self.errors: list[str] = []
        self.halt = threading.Event()

    def read_once(self) -> None:
        url = self.url
        n_listed = {d.name: d.n_items for d in store.list_datasets(url)}["d"]
        self.seen.append(("dataset list", n_listed))
        self.seen.append(("items", len(store.load_items(url, "d"))))
        self.seen.append(("export", len(store.export_store_records(url, "d", "items"))))
        self.seen.append(("current labels", len(store.current_labels(url, "d"))))
        store.deal(url, "d", ["ann"])  # the queue gets every item it can see
        self.seen.append(("queued", _assigned(url)))

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.read_once()
            except Exception as exc:  # reported to the test, which fails
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return


def _assigned(url: str) -> int:
    with store_session.session_scope(url) as s:
        return int(s.scalar(select(func.count(Assignment.id))) or 0)


def _marked(url: str) -> int:
    """Rows still marked with an import (hidden from readers while it is pending)."""
    with store_session.session_scope(url) as s:
        return sum(
            int(
                s.scalar(
                    select(func.count(t.id))
                    .where(t.import_id.is_not(None))
                    .execution_options(**{INCLUDE_PENDING_IMPORTS: True})
                )
                or 0
            )
            for t in (ItemRecord, Label)
        )


#: What a reader may see: the dataset before the import, or after all of it.
BEFORE = {
    "dataset list": KNOWN,
    "items": KNOWN,
    "export": KNOWN,
    "queued": KNOWN,
    "current labels": KNOWN,
}
#: After: r1's and r2's current label on every item.
AFTER = {
    "dataset list": KNOWN + NEW,
    "items": KNOWN + NEW,
    "export": KNOWN + NEW,
    "queued": KNOWN + NEW,
    "current labels": 2 * (KNOWN + NEW),
}


def _kill_at(url: str, path: Path, point: str, reader: _Reader) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _IMPORT, url, str(path), point, str(CHUNK)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
    reader.start()
    timer = threading.Timer(BOUND_S, proc.kill)  # a child that never stops fails the test
    timer.start()
    try:
        said = proc.stdout.readline().strip()
    finally:
        timer.cancel()
    assert said == "stop", f"the import did not reach {point}: {said!r}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)  # reaped: its process id is gone, so the cleanup may act at once
    store_session.get_engine.cache_clear()


def _check_readings(reader: _Reader, after_kill: dict[str, int]) -> None:
    assert not reader.errors, reader.errors
    partial = [(what, n) for what, n in reader.seen if n not in (BEFORE[what], AFTER[what])]
    assert not partial, f"readers saw part of the import: {partial[:10]}"
    last = dict(reader.seen[-len(BEFORE) :])
    assert last == after_kill


@pytest.mark.parametrize("point", ["between:4", "inside:6"])
def test_an_import_killed_before_its_commit_point_is_never_seen_and_is_removed(
    db_url: str, tmp_path: Path, point: str
) -> None:
    path = _setup(db_url, tmp_path)
    reader = _Reader(db_url)
    _kill_at(db_url, path, point, reader)
    assert _marked(db_url) > 0  # rows written, hidden
    out = subprocess.run(
        [sys.executable, "-m", "qaeval_core.cli.main", "db", "upgrade", "--db", db_url],
        capture_output=True,
        text=True,
        check=False,
    )
    reader.halt.set()
    reader.join(timeout=BOUND_S)
    reader.read_once()
    assert out.returncode == 0, out.stderr
    said = " ".join(out.stdout.split())  # the console wraps long lines
    assert "Removed 1 unfinished import(s) of killed processes" in said
    assert "nothing of them had been visible" in said
    _check_readings(reader, BEFORE)
    assert _marked(db_url) == 0
    assert all(n == BEFORE[what] for what, n in reader.seen)  # never the new rows
    again = store.import_file(db_url, str(path), "d")  # and importing again works
    assert (again.items_added, again.labels_added) == (NEW, NEW + KNOWN + NEW)
    assert again.cleanup == ""


@pytest.mark.parametrize("point", ["committed:1", "adopting:3"])
def test_an_import_killed_after_its_commit_point_is_seen_whole_and_finished(
    db_url: str, tmp_path: Path, point: str
) -> None:
    path = _setup(db_url, tmp_path)
    reader = _Reader(db_url)
    _kill_at(db_url, path, point, reader)
    assert _marked(db_url) > 0  # marks left to clear
    report = store.import_file(db_url, str(path), "d")  # the next import finishes it first
    reader.halt.set()
    reader.join(timeout=BOUND_S)
    reader.read_once()
    assert report.cleanup.startswith("Finished 1 committed import(s) of killed processes")
    assert "into 'd'" in report.cleanup and report.summary().startswith(report.cleanup)
    assert (report.items_added, report.labels_added) == (0, 0)  # all of it was in already
    _check_readings(reader, AFTER)
    assert _marked(db_url) == 0


def test_a_label_of_an_uncommitted_import_is_not_an_annotators_progress(db_url: str) -> None:
    """The annotators' progress count is SQL text on SQLite (an index hint), which the ORM's
    filter of imports not yet committed does not see: it filters them itself."""
    from qaeval_core.store.orm import IMPORT_COMMITTED_SUFFIX, IMPORTING_PREFIX, Dataset
    from qaeval_core.store.queues.labelling_progress import annotator_counts

    store.import_items(db_url, "d", [_row(i, "r1") for i in range(3)], source="first")
    with store_session.write_scope(db_url) as s:
        s.add(User(name="ann", role="annotator"))
    store.deal(db_url, "d", ["ann"])
    with store_session.write_scope(db_url) as s:
        hidden = Dataset(name=IMPORTING_PREFIX + "d:1")
        s.add(hidden)
        s.flush()
        user = s.scalar(select(User).where(User.name == "ann"))
        item = s.scalar(select(Assignment.item_id).where(Assignment.user_id == user.id).limit(1))
        s.add(Label(item_id=item, user_id=user.id, value=2, source="import", import_id=hidden.id))
        dataset_id, user_id, hidden_id = hidden.id, user.id, hidden.id
    with store_session.session_scope(db_url) as s:
        target = s.scalar(select(ItemRecord.dataset_id).where(ItemRecord.id == item))
        assert dataset_id != target
        assert annotator_counts(s, target) == [(user_id, 3, 0)]  # pending: not progress
    with store_session.write_scope(db_url) as s:
        hidden = s.get(Dataset, hidden_id)
        hidden.name = hidden.name + IMPORT_COMMITTED_SUFFIX
    with store_session.session_scope(db_url) as s:
        assert annotator_counts(s, target) == [(user_id, 3, 1)]  # committed: it counts
