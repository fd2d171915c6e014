"""Cost-aware calibration (issue 15): does the cheap input set lose accuracy on unseen rows?

The protocol of ``experiments/calibration.py`` for its exported judge, twice per split: N labels
drawn by question (``held_out_split``), ``fit_judge`` on all 24 inputs (the judge before issue
15) and ``fit_judge`` with measured costs and its defaults (the cheapest input families within
0.3 CV points of the best), each saved, loaded back and applied to the other rows::

    .venv/bin/python experiments/cost_aware.py --sizes 300 --seeds 5

Costs are measured once per dataset with :func:`qaeval_core.calibrate.cost.measure_costs` on
300 of its rows (fresh processes) and kept in ``experiments/cache/costs_<dataset>.json``.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, DATASETS, RESULTS, cached_scores, load_data  # noqa: E402
from qaeval_core.calibrate import fit_judge, held_out_split  # noqa: E402
from qaeval_core.calibrate.cost import CostTable, measure_costs  # noqa: E402
from qaeval_core.calibrate.inputs import metric_specs  # noqa: E402
from qaeval_core.judge import FeatureSpec, Judge, items_frame  # noqa: E402


def costs_for(name: str, items: list, log=print) -> CostTable:
    path = CACHE / f"costs_{name}.json"
    if path.exists():
        return CostTable.from_dict(json.loads(path.read_text()))
    log(f"{name}: measuring input costs on 300 rows ...")
    table = measure_costs(metric_specs(None), items, sample=300)
    path.write_text(json.dumps(table.to_dict(), indent=1))
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--sizes", nargs="+", type=int, default=[300])
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    specs = metric_specs(None)
    cols = [c for c, _ in specs]
    features = [FeatureSpec.from_metric(m, c) for c, m in specs]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            data = load_data(name)
            scores = cached_scores(data, log=lambda m: print(m, flush=True))
            costs = costs_for(name, data.items)
            print(f"{name}: family costs {costs.family_costs()}", flush=True)
            for size in args.sizes:
                for seed in range(args.seeds):
                    tr, te = held_out_split(len(data.y), size, groups=data.groups, seed=seed)
                    Xtr = scores[cols].iloc[tr].reset_index(drop=True)
                    Xte = scores[cols].iloc[te].reset_index(drop=True)
                    rules = (("all (before)", {}), ("cheap (default)", {"costs": costs}))
                    for rule, kwargs in rules:
                        t0 = time.time()
                        judge, report = fit_judge(
                            Xtr, data.y[tr], features, groups=data.groups[tr],
                            texts=items_frame([data.items[i] for i in tr]), n_boot=200,
                            seed=seed, **kwargs,
                        )  # fmt: skip
                        path = judge.save(Path(tmp) / f"j_{name}_{size}_{seed}.json")
                        loaded = Judge.from_config(path)
                        pred = loaded.apply_scores(Xte[loaded.columns])["judge_correct"].to_numpy()
                        acc = float(np.mean(pred == data.y[te]))
                        cost = costs.cost_of(loaded.columns)
                        rows.append(
                            {"dataset": name, "size": size, "seed": seed, "rule": rule,
                             "accuracy": acc, "cost_s_per_1000": cost,
                             "inputs": ",".join(costs.families_of(loaded.columns)),
                             "winner": report.winner, "fit_s": time.time() - t0}
                        )  # fmt: skip
                        print(
                            f"  {name} N={size} seed={seed} {rule}: {100 * acc:.1f}% "
                            f"{cost:.2f} s/1000 [{rows[-1]['inputs']}] {rows[-1]['fit_s']:.0f}s",
                            flush=True,
                        )
    frame = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    frame.to_csv(RESULTS / "cost_aware.csv", index=False)
    lines = ["| dataset | N | inputs | test accuracy % (mean ± sd) | s / 1,000 rows | seeds |"]
    lines.append("|---|---:|---|---|---:|---:|")
    for (ds, size, rule), g in frame.groupby(["dataset", "size", "rule"], sort=False):
        lines.append(
            f"| {ds} | {size} | {rule} | {100 * g.accuracy.mean():.1f} ± "
            f"{100 * g.accuracy.std():.1f} | {g.cost_s_per_1000.mean():.2f} | {len(g)} |"
        )
    wide = frame.pivot_table(
        index=["dataset", "size", "seed"], columns="rule", values="accuracy"
    ).reset_index()
    for (ds, size), g in wide.groupby(["dataset", "size"]):
        d = 100 * (g["cheap (default)"] - g["all (before)"])
        lines.append(
            f"\n{ds}, N={size}: cheap - all = {d.mean():+.2f} points (per seed: "
            + ", ".join(f"{x:+.1f}" for x in d)
            + ")"
        )
    text = "\n".join(lines) + "\n"
    (RESULTS / "cost_aware.md").write_text(text, "utf-8")
    print(text)


if __name__ == "__main__":
    main()
