"""Cost-aware calibration (issue 15): does the cheap input set lose accuracy on unseen rows?

The protocol of ``experiments/calibration.py`` for its exported judge, twice per split: N labels
drawn by question (``held_out_split``), ``fit_judge`` on all 24 inputs (the judge before issue
15) and ``fit_judge`` with measured costs and its defaults (the cheapest input families within
0.3 CV points of the best), each saved, loaded back and applied to the other rows::

    .venv/bin/python experiments/cost_aware.py --sizes 300 --seeds 5

Costs are measured once per dataset (never per seed: every seed's judge is priced by the same
table) with :func:`qaeval_core.calibrate.cost.measure_costs` on 300 of its rows, each family in
a fresh process, through the qaeval cost cache (a rerun on the same machine measures nothing;
``--remeasure-costs`` forces it). A table left by an earlier version of this script in
``experiments/cache/costs_<dataset>.json`` is used as it is (same measurement, same method).
Scores come from the score cache of ``experiments/common.py``. Writes
``experiments/results/cost_aware.md`` and ``.csv``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, RESULTS, cached_scores, load_data
from qaeval_core.calibrate import CostPolicy, CrossValidation, fit_judge, held_out_split
from qaeval_core.calibrate.cost import CostTable, measure_costs
from qaeval_core.calibrate.inputs import metric_specs
from qaeval_core.judge import FeatureSpec, Judge, items_frame

RULES = ("all (before)", "cheap (default)")


def costs_for(name: str, items: list, *, remeasure: bool = False, log=print) -> CostTable:
    """One cost table per dataset (see the module docstring)."""
    legacy = CACHE / f"costs_{name}.json"
    if legacy.exists() and not remeasure:
        log(f"{name}: input costs from {legacy.name}")
        return CostTable.from_dict(json.loads(legacy.read_text()))
    log(f"{name}: input costs on 300 rows (cost cache, else fresh processes) ...")
    return measure_costs(metric_specs(None), items, sample=300, remeasure=remeasure, progress=log)


def _mean_ci(x: pd.Series) -> tuple[float, float, float, float]:
    """Mean, 95% t interval over seeds, and sd (in points)."""
    v = 100 * np.asarray(x, dtype=float)
    m, sd = float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0
    half = float(stats.t.ppf(0.975, len(v) - 1) * sd / np.sqrt(len(v))) if len(v) > 1 else 0.0
    return m, m - half, m + half, sd


def report(frame: pd.DataFrame, costs: dict[str, CostTable]) -> str:
    """The markdown summary: per dataset and N, both rules, the paired difference, the choices."""
    lines = [
        "# Cost-aware calibration: cheap default vs all inputs (issue 15)",
        "",
        "Held-out accuracy of the exported judge (fitted on N labels drawn by question, saved, "
        "loaded, applied to every other labelled row), mean over seeds [95% t interval] ± sd, "
        "in %. Cost: measured seconds per 1,000 rows of the judge's input families on this "
        "machine (2 cores, heavily loaded while measured). Written by "
        "`experiments/cost_aware.py`.",
        "",
        "| dataset | N | inputs | held-out accuracy % | s / 1,000 rows | fit s | seeds |",
        "|---|---:|---|---|---:|---:|---:|",
    ]
    for (ds, size, rule), g in frame.groupby(["dataset", "size", "rule"], sort=False):
        m, lo, hi, sd = _mean_ci(g.accuracy)
        lines.append(
            f"| {ds} | {size} | {rule} | {m:.1f} [{lo:.1f}, {hi:.1f}] ± {sd:.1f} | "
            f"{g.cost_s_per_1000.mean():.2f} | {g.fit_s.mean():.0f} | {len(g)} |"
        )
    lines += ["", "## Paired difference (cheap - all), points", ""]
    lines += [
        "| dataset | N | mean [95% CI] ± sd | per seed | within 0.5 points |",
        "|---|---:|---|---|---|",
    ]
    verdicts = []
    wide = frame.pivot_table(index=["dataset", "size", "seed"], columns="rule", values="accuracy")
    for (ds, size), g in wide.reset_index().groupby(["dataset", "size"], sort=False):
        d = g[RULES[1]] - g[RULES[0]]
        m, lo, hi, sd = _mean_ci(d)
        ok = m >= -0.5
        verdicts.append(ok)
        per = ", ".join(f"{100 * x:+.1f}" for x in d)
        lines.append(
            f"| {ds} | {size} | {m:+.2f} [{lo:+.2f}, {hi:+.2f}] ± {sd:.2f} | {per} | "
            f"{'yes' if ok else 'no'} |"
        )
    lines += ["", "## Inputs chosen by the cheap default, per seed", ""]
    lines += [
        "| dataset | N | seed | families | s / 1,000 rows | winner |",
        "|---|---:|---:|---|---:|---|",
    ]
    for r in frame[frame.rule == RULES[1]].itertuples(index=False):
        lines.append(
            f"| {r.dataset} | {r.size} | {r.seed} | {r.inputs.replace(',', ', ')} | "
            f"{r.cost_s_per_1000:.2f} | {r.winner} |"
        )
    lines += ["", "## Measured family costs, seconds per 1,000 rows", ""]
    for ds, table in costs.items():
        fam = ", ".join(f"{f} {c:.3g}" for f, c in table.family_costs().items())
        lines.append(f"* {ds} ({table.rows} rows, {table.source}, {table.measured_at}): {fam}")
    lines += [
        "",
        "Criterion (issue 15): the cheap default within 0.5 points of the all-input judge on "
        f"both datasets: **{'met' if verdicts and all(verdicts) else 'not met'}** "
        "(mean paired difference; a cheap judge better than all inputs counts as within).",
        "",
        "Read with `cost_aware_15seeds.md` (the same rule on 15 splits) and `cost_aware_rules.md` "
        "(the other selection rules tried): five splits are too few to settle a 0.5-point "
        "question.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--sizes", nargs="+", type=int, default=[300])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="Seed of the first split (fresh splits for checking a rule chosen on earlier ones).",
    )
    ap.add_argument("--out", default="cost_aware", help="Name of the results files.")
    ap.add_argument(
        "--cost-tolerance",
        type=float,
        default=None,
        help="Accuracy points a cheaper set may lose (default: fit_judge's default, 0.3).",
    )
    ap.add_argument("--remeasure-costs", action="store_true")
    args = ap.parse_args()
    specs = metric_specs(None)
    cols = [c for c, _ in specs]
    features = [FeatureSpec.from_metric(m, c) for c, m in specs]
    rows, tables = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            data = load_data(name)
            scores = cached_scores(data, log=lambda m: print(m, flush=True))
            costs = tables[name] = costs_for(
                name,
                data.items,
                remeasure=args.remeasure_costs,
                log=lambda m: print(m, flush=True),
            )
            print(f"{name}: family costs {costs.family_costs()}", flush=True)
            for size in args.sizes:
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    tr, te = held_out_split(len(data.y), size, groups=data.groups, seed=seed)
                    Xtr = scores[cols].iloc[tr].reset_index(drop=True)
                    Xte = scores[cols].iloc[te].reset_index(drop=True)
                    cheap: dict = {"costs": costs}
                    if args.cost_tolerance is not None:
                        loss = args.cost_tolerance / 100
                        cheap["cost_policy"] = CostPolicy(max_accuracy_loss=loss)
                    rules = ((RULES[0], {}), (RULES[1], cheap))
                    for rule, kwargs in rules:
                        t0 = time.time()
                        judge, rep = fit_judge(
                            Xtr,
                            data.y[tr],
                            features,
                            groups=data.groups[tr],
                            texts=items_frame([data.items[i] for i in tr]),
                            cv=CrossValidation(n_boot=200, seed=seed),
                            **kwargs,
                        )
                        fit_s = time.time() - t0
                        path = judge.save(Path(tmp) / f"j_{name}_{size}_{seed}.json")
                        loaded = Judge.from_config(path)
                        pred = loaded.judge_scores(Xte[loaded.columns])["judge_correct"].to_numpy()
                        acc = float(np.mean(pred == data.y[te]))
                        cost = costs.cost_of(loaded.columns)
                        rows.append(
                            {
                                "dataset": name,
                                "size": size,
                                "seed": seed,
                                "rule": rule,
                                "accuracy": acc,
                                "cost_s_per_1000": cost,
                                "inputs": ",".join(costs.families_of(loaded.columns)),
                                "winner": rep.winner,
                                "fit_s": fit_s,
                            }
                        )
                        print(
                            f"  {name} N={size} seed={seed} {rule}: {100 * acc:.1f}% "
                            f"{cost:.2f} s/1000 [{rows[-1]['inputs']}] {fit_s:.0f}s",
                            flush=True,
                        )
    frame = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    frame.to_csv(RESULTS / f"{args.out}.csv", index=False)
    text = report(frame, tables)
    (RESULTS / f"{args.out}.md").write_text(text, "utf-8")
    print(text)


if __name__ == "__main__":
    main()
