"""int8 ONNX encoder against float ONNX (issue 35 item 2): verdicts, judge accuracy, speed.

The question: may the MiniLM family run on the int8 model (``backend="onnx-int8"``: dynamic
per-channel int8 quantisation of the float ONNX export, :mod:`qaeval_core.models.onnx_encoder`)
without changing what the judge decides? The bounds of the issue: on NQ301 and MMLU-Pro,
every encoder metric's verdict (its own decision at its default threshold) the same on >= 99.5%
of rows, and the judge's cross-validated accuracy within 0.5 points.

Per dataset (all labelled rows of ``kamalloo_nq301`` and ``answer_matching_mmlu_pro``):

1. Every default calibration input (``DEFAULT_METRICS``) is scored once with the float encoder,
   in one ``scoring.run_jobs`` (the shared encoding pass a judge uses), in a cache folder with
   no stored vectors (the ONNX export linked in); the encoder inputs (``input_family``
   ``encoder:*``) are then scored again with ``backend="onnx-int8"``, the same way. Both passes
   are timed (wall seconds; float first, so a warm OS cache favours int8 slightly).
   ``extract`` has no ``backend`` parameter: for its int8 column the extraction module's
   embedding cache is pointed at the int8 encoder in this process (said in the table).
2. Per encoder input: the share of rows whose decision is the same, and the largest and mean
   absolute score difference.
3. The judge: ``fit_judge`` with its defaults on all inputs (no cost selection, so the encoder
   inputs are always offered) on all labelled rows, its cross-validated accuracy with the float
   columns and with the int8 columns (same folds: same seeds and question groups), for
   ``--cv-seeds`` seeds; and the held-out accuracy of ``experiments/cost_aware.py``'s
   protocol (300 labels drawn by question, judge saved, loaded, applied to the other rows),
   for ``--seeds`` seeds. Also: the float-fitted judge applied to the int8 columns (what a
   saved judge would decide if only its encoder changed): share of verdicts the same.
4. Speed: the raw encoder on the dataset's distinct candidate and reference strings, float and
   int8 in this process, alternated (``bench/bench_encode.py``'s ``raw_speed``).

Writes ``experiments/results/int8_encoder.md`` and ``.json``::

    .venv/bin/python experiments/int8_encoder.py            # both datasets, all rows
    .venv/bin/python experiments/int8_encoder.py --rows 200 --seeds 2 --cv-seeds 1   # a look
    # one process per dataset, then one report:
    .venv/bin/python experiments/int8_encoder.py --datasets kamalloo_nq301 --out int8_nq
    .venv/bin/python experiments/int8_encoder.py --datasets answer_matching_mmlu_pro --out int8_mp
    .venv/bin/python experiments/int8_encoder.py --merge experiments/results/int8_{nq,mp}.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_encode import raw_speed

from experiments.common import DATASETS, RESULTS, Data, load_data
from qaeval_core.calibrate import CrossValidation, fit_judge, held_out_split
from qaeval_core.calibrate.cost import input_family
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.judge import FeatureSpec, Judge, items_frame
from qaeval_core.metrics.base import Metric, get_metric
from qaeval_core.scoring import ScoringJob, run_jobs

INT8 = "onnx-int8"
#: The issue's bounds.
MIN_AGREEMENT = 0.995
MAX_ACCURACY_MOVE = 0.005


@contextlib.contextmanager
def cold_cache() -> Iterator[Path]:
    """``QAEVAL_CACHE_DIR`` set to a new folder holding only the real one's ONNX exports (so no
    stored vector or synthetic answer is reused, and nothing is exported again)."""
    from qaeval_core.caches.location import cache_dir

    real = cache_dir() / "onnx"
    tmp = Path(tempfile.mkdtemp(prefix="qaeval-int8-"))
    if real.is_dir():
        (tmp / "onnx").symlink_to(real)
    old = os.environ.get("QAEVAL_CACHE_DIR")
    os.environ["QAEVAL_CACHE_DIR"] = str(tmp)
    try:
        yield tmp
    finally:
        if old is None:
            os.environ.pop("QAEVAL_CACHE_DIR", None)
        else:
            os.environ["QAEVAL_CACHE_DIR"] = old
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def extraction_on(backend: str) -> Iterator[None]:
    """The extraction fallback's embeddings from ``backend`` (it has no parameter for it)."""
    from qaeval_core.metrics import extract
    from qaeval_core.models.embedding_cache import get_cache

    original = extract.get_cache
    extract.get_cache = lambda model, device=None, backend_=None: get_cache(model, device, backend)  # type: ignore[assignment]
    try:
        yield
    finally:
        extract.get_cache = original  # type: ignore[assignment]


