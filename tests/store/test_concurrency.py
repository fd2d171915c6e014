"""20 annotators labelling at once against one SQLite file, for a bounded time.

Streamlit serves every browser session from threads of one process, and several app or CLI
processes may share a store, so both are exercised: 20 threads in one process, then 4 processes
of 5 threads each. Meanwhile a researcher re-deals the dataset (a long ``BEGIN IMMEDIATE`` write)
and reads progress.

What is proven afterwards, from the store itself:
* every label whose id ``save_label`` returned (acknowledged) is stored exactly once, with the
  same item, user, value, rule and note, and no row exists that nobody acknowledged;
* no item was handed to the same person twice (served after they had labelled it), and the
  assignments hold no duplicate (item, user) pair;
* no call failed: no "database is locked", no other error.

``QAEVAL_CONCURRENCY_SECONDS`` sets the labelling time per run (default 5).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from qaeval_core import store
from qaeval_core.schema import content_hash
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Assignment, Dataset, Label, User
from qaeval_core.store.orm import ItemRecord as Item

N_ANNOTATORS = 20
N_ITEMS = 4000
SECONDS = float(os.environ.get("QAEVAL_CONCURRENCY_SECONDS", "5"))
DEAL = store.DealOptions(base=1, extra_fraction=0.3, extra_k=3)


def _build(url: str) -> tuple[int, list[int]]:
    store_session.upgrade(url)
    with store_session.write_scope(url) as s:
        ds = Dataset(name="load")
        s.add(ds)
        s.flush()
        s.execute(
            insert(Item),
            [
                {
                    "dataset_id": ds.id,
                    "external_id": f"i{i}",
                    "question": f"question {i}?",
                    "references": [f"ref {i}"],
                    "candidate": f"candidate answer {i}",
                    "content_hash": content_hash(f"q{i}", [f"r{i}"], f"c{i}"),
                }
                for i in range(N_ITEMS)
            ],
        )
        users = [User(name=f"ann{k:02d}", role="annotator") for k in range(N_ANNOTATORS)]
        s.add_all(users)
        s.flush()
        ds_id, user_ids = ds.id, [u.id for u in users]
    store.deal(url, "load", [f"ann{k:02d}" for k in range(N_ANNOTATORS)], options=DEAL)
    return ds_id, user_ids


def annotate(url: str, user_id: int, dataset_id: int, seconds: float, seed: int) -> dict[str, Any]:
    """One simulated annotator: next item, label, sometimes edit an earlier label; until time."""
    rng = random.Random(seed)
    acks: list[tuple[int, int, int, int, int | None, str]] = []
    errors: list[str] = []
    labelled: list[int] = []
    served_again: list[int] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            item = store.next_item(url, user_id, dataset_id)
            if item is None:
                break
            if item.id in labelled:
                served_again.append(item.id)
                break
            targets = [item.id]
            if labelled and rng.random() < 0.1:  # an edit of an earlier label (appends)
                targets.append(rng.choice(labelled))
            for item_id in targets:
                value, rule = rng.choice([0, 1, 2]), rng.choice([None, 1, 2, 3, 4, 5, 6, 7])
                note = f"u{user_id}-i{item_id}-n{len(acks)}"
                rec = store.save_label(
                    url, user_id, item_id, value, rule=rule, note=note, seconds=0.5
                )
                acks.append((rec.id, item_id, user_id, value, rule, note))
            labelled.append(item.id)
        except Exception as exc:  # every failure is a finding
            errors.append(f"{type(exc).__name__}: {exc}")
            if len(errors) > 20:
                break
    return {"acks": acks, "errors": errors, "served_again": served_again, "user": user_id}


def _run_threads(jobs: list[tuple[str, int, int, float, int]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = [{} for _ in jobs]

    def run(k: int) -> None:
        results[k] = annotate(*jobs[k])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=jobs[0][3] + 120)
    if any(t.is_alive() for t in threads):
        raise AssertionError("an annotator hung")
    return results


def _process_worker(jobs: list[tuple[str, int, int, float, int]], go: Any, out: Any) -> None:
    """One app server: several annotator sessions as threads, started together on ``go``."""
    go.wait(timeout=300)
    out.put(_run_threads(jobs))


class _Researcher(threading.Thread):
    """Re-deals (idempotent, long write transaction) and reads progress while people label."""

    def __init__(self, url: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.errors, self.deals, self.added = url, stop, [], 0, 0

    def run(self) -> None:
        names = [f"ann{k:02d}" for k in range(N_ANNOTATORS)]
        while not self.stop.is_set():
            try:
                self.added += store.deal(self.url, "load", names, options=DEAL).added
                store.dataset_progress(self.url, "load")
                self.deals += 1
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            self.stop.wait(0.2)


def _verify(url: str, results: list[dict[str, Any]]) -> int:
    errors = [e for r in results for e in r["errors"]]
    assert not errors, errors[:5]
    assert not [i for r in results for i in r["served_again"]], "an item was served twice"
    acks = [a for r in results for a in r["acks"]]
    assert acks, "nobody labelled anything"
    with store_session.session_scope(url) as s:
        rows = s.execute(
            select(Label.id, Label.item_id, Label.user_id, Label.value, Label.rule, Label.note)
        ).all()
        pairs = s.execute(select(Assignment.item_id, Assignment.user_id)).all()
        assigned = set(pairs)
        n_assign = s.scalar(select(func.count()).select_from(Assignment))
    stored = {r[0]: tuple(r) for r in rows}
    ids = [a[0] for a in acks]
    assert len(ids) == len(set(ids)), "two acknowledgements share a label id"
    for ack in acks:
        assert stored.get(ack[0]) == ack, f"acknowledged label {ack} missing or altered"
    assert len(rows) == len(acks), "rows in the store that nobody acknowledged"
    # The note is unique per acknowledgement, so no label was stored twice.
    assert max(Counter(r[5] for r in rows).values()) == 1
    assert n_assign == len(assigned), "duplicate assignment rows"
    assert all((a[1], a[2]) in assigned for a in acks), "a label outside the user's queue"
    return len(acks)


def test_twenty_threads_label_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'threads.sqlite'}"
    ds_id, user_ids = _build(url)
    jobs = [(url, uid, ds_id, SECONDS, k) for k, uid in enumerate(user_ids)]
    stop = threading.Event()
    researcher = _Researcher(url, stop)
    started = time.monotonic()
    researcher.start()
    results = _run_threads(jobs)
    stop.set()
    researcher.join(timeout=60)
    elapsed = time.monotonic() - started
    assert not researcher.errors, researcher.errors[:5]
    assert researcher.deals >= 1 and researcher.added == 0  # re-dealing added nothing
    n = _verify(url, results)
    print(f"\n20 threads: {n} acknowledged labels in {elapsed:.1f} s, all stored exactly once")


def test_twenty_annotators_in_four_processes(tmp_path: Path) -> None:
    """4 server processes x 5 sessions each, all writing the same file at the same time."""
    url = f"sqlite:///{tmp_path / 'procs.sqlite'}"
    ds_id, user_ids = _build(url)
    ctx = mp.get_context("spawn")  # fresh interpreters: no inherited SQLite connections
    go, out = ctx.Event(), ctx.Queue()
    jobs = [(url, uid, ds_id, SECONDS, k) for k, uid in enumerate(user_ids)]
    procs = [ctx.Process(target=_process_worker, args=(jobs[k::4], go, out)) for k in range(4)]
    for p in procs:
        p.start()
    time.sleep(0.5)
    stop = threading.Event()
    researcher = _Researcher(url, stop)
    started = time.monotonic()
    go.set()
    researcher.start()
    results = [r for _ in procs for r in out.get(timeout=SECONDS + 300)]
    for p in procs:
        p.join(timeout=60)
    stop.set()
    researcher.join(timeout=60)
    elapsed = time.monotonic() - started
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    assert not researcher.errors, researcher.errors[:5]
    assert len(results) == N_ANNOTATORS
    n = _verify(url, results)
    print(
        f"\n4 processes x 5 threads: {n} acknowledged labels in {elapsed:.1f} s, stored once each"
    )


@pytest.mark.parametrize("workers", [8])
def test_concurrent_edits_of_one_item_all_kept(tmp_path: Path, workers: int) -> None:
    """Many saves for the same (item, user) at once: every one is a separate history row."""
    url = f"sqlite:///{tmp_path / 'edits.sqlite'}"
    _build(url)
    item = store.next_item(url, "ann00", "load")
    assert item is not None
    ids: list[int] = []
    lock = threading.Lock()

    def burst(k: int) -> None:
        for j in range(25):
            rec = store.save_label(url, "ann00", item.id, (k + j) % 3, note=f"{k}-{j}")
            with lock:
                ids.append(rec.id)

    threads = [threading.Thread(target=burst, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = store.label_history(url, "ann00", item.id)
    assert sorted(ids) == [h.id for h in history]
    assert store.current_label(url, "ann00", item.id).id == max(ids)
