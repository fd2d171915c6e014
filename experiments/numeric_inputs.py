"""Do graded number inputs help the calibrated judge? (MMLU-Pro's numeric errors)

    OMP_NUM_THREADS=1 .venv/bin/python experiments/numeric_inputs.py            # every config
    OMP_NUM_THREADS=1 .venv/bin/python experiments/numeric_inputs.py --configs default closeness

Per dataset (``kamalloo_nq301``, ``answer_matching_mmlu_pro``) and seed (0-4), exactly as
``calibration.py`` and ``triage_ppi.py``: ``fit_judge`` (default candidates) on 300 labels drawn
by whole question, applied to every other labelled row. Compared input sets (fixed in advance):

* ``default``: ``BASE``, the 24 cached columns that were ``DEFAULT_METRICS`` before this
  experiment (``DEFAULT_METRICS`` less the two closeness inputs it added there);
* ``closeness``: + ``number_closeness`` and ``number_closeness_scaled`` (metrics/shape.py);
* ``closeness_count``: + those two and ``number_count_ratio``;
* ``closeness_strict``: + ``number_closeness`` only;
* ``closeness_list``: + the two closeness inputs and ``list_coverage``;
* ``closeness_list_yesno``: + those three and ``yes_no_agree``.

The closeness inputs helped on MMLU-Pro and became default inputs; the other three did not
help and are defined (and registered) in this script only, so that it still runs as reported.

Measured on the test rows: judge accuracy (95% bootstrap CI over questions), the paired
difference against ``default`` on the same rows (paired bootstrap over questions), and the
triage combined accuracy when 10/20/30% most doubtful items go to people
(``triage_ppi._triage_rows``). The existing columns come from the score cache of
``experiments/common.py`` as stored (read, never rescored here: another change to a metric
would otherwise trigger a long rescoring); the new columns are cheap and computed each run.

Output: ``experiments/results/numeric_inputs.md`` and ``numeric_inputs_runs.csv`` (one row per
config x dataset x seed; a run already in the CSV is skipped, so delete it to refit). The test
verdicts of each run go to ``$TMPDIR/qaeval_numeric_inputs`` for the paired comparisons.
``--seeds 20`` adds the 20-seed table (fits take ~3 s each).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    CACHE,
    DATASETS,
    RESULTS,
    Data,
    load_data,
    mean_sd,
    write_result,
)
from experiments.triage_ppi import SIZE, _triage_rows
from qaeval_core.calibrate import (
    CrossValidation,
    bootstrap_ci,
    fit_judge,
    held_out_split,
    paired_bootstrap,
)
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.judge import FeatureSpec
from qaeval_core.metrics.base import get_metric, register
from qaeval_core.metrics.shape import _Feature
from qaeval_core.schema import Item
from qaeval_core.text.quantities import quantities
from qaeval_core.text.squad import tokens

# --- the three inputs that did not help (they were in metrics/shape.py while measured) --------


def number_count_ratio(candidate: str, references: list[str] | tuple[str, ...]) -> float:
    """``min(n_c, n_r) / max(n_c, n_r)`` for the numbers of the candidate and of the reference
    (max over references): 1 when the candidate gives as many numbers as the reference asks
    for; 1 when neither has a number, 0 when only one side has."""
    nc = len(quantities(candidate or ""))
    best = 0.0
    for ref in references:
        nr = len(quantities(str(ref or "")))
        best = max(best, 1.0 if nc == nr else min(nc, nr) / max(nc, nr))
    return best


_LIST_SPLIT = re.compile(r"\(\s*[a-hA-H1-9]\s*\)|;|,\s|\n|\band\b")
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


def list_coverage(candidate: str, references: list[str] | tuple[str, ...]) -> float:
    """Share of a reference's items (split at ``;``, ``", "``, "and", new lines and ``(a)``
    markers; a reference that is no list is one item) whose tokens are at least half in the
    candidate; max over references. It asks for *every* item of a list answer, where recall
    averages over the tokens."""
    cand = set(tokens(candidate or ""))
    best = 0.0
    for ref in references:
        items = [set(tokens(part)) for part in _LIST_SPLIT.split(str(ref or ""))]
        items = [t for t in items if t]
        if not items:
            continue
        hit = sum(len(t & cand) >= len(t) / 2 for t in items)
        best = max(best, hit / len(items))
    return best


def yes_no_agree(candidate: str, references: list[str] | tuple[str, ...]) -> float:
    """For a reference that opens with Yes or No: 1 when the candidate opens with the same word,
    0 with the other one; 0.5 when either does not open with Yes/No (nothing to compare)."""
    c = _YES_NO.match(candidate or "")
    if not c:
        return 0.5
    said = {m.group(1).lower() for r in references if (m := _YES_NO.match(str(r or "")))}
    if not said:
        return 0.5
    return 1.0 if c.group(1).lower() in said else 0.0


@register
class NumberCountRatio(_Feature):
    """How many numbers the candidate gives against how many the reference has."""

    id = "number_count_ratio"
    description = "min/max of the candidate's and the reference's number counts"

    def _one(self, item: Item) -> tuple[float, dict]:
        return number_count_ratio(item.candidate, item.references), {}


@register
class ListCoverage(_Feature):
    """Share of the reference's list items the candidate covers; see :func:`list_coverage`."""

    id = "list_coverage"
    description = "share of the reference's list items at least half present in the candidate"

    def _one(self, item: Item) -> tuple[float, dict]:
        return list_coverage(item.candidate, item.references), {}


