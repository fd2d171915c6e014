"""Calibration experiment: how good is a judge fitted on N labels, measured on the rest?

Run from the repository root (scores are cached in experiments/cache, so reruns are quick)::

    .venv/bin/python experiments/calibration.py                 # both sets, 5 seeds
    .venv/bin/python experiments/calibration.py --seeds 2 --sizes 300 --no-panda-fit   # quick
    .venv/bin/python experiments/calibration.py --robust --sizes 300 --no-panda-fit
        # + every normalising metric again at normalize="robust" (columns "<col>_robust");
        # writes calibration_robust_<dataset>.csv and summary_robust.md
    .venv/bin/python experiments/calibration.py --robust-only --sizes 300 --no-panda-fit
        # every normalising input at normalize="robust" only (what `qaeval calibrate` fits by
        # default since issue 33); writes calibration_robustonly_<dataset>.csv and
        # summary_robustonly.md
    .venv/bin/python experiments/calibration.py --default --judge-only --sizes 300 \
        --no-panda-fit --n-boot 1000
        # the inputs exactly as `qaeval calibrate` reads them by default (profile_specs at
        # DEFAULT_PROFILE: robust, the answer-shape inputs on the reader text); writes
        # calibration_default_<dataset>.csv and summary_default.md

PEDANTS (the ``qa-metrics`` anchor) is scored once in its own venv by
``experiments/pedants_anchor.py`` (see experiments/README.md); without that file its rows are
left out.

Protocol, per dataset (rows with a binary human label) and per (N, seed):

1. ``held_out_split``: N labelled rows for fitting, drawn at random by whole question (answers
   of several systems to one question never straddle the split); every other row is the test
   set, never seen by any fitting or model-selection step.
2. On the N rows: calibrated thresholds (per metric, and on the best metric chosen on the N
   rows), the paper's fusion with calibrated thresholds, the logistic stacker (C by inner CV),
   PANDA refitted on the N labels + its shipped training data (mixing weight by inner CV), and
   the exported judge: ``fit_judge`` (threshold / fusion / stacker compared by 5-fold CV on the
   N rows), saved to JSON, loaded back and applied - exactly what ``qaeval calibrate`` writes.
3. On the test rows: accuracy of each, of every uncalibrated metric at its shipped threshold
   and of PEDANTS, with a 95% bootstrap CI resampling whole questions; paired bootstrap of the
   exported judge against PEDANTS and against the best uncalibrated metric.

Outputs: ``experiments/results/calibration_<dataset>.csv`` (one row per method x N x seed) and
``experiments/results/summary.md`` (the tables of experiments/README.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import experiments.common as common
from experiments.common import (
    DATASETS,
    FEATURE_ONLY,
    Data,
    cached_scores,
    load_data,
    score_columns,
)
from qaeval_core.calibrate import (
    CrossValidation,
    FusionClassifier,
    StackerClassifier,
    ThresholdClassifier,
    bootstrap_ci,
    fit_judge,
    held_out_split,
    paired_bootstrap,
)
from qaeval_core.calibrate.inputs import DEFAULT_METRICS, DEFAULT_PROFILE, metric_specs
from qaeval_core.judge import FeatureSpec, Judge, items_frame
from qaeval_core.judge.combiners.panda_refit import PandaFitClassifier
from qaeval_core.metrics.base import get_metric, metric_class
from qaeval_core.workflows.calibration import profile_specs

RESULTS = Path(__file__).resolve().parent / "results"
#: The robust profile's columns (``--robust``): every default metric that normalises, again
#: with ``normalize="robust"``, as extra inputs next to the SQuAD ones.
ROBUST_INPUTS = tuple(
    (f"{col}_robust", mid, {**params, "normalize": "robust"})
    for col, mid, params in DEFAULT_METRICS
    if "normalize" in metric_class(mid)._param_names()
)


#: ``--robust-only``: the default inputs with every normalising one at ``normalize="robust"``
#: (the judge ``qaeval calibrate`` fits by default), the others as they are.
ROBUST_ONLY_INPUTS = tuple(
    (f"{col}_robust", mid, {**params, "normalize": "robust"})
    if "normalize" in metric_class(mid)._param_names()
    else (col, mid, params)
    for col, mid, params in DEFAULT_METRICS
)


def default_inputs() -> tuple[tuple[str, str, dict], ...]:
    """``--default``: the default inputs as ``profile_specs`` reads them at ``DEFAULT_PROFILE``
    (what ``qaeval calibrate`` fits without options); a column read at robust is named
    ``<col>_robust`` as in ``--robust-only``, so both share the cached scores, and an
    answer-shape column on the reader text ``<col>_reader``."""
    out = []
    for col, metric in profile_specs(metric_specs(), DEFAULT_PROFILE):
        params = metric.get_params()
        reads = params.get("robust_text", "canonical")
        if reads != "canonical" and params.get("normalize") == "robust":
            col = f"{col}_{reads}"  # _reader, _reader_latex
        elif params.get("normalize") == "robust":
            col = f"{col}_robust"
        out.append((col, metric.id, params))
    return tuple(out)


def _feature_only(column: str) -> bool:
    base = column.removesuffix("_robust").removesuffix("_reader_latex").removesuffix("_reader")
    return base in FEATURE_ONLY


def _acc_row(
    method: str, y: np.ndarray, pred: np.ndarray, groups: np.ndarray, seed: int, n_boot: int
) -> dict:
    est, lo, hi = bootstrap_ci(y, pred, "accuracy", n_boot=n_boot, seed=seed, groups=groups)
    bal = float(np.mean([np.mean(pred[y == c] == c) for c in (False, True) if np.any(y == c)]))
    return {"method": method, "accuracy": est, "lo": lo, "hi": hi, "balanced_accuracy": bal}


def _calibrated_methods(
    data: Data,
    scores: pd.DataFrame,
    metrics: list[str],
    cols: list[str],
    tr: np.ndarray,
    te: np.ndarray,
    panda_fit: bool,
    add: Callable[..., None],
) -> list[dict]:
    """The methods besides the exported judge (thresholds, fusion, stackers, PANDA refit):
    ``add`` records them; returns nothing extra (kept out with ``--judge-only``)."""
    y, g = data.y, data.groups
    Xtr, Xte = scores[cols].iloc[tr], scores[cols].iloc[te]
    yt = y[tr]
    for c in metrics:  # the same metric with a threshold fitted on the N labels
        m = ThresholdClassifier().fit(Xtr[[c]], yt)
        add(f"thr:{c}", m.predict(Xte[[c]]), threshold=m.threshold_)
    m = ThresholdClassifier(column="best").fit(Xtr[metrics], yt)
    add("threshold (best metric on the N labels)", m.predict(Xte[metrics]), chosen=m.column_)
    m = FusionClassifier().fit(Xtr[metrics], yt)
    add(
        "fusion (paper, calibrated thresholds)",
        m.predict(Xte[metrics]),
        chosen="filters="
        + "+".join(f["column"] for f in m.filters_)
        + " voters="
        + "+".join(m.voters_),
    )
    m = StackerClassifier().fit(Xtr, yt, groups=g[tr])
    add("stacker (metrics + shape features)", m.predict(Xte), chosen=f"C={m.C_}")
    m = StackerClassifier().fit(Xtr[metrics], yt, groups=g[tr])
    add("stacker (metrics only)", m.predict(Xte[metrics]), chosen=f"C={m.C_}")
    if panda_fit:
        items_tr = [data.items[i] for i in tr]
        items_te = [data.items[i] for i in te]
        m = PandaFitClassifier().fit(items_tr, yt, groups=g[tr])
        pred = m.predict(items_te)
        add("PANDA refitted (labels + shipped data)", pred, chosen=f"alpha={m.alpha_}")
    return []


def run_split(
    data: Data,
    scores: pd.DataFrame,
    size: int,
    seed: int,
    *,
    panda_fit: bool,
    n_boot: int,
    tmp: Path,
    judge_only: bool = False,
) -> list[dict]:
    """Every method fitted on ``size`` labels (seed), measured on the remaining rows."""
    y, g = data.y, data.groups
    tr, te = held_out_split(len(y), size, groups=g, seed=seed)
    cols = score_columns(scores)
    metrics = [c for c in cols if not _feature_only(c)]
    Xtr, Xte = scores[cols].iloc[tr], scores[cols].iloc[te]
    yt, yte, gte = y[tr], y[te], g[te]
    rows: list[dict] = []

    def add(method: str, pred: np.ndarray, **extra: object) -> None:
        rows.append({**_acc_row(method, yte, np.asarray(pred, bool), gte, seed, n_boot), **extra})

    for c in metrics:  # uncalibrated, at each metric's shipped threshold
        add(f"uncal:{c}", scores[f"{c}__dec"].to_numpy()[te])
    if "pedants" in scores.columns:
        add("PEDANTS (qa-metrics)", scores["pedants__dec"].to_numpy()[te])
    if not judge_only:
        rows += _calibrated_methods(data, scores, metrics, cols, tr, te, panda_fit, add)

    # The exported judge: what `qaeval calibrate` writes, saved, loaded back and applied.
    specs = []
    by_col = {c: (mid, params) for c, mid, params in common.METRICS}
    for c in cols:
        mid, params = by_col[c]
        specs.append(FeatureSpec.from_metric(get_metric(mid, **params), c))
    judge, report = fit_judge(
        Xtr.reset_index(drop=True),
        yt,
        specs,
        groups=g[tr],
        texts=items_frame([data.items[i] for i in tr]),
        cv=CrossValidation(n_boot=200, seed=seed),
        fitted_on={"dataset": data.name},
    )
    path = judge.save(tmp / f"judge_{data.name}_{size}_{seed}.json")
    loaded = Judge.from_config(path)
    out = loaded.judge_scores(Xte[loaded.columns].reset_index(drop=True))
    pred = out["judge_correct"].to_numpy()
    add(
        "exported judge (fit_judge -> JSON -> applied)",
        pred,
        chosen=f"{report.winner} on {len(loaded.columns)} metric(s)",
        cv_accuracy=judge.quality["cv_accuracy"],
    )
    # Paired comparisons of the exported judge on the same test rows.
    uncal = {c: scores[f"{c}__dec"].to_numpy()[te] for c in metrics}
    best_c = max(uncal, key=lambda c: np.mean(uncal[c] == yte))
    diffs = {"best uncalibrated (chosen on test)": uncal[best_c]}
    if "pedants" in scores.columns:
        diffs["PEDANTS"] = scores["pedants__dec"].to_numpy()[te]
    for name, other in diffs.items():
        d = paired_bootstrap(yte, pred, other, n_boot=n_boot, seed=seed, groups=gte)
        rows.append(
            {
                "method": f"judge - {name}",
                "accuracy": d["diff"],
                "lo": d["lo"],
                "hi": d["hi"],
                "chosen": best_c if name.startswith("best") else "",
            }
        )
    for r in rows:
        r.update(dataset=data.name, size=size, seed=seed, n_train=len(tr), n_test=len(te))
    return rows


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds of accuracy and of the per-split CI bounds, plus the seed spread."""
    agg = frame.groupby(["dataset", "method", "size"], sort=False).agg(
        accuracy=("accuracy", "mean"),
        sd=("accuracy", "std"),
        lo=("lo", "mean"),
        hi=("hi", "mean"),
        seeds=("seed", "nunique"),
        n_test=("n_test", "mean"),
    )
    return agg.reset_index()


