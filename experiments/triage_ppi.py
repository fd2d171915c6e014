"""Triage and prediction-powered accuracies on real labelled data (issue 12's protocol).

    .venv/bin/python experiments/triage_ppi.py            # both sets, 5 seeds, 200 draws

Per dataset (``kamalloo_nq301``, ``answer_matching_mmlu_pro``) and seed (0-4), as in
``calibration.py``: the judge is calibrated (``fit_judge`` with the default inputs and
candidates) on 300 labels drawn by whole question; every other labelled row is the test set.

1. **Triage**: on the test rows, the combined accuracy when the judge's ``s`` most doubtful
   items (highest ``judge_doubt``) go to people (counted right) and the judge decides the rest,
   for s = 0, 10, 20, 30%; 95% bootstrap CI over questions, averaged over seeds; next to routing
   the same share at random (expected value).
2. **Model accuracies**: the test rows are the population; each QA model's true accuracy is
   its mean human verdict there. Per draw, ``n`` test rows (50, 100, 200) are labelled at
   random and :func:`qaeval_core.analysis.estimates.estimate_accuracy` gives the PPI and the
   human-only interval per model (95%); 40 draws per seed, 200 per ``n``. Reported: coverage of
   the true accuracy by each interval, and the mean width of PPI over human-only, over the
   (model, draw) pairs where both exist (a model needs >= 10 random labels).

Output: ``experiments/results/triage_ppi.md`` (the tables of experiments/README.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    DATASETS,
    Data,
    cached_scores,
    load_data,
    score_columns,
    write_result,
)
from qaeval_core.analysis.estimates import ALL_MODELS, estimate_accuracy
from qaeval_core.calibrate import CrossValidation, bootstrap_ci, fit_judge, held_out_split
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.judge import FeatureSpec
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import split_models

SIZE = 300
SEEDS = range(5)
SHARES = (0.0, 0.1, 0.2, 0.3)
LABELS = (50, 100, 200)
DRAWS_PER_SEED = 40


def _judge_on_test(data: Data, scores: pd.DataFrame, seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    cols = score_columns(scores)
    by_col = {c: (mid, params) for c, mid, params in DEFAULT_METRICS}
    specs = [FeatureSpec.from_metric(get_metric(by_col[c][0], **by_col[c][1]), c) for c in cols]
    X, y, g = scores[cols], data.y, data.groups
    tr, te = held_out_split(len(y), SIZE, groups=g, seed=seed)
    judge, _ = fit_judge(
        X.iloc[tr].reset_index(drop=True),
        y[tr],
        specs,
        groups=g[tr],
        cv=CrossValidation(n_boot=200, seed=seed),
    )
    out = judge.judge_scores(X.iloc[te][judge.columns].reset_index(drop=True))
    out["qa_model"] = [data.items[i].qa_model or "" for i in te]
    return te, out


def _triage_rows(data: Data, te: np.ndarray, out: pd.DataFrame, seed: int) -> list[dict]:
    y, g = data.y[te], data.groups[te]
    verdict = out["judge_correct"].to_numpy()
    order = np.argsort(-out["judge_doubt"].to_numpy(), kind="stable")
    judge_acc = float(np.mean(verdict == y))
    rows = []
    for share in SHARES:
        routed = np.zeros(len(te), dtype=bool)
        routed[order[: int(round(share * len(te)))]] = True
        combined = np.where(routed, y, verdict)
        est, lo, hi = bootstrap_ci(y, combined, "accuracy", n_boot=1000, seed=seed, groups=g)
        rows.append(
            {
                "seed": seed,
                "share": share,
                "combined": est,
                "lo": lo,
                "hi": hi,
                "random": share + (1 - share) * judge_acc,
            }
        )
    return rows


def _ppi_rows(data: Data, te: np.ndarray, out: pd.DataFrame, seed: int) -> list[dict]:
    y = data.y[te]
    # A row naming several models (the same answer from several systems) counts for each, as
    # in the estimator.
    per_model = [
        (m, float(v)) for ms, v in zip(out["qa_model"], y, strict=True) for m in split_models(ms)
    ]
    truth = pd.DataFrame(per_model, columns=["model", "y"]).groupby("model")["y"].mean()
    truth[ALL_MODELS] = float(np.mean(y))
    rng = np.random.default_rng(1000 + seed)
    rows = []
    for n in LABELS:
        for draw in range(DRAWS_PER_SEED):
            picked = rng.choice(len(te), size=n, replace=False)
            frame = out[["qa_model", "judge_probability"]].copy()
            frame["gold_label"] = np.nan
            frame.loc[picked, "gold_label"] = y[picked].astype(float)
            frame["label_sample"] = None
            frame.loc[picked, "label_sample"] = "random"
            table = estimate_accuracy(
                frame, prediction="judge_probability", label_scale="binary", min_labels=10
            )
            for r in table.itertuples(index=False):
                if not np.isfinite(r.ppi_ci_low) or not np.isfinite(r.human_only_ci_low):
                    continue
                true = truth[r.model]
                rows.append(
                    {
                        "seed": seed,
                        "n": n,
                        "draw": draw,
                        "model": r.model,
                        "overall": r.model == ALL_MODELS,
                        "ppi_covers": r.ppi_ci_low <= true <= r.ppi_ci_high,
                        "human_covers": r.human_only_ci_low <= true <= r.human_only_ci_high,
                        "ppi_width": r.ppi_ci_high - r.ppi_ci_low,
                        "human_width": r.human_only_ci_high - r.human_only_ci_low,
                    }
                )
    return rows


def main() -> None:
    triage_lines = [
        "| dataset | share to people | combined accuracy [95% CI] | random share | judge alone |",
        "|---|---|---|---|---|",
    ]
    ppi_lines = [
        "| dataset | labels | models | PPI coverage | human-only coverage | PPI width / "
        "human-only width | overall: PPI coverage, human-only coverage | overall: PPI width, "
        "human-only width |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in DATASETS:
        data = load_data(name)
        scores = cached_scores(data, log=lambda *_a: None)
        triage, ppi = [], []
        for seed in SEEDS:
            te, out = _judge_on_test(data, scores, seed)
            triage += _triage_rows(data, te, out, seed)
            ppi += _ppi_rows(data, te, out, seed)
            print(f"{name} seed {seed} done", flush=True)
        t = pd.DataFrame(triage).groupby("share").mean(numeric_only=True)
        alone = t.loc[0.0, "combined"]
        for share, r in t.iterrows():
            triage_lines.append(
                f"| {name} | {share:.0%} | {100 * r.combined:.1f} [{100 * r.lo:.1f}, "
                f"{100 * r.hi:.1f}] | {100 * r.random:.1f} | {100 * alone:.1f} |"
            )
        p = pd.DataFrame(ppi)
        for n, sub in p.groupby("n"):
            per_model = sub[~sub["overall"]]
            overall = sub[sub["overall"]]
            ppi_lines.append(
                f"| {name} | {n} | {per_model['model'].nunique()} | "
                f"{per_model['ppi_covers'].mean():.3f} | {per_model['human_covers'].mean():.3f} | "
                f"{(per_model['ppi_width'] / per_model['human_width']).mean():.2f} | "
                f"{overall['ppi_covers'].mean():.3f}, {overall['human_covers'].mean():.3f} | "
                f"{overall['ppi_width'].mean():.3f}, {overall['human_width'].mean():.3f} |"
            )
    write_result(
        "triage_ppi.md",
        [
            "Triage: combined accuracy on the test rows (judge calibrated on 300 labels, mean "
            "of 5 seeds; CI: 95% bootstrap over questions, averaged).",
            "",
            *triage_lines,
            "",
            "Model accuracies: 95% intervals over 200 random label draws per size (40 per "
            "seed); per-model rows pooled over models with >= 10 random labels.",
            "",
            *ppi_lines,
        ],
    )


if __name__ == "__main__":
    main()