def build(backend: str | None) -> list[tuple[str, Metric, bool]]:
    """``(column, metric, is_encoder_input)`` for every default input; encoder inputs on
    ``backend`` (None: the default float backend)."""
    out = []
    for col, mid, params in DEFAULT_METRICS:
        metric = get_metric(mid, **params)
        encoder = input_family(metric).startswith("encoder:")
        if encoder and backend is not None and "backend" in _init_params(mid):
            metric = get_metric(mid, **{**params, "backend": backend})
        out.append((col, metric, encoder))
    return out


def _init_params(mid: str) -> set[str]:
    import inspect

    return set(inspect.signature(type(get_metric(mid)).__init__).parameters)


def score(items: list, specs: list[tuple[str, Metric]]) -> dict[str, Any]:
    jobs = [ScoringJob(col, m, items) for col, m in specs]
    return run_jobs(jobs)


def run_dataset(data: Data, args: argparse.Namespace) -> dict[str, Any]:
    items = data.items
    float_specs = build(None)
    int8_specs = [(c, m) for c, m, enc in build(INT8) if enc]
    enc_cols = [c for c, _, enc in float_specs if enc]
    with cold_cache():
        t0 = time.perf_counter()
        res_float = score(items, [(c, m) for c, m, enc in float_specs if enc])
        float_s = time.perf_counter() - t0
        print(f"  float encoder inputs: {float_s:.1f} s", flush=True)
        res_float |= score(items, [(c, m) for c, m, enc in float_specs if not enc])
        print("  other inputs scored", flush=True)
    with cold_cache(), extraction_on(INT8):
        t0 = time.perf_counter()
        res_int8 = score(items, int8_specs)
        int8_s = time.perf_counter() - t0
        print(f"  int8 encoder inputs: {int8_s:.1f} s", flush=True)
    cols = [c for c, _, _ in float_specs]
    X_float = pd.DataFrame({c: np.asarray(res_float[c].scores, float) for c in cols})
    X_int8 = X_float.copy()
    per_metric = {}
    for c in enc_cols:
        a, b = res_float[c], res_int8[c]
        X_int8[c] = np.asarray(b.scores, float)
        diff = np.abs(np.asarray(a.scores, float) - np.asarray(b.scores, float))
        per_metric[c] = {
            "agreement": float(np.mean(np.asarray(a.decisions) == np.asarray(b.decisions))),
            "flips": int(np.sum(np.asarray(a.decisions) != np.asarray(b.decisions))),
            "max_abs_score_diff": float(diff.max()),
            "mean_abs_score_diff": float(diff.mean()),
        }
    feats_float = [FeatureSpec.from_metric(m, c) for c, m, _ in float_specs]
    int8_by_col = dict(int8_specs)
    feats_int8 = [FeatureSpec.from_metric(int8_by_col.get(c, m), c) for c, m, _ in float_specs]
    texts = items_frame(items)
    cv_rows = []
    judge_agreement = []
    for seed in range(args.cv_seeds):
        accs = {}
        for name, X, feats in (("float", X_float, feats_float), ("int8", X_int8, feats_int8)):
            judge, rep = fit_judge(
                X,
                data.y,
                feats,
                groups=data.groups,
                texts=texts,
                cv=CrossValidation(n_boot=200, seed=seed),
            )
            accs[name] = (float(rep.to_dict()["cv_accuracy"]), rep.winner)
            if name == "float":
                on_float = judge.judge_scores(X[judge.columns])["judge_correct"].to_numpy()
                on_int8 = judge.judge_scores(X_int8[judge.columns])["judge_correct"].to_numpy()
                judge_agreement.append(float(np.mean(on_float == on_int8)))
        cv_rows.append(
            {
                "seed": seed,
                **{f"{k}_cv": v[0] for k, v in accs.items()},
                **{f"{k}_winner": v[1] for k, v in accs.items()},
            }
        )
        print(f"  CV seed {seed}: {accs}", flush=True)
    held = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            tr, te = held_out_split(len(data.y), args.size, groups=data.groups, seed=seed)
            row: dict[str, Any] = {"seed": seed}
            for name, X, feats in (("float", X_float, feats_float), ("int8", X_int8, feats_int8)):
                Xtr = X.iloc[tr].reset_index(drop=True)
                judge, _ = fit_judge(
                    Xtr,
                    data.y[tr],
                    feats,
                    groups=data.groups[tr],
                    texts=items_frame([items[i] for i in tr]),
                    cv=CrossValidation(n_boot=200, seed=seed),
                )
                loaded = Judge.from_config(judge.save(Path(tmp) / f"{name}_{seed}.json"))
                Xte = X.iloc[te].reset_index(drop=True)
                pred = loaded.judge_scores(Xte[loaded.columns])["judge_correct"].to_numpy()
                row[name] = float(np.mean(pred == data.y[te]))
            held.append(row)
            print(f"  held-out seed {seed}: {row}", flush=True)
    strings: dict[str, None] = {}
    for it in items:
        for t in (it.candidate, *it.references):
            if t.strip():
                strings[t] = None
    speed = raw_speed(list(strings)[: args.speed_strings], repeat=args.repeat)
    print(f"  speed: {speed['backends']}", flush=True)
    return {
        "dataset": data.name,
        "rows": len(items),
        "encoder_inputs_s": {"float": float_s, "int8": int8_s},
        "per_metric": per_metric,
        "cv": cv_rows,
        "judge_verdict_agreement": judge_agreement,
        "held_out": held,
        "speed": speed,
        "load_avg": os.getloadavg()[0],
    }


