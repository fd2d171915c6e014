"""Labels chosen by doubt still count (issue 24, item 1) on real labelled data.

    .venv/bin/python experiments/every_label_estimates.py

Per dataset (NQ301, MMLU-Pro) and seed (0-4): the cheap judge's probabilities on the test
rows come from the cached out-of-fold fits of ``cascade.py`` (``cache/cascade_tier1_*.npz``:
calibrated on 300 labels drawn by whole question; every other labelled row is the test set,
the "dataset" here). For 10% and 20% of the test rows labelled, ``DRAWS`` draws per seed:

* **selection-aware**: each row drawn independently with probability
  :func:`~qaeval_core.analysis.selection_design.inclusion_probabilities` (growing with the
  judge's doubt, the floor half the uniform rate, summing to the budget), its label given
  with its ``sample_probability``; :func:`~qaeval_core.analysis.estimates.estimate_accuracy`
  then weighs every label by 1 / probability;
* **human-only**: the same number of labels from a uniform random sample, Wilson interval
  (``human_only`` of ``estimate_accuracy``);
* **uniform PPI** (today's): PPI on that uniform sample, for reference.

Reported per QA model (and all rows): coverage of the model's accuracy on the test rows (the
human labels) by 95% intervals, and mean width over human-only's. Models with fewer than 10
labels in a draw get no interval (as in the estimator) and are left out of that draw.
Output: ``experiments/results/every_label_estimates.md`` and ``.csv``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, RESULTS, load_data, write_result
from qaeval_core.analysis.estimates import ALL_MODELS, estimate_accuracy
from qaeval_core.analysis.selection_design import (
    inclusion_probabilities,
    poisson_draw,
)
from qaeval_core.schema import split_models

SEEDS = range(5)
SHARES = (0.10, 0.20)
DRAWS = 40
#: The floor as a fraction of the uniform rate (share): every row keeps half its uniform chance.
FLOOR_OF_UNIFORM = 0.5


def tier1_probabilities(name: str, sha256: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(test rows, the cheap judge's P(correct) on them) from ``cascade.py``'s cache."""
    path = CACHE / f"cascade_tier1_{name}_{seed}_{sha256[:12]}.npz"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run experiments/cascade.py first (it fits it).")
    fit = np.load(path)
    return fit["te"], fit["p_te"]


def _truth(models: pd.Series, y: np.ndarray) -> pd.Series:
    names = [ms if isinstance(ms, str) else None for ms in models]
    pairs = [(m, float(v)) for ms, v in zip(names, y, strict=True) for m in split_models(ms)]
    truth = pd.DataFrame(pairs, columns=["model", "y"]).groupby("model")["y"].mean()
    truth[ALL_MODELS] = float(np.mean(y))
    return truth


def _estimates(frame: pd.DataFrame) -> pd.DataFrame:
    table = estimate_accuracy(
        frame, prediction="judge_probability", label_scale="binary", min_labels=10
    )
    return table.set_index("model")


def run(name: str) -> list[dict]:
    data = load_data(name)
    rows = []
    for seed in SEEDS:
        te, p = tier1_probabilities(name, data.sha256, seed)
        y = data.y[te].astype(float)
        models = pd.Series([data.items[i].qa_model for i in te])
        truth = _truth(models, y)
        base = pd.DataFrame({"qa_model": models, "judge_probability": p})
        rng = np.random.default_rng(5000 + seed)
        for share in SHARES:
            budget = share * len(te)
            pi = inclusion_probabilities(p, budget, FLOOR_OF_UNIFORM * share)
            for draw in range(DRAWS):
                chosen = poisson_draw(pi, int(rng.integers(2**31)))
                weighted = base.assign(
                    gold_label=np.where(chosen, y, np.nan),
                    sample_probability=np.where(chosen, pi, np.nan),
                )
                picked = rng.choice(len(te), size=int(chosen.sum()), replace=False)
                uniform_mask = np.zeros(len(te), bool)
                uniform_mask[picked] = True
                uniform = base.assign(
                    gold_label=np.where(uniform_mask, y, np.nan),
                    label_sample=np.where(uniform_mask, "random", ""),
                )
                w, u = _estimates(weighted), _estimates(uniform)
                for model in truth.index:
                    a, b = w.loc[model], u.loc[model]
                    if not (np.isfinite(a["ppi_ci_low"]) and np.isfinite(b["human_only_ci_low"])):
                        continue
                    t = truth[model]
                    rows.append(
                        {
                            "dataset": name,
                            "seed": seed,
                            "share": share,
                            "draw": draw,
                            "model": model,
                            "labels": int(a["n_labelled"]),
                            "aware_covers": a["ppi_ci_low"] <= t <= a["ppi_ci_high"],
                            "aware_width": a["ppi_ci_high"] - a["ppi_ci_low"],
                            "human_covers": b["human_only_ci_low"] <= t <= b["human_only_ci_high"],
                            "human_width": b["human_only_ci_high"] - b["human_only_ci_low"],
                            "uniform_ppi_covers": b["ppi_ci_low"] <= t <= b["ppi_ci_high"],
                            "uniform_ppi_width": b["ppi_ci_high"] - b["ppi_ci_low"],
                        }
                    )
    return rows


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    g = runs.groupby(["dataset", "share", "model"])
    out = g.agg(
        draws=("draw", "size"),
        labels=("labels", "mean"),
        aware_coverage=("aware_covers", "mean"),
        human_coverage=("human_covers", "mean"),
        uniform_ppi_coverage=("uniform_ppi_covers", "mean"),
        aware_width=("aware_width", "mean"),
        human_width=("human_width", "mean"),
        uniform_ppi_width=("uniform_ppi_width", "mean"),
    ).reset_index()
    out["aware_over_human"] = out["aware_width"] / out["human_width"]
    out["uniform_ppi_over_human"] = out["uniform_ppi_width"] / out["human_width"]
    return out


