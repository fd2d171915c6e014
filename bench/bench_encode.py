"""Benchmark: the embedding metrics cold and warm, each alone and all together, per backend.

Not a test. Rows: all 1,490 ``kamalloo_nq301`` rows, all 862 ``answer_matching_mmlu_pro`` rows,
then ``pedants_ae_augmented_train`` rows until ``--rows`` (the rows of ``bench_metrics.py``).

Each (code, backend, scenario, rows) runs in its own subprocess with an empty embedding store
(``QAEVAL_CACHE_DIR`` in a new temporary folder; the ONNX export, a one-time cost per machine
and model, is made once beforehand and linked in, and timed separately as ``export``):

* ``load``: imports and a two-item warm-up call of every metric of the scenario (models, spaCy);
* ``cold``: the scenario's ``score_batch`` calls over all rows, nothing embedded yet;
* ``warm``: a second subprocess on the same store (the persistent vectors are reused): the
  cost of rescoring the same rows.

Scenarios: ``embed_cosine``, ``bertscore``, ``smile``, ``avert`` alone, and ``all``: those plus
``smile_paper`` in the calibration's order (embed_cosine, bertscore, smile, smile_paper, avert).

``--code DIR`` runs another checkout's ``qaeval_core`` (for a *before* figure, e.g. an export
of ``git archive HEAD``); ``--backend torch|onnx|auto`` sets ``QAEVAL_ENCODER_BACKEND``
(ignored by code that predates it); ``--backend onnx-int8`` (never read from the environment:
it changes scores) is passed to each metric as its ``backend`` parameter.

``--raw N``: the encoder alone, float ONNX against int8 ONNX (issue 35), on the first N distinct
candidate and reference strings of the rows, in one process, alternated, ``--repeat`` times
each: strings/s from the median wall time and the median CPU time (the process's, all threads),
and how far the int8 sentence vectors are from the float ones (1 - cosine). CPU time moves less
than wall time on a loaded machine; both are printed.

Usage::

    .venv/bin/python bench/bench_encode.py --rows 1000 --backend onnx
    .venv/bin/python bench/bench_encode.py --rows 1000 --code /tmp/qaeval_head --label before
    .venv/bin/python bench/bench_encode.py --raw 2000 --repeat 3      # float vs int8 encoder

Prints one JSON line per run and appends it to ``--out`` (default: the temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("QAEVAL_SHARED_DIR", REPO.parent / "shared"))
SOURCES = ("kamalloo_nq301", "answer_matching_mmlu_pro", "pedants_ae_augmented_train")
SCENARIOS = {
    "embed_cosine": ["embed_cosine"],
    "bertscore": ["bertscore"],
    "smile": ["smile"],
    "avert": ["avert"],
    "all": ["embed_cosine", "bertscore", "smile", "smile_paper", "avert"],
}


def load_rows(n: int) -> list[dict[str, Any]]:
    data = SHARED / "data"
    if not data.is_dir():
        sys.exit(f"The benchmark needs the shared data folder {data}; nothing was measured.")
    rows: list[dict[str, Any]] = []
    for name in SOURCES:
        with (data / f"{name}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if len(rows) >= n:
                    return rows
                rec = json.loads(line)
                rows.append(
                    {
                        "question": str(rec["question"]),
                        "references": [str(r) for r in rec["references"]],
                        "candidate": str(rec["candidate"]),
                        "dataset": rec.get("dataset") or name,
                    }
                )
    return rows


def distinct_strings(rows: list[dict[str, Any]], n: int) -> list[str]:
    """The first ``n`` distinct non-empty candidate and reference strings of ``rows``."""
    seen: dict[str, None] = {}
    for r in rows:
        for text in (r["candidate"], *r["references"]):
            if text.strip():
                seen[text] = None
    return list(seen)[:n]


def raw_speed(
    texts: list[str], backends: tuple[str, ...] = ("onnx", "onnx-int8"), repeat: int = 3
) -> dict[str, Any]:
    """The encoders of ``backends`` on the same ``texts`` in this process, alternated
    (``repeat`` rounds, each backend once per round): per backend the median wall and CPU
    seconds and strings/s; per non-first backend the largest and mean 1 - cosine of its
    sentence vectors to the first backend's. Encoders are loaded (and any export or
    quantisation made) before the clock."""
    from qaeval_core.models.backends import load_encoder

    encoders = {b: load_encoder("minilm", "cpu", b) for b in backends}
    for enc in encoders.values():
        enc.encode(texts[:8], tokens=False)  # first-call setup off the clock
    wall: dict[str, list[float]] = {b: [] for b in backends}
    cpu: dict[str, list[float]] = {b: [] for b in backends}
    vecs: dict[str, Any] = {}
    for _ in range(repeat):
        for b, enc in encoders.items():
            w, c = time.perf_counter(), time.process_time()
            vecs[b] = enc.encode(texts, tokens=False).sentences
            wall[b].append(time.perf_counter() - w)
            cpu[b].append(time.process_time() - c)
    out: dict[str, Any] = {"strings": len(texts), "repeat": repeat, "backends": {}}
    first = backends[0]
    for b in backends:
        w, c = statistics.median(wall[b]), statistics.median(cpu[b])
        row: dict[str, Any] = {
            "wall_s": round(w, 3),
            "cpu_s": round(c, 3),
            "strings_per_s_wall": round(len(texts) / w, 1),
            "strings_per_s_cpu": round(len(texts) / c, 1),
            "wall_runs": [round(x, 3) for x in wall[b]],
        }
        if b != first:
            gap = 1.0 - (vecs[b] * vecs[first]).sum(axis=1)
            row["one_minus_cos_max"] = round(float(gap.max()), 5)
            row["one_minus_cos_mean"] = round(float(gap.mean()), 5)
        out["backends"][b] = row
    return out


def _child(rows_file: str, scenario: str) -> None:
    """One timed pass in this process (run by the parent with the environment set)."""
    start = time.perf_counter()
    from qaeval_core.metrics.base import get_metric
    from qaeval_core.schema import Item

    rows = json.loads(Path(rows_file).read_text(encoding="utf-8"))
    items = [
        Item(r["question"], tuple(r["references"]), r["candidate"], dataset=r["dataset"])
        for r in rows
    ]
    backend = os.environ.get("BENCH_METRIC_BACKEND")  # onnx-int8: a metric parameter
    extra = {"backend": backend} if backend else {}
    metrics = [get_metric(m, device="cpu", **extra) for m in SCENARIOS[scenario]]
    warm_up = [Item("Who wrote it?", ("Ada",), "Ada wrote it."), Item("Year?", ("1900",), "x")]
    for m in metrics:
        m.score_batch(warm_up)
    load = time.perf_counter() - start
    per: dict[str, float] = {}
    for m in metrics:
        t = time.perf_counter()
        m.score_batch(items)
        per[m.id] = time.perf_counter() - t
    print(json.dumps({"load_s": load, "per_metric_s": per, "total_s": sum(per.values())}))


def _run(code: Path, env: dict[str, str], rows_file: str, scenario: str) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", rows_file, scenario]
    env = {**env, "PYTHONPATH": str(code)}
    out = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{scenario} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _export_once(code: Path, env: dict[str, str]) -> tuple[Path, float]:
    """A cache folder holding the ONNX export (made once, timed), linked into each run's."""
    base = Path(tempfile.mkdtemp(prefix="qaeval-bench-encode-export-"))
    script = (
        "import time; t = time.perf_counter()\n"
        "from qaeval_core.models.backends import load_encoder\n"
        "load_encoder('minilm', 'cpu', 'onnx')\n"
        "print(time.perf_counter() - t)\n"
    )
    env = {**env, "PYTHONPATH": str(code), "QAEVAL_CACHE_DIR": str(base)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=code,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return base, float("nan")
    return base, float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--code", type=Path, default=REPO, help="checkout whose qaeval_core runs")
    ap.add_argument("--backend", default="auto", choices=["auto", "torch", "onnx", "onnx-int8"])
    ap.add_argument("--raw", type=int, default=0, help="encoder alone: float vs int8 on N strings")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of --raw")
    ap.add_argument("--label", default="after")
    ap.add_argument("--no-warm", action="store_true")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "bench_encode.jsonl")
    ap.add_argument("--_child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        _child(*args._child)
        return
    if args.raw:
        rows = load_rows(max(args.rows, 2400))
        record = {"label": args.label, "raw": True, "load_avg_before": os.getloadavg()[0]}
        record |= raw_speed(distinct_strings(rows, args.raw), repeat=args.repeat)
        record["load_avg_after"] = os.getloadavg()[0]
        print(json.dumps(record), flush=True)
        with args.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        return
    rows = load_rows(args.rows)
    rows_file = Path(tempfile.mkdtemp(prefix="qaeval-bench-encode-")) / "rows.json"
    rows_file.write_text(json.dumps(rows), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "QAEVAL_ENCODER_BACKEND"}
    if args.backend == "onnx-int8":
        env["BENCH_METRIC_BACKEND"] = args.backend
    else:
        env["QAEVAL_ENCODER_BACKEND"] = args.backend
    export_base, export_s = _export_once(args.code, env)
    for scenario in args.scenarios.split(","):
        cache = Path(tempfile.mkdtemp(prefix="qaeval-bench-encode-cache-"))
        if (export_base / "onnx").is_dir():
            (cache / "onnx").symlink_to(export_base / "onnx")
        run_env = {**env, "QAEVAL_CACHE_DIR": str(cache)}
        record: dict[str, Any] = {
            "label": args.label,
            "backend": args.backend,
            "scenario": scenario,
            "rows": len(rows),
            "export_s": export_s,
            "load_avg_before": os.getloadavg()[0],
            "cold": _run(args.code, run_env, str(rows_file), scenario),
        }
        if not args.no_warm:
            record["warm"] = _run(args.code, run_env, str(rows_file), scenario)
        record["load_avg_after"] = os.getloadavg()[0]
        print(json.dumps(record), flush=True)
        with args.out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(export_base, ignore_errors=True)


if __name__ == "__main__":
    main()