def report(results: list[dict[str, Any]]) -> str:
    lines = [
        "# int8 ONNX encoder vs float ONNX (issue 35 item 2)",
        "",
        "Written by `experiments/int8_encoder.py` (its docstring says how). Bounds: every "
        f"encoder input's verdict the same on >= {100 * MIN_AGREEMENT:.1f}% of rows, the "
        f"judge's CV accuracy within {100 * MAX_ACCURACY_MOVE:.1f} points.",
        "",
        "## Verdict agreement per encoder input (default thresholds)",
        "",
        "| dataset | rows | input | same verdict | flips | max abs score diff | mean |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    ok = True
    for r in results:
        for col, m in r["per_metric"].items():
            ok &= m["agreement"] >= MIN_AGREEMENT
            note = " (*)" if col.startswith("extract") else ""
            lines.append(
                f"| {r['dataset']} | {r['rows']} | {col}{note} | {100 * m['agreement']:.2f}% | "
                f"{m['flips']} | {m['max_abs_score_diff']:.4f} | {m['mean_abs_score_diff']:.4f} |"
            )
    lines += [
        "",
        "(*) `extract` has no `backend` parameter; its int8 column was scored with the "
        "extraction module's embedding cache pointed at the int8 encoder in-process.",
        "",
        "## The judge (fit_judge defaults, all inputs)",
        "",
        "| dataset | CV accuracy float | int8 | int8 - float (points) | winners | "
        "held-out float | int8 | paired diff (points) | float judge on int8 inputs: same "
        "verdict |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        cv = pd.DataFrame(r["cv"])
        held = pd.DataFrame(r["held_out"])
        d_cv = 100 * float((cv.int8_cv - cv.float_cv).mean())
        d_held = 100 * float((held.int8 - held.float).mean())
        ok &= abs(d_cv) < 100 * MAX_ACCURACY_MOVE
        winners = ", ".join(sorted(set(cv.float_winner) | set(cv.int8_winner)))
        lines.append(
            f"| {r['dataset']} | {100 * cv.float_cv.mean():.2f} | {100 * cv.int8_cv.mean():.2f} | "
            f"{d_cv:+.2f} ({len(cv)} seed(s)) | {winners} | {100 * held.float.mean():.2f} | "
            f"{100 * held.int8.mean():.2f} | {d_held:+.2f} ({len(held)} seeds) | "
            f"{100 * float(np.mean(r['judge_verdict_agreement'])):.2f}% |"
        )
    lines += [
        "",
        "## Speed: the encoder alone, same strings, same process, alternated",
        "",
        "| dataset | strings | float strings/s (wall / CPU) | int8 strings/s (wall / CPU) | "
        "int8 / float (wall / CPU) | 1 - cos max / mean | encoder inputs cold, float / int8 s "
        "| load avg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        f, q = r["speed"]["backends"]["onnx"], r["speed"]["backends"][INT8]
        lines.append(
            f"| {r['dataset']} | {r['speed']['strings']} | {f['strings_per_s_wall']} / "
            f"{f['strings_per_s_cpu']} | {q['strings_per_s_wall']} / {q['strings_per_s_cpu']} | "
            f"{q['strings_per_s_wall'] / f['strings_per_s_wall']:.2f}x / "
            f"{q['strings_per_s_cpu'] / f['strings_per_s_cpu']:.2f}x | "
            f"{q['one_minus_cos_max']:.4f} / {q['one_minus_cos_mean']:.5f} | "
            f"{r['encoder_inputs_s']['float']:.1f} / {r['encoder_inputs_s']['int8']:.1f} | "
            f"{r['load_avg']:.1f} |"
        )
    lines += [
        "",
        "The cold encoder-input times are not a speed comparison: the float pass ran first and "
        "paid the loads (spaCy, SMILE's and A-VERT's setup); the raw encoder columns are. The "
        "load average (2 cores) shows how busy the machine was: strings/s are same-process "
        "ratios, not absolute speeds.",
        "",
        f"**Within the bounds: {'yes' if ok else 'no'}.** Where not, ``onnx-int8`` stays a "
        "backend chosen on request, never the default.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--rows", type=int, default=0, help="first N labelled rows (0: all)")
    ap.add_argument("--seeds", type=int, default=5, help="held-out splits")
    ap.add_argument("--size", type=int, default=300, help="labels per held-out split")
    ap.add_argument("--cv-seeds", type=int, default=3)
    ap.add_argument("--speed-strings", type=int, default=1500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="int8_encoder")
    ap.add_argument(
        "--merge",
        nargs="+",
        default=None,
        help="write the report from these results .json files (runs nothing)",
    )
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    if args.merge:
        for name in args.merge:
            results += json.loads(Path(name).read_text("utf-8"))
        text = report(results)
        (RESULTS / f"{args.out}.md").write_text(text, "utf-8")
        (RESULTS / f"{args.out}.json").write_text(json.dumps(results, indent=1), "utf-8")
        print(text)
        return
    for name in args.datasets:
        data = load_data(name)
        if args.rows:
            keep = slice(0, args.rows)
            data = Data(
                data.name,
                data.rows[keep],
                data.items[keep],
                data.y[keep],
                data.groups[keep],
                data.sha256,
            )
        print(f"{name}: {len(data.items)} rows", flush=True)
        results.append(run_dataset(data, args))
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / f"{args.out}.json").write_text(json.dumps(results, indent=1), "utf-8")
    text = report(results)
    (RESULTS / f"{args.out}.md").write_text(text, "utf-8")
    print(text)


if __name__ == "__main__":
    main()
