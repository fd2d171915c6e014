"""Benchmark: the LLM tier (issue 22): throughput, load time, peak memory, and the cascade on
real rows against PEDANTS on the same rows.

Not a test. Three parts, each in a fresh process with an empty ``QAEVAL_CACHE_DIR`` (so the
packaged model is assembled and hash-checked inside the clock, and no verdict is cached):

1. **LLM tier alone**: ``llm_judge`` (packaged Qwen2.5-Coder-1.5B through llama.cpp) on the
   first ``--llm-items`` NQ301 rows: model load (assembly + llama.cpp), items per second on
   the items (the instruction cached once, each question once for its candidates: issue 35),
   peak RSS, and the llama.cpp requests by kind. ``--llm-only`` stops after this part.
2. **The cascade, cold**: the cheap judge is calibrated on 300 NQ301 labels as
   ``bench_judge.py`` does (defaults, cost-aware), the LLM tier is fitted on the same rows
   (``add_llm_tier``; its LLM verdicts come from the default cache when present: calibration
   is not timed), and the judge file is applied cold to ``--rows`` rows (``judge``: the
   cheap inputs on every row, the LLM on its band).
3. **PEDANTS** (``qa-metrics`` in its own venv, ``QAEVAL_QAM_PYTHON``) on the same rows.

Usage::

    QAEVAL_QAM_PYTHON=/tmp/qam-venv/bin/python .venv/bin/python bench/bench_llm.py
    .venv/bin/python bench/bench_llm.py --rows 600 --llm-items 50 --no-anchor   # a quick look

Threads: llama.cpp uses every CPU the process may run on, or one when the machine is already
oversubscribed as the model loads (``QAEVAL_LLM_THREADS`` overrides; the value is in the output).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_judge import (
    _items,
    _last_json,
    _peak_mib,
    calibrate,
    load_rows,
    machine,
    run_anchor,
    run_judge,
)

from qaeval_core.judge import Judge


def llm_alone(rows_file: str) -> dict[str, Any]:
    """Child process: load the packaged model and judge every row once (no cache)."""
    from qaeval_core.metrics.base import get_metric

    rows = [json.loads(line) for line in Path(rows_file).read_text("utf-8").splitlines()]
    items = _items(rows)
    metric = get_metric("llm_judge", cache=False)
    t0 = time.perf_counter()
    metric.backend().load()
    t_load = time.perf_counter() - t0
    metric.score_batch(items[:1])  # the shared instruction, evaluated once
    t0 = time.perf_counter()
    result = metric.score_batch(items[1:])
    seconds = time.perf_counter() - t0
    slot = getattr(metric.backend(), "slot", None)  # the llama.cpp requests, by kind (issue 35)
    requests = dict(slot().requests) if callable(slot) else None
    return {
        "requests": requests,
        "questions": len({(it.question, it.references) for it in items[1:]}),
        "probabilities": [float(s) for s in result.scores],
        "items": len(items) - 1,
        "load_s": t_load,
        "seconds": seconds,
        "items_per_s": (len(items) - 1) / seconds,
        "median_item_s": sorted(d["seconds"] for d in result.details)[len(result.details) // 2],
        "peak_rss_mib": _peak_mib(),
        "threads": slot().threads if callable(slot) else os.environ.get("QAEVAL_LLM_THREADS"),
    }


def add_tier(judge_path: Path, train: list[dict[str, Any]]) -> float:
    """Refit the calibrated judge's chosen inputs on its rows (for their out-of-fold scores)
    and add the LLM tier; the file is rewritten. Returns the seconds it took."""
    import numpy as np

    from qaeval_core.calibrate import CrossValidation, fit_judge
    from qaeval_core.calibrate.cascade import add_llm_tier
    from qaeval_core.calibrate.inputs import question_groups

    t0 = time.perf_counter()
    cheap = Judge.from_config(judge_path)
    items = _items(train)
    y = np.array([r["label"] for r in train])
    groups = question_groups(items)
    judge, report = fit_judge(
        cheap.input_scores(items)[0],
        y,
        cheap.features,
        groups=groups,
        cv=CrossValidation(n_boot=200),
    )
    judge.cost = cheap.cost
    add_llm_tier(judge, report, items, y, groups=groups, progress=print)
    judge.save(judge_path)
    return time.perf_counter() - t0


def _child(mode: str, *args: str, timeout: int = 7200) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryDirectory(prefix="qaeval-bench-llm-") as cache:
        env["QAEVAL_CACHE_DIR"] = cache
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, mode, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"{mode} failed:\n{proc.stderr[-3000:]}")
    out = _last_json(proc.stdout)
    out["process_wall_s"] = wall
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--_llm":
        print(json.dumps(llm_alone(sys.argv[2])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--_judge":
        out = run_judge(sys.argv[2], sys.argv[3])
        out.pop("correct", None)
        print(json.dumps(out))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--llm-items", type=int, default=100)
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument(
        "--llm-only", action="store_true", help="only part 1 (the LLM tier alone), then stop"
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rows = load_rows(max(args.rows, args.llm_items))
    result: dict[str, Any] = {"machine": machine(), "rows": args.rows}
    with tempfile.TemporaryDirectory(prefix="qaeval-bench-") as tmp:
        nq = [r for r in rows if r["dataset"] == "kamalloo_nq301"][: args.llm_items + 1]
        llm_file = Path(tmp) / "llm_rows.jsonl"
        llm_file.write_text("".join(json.dumps(r) + "\n" for r in nq), "utf-8")
        result["llm_alone"] = _child("--_llm", str(llm_file))
        print(json.dumps(result["llm_alone"]), flush=True)
        if args.llm_only:
            print(json.dumps(result, default=str))
            return

        judge_path = Path(tmp) / "judge.json"
        info = calibrate(rows, 300, "cheap", None, judge_path)
        result["calibration"] = {k: v for k, v in info.items() if k != "train_ids"}
        print("fitting the LLM tier on the 300 calibration rows ...", flush=True)
        result["tier_fit_s"] = add_tier(
            judge_path, [r for r in rows if r["id"] in set(info["train_ids"])]
        )
        judge = Judge.from_config(judge_path)
        tier = judge.cascade
        result["tier"] = {
            "llm_share": tier.llm_share,
            "llm_seconds_per_item": tier.llm_seconds_per_item,
            "cv_accuracy": tier.cv_accuracy,
            "llm_auc": tier.llm_auc,
        }
        rows_file = Path(tmp) / "rows.jsonl"
        rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows[: args.rows]), "utf-8")
        result["cascade"] = _child("--_judge", str(judge_path), str(rows_file))
        print(json.dumps(result["cascade"]), flush=True)
        if not args.no_anchor:
            result["pedants"] = run_anchor(rows_file)
    out = args.out or Path(tempfile.gettempdir()) / "bench_llm.json"
    out.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