@register
class YesNoAgree(_Feature):
    """Yes/No agreement for references that open with Yes or No (0.5 otherwise)."""

    id = "yes_no_agree"
    description = "1/0 when reference and candidate open with the same/other Yes or No, else 0.5"

    def _one(self, item: Item) -> tuple[float, dict]:
        return yes_no_agree(item.candidate, item.references), {}


# --- the experiment --------------------------------------------------------------------------

SEEDS = range(5)
#: The default inputs as they were when this was measured (DEFAULT_METRICS now has the two).
BASE = tuple(
    m for m in DEFAULT_METRICS if m[0] not in ("number_closeness", "number_closeness_scaled")
)
NEW: dict[str, tuple[str, dict]] = {
    "number_closeness": ("number_closeness", {}),
    "number_closeness_scaled": ("number_closeness_scaled", {}),
    "number_count_ratio": ("number_count_ratio", {}),
    "list_coverage": ("list_coverage", {}),
    "yes_no_agree": ("yes_no_agree", {}),
}
CONFIGS: dict[str, tuple[str, ...]] = {
    "default": (),
    "closeness": ("number_closeness", "number_closeness_scaled"),
    "closeness_count": ("number_closeness", "number_closeness_scaled", "number_count_ratio"),
    "closeness_strict": ("number_closeness",),
    "closeness_list": ("number_closeness", "number_closeness_scaled", "list_coverage"),
    "closeness_list_yesno": (
        "number_closeness",
        "number_closeness_scaled",
        "list_coverage",
        "yes_no_agree",
    ),
}
#: per-run test verdicts for the paired comparisons (kept out of the repository)
PRED_CACHE = Path(tempfile.gettempdir()) / "qaeval_numeric_inputs"
HEADER = (
    "# Graded number inputs (experiments/numeric_inputs.py)\n\n"
    "Judge = `fit_judge` with the default candidates, as `qaeval calibrate` fits it; inputs = "
    "the 24 default columns of the time (cached scores) plus the named columns: the closeness "
    "inputs of qaeval_core/metrics/shape.py, the other three defined in this script."
)


def stored_scores(data: Data) -> pd.DataFrame:
    """The cached ``BASE`` columns, as stored (checked against the data file's hash)."""
    path = CACHE / f"scores_{data.name}.parquet"
    meta = json.loads(path.with_suffix(".json").read_text())
    if meta.get("data_sha256") != data.sha256:
        raise SystemExit(f"{path} was scored on another version of the data; run calibration.py")
    frame = pd.read_parquet(path)
    missing = [c for c, _, _ in BASE if c not in frame.columns]
    if missing:
        raise SystemExit(f"{path} lacks {missing}; run calibration.py first")
    return frame


def add_new_columns(data: Data, frame: pd.DataFrame) -> dict[str, tuple[str, dict]]:
    """Score the new (cheap) inputs on every row; returns column -> (metric id, params)."""
    for col, (mid, params) in NEW.items():
        t0 = time.time()
        frame[col] = np.asarray(get_metric(mid, **params).score_batch(data.items).scores, float)
        print(f"  {data.name} {col}: {time.time() - t0:.1f} s", flush=True)
    return NEW


def judge_on_test(
    data: Data, frame: pd.DataFrame, cols: list[str], by_col: dict, seed: int
) -> tuple[np.ndarray, pd.DataFrame]:
    """``triage_ppi._judge_on_test`` with the input columns named explicitly."""
    specs = [FeatureSpec.from_metric(get_metric(by_col[c][0], **by_col[c][1]), c) for c in cols]
    X, y, g = frame[cols], data.y, data.groups
    tr, te = held_out_split(len(y), SIZE, groups=g, seed=seed)
    judge, _ = fit_judge(
        X.iloc[tr].reset_index(drop=True),
        y[tr],
        specs,
        groups=g[tr],
        cv=CrossValidation(n_boot=200, seed=seed),
    )
    out = judge.judge_scores(X.iloc[te][judge.columns].reset_index(drop=True))
    return te, out


