"""Concurrency of dealing and importing (issue 13, defects 1 and 3), on SQLite and PostgreSQL.

* 20 processes press "Queue it for me" (``deal(dataset, [self], base=1)``) on one dataset at the
  same moment: every item must end up with exactly one of them.
* While a large file is imported in another process, 20 annotators keep saving labels: none is
  lost, none gets a raw database error, no save waits long; an import killed halfway leaves
  nothing visible and importing again works.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from _processes import store_processes
from sqlalchemy import func, insert, select

from qaeval_core import store
from qaeval_core.errors import StoreBusy
from qaeval_core.schema import content_hash
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Assignment, Dataset, Label, User
from qaeval_core.store.orm import ItemRecord as Item

N_DEALERS = 20
N_DEAL_ITEMS = 2000
BOUND_S = 240  # every process must finish within this (a hang fails instead of blocking CI)


def _items(dataset_id: int, n: int, prefix: str = "i") -> list[dict[str, Any]]:
    return [
        {
            "dataset_id": dataset_id,
            "external_id": f"{prefix}{i}",
            "question": f"question {i}?",
            "references": [f"ref {i}"],
            "candidate": f"candidate answer {i}",
            "content_hash": content_hash(f"{prefix}q{i}", [f"r{i}"], f"c{i}"),
        }
        for i in range(n)
    ]


def _deal_for_myself(url: str, name: str, go: Any, out: Any) -> None:
    """One app session pressing "Queue it for me" (as app/views/annotate.py calls it)."""
    store_session.get_engine(url)  # connect before the start signal: all deal at once
    go.wait(BOUND_S)
    try:
        result = store.deal(url, "deal", [name])
        out.put((name, result.added, None))
    except Exception as exc:  # reported to the parent, which fails the test
        out.put((name, 0, f"{type(exc).__name__}: {exc}"))


def test_twenty_processes_queue_it_for_me_at_once(db_url: str) -> None:
    with store_session.write_scope(db_url) as s:
        ds = Dataset(name="deal")
        s.add(ds)
        s.flush()
        s.execute(insert(Item), _items(ds.id, N_DEAL_ITEMS))
        s.add_all(User(name=f"res{k:02d}", role="researcher") for k in range(N_DEALERS))
    ctx = store_processes()  # separate processes and connections, the store imported once
    go, out = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_deal_for_myself, args=(db_url, f"res{k:02d}", go, out))
        for k in range(N_DEALERS)
    ]
    for p in procs:
        p.start()
    time.sleep(3.0)  # let every process start and connect
    go.set()
    results = [out.get(timeout=BOUND_S) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    errors = [r for r in results if r[2]]
    assert not errors, errors
    with store_session.session_scope(db_url) as s:
        rows = s.execute(select(Assignment.item_id, func.count()).group_by(Assignment.item_id))
        per_item = {item_id: n for item_id, n in rows}
    over = sum(1 for c in per_item.values() if c > 1)
    assert over == 0, f"{over} of {N_DEAL_ITEMS} items dealt to more than one annotator"
    assert len(per_item) == N_DEAL_ITEMS  # and none left out
    assert sum(r[1] for r in results) == N_DEAL_ITEMS


# ----------------------------------------------------------------------------- defect 3
#: Four chunks of the new-dataset import: long enough for saves to overlap it and for a kill
#: to land mid-import. The importing process stages 1,000 rows per transaction (the library's
#: 5,000 would make the same four chunks five times longer to write on a loaded CI machine:
#: the races are the same, bench/bench_import.py measures the real sizes; QAEVAL_IMPORT_ROWS
#: for another size, e.g. 60000 for the size these tests were written at).
N_IMPORT_ROWS = int(os.environ.get("QAEVAL_IMPORT_ROWS", "4000"))
CHUNK_ROWS = max(1, N_IMPORT_ROWS // 4)
N_ANNOTATORS = 20


def _write_big_file(path: Path, n: int) -> Path:
    with path.open("w") as fh:
        for i in range(n):
            row = {
                "id": f"big{i}",
                "question": f"who wrote book number {i} of the long series?",
                "references": [f"author {i}", f"a. {i}"],
                "candidate": f"it was written by author {i} in {1900 + i % 100}",
                "qa_model": f"model-{i % 4}",
                "rater": f"rater{i % 3}",
                "label": i % 2,
            }
            fh.write(json.dumps(row) + "\n")
    return path


#: ``hang``: the import stops halfway, inside the write transaction of its second chunk (the
#: hidden dataset, the raters and the first chunk committed) and says "staged", so it can be
#: killed there.
_IMPORT = """
import sys, time
from qaeval_core import store
from qaeval_core.store.items import import_pending
import_pending.IMPORT_CHUNK_ROWS = int(sys.argv[4])
if sys.argv[3] == "hang":
    stage = import_pending._stage_chunk
    def hang(url, ds_id, chunk, users):
        if hang.done:
            with import_pending.store_scope(url, write=True):
                print("staged", flush=True)
                time.sleep(600)
        hang.done = True
        return stage(url, ds_id, chunk, users)
    hang.done = False
    import_pending._stage_chunk = hang
