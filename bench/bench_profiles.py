"""Throughput of token F1 under the SQuAD and the robust normalisation profile.

Run: ``.venv/bin/python bench/bench_profiles.py [--rows 1000] [--repeat 3]``

The rows are the 1,000 longest labelled answers of ``../shared/data`` (NQ301 and MMLU-Pro,
chatty LLM answers), each with its references. Cold: every memo emptied first (the cost a new
batch pays); warm: the same batch again (what a second metric of the same run pays, since the
profile memoises per string and per pair).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.lexical import clear_caches
from qaeval_core.schema import Item
from qaeval_core.text.profiles import clear_profile_caches
from qaeval_core.text.robust import _parse_date

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def long_items(n: int) -> list[Item]:
    rows = []
    for name in ("kamalloo_nq301", "answer_matching_mmlu_pro"):
        for line in (DATA / f"{name}.jsonl").read_text("utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    rows.sort(key=lambda r: -len(r.get("candidate") or ""))
    return [
        Item(
            question=r["question"],
            references=tuple(map(str, r["references"])),
            candidate=r["candidate"] or "",
        )
        for r in rows[:n]
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    items = long_items(args.rows)
    words = sum(len(it.candidate.split()) for it in items) / len(items)
    print(f"{len(items)} answers, {words:.0f} words on average")
    get_metric("f1", normalize="robust").score_batch(items[:2])  # load spaCy's tables once
    for profile in ("squad", "robust"):
        metric = get_metric("f1", normalize=profile)
        cold, warm = [], []
        for _ in range(args.repeat):
            clear_caches()
            clear_profile_caches()
            _parse_date.cache_clear()
            t0 = time.perf_counter()
            metric.score_batch(items)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            metric.score_batch(items)
            warm.append(time.perf_counter() - t0)
        print(
            f"f1 normalize={profile!r}: cold {len(items) / min(cold):,.0f} rows/s, "
            f"warm {len(items) / min(warm):,.0f} rows/s (best of {args.repeat})"
        )


if __name__ == "__main__":
    main()
