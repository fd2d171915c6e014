"""Import benchmark: a generated JSONL file into a fresh SQLite store, annotators saving meanwhile.

Records the import's wall time, the import process's peak RSS (and its ratio to the file size),
and the longest time an annotator thread waited to save a label while the import ran.

    python bench/bench_import.py --rows 1000000 [--annotators 4] [--workdir /tmp/qaeval-bench]
    python bench/bench_import.py --rows 1000000 --existing 1000   # into an existing dataset

``--existing K``: the dataset already exists before the measured import, holding the file's
first K rows (imported beforehand, not measured), so the measured import skips those K items,
compares their labels and adds the other rows as new items: the path of an import into an
existing dataset (issue 21, item 21). The import runs in a child process (its peak RSS is read
from ``resource.getrusage``); the annotators are threads of this process writing to the same
store. The machine's load average is printed with the results (timings on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sqlalchemy import insert

from qaeval_core import store
from qaeval_core.schema import content_hash
from qaeval_core.store import session as store_session
from qaeval_core.store.orm import Dataset, ItemRecord, User

_CHILD = """
import resource, sys, time
from qaeval_core import store
t0 = time.perf_counter()
report = store.import_file(sys.argv[1], sys.argv[2], "bench")
print(report.summary(), file=sys.stderr)
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_file(path: Path, n: int, *, start: int = 0) -> None:
    """Rows ``start`` .. ``n - 1`` of the generated file (ids ``q<i>``)."""
    with path.open("w") as fh:
        for i in range(start, n):
            row = {
                "id": f"q{i}",
                "question": f"who wrote volume {i} of the encyclopaedia of minor poets?",
                "references": [f"editor number {i}", f"e. {i}"],
                "candidate": f"I believe volume {i} was compiled by editor number {i}.",
                "qa_model": f"model-{i % 5}",
                "rater": f"rater{i % 7}",
                "label": i % 2,
            }
            fh.write(json.dumps(row) + "\n")


def setup_annotators(url: str, n: int) -> list[tuple[int, int]]:
    with store_session.write_scope(url) as s:
        ds = Dataset(name="work")
        s.add(ds)
        s.flush()
        s.execute(
            insert(ItemRecord),
            [
                {
                    "dataset_id": ds.id,
                    "external_id": f"w{i}",
                    "question": f"q{i}",
                    "references": ["r"],
                    "candidate": "c",
                    "content_hash": content_hash(f"q{i}", ["r"], "c"),
                }
                for i in range(n)
            ],
        )
        users = [User(name=f"ann{k}", role="annotator") for k in range(n)]
        s.add_all(users)
        s.flush()
        ids = [u.id for u in users]
    store.deal(url, "work", [f"ann{k}" for k in range(n)])
    return [(uid, store.next_item(url, uid, "work").id) for uid in ids]  # type: ignore[union-attr]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--annotators", type=int, default=4)
    ap.add_argument(
        "--existing",
        type=int,
        default=0,
        help="import the file's first K rows first, so the measured import goes into an "
        "existing dataset (default 0: a new dataset)",
    )
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="qaeval-bench-import-"))
    work.mkdir(parents=True, exist_ok=True)
    data, db = work / "items.jsonl", work / "store.sqlite"
    db.unlink(missing_ok=True)
    write_file(data, args.rows)
    url = f"sqlite:///{db}"
    store_session.upgrade(url)
    if args.existing:
        first = work / "first.jsonl"
        write_file(first, args.existing)
        from qaeval_core import store

        store.import_file(url, str(first), "bench")
    annotators = setup_annotators(url, args.annotators)
    waits: list[float] = []
    errors: list[str] = []
    done = threading.Event()

    def annotate(uid: int, item: int) -> None:
        k = 0
        while not done.is_set():
            t0 = time.monotonic()
            try:
                store.save_label(url, uid, item, k % 3)
            except Exception as exc:  # counted and reported
                errors.append(f"{type(exc).__name__}: {exc}")
            waits.append(time.monotonic() - t0)
            k += 1
            time.sleep(0.2)

    threads = [threading.Thread(target=annotate, args=a, daemon=True) for a in annotators]
    for t in threads:
        t.start()
    started = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, url, str(data)], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    done.set()
    for t in threads:
        t.join(timeout=60)
    if child.returncode:
        sys.exit(child.stderr)
    seconds, maxrss_kb = child.stdout.split()
    size = data.stat().st_size
    rss = int(maxrss_kb) * 1024
    waits.sort()
    print(child.stderr.strip())
    print(
        json.dumps(
            {
                "rows": args.rows,
                "into": f"existing dataset of {args.existing} item(s)" if args.existing else "new",
                "file_mb": round(size / 2**20, 1),
                "import_s": round(float(seconds), 1),
                "wall_s": round(wall, 1),
                "peak_rss_mb": round(rss / 2**20, 1),
                "rss_over_file": round(rss / size, 2),
                "annotators": args.annotators,
                "saves": len(waits),
                "save_wait_max_s": round(waits[-1], 3) if waits else None,
                "save_wait_p99_s": round(waits[int(0.99 * (len(waits) - 1))], 3) if waits else None,
                "save_errors": len(errors),
                "machine": f"{platform.processor() or platform.machine()}, {platform.system()}, "
                f"{os.cpu_count()} CPU(s)",
                "load_avg_1_5_15": [round(x, 2) for x in os.getloadavg()],
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