def _fmt(acc: float, lo: float, hi: float, sd: float, diff: bool = False) -> str:
    sign = "+" if diff and acc >= 0 else ""
    return f"{sign}{100 * acc:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] ±{100 * (sd or 0):.1f}"


def write_summary(frame: pd.DataFrame, path: Path) -> str:
    s = summarise(frame)
    lines = []
    for ds in s["dataset"].unique():
        sub = s[s["dataset"] == ds]
        sizes = sorted(sub["size"].unique())
        fds = frame[frame["dataset"] == ds]
        n_all = int((fds["n_train"] + fds["n_test"]).max())
        lines.append(f"\n### {ds}\n")
        lines.append(
            "Test accuracy (%) on the rows not used for fitting: mean over seeds "
            "[mean 95% bootstrap CI over questions] ±sd over seeds.\n"
        )
        lines.append("| method | " + " | ".join(f"N = {n}" for n in sizes) + " |")
        lines.append("|---|" + "---|" * len(sizes))
        uncal = sub[sub["method"].str.startswith("uncal:")]
        best_uncal = (
            uncal.groupby("method")["accuracy"].mean().sort_values(ascending=False).index[:3]
        )
        thr = sub[sub["method"].str.startswith("thr:")]
        best_thr = thr.groupby("method")["accuracy"].mean().sort_values(ascending=False).index[:3]
        order = (
            ["PEDANTS (qa-metrics)", *best_uncal, *best_thr]
            + [
                m
                for m in sub["method"].unique()
                if not m.startswith(("uncal:", "thr:", "judge - ")) and m != "PEDANTS (qa-metrics)"
            ]
            + [m for m in sub["method"].unique() if m.startswith("judge - ")]
        )
        for m in order:
            cells = []
            for n in sizes:
                r = sub[(sub["method"] == m) & (sub["size"] == n)]
                if r.empty:
                    cells.append("-")
                    continue
                r = r.iloc[0]
                cells.append(_fmt(r.accuracy, r.lo, r.hi, r.sd, diff=m.startswith("judge - ")))
            label = m.replace("uncal:", "uncalibrated ").replace("thr:", "calibrated threshold ")
            if m.startswith("judge - "):
                label = f"**{label}** (points)"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append(f"\n({n_all} labelled rows.)")
        chosen = frame[
            (frame["dataset"] == ds)
            & (frame["method"] == "exported judge (fit_judge -> JSON -> applied)")
        ]
        picks = chosen.groupby("size")["chosen"].agg(lambda v: ", ".join(sorted(set(v))))
        for n, p in picks.items():
            lines.append(f"- exported judge at N = {n}: {p}")
    text = "\n".join(lines) + "\n"
    path.write_text(text, "utf-8")
    return text


