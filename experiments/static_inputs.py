"""Static inputs (issue 35): MiniLM distilled into token vectors, next to MiniLM and PANDA.

Per dataset (NQ301, MMLU-Pro; every labelled row), from the score cache of
``experiments/common.py`` (the static columns are scored there; the others are reused):

1. **Single inputs**: ROC AUC on every labelled row, and the held-out accuracy of the metric's
   fixed default decision on the rows ``held_out_split`` leaves out (5 seeds, N=300).
2. **Judges**, ``fit_judge`` on N=300 labels drawn by question, saved, loaded, applied to the
   other rows (``experiments/cost_aware.py``'s protocol), on four input sets:
   ``cheap`` (lexical + vqa + shape), ``cheap+static``, ``cheap+minilm`` (embed_cosine,
   smile_paper, avert: the judge the issue reported) and ``defaults`` (every default input with
   the cost table: the cost-aware rule picks).
3. **Speed** of the static pair on the dataset's rows, in this process (warm-up first).

Costs for ``defaults``: ``experiments/cache/costs_kamalloo_nq301.json`` (measured earlier on
this machine, every family but ``static``) plus the inputs it lacks (the static pair, the
number-closeness features added since) measured here, for both datasets. Writes
``experiments/results/static_inputs.md``::

    .venv/bin/python experiments/static_inputs.py --seeds 5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, RESULTS, cached_scores, load_data
from qaeval_core.calibrate import CrossValidation, fit_judge, held_out_split
from qaeval_core.calibrate.cost import CostTable, InputCost, input_family
from qaeval_core.calibrate.inputs import metric_specs
from qaeval_core.judge import FeatureSpec, Judge, items_frame

CHEAP = [
    "em",
    "contains",
    "f1",
    "precision",
    "recall",
    "word_match",
    "vqa_accuracy",
    "soft_vqa_accuracy",
    "number_match",
    "number_agree",
    "brevity",
    "no_hedge",
    "number_closeness",
    "number_closeness_scaled",
]
STATIC = ["static_cosine", "static_keyword"]
MINILM = ["embed_cosine", "smile_paper", "avert"]
SINGLE = ["f1", "panda", "embed_cosine", "smile", "avert", *STATIC, "pedants"]
SETS = {"cheap": CHEAP, "cheap+static": CHEAP + STATIC, "cheap+minilm": CHEAP + MINILM}


def inproc_cost(columns: list[str], items: list) -> tuple[list[InputCost], float]:
    """Seconds per 1,000 rows on ``items`` (after a warm-up) of cheap inputs the earlier cost
    table lacks (the static pair, and inputs added since it was measured), and their load."""
    specs = dict(metric_specs(None))
    t0 = time.perf_counter()
    for col in columns:
        specs[col].score_batch(items[:2])
    load = time.perf_counter() - t0
    out = []
    for col in columns:
        t0 = time.perf_counter()
        specs[col].score_batch(items)
        s = (time.perf_counter() - t0) * 1000 / len(items)
        out.append(InputCost(col, input_family(specs[col]), s))
    return out, load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--size", type=int, default=300)
    args = ap.parse_args()
    specs = metric_specs(None)
    features = {c: FeatureSpec.from_metric(m, c) for c, m in specs}
    legacy = CostTable.from_dict(json.loads((CACHE / "costs_kamalloo_nq301.json").read_text()))
    lines = ["# Static inputs: MiniLM distilled (issue 35)", ""]
    singles, judges, speed = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in DATASETS:
            data = load_data(name)
            scores = cached_scores(data, log=lambda m: print(m, flush=True))
            known = {c.column for c in legacy.inputs}
            missing = [c for c, _ in specs if c not in known or c in STATIC]
            st, load = inproc_cost(missing, data.items)
            per_1000 = sum(c.s_per_1000 for c in st if c.family == "static")
            speed.append(f"| {name} | {len(data.items)} | {per_1000:.3f} | {load:.2f} |")
            costs = CostTable(
                inputs=tuple(c for c in legacy.inputs if c.column not in missing) + tuple(st),
                rows=legacy.rows,
                machine=legacy.machine,
                method=legacy.method,
                measured_at=legacy.measured_at,
            )
            for col in SINGLE:
                if col not in scores.columns:
                    continue
                auc = roc_auc_score(data.y, scores[col])
                accs = []
                for seed in range(args.seeds):
                    _, te = held_out_split(len(data.y), args.size, groups=data.groups, seed=seed)
                    accs.append(np.mean(scores[f"{col}__dec"].to_numpy()[te] == data.y[te]))
                singles.append(
                    f"| {name} | {col} | {auc:.3f} | {100 * np.mean(accs):.1f} ± "
                    f"{100 * np.std(accs):.1f} |"
                )
            for rule in [*SETS, "defaults"]:
                cols = SETS.get(rule, [c for c, _ in specs])
                accs, chosen = [], []
                for seed in range(args.seeds):
                    tr, te = held_out_split(len(data.y), args.size, groups=data.groups, seed=seed)
                    kw = {"costs": costs} if rule == "defaults" else {}
                    judge, _ = fit_judge(
                        scores[cols].iloc[tr].reset_index(drop=True),
                        data.y[tr],
                        [features[c] for c in cols],
                        groups=data.groups[tr],
                        texts=items_frame([data.items[i] for i in tr]),
                        cv=CrossValidation(n_boot=200, seed=seed),
                        **kw,
                    )
                    loaded = Judge.from_config(judge.save(Path(tmp) / f"{name}{rule}{seed}.json"))
                    Xte = scores[loaded.columns].iloc[te].reset_index(drop=True)
                    pred = loaded.judge_scores(Xte)["judge_correct"].to_numpy()
                    accs.append(float(np.mean(pred == data.y[te])))
                    chosen.append("+".join(costs.families_of(loaded.columns)))
                    print(
                        f"{name} {rule} seed {seed}: {100 * accs[-1]:.1f}% [{chosen[-1]}]",
                        flush=True,
                    )
                judges.append(
                    f"| {name} | {rule} | {100 * np.mean(accs):.1f} ± {100 * np.std(accs):.1f} "
                    f"| {'; '.join(chosen)} |"
                )
    lines += [
        f"Every labelled row; held-out accuracy over {args.seeds} seeds of N={args.size} labels "
        "drawn by question (mean ± sd, %). Written by `experiments/static_inputs.py`.",
        "",
        "## Single inputs (default decision)",
        "",
        "| dataset | input | ROC AUC (all rows) | held-out accuracy % |",
        "|---|---|---:|---:|",
        *singles,
        "",
        "## Judges (fit_judge on N labels, saved, loaded, applied to the rest)",
        "",
        "| dataset | inputs | held-out accuracy % | families per seed |",
        "|---|---|---:|---|",
        *judges,
        "",
        "## Static pair speed (this process, after a warm-up)",
        "",
        "| dataset | rows | s per 1,000 rows (both inputs) | load s |",
        "|---|---:|---:|---:|",
        *speed,
        "",
    ]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "static_inputs.md").write_text("\n".join(lines), "utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
