"""Run the LLM judge once over every labelled row of the shared sets (cached on disk).

The cascade experiment reads these verdicts from the verdict cache (``<cache>/llm_verdicts
.sqlite``), so this step can be stopped and resumed at any time; rows are taken most doubtful
first (by a cross-validated logistic stacker on the cached cheap scores), interleaving both sets,
so a partial run holds what a cascade sends to the LLM first. Usage:

    .venv/bin/python experiments/llm_verdicts.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from common import DATASETS, load_data
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from qaeval_core.metrics.base import get_metric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=64)
    parser.add_argument(
        "--needs",
        action="store_true",
        help="first the rows cache/cascade_needs.json lists (cascade.py --needs), then the rest",
    )
    args = parser.parse_args()
    ranked = []
    needs = json.loads(Path("cache/cascade_needs.json").read_text()) if args.needs else {}
    for name in DATASETS:
        data = load_data(name)
        frame = pd.read_parquet(f"cache/scores_{name}.parquet")
        cols = [c for c in frame.columns if "__" not in c]
        X = frame[cols].fillna(0.0).to_numpy()
        model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))
        p = cross_val_predict(
            model, X, data.y, groups=data.groups, cv=GroupKFold(5), method="predict_proba"
        )[:, 1]
        doubt = np.minimum(p, 1 - p)
        needed = set(needs.get(name, [])) if args.needs else set()
        for rank, i in enumerate(np.argsort(-doubt, kind="stable")):
            ranked.append(((0 if i in needed else 1), rank / len(p), data.items[i]))
    items = [it for *_, it in sorted(ranked, key=lambda t: (t[0], t[1]))]
    if args.limit:
        items = items[: args.limit]
    metric = get_metric("llm_judge")
    started = time.time()
    for start in range(0, len(items), args.chunk):
        metric.score_batch(items[start : start + args.chunk])
        done = min(start + args.chunk, len(items))
        rate = done / (time.time() - started)
        print(f"{done}/{len(items)} items, {rate:.2f} items/s (cached ones included)", flush=True)


if __name__ == "__main__":
    main()