print("go", flush=True)
print(store.import_file(sys.argv[1], sys.argv[2], "big").summary(), flush=True)
"""


def _start_import(url: str, path: Path, mode: str = "run") -> subprocess.Popen:
    code = _IMPORT
    proc = subprocess.Popen(
        [sys.executable, "-c", code, url, str(path), mode, str(CHUNK_ROWS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
    return proc


def _labelling_setup(url: str) -> list[tuple[int, list[int]]]:
    """A dealt dataset "work": each of 20 annotators has 100 items."""
    with store_session.write_scope(url) as s:
        ds = Dataset(name="work")
        s.add(ds)
        s.flush()
        s.execute(insert(Item), _items(ds.id, 100 * N_ANNOTATORS, prefix="w"))
        s.add_all(User(name=f"ann{k:02d}", role="annotator") for k in range(N_ANNOTATORS))
    names = [f"ann{k:02d}" for k in range(N_ANNOTATORS)]
    store.deal(url, "work", names)
    with store_session.session_scope(url) as s:
        users = dict(s.execute(select(User.name, User.id)).tuples().all())
        queues: dict[int, list[int]] = {users[n]: [] for n in names}
        for item_id, uid in s.execute(select(Assignment.item_id, Assignment.user_id)):
            queues[uid].append(item_id)
    return [(uid, sorted(items)) for uid, items in queues.items()]


def test_annotators_keep_saving_during_a_large_import(db_url: str, tmp_path: Path) -> None:
    queues = _labelling_setup(db_url)
    big = _write_big_file(tmp_path / "big.jsonl", N_IMPORT_ROWS)
    waits: list[float] = []
    saved: list[tuple[int, int, int]] = []  # (label id, user, item) acknowledged
    raw: list[str] = []
    busy = [0]
    lock = threading.Lock()
    proc = _start_import(db_url, big)

    def annotator(uid: int, items: list[int]) -> None:
        k = 0
        while proc.poll() is None or k < 3:
            item = items[k % len(items)]
            t0 = time.monotonic()
            try:
                rec = store.save_label(db_url, uid, item, k % 3)
            except StoreBusy:
                with lock:
                    busy[0] += 1
                continue  # the app keeps the label; the person presses save again
            except Exception as exc:  # any other error fails the test
                with lock:
                    raw.append(f"{type(exc).__name__}: {exc}")
                return
            finally:
                with lock:
                    waits.append(time.monotonic() - t0)
            with lock:
                saved.append((rec.id, uid, item))
            k += 1
            time.sleep(0.05)

    threads = [threading.Thread(target=annotator, args=q) for q in queues]
    for t in threads:
        t.start()
    out, _ = proc.communicate(timeout=BOUND_S)
    for t in threads:
        t.join(timeout=60)
    assert proc.returncode == 0, out
    assert not raw, raw[:5]
    assert f"{N_IMPORT_ROWS} item(s) added" in out
    with store_session.session_scope(db_url) as s:
        stored = {
            (i, u, it) for i, u, it in s.execute(select(Label.id, Label.user_id, Label.item_id))
        }
    lost = [x for x in saved if x not in stored]
    assert not lost, f"{len(lost)} acknowledged labels lost"
    worst = max(waits)
    print(
        f"\n{len(saved)} labels saved by {N_ANNOTATORS} annotators during a {N_IMPORT_ROWS}-row "
        f"import; worst wait {worst:.2f} s, {busy[0]} 'store busy' retries"
    )
    # How long a save waits is a timing, measured by bench/bench_import.py (bench/README.md),
    # never asserted here: on a loaded 2-core CI machine a bound fails at random. What a test
    # can promise is above: every save either lands or is refused visibly, none is lost.
    assert saved, "no save was acknowledged during the import"


def test_killed_import_leaves_nothing_and_a_rerun_works(db_url: str, tmp_path: Path) -> None:
    big = _write_big_file(tmp_path / "big.jsonl", N_IMPORT_ROWS)
    before = _counts(db_url)
    proc = _start_import(db_url, big, "hang")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "staged"
    assert _counts(db_url)[1] > before[1]  # a chunk is in the items table, hidden
    proc.send_signal(signal.SIGKILL)  # killed holding the write lock, rows staged
    proc.wait(timeout=30)
    assert store.list_datasets(db_url) == []  # nothing visible
    assert store.current_labels(db_url).empty and store.frame_items(db_url, None).empty
    store_session.get_engine.cache_clear()
    report = store.import_file(db_url, str(big), "big")  # cleans the killed import up first
    assert report.items_added == N_IMPORT_ROWS and report.labels_added == N_IMPORT_ROWS
    assert report.raters_created == ["rater0", "rater1", "rater2"]
    assert _counts(db_url) == (
        before[0] + 1,
        before[1] + N_IMPORT_ROWS,
        before[2] + N_IMPORT_ROWS,
        before[3] + 3,
    )


def test_db_upgrade_cleans_up_a_killed_import(db_url: str, tmp_path: Path) -> None:
    big = _write_big_file(tmp_path / "big.jsonl", N_IMPORT_ROWS)
    before = _counts(db_url)
    proc = _start_import(db_url, big, "hang")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "staged"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    store_session.get_engine.cache_clear()
    out = subprocess.run(
        [sys.executable, "-m", "qaeval_core.cli.main", "db", "upgrade", "--db", db_url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "Removed 1 unfinished import" in out.stdout
    assert _counts(db_url) == before  # no dataset, items, labels or raters left


def _counts(url: str) -> tuple[int, ...]:
    with store_session.session_scope(url) as s:
        return tuple(
            s.scalar(select(func.count()).select_from(t)) for t in (Dataset, Item, Label, User)
        )
