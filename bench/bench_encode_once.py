"""Benchmark: the shared encoder pass of a run against one pass per metric, the raw ONNX encode
of the same strings, and the static (distilled) model on the same strings (issue 35).

Not a test. One process, so every ratio compares like with like on the same (loaded) machine:

* ``separate``: the six MiniLM metrics of the calibration's defaults (embed_cosine, bertscore,
  smile, smile_paper, avert, extract_f1) each ``score_batch`` in turn, as before the shared
  pass: each metric encodes what it still misses, in calls of its own;
* ``shared``: the same metrics through :func:`qaeval_core.scoring.run_jobs`, whose shared pass
  encodes every metric's texts in one length-sorted call first;
* ``raw``: the encoder's ``encode`` on exactly the strings ``shared`` sent through the model,
  in one call (the floor: no metric work at all);
* ``static``: the static model's ``encode`` on the same strings, and ``static_cosine`` plus
  ``static_keyword`` on the rows.

``separate`` and ``shared`` alternate ``--repeat`` times, each with an empty embedding store
(a new ``QAEVAL_CACHE_DIR``; the ONNX export and the loaded models are reused, and a warm-up
call of every metric runs before the clock). Medians are printed, then one JSON line.

Usage::

    .venv/bin/python bench/bench_encode_once.py --rows 300 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SHARED_DATA = Path(os.environ.get("QAEVAL_SHARED_DIR", REPO.parent / "shared")) / "data"
METRICS = (
    ("embed_cosine", {}),
    ("bertscore", {}),
    ("smile", {}),
    ("smile_paper", {}),
    ("avert", {}),
    ("extract_f1", {"metric": "f1"}),
)


def load_items(n: int, source: str) -> list[Any]:
    from qaeval_core.schema import Item

    path = SHARED_DATA / f"{source}.jsonl"
    if not path.is_file():
        sys.exit(f"The benchmark needs {path}; nothing was measured.")
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if len(out) >= n:
                break
            rec = json.loads(line)
            out.append(
                Item(str(rec["question"]), tuple(map(str, rec["references"])), rec["candidate"])
            )
    return out


def _metrics() -> list[tuple[str, Any]]:
    from qaeval_core.metrics.base import get_metric

    return [
        (col, get_metric("extract" if col == "extract_f1" else col, device="cpu", **p))
        for col, p in METRICS
    ]


def _fresh_store(base: Path, k: int) -> None:
    """A new, empty embedding store (the ONNX export linked in)."""
    from qaeval_core.models import embedding_cache

    folder = base / f"store{k}"
    folder.mkdir()
    if (base / "onnx").is_dir():
        (folder / "onnx").symlink_to(base / "onnx")
    os.environ["QAEVAL_CACHE_DIR"] = str(folder)
    embedding_cache._CACHES.clear()


def run_once(mode: str, items: list[Any], record: list[str] | None) -> dict[str, Any]:
    from qaeval_core.models.embedding_cache import EmbeddingCache
    from qaeval_core.scoring import ScoringJob, run_jobs

    forward = EmbeddingCache._forward
    spent = {"forward_s": 0.0, "strings": 0, "calls": 0}

    def timed(self, texts, tokens, batch_size=None):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = forward(self, texts, tokens, batch_size)
        spent["forward_s"] += time.perf_counter() - t0
        spent["strings"] += len(texts)
        spent["calls"] += 1
        if record is not None:
            record.extend(texts)
        return out

    EmbeddingCache._forward = timed  # type: ignore[method-assign]
    try:
        metrics = _metrics()
        t0 = time.perf_counter()
        if mode == "shared":
            run_jobs([ScoringJob(col, m, items) for col, m in metrics])
        else:
            for _, m in metrics:
                m.score_batch(items)
        spent["total_s"] = time.perf_counter() - t0
    finally:
        EmbeddingCache._forward = forward  # type: ignore[method-assign]
    return spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=300, help="rows of NQ301 (and of MMLU-Pro)")
    ap.add_argument("--sources", default="kamalloo_nq301,answer_matching_mmlu_pro")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    items = [it for src in args.sources.split(",") for it in load_items(args.rows, src)]
    base = Path(tempfile.mkdtemp(prefix="qaeval-bench-once-"))
    os.environ["QAEVAL_CACHE_DIR"] = str(base)
    from qaeval_core.models.embedding_cache import get_cache

    for _, m in _metrics():  # load every model; export ONNX into base once
        m.score_batch(items[:2])
    encoder = get_cache("minilm", "cpu").encoder
    runs: dict[str, list[dict[str, Any]]] = {"separate": [], "shared": []}
    strings: list[str] = []
    k = 0
    for r in range(args.repeat):
        for mode in ("separate", "shared") if r % 2 == 0 else ("shared", "separate"):
            k += 1
            _fresh_store(base, k)
            rec = strings if (mode == "shared" and not strings) else None
            runs[mode].append(run_once(mode, items, rec))
            print(mode, {key: round(v, 2) for key, v in runs[mode][-1].items()}, flush=True)
    raw, static_s, metric_s = [], [], []
    from qaeval_core.metrics.base import get_metric
    from qaeval_core.models.static_encoder import load_static_encoder

    t0 = time.perf_counter()
    static = load_static_encoder()
    load_s = time.perf_counter() - t0
    statics = [get_metric("static_cosine"), get_metric("static_keyword")]
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        encoder.encode(strings, tokens=False)
        raw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        static.encode(strings)
        static_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for m in statics:
            m.score_batch(items)
        metric_s.append(time.perf_counter() - t0)

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs), 3)

    out = {
        "rows": len(items),
        "sources": args.sources,
        "repeat": args.repeat,
        "loadavg_1min": os.getloadavg()[0],
        "strings_shared": len(strings),
        "separate_total_s": med([x["total_s"] for x in runs["separate"]]),
        "separate_forward_s": med([x["forward_s"] for x in runs["separate"]]),
        "separate_strings": med([x["strings"] for x in runs["separate"]]),
        "separate_calls": med([x["calls"] for x in runs["separate"]]),
        "shared_total_s": med([x["total_s"] for x in runs["shared"]]),
        "shared_forward_s": med([x["forward_s"] for x in runs["shared"]]),
        "shared_calls": med([x["calls"] for x in runs["shared"]]),
        "raw_encode_s": med(raw),
        "static_load_s": round(load_s, 3),
        "static_encode_s": med(static_s),
        "static_metrics_s": med(metric_s),
    }
    out["raw_strings_per_s"] = round(len(strings) / out["raw_encode_s"], 1)
    out["shared_strings_per_s"] = round(len(strings) / out["shared_total_s"], 1)
    out["static_strings_per_s"] = round(len(strings) / max(out["static_encode_s"], 1e-9), 1)
    out["shared_vs_raw"] = round(out["shared_total_s"] / out["raw_encode_s"], 2)
    out["separate_vs_raw"] = round(out["separate_total_s"] / out["raw_encode_s"], 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