def run(configs: list[str], datasets: list[str], seeds: range) -> pd.DataFrame:
    PRED_CACHE.mkdir(parents=True, exist_ok=True)
    runs_path = RESULTS / "numeric_inputs_runs.csv"
    done = pd.read_csv(runs_path) if runs_path.exists() else pd.DataFrame()
    rows = done.to_dict("records")
    for name in datasets:
        data = load_data(name)
        frame = stored_scores(data)
        by_col = {c: (mid, params) for c, mid, params in BASE}
        by_col.update(add_new_columns(data, frame))
        base = [c for c, _, _ in BASE]
        for config in configs:
            cols = base + list(CONFIGS[config])
            for seed in seeds:
                key = f"{config}__{name}__{seed}"
                if any(r.get("key") == key for r in rows):
                    continue
                t0 = time.time()
                te, out = judge_on_test(data, frame, cols, by_col, seed)
                verdict = out["judge_correct"].to_numpy(dtype=bool)
                np.savez(
                    PRED_CACHE / f"{key}.npz",
                    te=te,
                    verdict=verdict,
                    doubt=out["judge_doubt"].to_numpy(dtype=float),
                )
                y, g = data.y[te], data.groups[te]
                est, lo, hi = bootstrap_ci(y, verdict, "accuracy", n_boot=1000, seed=seed, groups=g)
                row = {
                    "key": key,
                    "config": config,
                    "dataset": name,
                    "seed": seed,
                    "accuracy": est,
                    "lo": lo,
                    "hi": hi,
                }
                for t in _triage_rows(data, te, out, seed):
                    if t["share"] > 0:
                        row[f"triage_{round(100 * t['share'])}"] = t["combined"]
                row["seconds"] = round(time.time() - t0, 1)
                rows.append(row)
                pd.DataFrame(rows).to_csv(runs_path, index=False)
                print(
                    f"{key}: acc {100 * est:.1f} triage20 {100 * row['triage_20']:.1f} "
                    f"({row['seconds']} s)",
                    flush=True,
                )
    return pd.DataFrame(rows)


def paired(
    config: str, name: str, data: Data, seeds: range
) -> tuple[float, float, float, float, int]:
    """Paired difference config - default on each seed's test rows, averaged over seeds."""
    diffs = []
    for seed in seeds:
        a = np.load(PRED_CACHE / f"{config}__{name}__{seed}.npz")
        b = np.load(PRED_CACHE / f"default__{name}__{seed}.npz")
        te = a["te"]
        assert np.array_equal(te, b["te"])
        r = paired_bootstrap(
            data.y[te],
            a["verdict"],
            b["verdict"],
            "accuracy",
            n_boot=1000,
            seed=seed,
            groups=data.groups[te],
        )
        diffs.append(r)
    mean = [float(np.mean([d[k] for d in diffs])) for k in ("diff", "lo", "hi", "p_not_better")]
    better = sum(d["diff"] > 0 for d in diffs) - sum(d["diff"] < 0 for d in diffs)
    return (*mean, better)  # type: ignore[return-value]


def report(runs: pd.DataFrame, seeds: range) -> list[str]:
    lines = [
        f"Seeds {seeds.start}-{seeds.stop - 1}: `fit_judge` on 300 labels drawn "
        "by question, test = every other labelled row. Accuracy: mean over seeds "
        "[mean of the per-seed 95% bootstrap CI over questions] ± sd over seeds. Paired: "
        "config - default on the same test rows, mean over seeds of the paired bootstrap "
        "(estimate [CI], P(diff <= 0); seeds better minus seeds worse). Triage: combined "
        "accuracy with the s most doubtful test rows sent to people.",
        "",
        "| dataset | inputs | judge accuracy | paired vs default | triage 10% | triage 20% "
        "| triage 30% |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in DATASETS:
        data = load_data(name)
        for config in CONFIGS:
            sub = runs[
                (runs.dataset == name) & (runs.config == config) & runs.seed.isin(list(seeds))
            ]
            if len(sub) < len(seeds):
                continue
            acc = (
                f"{100 * sub.accuracy.mean():.1f} [{100 * sub.lo.mean():.1f}, "
                f"{100 * sub.hi.mean():.1f}] ± {100 * sub.accuracy.std(ddof=0):.1f}"
            )
            if config == "default":
                pair = "-"
            else:
                res = paired(config, name, data, seeds)
                pair = (
                    f"{100 * res[0]:+.1f} [{100 * res[1]:+.1f}, {100 * res[2]:+.1f}], "
                    f"p={res[3]:.2f}; {res[4]:+d}"
                )
            tri = " | ".join(mean_sd(list(sub[f"triage_{s}"])) for s in (10, 20, 30))
            extra = ", ".join(CONFIGS[config]) or "the 24 default inputs of the time"
            lines.append(f"| {name} | {config}: {extra} | {acc} | {pair} | {tri} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0..n-1 (the protocol: 5)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        runs = pd.read_csv(RESULTS / "numeric_inputs_runs.csv")
    else:
        runs = run(args.configs, args.datasets, range(args.seeds))
    lines = [HEADER, "", *report(runs, SEEDS)]
    if runs.seed.max() >= 19:
        lines += ["", *report(runs, range(20))]
    write_result("numeric_inputs.md", lines)


if __name__ == "__main__":
    main()
