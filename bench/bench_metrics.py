"""Benchmark: every metric on the same 10,000 real rows; items/s, peak memory, anchor ratios.

Not a test. The rows are all 1,490 ``kamalloo_nq301`` rows, all 862 ``answer_matching_mmlu_pro``
rows and the first 7,648 rows of ``pedants_ae_augmented_train`` from ``../shared/data``.

Each metric runs in its own subprocess with an empty cache folder, so its timing starts cold
(no memoised normalisation, no stored embedding) and ``ru_maxrss`` is its own peak:

* model loading happens before the clock starts (a two-item warm-up call);
* ``cold``: the first ``score_batch`` over all rows (one call, as ``qaeval score`` does);
* ``warm``: the same call again (memoised normalisation / embedding cache hits) -- the cost of
  rescoring, or of a lexical metric scored after another one in the same run;
* for embedding metrics, every string the metric sent to the encoder is recorded and encoded
  again with the bare ``SentenceTransformer.encode`` (same model, batch size and device):
  ``metric cold time / raw encode time`` is the overhead ratio (target <= 1.3 for SMILE and
  A-VERT);
* a ``lexical-suite`` run scores all lexical metrics one after another in one process, as
  ``qaeval score -m lexical`` does.

Anchors: ``qa-metrics`` (EM, F1, PEDANTS, per-item API) runs in its own venv when
``QAEVAL_QAM_PYTHON`` names that venv's python (see ``anchor_qa_metrics.py``).

``--repeat N`` runs every metric subprocess (and the anchor) N times and reports the run
with the median cold time, the median warm time and the N cold times: single cold runs of the
cheap lexical metrics move by up to 1.5x on a shared machine.

Usage::

    QAEVAL_QAM_PYTHON=/tmp/qam-venv/bin/python .venv/bin/python bench/bench_metrics.py
    QAEVAL_QAM_PYTHON=... .venv/bin/python bench/bench_metrics.py --repeat 5 \\
        --metrics em,contains,f1,precision,recall,panda
    .venv/bin/python bench/bench_metrics.py --rows 500 --metrics em,f1,smile --no-anchor

Results: a Markdown table on stdout and JSON in ``--out`` (default: qaeval_bench_metrics.json in
the temporary folder, so runs leave nothing in the checkout).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("QAEVAL_SHARED_DIR", REPO.parent / "shared"))
SOURCES = (
    ("kamalloo_nq301", None),
    ("answer_matching_mmlu_pro", None),
    ("pedants_ae_augmented_train", "fill"),
)
LEXICAL = [
    "em",
    "contains",
    "precision",
    "recall",
    "f1",
    "word_match",
    "vqa_accuracy",
    "soft_vqa_accuracy",
    "rouge1",
    "rouge2",
    "rougeL",
    "bleu",
    "meteor",
]
MODEL_METRICS = ["panda", "embed_cosine", "bertscore", "smile", "avert"]
#: qaeval metric -> the qa-metrics function it is compared with (targets: >= 50x).
ANCHOR_OF = {
    "em": "em_match",
    "contains": "em_match",
    "precision": "f1_score_with_precision_recall",
    "recall": "f1_score_with_precision_recall",
    "f1": "f1_score_with_precision_recall",
    "panda": "pedant_get_score",
}


# -- data ------------------------------------------------------------------------------------


def load_rows(n: int) -> list[dict[str, Any]]:
    data = SHARED / "data"
    if not data.is_dir():
        sys.exit(
            f"The benchmark needs the shared data folder {data} (../shared next to the checkout,"
            " or QAEVAL_SHARED_DIR); it is missing, so nothing was measured."
        )
    rows: list[dict[str, Any]] = []
    for name, mode in SOURCES:
        with (data / f"{name}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if mode == "fill" and len(rows) >= n:
                    break
                rec = json.loads(line)
                rows.append(
                    {
                        "question": str(rec["question"]),
                        "references": [str(r) for r in rec["references"]],
                        "candidate": str(rec["candidate"]),
                        "dataset": rec.get("dataset") or name,
                    }
                )
    return rows[:n]


def _items(rows: list[dict[str, Any]]) -> list[Any]:
    from qaeval_core.schema import Item

    return [
        Item(r["question"], tuple(r["references"]), r["candidate"], dataset=r["dataset"])
        for r in rows
    ]


# -- one metric, in its own process ------------------------------------------------------------


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """Peak RSS of this process. ``VmHWM`` restarts at exec, unlike ``ru_maxrss``, which
    Linux carries over from the parent that spawned the benchmark subprocess."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _EncodeRecorder:
    """Records every string an embedding metric sends to the encoder, and the time spent."""

    def __init__(self) -> None:
        self.sentences: list[str] = []
        self.tokens: list[str] = []
        self.sentences_seen: list[str] = []
        self.tokens_seen: list[str] = []
        self.seconds = 0.0
        self.batch_size: int | None = None
        self.model: str | None = None
        self.device: str | None = None

    def install(self) -> None:
        """Time the one model pass every embedding metric goes through (encode once)."""
        from qaeval_core.models import embedding_cache as embed_cache

        recorder = self
        forward = embed_cache.EmbeddingCache._forward

        def _forward(
            cache: Any, texts: list[str], tokens: bool, batch_size: int | None = None
        ) -> Any:
            start = time.perf_counter()
            try:
                return forward(cache, texts, tokens, batch_size)
            finally:
                recorder.seconds += time.perf_counter() - start
                if tokens:
                    recorder.tokens += texts
                else:
                    recorder.sentences += texts
                recorder.batch_size, recorder.model = cache.batch_size, cache.model
                recorder.device = cache.device

        embed_cache.EmbeddingCache._forward = _forward  # type: ignore[method-assign]

    def reset(self) -> None:
        self.sentences_seen, self.tokens_seen = self.sentences, self.tokens
        self.sentences, self.tokens, self.seconds = [], [], 0.0

    def raw_encode_seconds(self) -> dict[str, Any] | None:
        """Time bare ``SentenceTransformer.encode`` on exactly the recorded strings."""
        if not (self.sentences or self.tokens):
            return None
        import torch

        from qaeval_core.models.loading import default_batch_size, load_sentence_encoder

        device = self.device or "cpu"
        encoder = load_sentence_encoder(self.model or "minilm", device)
        batch = self.batch_size or default_batch_size(device)
        seconds = 0.0
        with torch.inference_mode():
            if self.sentences:
                start = time.perf_counter()
                encoder.encode(
                    self.sentences,
                    batch_size=batch,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
                seconds += time.perf_counter() - start
            if self.tokens:
                start = time.perf_counter()
                encoder.encode(
                    self.tokens,
                    batch_size=batch,
                    output_value="token_embeddings",
                    convert_to_numpy=False,
                    show_progress_bar=False,
                )
                seconds += time.perf_counter() - start
        return {
            "strings": len(self.sentences) + len(self.tokens),
            "raw_encode_s": seconds,
            "encode_inside_metric_s": self.seconds,
            "batch_size": batch,
            "device": device,
        }


def _fresh_embedding_caches() -> None:
    """Forget every embedding (memory and disk) so the next call starts cold again."""
    from qaeval_core.models import embedding_cache as embed_cache

    os.environ["QAEVAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="qaeval-bench-again-")
    embed_cache._CACHES.clear()


def run_one(
    metric_id: str, rows_file: str, tracemalloc_pass: bool, sandwich: bool = False
) -> dict[str, Any]:
    from qaeval_core.metrics.base import get_metric
    from qaeval_core.schema import Item

    with open(rows_file, encoding="utf-8") as fh:
        items = _items([json.loads(line) for line in fh])
    ids = LEXICAL if metric_id == "lexical-suite" else [metric_id]
    metrics = [get_metric(m) for m in ids]
    warm_items = [
        Item("Warm-up question?", ("warm up",), "a warm-up answer", dataset="_warmup"),
        Item("Another warm-up?", ("cold",), "it is cold", dataset="_warmup"),
    ]
    for m in metrics:  # load models, spaCy, WordNet, PANDA weights before the clock starts
        m.score_batch(warm_items)
    recorder = _EncodeRecorder()
    recorder.install()
    from qaeval_core.metrics import lexical

    lexical.clear_caches()
    rss_before = _rss_mib()
    start = time.perf_counter()
    results = [m.score_batch(items) for m in metrics]
    cold = time.perf_counter() - start
    peak = _peak_mib()
    raw = recorder.raw_encode_seconds()
    recorder.reset()
    cold_again = raw_again = None
    if sandwich and raw:
        # The first pass in a process also pays one-off costs (oneDNN kernels per new input
        # shape), so: cold, raw, cold again (fresh caches), raw again; the ratio compares the
        # second cold pass with the mean of the two raw passes around it, which also cancels a
        # load that drifts linearly on a shared machine.
        _fresh_embedding_caches()
        strings = (list(recorder.sentences_seen), list(recorder.tokens_seen))
        start = time.perf_counter()
        for m in metrics:
            m.score_batch(items)
        cold_again = time.perf_counter() - start
        recorder.sentences, recorder.tokens = strings
        raw_again = recorder.raw_encode_seconds()
        recorder.reset()
    start = time.perf_counter()
    for m in metrics:
        m.score_batch(items)
    warm = time.perf_counter() - start
    out: dict[str, Any] = {
        "metric": metric_id,
        "loadavg": os.getloadavg(),
        "items": len(items),
        "cold_s": cold,
        "warm_s": warm,
        "cold_items_per_s": len(items) / cold,
        "warm_items_per_s": len(items) / warm,
        "rss_before_mib": rss_before,
        "peak_rss_mib": peak,
        "mean_score": float(sum(r.scores.mean() for r in results) / len(results)),
        "share_correct": float(sum(r.decisions.mean() for r in results) / len(results)),
    }
    if raw:
        out.update(raw)
        out["ratio_to_raw_encode"] = cold / raw["raw_encode_s"] if raw["raw_encode_s"] else None
        out["outside_encoder_s"] = cold - raw["encode_inside_metric_s"]
        if cold_again is not None and raw_again is not None:
            out["cold_again_s"] = cold_again
            out["raw_again_s"] = raw_again["raw_encode_s"]
            out["sandwich_ratio"] = cold_again / ((raw["raw_encode_s"] + out["raw_again_s"]) / 2)
    if tracemalloc_pass and not any(m.needs_models for m in metrics):
        import tracemalloc

        lexical.clear_caches()
        tracemalloc.start()
        for m in metrics:
            m.score_batch(items)
        out["python_peak_alloc_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


# -- orchestration ---------------------------------------------------------------------------


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON result in output:\n{text[-2000:]}")


def _subprocess(
    metric_id: str, rows_file: str, timeout: int, sandwich: bool = False
) -> dict[str, Any]:
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="qaeval-bench-") as cache:
        env["QAEVAL_CACHE_DIR"] = cache
        cmd = [sys.executable, __file__, "--one", metric_id, "--rows-file", rows_file]
        if sandwich:
            cmd.append("--sandwich")
        try:
            proc = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return {"metric": metric_id, "error": f"timed out after {timeout} s"}
    if proc.returncode != 0:
        return {"metric": metric_id, "error": proc.stderr.strip().splitlines()[-1:]}
    return _last_json(proc.stdout)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One metric's repeated subprocess runs as one row: the run with the median cold time,
    the median warm time, and every cold time (a shared machine moves single runs by 1.5x)."""
    ok = sorted((r for r in runs if "error" not in r), key=lambda r: r["cold_s"])
    if not ok:
        return runs[0]
    row = dict(ok[len(ok) // 2])
    warm = statistics.median(r["warm_s"] for r in ok)
    row.update(
        warm_s=warm,
        warm_items_per_s=row["items"] / warm,
        runs=len(ok),
        cold_s_runs=[round(r["cold_s"], 5) for r in ok],
    )
    return row


def median_anchor(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Repeated anchor runs as one: the median items/s of each qa-metrics API."""
    merged = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, dict) and "items_per_s" in value:
            rates = [r[key]["items_per_s"] for r in runs]
            merged[key] = {**value, "items_per_s": statistics.median(rates), "runs": rates}
    return merged


def run_anchor(rows_file: str) -> dict[str, Any] | None:
    python = os.environ.get("QAEVAL_QAM_PYTHON")
    if not python:
        print("QAEVAL_QAM_PYTHON unset: qa-metrics anchor skipped.", file=sys.stderr)
        return None
    if not Path(python).exists():
        print(f"QAEVAL_QAM_PYTHON={python} does not exist: anchor skipped.", file=sys.stderr)
        return None
    env = dict(os.environ)
    env.update(
        NLTK_DATA=str(SHARED / "anchors" / "qa-metrics" / "nltk_data"),
        HF_HUB_OFFLINE="1",
        PYTHONWARNINGS="ignore",
    )
    script = str(Path(__file__).with_name("anchor_qa_metrics.py"))
    proc = subprocess.run(
        [python, script, rows_file], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        print(f"qa-metrics anchor failed: {proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return _last_json(proc.stdout)


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return info


def report(results: list[dict[str, Any]], anchor: dict[str, Any] | None) -> str:
    """The Markdown table written into bench/README.md."""
    lines = [
        "| metric | cold items/s | warm items/s | vs qa-metrics cold / warm | strings encoded "
        "| raw encode s | metric s (cold) | of which outside the encoder | metric / raw encode "
        "| peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['metric']} | error: {r['error']} |" + " |" * 8)
            continue
        ratio = ""
        ref = ANCHOR_OF.get(r["metric"])
        if anchor and ref and ref in anchor:
            base = anchor[ref]["items_per_s"]
            ratio = f"{r['cold_items_per_s'] / base:.0f}x / {r['warm_items_per_s'] / base:.0f}x"
        enc = r.get("sandwich_ratio", r.get("ratio_to_raw_encode"))
        cells = [
            r["metric"],
            f"{r['cold_items_per_s']:,.0f}",
            f"{r['warm_items_per_s']:,.0f}",
            ratio,
            f"{r['strings']:,}" if "strings" in r else "",
            f"{r['raw_encode_s']:.1f}" if "raw_encode_s" in r else "",
            f"{r['cold_s']:.2f}",
            f"{r['outside_encoder_s']:.1f}" if "outside_encoder_s" in r else "",
            f"{enc:.2f}" if enc is not None else "",
            f"{r['peak_rss_mib']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if anchor:
        per_item = ", ".join(
            f"{k} {v['items_per_s']:,.0f}/s" for k, v in anchor.items() if isinstance(v, dict)
        )
        lines += ["", f"qa-metrics anchor (per-item calls): {per_item}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--metrics", default=None, help="comma-separated ids (default: all)")
    parser.add_argument("--no-anchor", action="store_true", help="skip the qa-metrics anchor")
    parser.add_argument(
        "--out", default=str(Path(tempfile.gettempdir()) / "qaeval_bench_metrics.json")
    )
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per metric")
    parser.add_argument(
        "--sandwich",
        action="store_true",
        help="embedding metrics: cold, raw, cold again, raw again (drift-robust ratio)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each metric (and the anchor) N times in fresh processes; report the medians",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--rows-file", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one:
        result = run_one(args.one, args.rows_file, tracemalloc_pass=True, sandwich=args.sandwich)
        sys.stdout.write(json.dumps(result) + "\n")
        return

    from qaeval_core.metrics.base import metric_ids

    rows = load_rows(args.rows)
    known = set(metric_ids())
    wanted = (
        args.metrics.split(",") if args.metrics else [*LEXICAL, "lexical-suite", *MODEL_METRICS]
    )
    wanted = [m for m in wanted if m in known or m == "lexical-suite"]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
        rows_file = fh.name
    try:
        info = machine()
        print(f"{len(rows)} rows; machine: {info}", file=sys.stderr)
        anchor = None
        if not args.no_anchor:
            anchors = [run_anchor(rows_file) for _ in range(args.repeat)]
            anchor = median_anchor(anchors) if all(anchors) else None  # type: ignore[arg-type]
        if anchor:
            print(f"anchor: {anchor}", file=sys.stderr)
        results = []
        for mid in wanted:
            start = time.perf_counter()
            runs = [
                _subprocess(mid, rows_file, args.timeout, args.sandwich) for _ in range(args.repeat)
            ]
            res = median_run(runs)
            results.append(res)
            print(f"{mid}: {res} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        info["loadavg_end"] = os.getloadavg()
        Path(args.out).write_text(
            json.dumps({"machine": info, "anchor": anchor, "results": results}, indent=1)
        )
        print(report(results, anchor))
    finally:
        os.unlink(rows_file)


if __name__ == "__main__":
    main()