def metric_table(data: Data, scores: pd.DataFrame, n_boot: int) -> str:
    """Every default metric (and PEDANTS) at its shipped threshold on all labelled rows."""
    cols = [c for c in score_columns(scores) if not _feature_only(c)]
    if "pedants" in scores.columns:
        cols.append("pedants")
    rows = []
    for c in cols:
        pred = scores[f"{c}__dec"].to_numpy(dtype=bool)
        r = _acc_row(c, data.y, pred, data.groups, 0, n_boot)
        rows.append(r)
    rows.sort(key=lambda r: -r["accuracy"])
    out = [
        f"\n### {data.name}: every default metric at its shipped threshold, all {len(data.y)} "
        "labelled rows\n",
        "| metric | accuracy (%) [95% CI] | balanced accuracy (%) |",
        "|---|---|---|",
    ]
    for r in rows:
        name = "PEDANTS (qa-metrics 0.2.42)" if r["method"] == "pedants" else r["method"]
        out.append(
            f"| {name} | {100 * r['accuracy']:.1f} [{100 * r['lo']:.1f}, {100 * r['hi']:.1f}] "
            f"| {100 * r['balanced_accuracy']:.1f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--sizes", nargs="+", type=int, default=[100, 200, 300])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--no-panda-fit", action="store_true", help="skip the slow PANDA refit")
    ap.add_argument("--metrics-only", action="store_true", help="only the per-metric table")
    ap.add_argument("--robust", action="store_true", help="add the robust profile's columns")
    ap.add_argument(
        "--robust-only", action="store_true", help="every normalising input at robust only"
    )
    ap.add_argument(
        "--default", action="store_true", help="the inputs as `qaeval calibrate` reads them"
    )
    ap.add_argument(
        "--judge-only",
        action="store_true",
        help="only the exported judge (and the uncalibrated metrics it is compared with)",
    )
    args = ap.parse_args()
    tag = ""
    if args.default:
        common.METRICS = default_inputs()
        tag = "_default"
    elif args.robust_only:
        common.METRICS = ROBUST_ONLY_INPUTS
        tag = "_robustonly"
    elif args.robust:
        common.METRICS = DEFAULT_METRICS + ROBUST_INPUTS
        tag = "_robust"
    RESULTS.mkdir(parents=True, exist_ok=True)
    tables = []
    for name in args.datasets:
        data = load_data(name)
        scores = cached_scores(data, log=lambda m: print(m, flush=True))
        tables.append(metric_table(data, scores, args.n_boot))
    (RESULTS / f"metrics{tag}.md").write_text("".join(tables), "utf-8")
    print("".join(tables))
    if args.metrics_only:
        return
    frames = []
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in args.datasets:
            data = load_data(name)
            print(f"{name}: {len(data.y)} labelled rows, scoring (cached) ...", flush=True)
            scores = cached_scores(data, log=lambda m: print(m, flush=True))
            rows = []
            for size in args.sizes:
                for seed in range(args.seeds):
                    t0 = time.time()
                    rows += run_split(
                        data,
                        scores,
                        size,
                        seed,
                        panda_fit=not args.no_panda_fit,
                        n_boot=args.n_boot,
                        tmp=Path(tmpdir),
                        judge_only=args.judge_only,
                    )
                    judge = next(  # the paired rows after it depend on the anchors present
                        (r for r in reversed(rows) if r["method"].startswith("exported")), {}
                    )
                    print(
                        f"  N={size} seed={seed}: judge {100 * judge.get('accuracy', np.nan):.1f}"
                        f" ({judge.get('chosen', '')}) {time.time() - t0:.0f}s",
                        flush=True,
                    )
            frame = pd.DataFrame(rows)
            frame.to_csv(RESULTS / f"calibration{tag}_{name}.csv", index=False)
            frames.append(frame)
    text = write_summary(pd.concat(frames), RESULTS / f"summary{tag}.md")
    print(text)


if __name__ == "__main__":
    main()
