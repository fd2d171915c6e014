"""Time the ``qa-metrics`` package (PEDANTS authors) on the benchmark rows, one call per item.

Run by the anchor venv's Python, never by qaeval's (qa-metrics pins scikit-learn 1.3.2); see
``../shared/anchors/qa-metrics/README.md`` for the offline recipe. ``bench_metrics.py`` calls
it through ``QAEVAL_QAM_PYTHON``::

    NLTK_DATA=../shared/anchors/qa-metrics/nltk_data HF_HUB_OFFLINE=1 \\
        /tmp/qam-venv/bin/python bench/anchor_qa_metrics.py rows.jsonl

Loading and the first call of each function (NLTK's WordNet and tagger load on the first F1
call) happen before the clock starts. Per item (the per-item API a user would call in a
loop, max over the item's references):
``em_match(references, candidate)`` (one call: it takes the list), and
``f1_score_with_precision_recall(reference, candidate)`` and
``PEDANT().get_score(reference, candidate, question)`` once per reference. Prints one JSON
object: items/s and seconds per function, and the mean score (a sanity check).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def main(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    refs = [[str(r) for r in row["references"]] for row in rows]
    cands = [str(row["candidate"]) for row in rows]
    questions = [str(row["question"]) for row in rows]
    n = len(rows)
    out: dict[str, Any] = {"items": n, "python": sys.version.split()[0]}

    from qa_metrics.em import em_match
    from qa_metrics.f1 import f1_score_with_precision_recall

    # Warm up: the first F1 call loads NLTK's WordNet lemmatiser and tagger (seconds).
    em_match(["warm"], "warm up")
    f1_score_with_precision_recall("warm up", "warming up")

    start = time.perf_counter()
    em = [em_match(r, c) for r, c in zip(refs, cands, strict=True)]
    out["em_match"] = _entry(n, time.perf_counter() - start, sum(em) / n)

    start = time.perf_counter()
    f1 = [
        max(f1_score_with_precision_recall(x, c)["f1"] for x in r) if r else 0.0
        for r, c in zip(refs, cands, strict=True)
    ]
    out["f1_score_with_precision_recall"] = _entry(n, time.perf_counter() - start, sum(f1) / n)

    from qa_metrics.pedant import PEDANT

    start = time.perf_counter()
    pedant = PEDANT()
    pedant.get_score("warm up", "warming up", "what warms up?")
    out["pedant_load_s"] = time.perf_counter() - start
    start = time.perf_counter()
    scores = [
        max(float(pedant.get_score(x, c, q)) for x in r) if r else 0.0
        for r, c, q in zip(refs, cands, questions, strict=True)
    ]
    out["pedant_get_score"] = _entry(n, time.perf_counter() - start, sum(scores) / n)
    return out


def _entry(n: int, seconds: float, mean: float) -> dict[str, float]:
    return {"items_per_s": n / seconds, "seconds": seconds, "mean": mean}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: anchor_qa_metrics.py ROWS.jsonl")
    result = main(sys.argv[1])
    # qa-metrics prints download errors to stdout; the JSON is the last line.
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)
