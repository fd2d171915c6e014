"""Which SQuAD reading should the lexical metrics use by default: the official rules or spaced?

Run from the repository root::

    .venv/bin/python experiments/squad_vs_spaced.py     # -> results/squad_vs_spaced.md

Issue 33, item 3: ``normalize="squad"`` now reproduces the official SQuAD v1.1 evaluation
(punctuation deleted: "Ben-Gurion" one token, "2.5" reads "25"); the reading the metrics used
before (punctuation read as a space, NFKC first) is ``normalize="spaced"``. It stays the
default only if it measures better. Measured on every labelled row of NQ301 and MMLU-Pro
(the calibration experiments' data): how many rows' F1 differ, and each lexical metric's
accuracy against the human labels uncalibrated (at its shipped threshold, 0.5) and at the best
threshold on a 0.05 grid (an oracle upper bound: the calibrated judge picks its own threshold).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import DATASETS, RESULTS, load_data
from qaeval_core.metrics.base import get_metric

METRICS = ("em", "contains", "precision", "recall", "f1", "word_match", "rouge1", "bleu")
GRID = np.round(np.arange(0.05, 1.0001, 0.05), 2)


def main() -> None:
    lines = [
        "## normalize='squad' (official SQuAD v1.1) vs 'spaced' (punctuation read as a space)\n",
        "Accuracy (%) against the human labels on every labelled row; *@0.5*: the metric's "
        "shipped threshold; *best*: the best threshold on a 0.05 grid (oracle).\n",
    ]
    for name in DATASETS:
        data = load_data(name)
        items = data.items
        scores = {
            p: {m: get_metric(m, normalize=p).score_batch(items).scores for m in METRICS}
            for p in ("spaced", "squad")
        }
        differ = int((np.abs(scores["spaced"]["f1"] - scores["squad"]["f1"]) > 1e-12).sum())
        lines.append(
            f"\n### {name}: {len(items)} labelled rows; F1 differs on {differ} "
            f"({100 * differ / len(items):.1f}%)\n"
        )
        lines.append("| metric | spaced @0.5 | squad @0.5 | spaced best | squad best |")
        lines.append("|---|---|---|---|---|")
        for m in METRICS:
            cells = []
            for kind in ("fixed", "best"):
                for p in ("spaced", "squad"):
                    s = scores[p][m]
                    if kind == "fixed":
                        acc = np.mean((s >= 0.5) == data.y)
                    else:
                        acc = max(np.mean((s >= t) == data.y) for t in GRID)
                    cells.append(f"{100 * acc:.1f}")
            lines.append(f"| {m} | {' | '.join(cells)} |")
        print("\n".join(lines[-len(METRICS) - 3 :]), flush=True)
    lines.append("\nCommand: `.venv/bin/python experiments/squad_vs_spaced.py` (CPU, a minute).\n")
    (RESULTS / "squad_vs_spaced.md").write_text("\n".join(lines) + "\n", "utf-8")


if __name__ == "__main__":
    main()
