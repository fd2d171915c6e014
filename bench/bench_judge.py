"""Benchmark: a calibrated judge applied cold to 10,000 real rows, against PEDANTS on them.

Not a test. What it answers (issue 15): how fast is the judge ``qaeval calibrate`` writes with
its defaults, input by input, and is it faster than the PEDANTS baseline it competes with?

1. **Rows.** 10,000 unique rows (question, references, candidate) from ``../shared/data``: all
   of ``kamalloo_nq301`` and ``answer_matching_mmlu_pro``, the rest from
   ``pedants_ae_augmented_train`` in file order (a repeated row is skipped, so no cache can
   serve one row from another's work).
2. **Calibration** (timed, but not part of the judge's time): 300 labelled NQ301 rows drawn by
   whole question (``held_out_split``, seed 0), scored with every default input, their costs
   measured (:func:`qaeval_core.calibrate.cost.measure_costs`, on those 300 rows) and
   ``fit_judge`` run with its defaults (``--inputs cheap``: the cheapest input set within 0.3
   points of the best cross-validated accuracy). ``--inputs all`` fits on every input, as
   ``qaeval calibrate`` did before issue 15. Its own empty cache folder.
3. **The judge, cold**: a fresh Python process with an empty ``QAEVAL_CACHE_DIR`` imports
   qaeval, loads the judge file and runs ``judge.judge`` on all rows (models load inside
   the clock). Each input's ``score_batch`` is timed in place (its model load included); peak
   memory is the process's ``VmHWM``.
4. **PEDANTS** (``qa-metrics`` 0.2.42) in its own venv on the same rows through
   ``bench/anchor_qa_metrics.py``: ``PEDANT().get_score`` once per reference, max per row,
   model loading before the clock (``QAEVAL_QAM_PYTHON`` names that venv's python; recipe in
   ``../shared/anchors/qa-metrics/README.md``).

Also printed: the judge's accuracy on the labelled rows it was not fitted on (the other NQ301
rows and the labelled MMLU-Pro rows), a sanity check only (experiments/ measure accuracy).

Usage::

    QAEVAL_QAM_PYTHON=/tmp/qam-venv/bin/python .venv/bin/python bench/bench_judge.py
    .venv/bin/python bench/bench_judge.py --inputs all --no-anchor      # before issue 15
    .venv/bin/python bench/bench_judge.py --rows 1000 --no-anchor       # a quick look
    QAEVAL_QAM_PYTHON=... .venv/bin/python bench/bench_judge.py --rows 3000 --repeat 3
    # issue 35: judge and PEDANTS alternated three times, the median runs reported

Results: a Markdown summary on stdout and JSON in ``--out`` (default: in the temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHARED = Path(os.environ.get("QAEVAL_SHARED_DIR", REPO.parent / "shared"))
SOURCES = ("kamalloo_nq301", "answer_matching_mmlu_pro", "pedants_ae_augmented_train")
CALIBRATION_SET = "kamalloo_nq301"


# -- data ------------------------------------------------------------------------------------


def load_rows(n: int) -> list[dict[str, Any]]:
    """``n`` unique rows: both evaluation sets in full, then PEDANTS training rows in order."""
    data = SHARED / "data"
    if not data.is_dir():
        sys.exit(
            f"The benchmark needs the shared data folder {data} (../shared next to the checkout,"
            " or QAEVAL_SHARED_DIR); it is missing, so nothing was measured."
        )
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    for name in SOURCES:
        with (data / f"{name}.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if len(rows) >= n:
                    break
                rec = json.loads(line)
                key = (
                    str(rec["question"]),
                    tuple(str(r) for r in rec["references"]),
                    str(rec["candidate"] or ""),
                )
                if key in seen:
                    continue
                seen.add(key)
                label = (rec.get("human") or {}).get("label")
                rows.append(
                    {
                        "id": str(rec["id"]),
                        "question": key[0],
                        "references": list(key[1]),
                        "candidate": key[2],
                        "dataset": rec.get("dataset") or name,
                        "qid": str((rec.get("meta") or {}).get("qid") or ""),
                        "label": None if label is None else int(label) == 1,
                    }
                )
    return rows


def _items(rows: list[dict[str, Any]]) -> list[Any]:
    from qaeval_core.schema import Item

    return [
        Item(
            r["question"],
            tuple(r["references"]),
            r["candidate"],
            id=r["id"],
            dataset=r["dataset"],
            meta={"qid": r["qid"]} if r["qid"] else {},
        )
        for r in rows
    ]


def _peak_mib() -> float:
    """Peak RSS of this process (``VmHWM`` restarts at exec, unlike ``ru_maxrss``)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- calibration (parent process) -------------------------------------------------------------