def main() -> None:
    start = time.time()
    runs = pd.DataFrame([r for name in DATASETS for r in run(name)])
    table = summarise(runs)
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "every_label_estimates.csv", index=False, float_format="%.4f")
    lines = [
        "# Labels chosen by doubt still count: selection-aware intervals on real data",
        "",
        "`experiments/every_label_estimates.py` (issue 24, item 1). Cheap judge: the cached "
        "out-of-fold fits of `cascade.py` (300 calibration labels per seed); population: the "
        f"test rows; seeds 0-4, {DRAWS} draws per seed and share. Selection-aware: rows drawn "
        "with probability growing with the judge's doubt (floor half the uniform rate), every "
        "label weighted by 1 / probability (inverse-probability-weighted PPI). Human-only: "
        "Wilson interval of the same number of labels drawn uniformly. Uniform PPI: today's PPI "
        "on that uniform sample. 95% intervals; coverage of the model's accuracy on the test "
        "rows; width relative to human-only (mean widths). Models with < 10 labels in a draw "
        "are left out of that draw.",
        "",
        "| dataset | labelled | model | draws | labels | coverage: aware / human / uniform "
        "PPI | width: aware / human | aware width / human | uniform PPI width / human |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        lines.append(
            f"| {r.dataset} | {r.share:.0%} | {r.model} | {r.draws} | {r.labels:.0f} | "
            f"{r.aware_coverage:.3f} / {r.human_coverage:.3f} / {r.uniform_ppi_coverage:.3f} | "
            f"{r.aware_width:.3f} / {r.human_width:.3f} | {r.aware_over_human:.2f} | "
            f"{r.uniform_ppi_over_human:.2f} |"
        )
    overall = table[table["model"] == ALL_MODELS]
    per_model = table[table["model"] != ALL_MODELS]
    lines += [
        "",
        "Summary (per dataset and share; per-model rows, then all rows):",
        "",
    ]
    for (ds, share), part in per_model.groupby(["dataset", "share"]):
        o = overall[(overall["dataset"] == ds) & (overall["share"] == share)].iloc[0]
        lines.append(
            f"- {ds}, {share:.0%} labelled: per-model coverage {part['aware_coverage'].min():.3f}"
            f"-{part['aware_coverage'].max():.3f} (human-only "
            f"{part['human_coverage'].min():.3f}-{part['human_coverage'].max():.3f}); width "
            f"{part['aware_over_human'].min():.2f}-{part['aware_over_human'].max():.2f} of "
            f"human-only (uniform PPI {part['uniform_ppi_over_human'].min():.2f}-"
            f"{part['uniform_ppi_over_human'].max():.2f}); all rows: coverage "
            f"{o['aware_coverage']:.3f}, width {o['aware_over_human']:.2f} of human-only "
            f"(uniform PPI {o['uniform_ppi_over_human']:.2f})."
        )
    lines += ["", f"Run time {time.time() - start:.0f} s."]
    write_result("every_label_estimates.md", lines)


if __name__ == "__main__":
    main()
