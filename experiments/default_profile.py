"""Issue 33: may the calibration's default inputs read answers with the robust profile?

Run from the repository root, after the judge-only runs of ``calibration.py`` (same splits)::

    .venv/bin/python experiments/calibration.py --judge-only --sizes 300 --no-panda-fit \\
        --n-boot 1000   # then: results/calibration_<d>.csv -> calibration_judgeonly_<d>.csv
    # the default before the answer-shape inputs kept LaTeX (SHAPE_ROBUST_TEXT = "reader"):
    .venv/bin/python experiments/calibration.py --default --judge-only --sizes 300 \\
        --no-panda-fit --n-boot 1000   # -> calibration_default_reader_<d>.csv
    # the default now (SHAPE_ROBUST_TEXT = "reader_latex"):
    .venv/bin/python experiments/calibration.py --default --judge-only --sizes 300 \\
        --no-panda-fit --n-boot 1000   # -> calibration_default_<d>.csv
    .venv/bin/python experiments/default_profile.py     # -> results/default_profile.md

Compares the exported judge (``fit_judge`` -> JSON -> applied) fitted on the 28 default inputs
at each metric's own reading (*spaced*, the default before issue 33) with the default since
(every input at robust), its answer-shape inputs on the reader text with LaTeX flattened
(*previous default*) and with LaTeX kept as written (*default*), seed by seed on the same
splits; then the logistic stacker alone (the judge's usual winner) on the cached scores with
the answer-shape inputs read each way. Where a dataset's answer-shape inputs read every row
alike both ways (no LaTeX: NQ301), the previous default's run stands for the default's
(checked here, on the cached columns).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, RESULTS, load_data
from qaeval_core.calibrate import held_out_split
from qaeval_core.calibrate.inputs import DEFAULT_METRICS, FEATURE_ONLY
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.metrics.base import get_metric
from qaeval_core.text.profiles import clean_answer, reader_text


def _fmt(j: pd.DataFrame) -> str:
    acc, lo, hi = (100 * j[c].mean() for c in ("accuracy", "lo", "hi"))
    return f"{acc:.1f} [{lo:.1f}, {hi:.1f}] ±{100 * j['accuracy'].std(ddof=1):.1f}"


def _same_shape_reading(ds: str) -> bool:
    """Whether every answer-shape input reads each labelled row of ``ds`` alike on ``reader``
    and ``reader_latex`` (then both default judges are one judge on this dataset)."""
    items = load_data(ds).items
    for f in FEATURE_ONLY:
        a, b = (
            get_metric(f, normalize="robust", robust_text=t).score_batch(items).scores
            for t in ("reader", "reader_latex")
        )
        if not np.array_equal(a, b):
            return False
    return True


def judges() -> list[str]:
    lines = [
        "| dataset | spaced judge | previous default | default judge | previous default - "
        "spaced (points), per seed | mean | default - spaced (points), per seed | mean |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ds in DATASETS:
        runs = []
        for tag in ("judgeonly", "default_reader", "default"):
            path = RESULTS / f"calibration_{tag}_{ds}.csv"
            if tag == "default" and not path.exists() and _same_shape_reading(ds):
                path = RESULTS / f"calibration_default_reader_{ds}.csv"
            f = pd.read_csv(path)
            runs.append(f[f["method"].str.startswith("exported")].sort_values("seed"))
        a, b, c = runs
        cells = []
        for other in (b, c):
            d = 100 * (other["accuracy"].to_numpy() - a["accuracy"].to_numpy())
            cells += [", ".join(f"{x:+.1f}" for x in d), f"**{d.mean():+.2f}**"]
        lines.append(f"| {ds} | {_fmt(a)} | {_fmt(b)} | {_fmt(c)} | " + " | ".join(cells) + " |")
    return lines


def stacker_variants() -> list[str]:
    lines = ["| dataset | inputs | stacker accuracy (%), mean of 5 seeds |", "|---|---|---|"]
    base = [c for c, _, _ in DEFAULT_METRICS]
    ids = {c: m for c, m, _ in DEFAULT_METRICS}
    for ds in DATASETS:
        data = load_data(ds)
        scores = pd.read_parquet(CACHE / f"scores_{ds}.parquet")
        reader = [
            replace(
                it,
                candidate=reader_text(it.candidate, it.references),
                references=tuple(clean_answer(str(r), "robust") for r in it.references),
            )
            for it in data.items
        ]
        for f in FEATURE_ONLY:
            scores[f"{f}_reader"] = get_metric(ids[f]).score_batch(reader).scores
            scores[f"{f}_reader_latex"] = (
                get_metric(ids[f], normalize="robust", robust_text="reader_latex")
                .score_batch(data.items)
                .scores
            )
        variants = {
            "spaced (all 28)": base,
            "robust (all 28)": [f"{c}_robust" for c in base],
            "robust; answer-shape features spaced": [
                c if c in FEATURE_ONLY else f"{c}_robust" for c in base
            ],
            "robust; answer-shape features on the reader text (LaTeX flattened)": [
                f"{c}_reader" if c in FEATURE_ONLY else f"{c}_robust" for c in base
            ],
            "robust; answer-shape features on the reader text, LaTeX kept (default)": [
                f"{c}_reader_latex" if c in FEATURE_ONLY else f"{c}_robust" for c in base
            ],
        }
        for name, cols in variants.items():
            accs = []
            for seed in range(5):
                tr, te = held_out_split(len(data.y), 300, groups=data.groups, seed=seed)
                model = StackerClassifier().fit(
                    scores[cols].iloc[tr], data.y[tr], groups=data.groups[tr]
                )
                accs.append(np.mean(model.predict(scores[cols].iloc[te]) == data.y[te]))
            lines.append(f"| {ds} | {name} | {100 * np.mean(accs):.2f} |")
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    text = [
        "## The default judge's profile: spaced (before issue 33) vs robust (the default since)\n",
        "Exported judge (`fit_judge` -> JSON -> applied, what `qaeval calibrate` writes) fitted "
        "on N = 300 labels drawn by whole question, measured on every other labelled row; 5 "
        "seeds, the same splits for all; the 28 default inputs (static_cosine and "
        "static_keyword included). *spaced*: each input at its own reading; *previous "
        "default*: every input that normalises at robust, the answer-shape inputs "
        "(number_match, number_agree, number_closeness(_scaled), brevity, no_hedge) on the "
        'reader text with LaTeX flattened (`robust_text="reader"`); *default*: what `qaeval '
        "calibrate` reads now (`profile_specs` at `DEFAULT_PROFILE`): the same with the "
        'answer-shape inputs on the reader text with LaTeX as written (`robust_text="reader_latex"`'
        "; the number readers parse `\\frac`, `\\sqrt`, `\\pi` themselves). Mean over "
        "seeds [mean of the per-split 95% bootstrap CIs over questions, 1,000 resamples] ±sd.\n",
        *judges(),
        "\nOn NQ301 the answer-shape inputs read all 1,490 labelled rows alike both ways (no "
        "LaTeX there), so the previous default's run is the default's too.\n",
        "\nThe logistic stacker alone (the judge's usual winner) on the same splits, with the "
        "answer-shape inputs read each way:\n",
        *stacker_variants(),
        "\nCommands: see the docstring of `experiments/default_profile.py`.",
    ]
    (RESULTS / "default_profile.md").write_text("\n".join(text) + "\n", "utf-8")
    print("\n".join(text))


if __name__ == "__main__":
    main()