def calibrate(
    rows: list[dict[str, Any]],
    n_labels: int,
    inputs: str,
    max_cost: float | None,
    out: Path,
    drop: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Fit the judge on ``n_labels`` NQ301 rows with the defaults (less ``drop``); save it."""
    import numpy as np

    from qaeval_core.calibrate import CostPolicy, fit_judge
    from qaeval_core.calibrate.fit import feature_scores
    from qaeval_core.calibrate.inputs import FEATURE_ONLY, metric_specs, question_groups
    from qaeval_core.calibrate.protocol import held_out_split

    labelled = [r for r in rows if r["dataset"] == CALIBRATION_SET and r["label"] is not None]
    items = _items(labelled)
    groups = question_groups(items)
    train, _ = held_out_split(len(items), n_labels, groups=groups, seed=0)
    used = [items[i] for i in train]
    y = np.array([labelled[i]["label"] for i in train])
    specs = [(c, m) for c, m in metric_specs(None) if c not in drop]
    t0 = time.perf_counter()
    scores, decisions, features = feature_scores(
        used, [m for _, m in specs], columns=[c for c, _ in specs]
    )
    info: dict[str, Any] = {"n_labels": len(used), "scoring_s": time.perf_counter() - t0}
    policy = CostPolicy(inputs=inputs, max_cost=max_cost)
    costs = None
    if policy.measures_costs:
        from qaeval_core.calibrate.cost import measure_costs

        t0 = time.perf_counter()
        costs = measure_costs(specs, used)
        info["cost_measure_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    judge, report = fit_judge(
        scores,
        y,
        features,
        groups=groups[train],
        default_decisions=decisions[[c for c in decisions.columns if c not in FEATURE_ONLY]],
        name="bench-judge",
        fitted_on={"dataset": CALIBRATION_SET, "bench": "bench/bench_judge.py"},
        costs=costs,
        cost_policy=policy,
    )
    info["fit_s"] = time.perf_counter() - t0
    judge.save(out)
    info.update(
        winner=report.winner,
        columns=judge.columns,
        cv_accuracy=judge.quality.get("cv_accuracy"),
        train_ids=[labelled[i]["id"] for i in train],
        cost=getattr(judge, "cost", None),
    )
    return info


# -- the judge, cold (child process) -----------------------------------------------------------


def run_judge(judge_path: str, rows_file: str) -> dict[str, Any]:
    """Import, load and apply the judge to every row, timing each input in place."""
    t_start = time.perf_counter()
    from qaeval_core.judge import Judge

    t_import = time.perf_counter()
    judge = Judge.from_config(judge_path)
    t_loaded = time.perf_counter()
    rows = [json.loads(line) for line in Path(rows_file).read_text("utf-8").splitlines()]
    items = _items(rows)
    per_input: dict[str, float] = {}
    for column, metric in judge.metrics().items():
        inner = metric.score_batch

        def timed(batch: Any, _inner: Any = inner, _col: str = column) -> Any:
            t0 = time.perf_counter()
            try:
                return _inner(batch)
            finally:
                per_input[_col] = per_input.get(_col, 0.0) + time.perf_counter() - t0

        metric.score_batch = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    out = judge.judge(items)
    t_end = time.perf_counter()
    return {
        "rows": len(items),
        "import_s": t_import - t_start,
        "load_judge_s": t_loaded - t_import,
        "judge_items_s": t_end - t0,
        "total_s": t_end - t_start,
        "per_input_s": per_input,
        "peak_rss_mib": _peak_mib(),
        "correct": [bool(v) for v in out["judge_correct"]],
    }


def judge_subprocess(judge_path: Path, rows_file: Path, timeout: int) -> dict[str, Any]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with tempfile.TemporaryDirectory(prefix="qaeval-bench-judge-") as cache:
        env["QAEVAL_CACHE_DIR"] = cache  # empty: no stored embedding, nothing converted
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--_judge", str(judge_path), str(rows_file)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"The judge run failed:\n{proc.stderr[-3000:]}")
    result = _last_json(proc.stdout)
    result["process_wall_s"] = wall  # interpreter start included
    return result


def _median_run(runs: list[dict[str, Any]], key: Any) -> dict[str, Any]:
    """The run whose ``key`` is the median (the lower middle one for an even count)."""
    ordered = sorted(runs, key=key)
    return ordered[(len(ordered) - 1) // 2]


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON result in output:\n{text[-2000:]}")


# -- PEDANTS ----------------------------------------------------------------------------------


def run_anchor(rows_file: Path) -> dict[str, Any] | None:
    python = os.environ.get("QAEVAL_QAM_PYTHON")
    if not python or not Path(python).exists():
        print(
            f"QAEVAL_QAM_PYTHON={python!r} is not a python: PEDANTS anchor skipped.",
            file=sys.stderr,
        )
        return None
    env = dict(
        os.environ,
        NLTK_DATA=str(SHARED / "anchors" / "qa-metrics" / "nltk_data"),
        HF_HUB_OFFLINE="1",
        PYTHONWARNINGS="ignore",
    )
    script = str(Path(__file__).with_name("anchor_qa_metrics.py"))
    proc = subprocess.run(
        [python, script, str(rows_file)], env=env, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        print(f"qa-metrics anchor failed: {proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return _last_json(proc.stdout)


# -- report -----------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
    }
    try:
        with open("/proc/cpuinfo") as fh:
            names = [ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")]
        info["cpu"] = names[0] if names else None
    except OSError:
        pass
    return info


def accuracy(rows: list[dict[str, Any]], correct: list[bool], train_ids: set[str]) -> dict:
    out = {}
    for name in ("kamalloo_nq301", "answer_matching_mmlu_pro"):
        pairs = [
            (c, r["label"])
            for r, c in zip(rows, correct, strict=True)
            if r["dataset"] == name and r["label"] is not None and r["id"] not in train_ids
        ]
        if pairs:
            out[name] = {"n": len(pairs), "accuracy": sum(c == y for c, y in pairs) / len(pairs)}
    return out


def report(result: dict[str, Any]) -> str:
    j, cal, anchor = result["judge"], result["calibration"], result.get("anchor")
    n = j["rows"]
    lines = [
        f"Judge ({cal['winner']} on {len(cal['columns'])} input(s): "
        f"{', '.join(cal['columns'])}), cold, {n:,} rows",
        "",
        "| step | seconds | rows/s |",
        "|---|---:|---:|",
        f"| import qaeval | {j['import_s']:.2f} | |",
        f"| load judge file | {j['load_judge_s']:.2f} | |",
    ]
    for col, s in sorted(j["per_input_s"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| input `{col}` (model load included) | {s:.2f} | {n / s:,.0f} |")
    lines += [
        f"| `judge` (all inputs + combiner) | {j['judge_items_s']:.2f} | "
        f"{n / j['judge_items_s']:,.0f} |",
        f"| **whole judge** (import + load + apply) | **{j['total_s']:.2f}** | "
        f"{n / j['total_s']:,.0f} |",
        f"| process wall (interpreter start included) | {j['process_wall_s']:.2f} | |",
    ]
    if anchor:
        p = anchor["pedant_get_score"]
        lines.append(
            f"| PEDANTS `get_score` (load {anchor['pedant_load_s']:.1f} s excluded) | "
            f"{p['seconds']:.2f} | {p['items_per_s']:,.0f} |"
        )
        lines.append("")
        lines.append(
            f"Judge / PEDANTS time: **{j['total_s'] / p['seconds']:.2f}** (whole judge), "
            f"{j['judge_items_s'] / p['seconds']:.2f} (apply only)."
        )
    runs = result.get("runs") or {}
    if len(runs.get("judge_total_s", [])) > 1:
        lines.append(
            "Runs (alternated; the median run is shown above): judge "
            + ", ".join(f"{s:.2f}" for s in runs["judge_total_s"])
            + " s; PEDANTS "
            + (", ".join(f"{s:.2f}" for s in runs["pedants_s"]) or "not run")
            + " s."
        )
    lines.append(f"Peak RSS of the judge process: {j['peak_rss_mib']:.0f} MiB.")
    acc = ", ".join(
        f"{k} {100 * v['accuracy']:.1f}% (n={v['n']})" for k, v in result["accuracy"].items()
    )
    lines.append(f"Accuracy on labelled rows not used for fitting: {acc}.")
    lines.append(
        f"Calibration: {cal['n_labels']} labels, scoring {cal['scoring_s']:.1f} s, "
        + (f"cost measurement {cal['cost_measure_s']:.1f} s, " if "cost_measure_s" in cal else "")
        + f"fit {cal['fit_s']:.1f} s, CV accuracy {100 * (cal['cv_accuracy'] or 0):.1f}%."
    )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--_judge":
        print(json.dumps(run_judge(sys.argv[2], sys.argv[3])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--labels", type=int, default=300, help="NQ301 labels to calibrate on")
    ap.add_argument("--inputs", choices=("cheap", "all"), default="cheap")
    ap.add_argument("--max-cost", type=float, default=None, help="seconds per 1,000 rows")
    ap.add_argument("--no-anchor", action="store_true", help="skip PEDANTS")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds for the judge run")
    ap.add_argument(
        "--repeat", type=int, default=1, help="judge and PEDANTS runs, alternated; medians shown"
    )
    ap.add_argument(
        "--out", type=Path, default=Path(tempfile.gettempdir()) / "qaeval_bench_judge.json"
    )
    args = ap.parse_args()
    info = machine()
    rows = load_rows(args.rows)
    work = Path(tempfile.mkdtemp(prefix="qaeval-bench-judge-"))
    rows_file = work / "rows.jsonl"
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    judge_path = work / "judge.json"
    os.environ["QAEVAL_CACHE_DIR"] = str(work / "calibration-cache")
    cal = calibrate(rows, args.labels, args.inputs, args.max_cost, judge_path)
    print(f"calibrated: {cal['winner']} on {cal['columns']}", file=sys.stderr, flush=True)
    judges: list[dict[str, Any]] = []
    anchors: list[dict[str, Any]] = []
    for _ in range(args.repeat):  # alternated, so both sides meet the same load
        judges.append(judge_subprocess(judge_path, rows_file, args.timeout))
        if not args.no_anchor and (a := run_anchor(rows_file)) is not None:
            anchors.append(a)
        print(f"run {len(judges)}: judge {judges[-1]['total_s']:.2f} s", file=sys.stderr)
    judge = _median_run(judges, lambda r: r["total_s"])
    anchor = _median_run(anchors, lambda r: r["pedant_get_score"]["seconds"]) if anchors else None
    info["loadavg_end"] = os.getloadavg()
    result = {
        "machine": info,
        "inputs": args.inputs,
        "max_cost": args.max_cost,
        "calibration": cal,
        "judge": {k: v for k, v in judge.items() if k != "correct"},
        "anchor": anchor,
        "accuracy": accuracy(rows, judge["correct"], set(cal["train_ids"])),
    }
    result["runs"] = {
        "judge_total_s": [r["total_s"] for r in judges],
        "pedants_s": [a["pedant_get_score"]["seconds"] for a in anchors],
    }
    if anchor:
        result["judge_over_pedants"] = judge["total_s"] / anchor["pedant_get_score"]["seconds"]
    args.out.write_text(json.dumps(result, indent=1, default=str), "utf-8")
    print(report(result))
    print(f"\nJSON: {args.out}; machine: {json.dumps(info)}")


if __name__ == "__main__":
    main()
