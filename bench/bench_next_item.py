"""Benchmark: next-item latency with 100,000 items and 20 annotators labelling at once.

Not a test: it builds a large SQLite store (about 150 MB, ~1 minute on 2 cores), then lets 20
simulated annotators each loop "next item -> save label" as fast as they can for a fixed time,
recording every call's wall-clock latency. Half of each queue is labelled beforehand, so
``next_item`` has to walk past thousands of finished items, as in the middle of a real project.

Modes: ``threads`` (one process, 20 threads: how one Streamlit server serves 20 browser
sessions) and ``processes`` (20 processes: several servers on one store file).

Usage::

    .venv/bin/python bench/bench_next_item.py                    # both modes, 20 s each
    .venv/bin/python bench/bench_next_item.py --mode threads --seconds 10 --db /tmp/b.sqlite

Target: p95 of ``next_item`` < 150 ms on the 2-core machine. Results go in bench/README.md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select

from qaeval_core import store
from qaeval_core.schema import content_hash
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Assignment, Dataset, Label, User
from qaeval_core.store.orm import ItemRecord as Item

DATASET = "bench"
FILLER = (
    "Based on the available information, the answer is {ref}. It is worth noting that several "
    "sources describe this slightly differently, but the commonly accepted answer remains {ref}, "
    "as recorded in most references on the subject."
)


def build(url: str, n_items: int, n_annotators: int, prelabel: float) -> None:
    """Items, annotators, queues (every item to 1 + a 20% sample to 3), half the queues done."""
    store_session.upgrade(url)
    t0 = time.perf_counter()
    with store_session.write_scope(url) as s:
        ds = Dataset(name=DATASET)
        s.add(ds)
        s.flush()
        for start in range(0, n_items, 10_000):
            s.execute(
                insert(Item),
                [
                    {
                        "dataset_id": ds.id,
                        "external_id": f"b{i}",
                        "question": f"Which answer does benchmark question number {i} expect?",
                        "references": [f"reference {i}", f"alias {i}"],
                        "candidate": FILLER.format(ref=f"reference {i}"),
                        "content_hash": content_hash(f"b{i}", [f"r{i}"], f"c{i}"),
                    }
                    for i in range(start, min(start + 10_000, n_items))
                ],
            )
        s.add_all([User(name=f"ann{k:02d}", role="annotator") for k in range(n_annotators)])
    t1 = time.perf_counter()
    names = [f"ann{k:02d}" for k in range(n_annotators)]
    dealt = store.deal(
        url, DATASET, names, options=store.DealOptions(base=1, extra_fraction=0.2, extra_k=3)
    )
    t2 = time.perf_counter()
    with store_session.write_scope(url) as s:
        for uid in s.scalars(select(User.id).where(User.name.in_(names))).all():
            queue = s.scalars(
                select(Assignment.item_id)
                .where(Assignment.user_id == uid)
                .order_by(Assignment.position, Assignment.item_id)
            ).all()
            done = queue[: int(len(queue) * prelabel)]
            if done:
                s.execute(
                    insert(Label),
                    [{"item_id": i, "user_id": uid, "value": 2, "seconds": 5.0} for i in done],
                )
    t3 = time.perf_counter()
    print(
        f"built: {n_items} items in {t1 - t0:.1f} s; dealt {dealt.added} assignments in "
        f"{t2 - t1:.1f} s; pre-labelled {prelabel:.0%} of each queue in {t3 - t2:.1f} s",
        flush=True,
    )


def annotator(
    url: str, name: str, seconds: float, start_at: float, think: float = 0.0
) -> dict[str, list[float]]:
    """Loop next_item -> save_label (-> ``think`` seconds reading) until time is up.

    Latencies in milliseconds. ``think=0`` is saturation: every annotator hammers the store.
    """
    with store_session.session_scope(url) as s:
        uid = s.scalar(select(User.id).where(User.name == name))
        did = s.scalar(select(Dataset.id).where(Dataset.name == DATASET))
    out: dict[str, list[float]] = {"next_item": [], "save_label": [], "user_progress": []}
    while time.time() < start_at:
        time.sleep(0.005)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        item = store.next_item(url, uid, did)
        t1 = time.perf_counter()
        out["next_item"].append((t1 - t0) * 1000)
        if item is None:
            break
        store.save_label(url, uid, item.id, n % 3, rule=(n % 7) + 1, seconds=3.0)
        t2 = time.perf_counter()
        out["save_label"].append((t2 - t1) * 1000)
        if n % 10 == 0:  # the annotate page also draws the progress bar
            store.user_progress(url, uid, did)
            out["user_progress"].append((time.perf_counter() - t2) * 1000)
        n += 1
        if think:
            time.sleep(think)
    return out


def _proc(args: tuple[str, str, float, float, float], queue: Any) -> None:
    queue.put(annotator(*args))


def run(
    url: str, mode: str, n_annotators: int, seconds: float, think: float = 0.0
) -> dict[str, list[float]]:
    names = [f"ann{k:02d}" for k in range(n_annotators)]
    results: list[dict[str, list[float]]] = []
    start_at = time.time() + (8.0 if mode == "processes" else 1.0)
    if mode == "threads":
        lock = threading.Lock()

        def work(name: str) -> None:
            r = annotator(url, name, seconds, start_at, think)
            with lock:
                results.append(r)

        threads = [threading.Thread(target=work, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        procs = [
            ctx.Process(target=_proc, args=((url, n, seconds, start_at, think), queue))
            for n in names
        ]
        for p in procs:
            p.start()
        results = [queue.get() for _ in procs]
        for p in procs:
            p.join()
    merged: dict[str, list[float]] = {}
    for r in results:
        for key, values in r.items():
            merged.setdefault(key, []).extend(values)
    return merged


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def report(mode: str, merged: dict[str, list[float]], seconds: float) -> str:
    lines = [
        f"| {mode} | call | n | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for key, values in merged.items():
        if not values:
            continue
        lines.append(
            f"| {mode} | `{key}` | {len(values)} | {statistics.median(values):.1f} | "
            f"{pct(values, 0.95):.1f} | {pct(values, 0.99):.1f} | {max(values):.1f} |"
        )
    labels = len(merged.get("save_label", []))
    lines.append(f"\n{mode}: {labels} labels saved in {seconds:.0f} s ({labels / seconds:.0f}/s)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--prelabel", type=float, default=0.5)
    parser.add_argument("--mode", choices=["threads", "processes", "both"], default="both")
    parser.add_argument(
        "--think",
        type=float,
        default=0.0,
        help="seconds each annotator waits after a save (0 = saturation, the worst case)",
    )
    parser.add_argument("--db", help="SQLite file to (re)use; default: a new temporary file")
    args = parser.parse_args()

    path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "bench.sqlite"
    url = f"sqlite:///{path}"
    if not path.exists():
        build(url, args.items, args.annotators, args.prelabel)
    print(
        f"store: {path} ({path.stat().st_size / 1e6:.0f} MB); cpus: {os.cpu_count()}; "
        f"load average before: {os.getloadavg()[0]:.1f}; think: {args.think} s"
    )
    modes = ["threads", "processes"] if args.mode == "both" else [args.mode]
    for mode in modes:
        merged = run(url, mode, args.annotators, args.seconds, args.think)
        print(report(mode, merged, args.seconds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
