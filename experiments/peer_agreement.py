"""Does agreement between systems supply the world knowledge the references lack on NQ301?

    .venv/bin/python experiments/peer_agreement.py

NQ301's remaining errors are answers that share no token with any reference yet were accepted
(another valid answer) or contain a reference and were rejected. A reference-based judge cannot
tell those apart without knowledge; the only knowledge-like signal in the data without an LLM
is *consensus*: several systems answer each question, and an answer others also gave is more
likely right. Features, computed from the candidates alone (never the labels), per row against
the other rows of the same question:

- ``peer_recall``: the largest share of this answer's normalised tokens found in another
  system's answer to the same question;
- ``peer_f1``: the largest token F1 with another system's answer.

Same protocol as ``calibration.py`` at N = 300 (5 seeds, fit rows drawn by whole question,
accuracy on every other labelled row): the logistic stacker on the 24 default inputs, with each
feature added, and with ``crossjudge`` as well (the optional cross-encoder, when its column is
in the score cache). Output: ``experiments/results/peer_agreement.md``.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    DATASETS,
    Data,
    cached_scores,
    fixed_accuracy,
    held_out_accuracy,
    load_data,
    mean_sd,
    score_columns,
    write_result,
)
from qaeval_core.calibrate import StackerClassifier
from qaeval_core.text.normalize import normalize_answer

SIZE = 300


def peer_features(data: Data) -> tuple[np.ndarray, np.ndarray]:
    """(peer_recall, peer_f1) of every row against the other rows of its question group."""
    bags = [Counter(normalize_answer(it.candidate).split()) for it in data.items]
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(data.groups):
        by_group[g].append(i)
    recall, f1 = np.zeros(len(bags)), np.zeros(len(bags))
    for rows in by_group.values():
        for i in rows:
            size_i = sum(bags[i].values())
            for j in rows:
                common = sum((bags[i] & bags[j]).values()) if i != j else 0
                if common == 0:
                    continue
                r = common / size_i
                p = common / sum(bags[j].values())
                recall[i] = max(recall[i], r)
                f1[i] = max(f1[i], 2 * p * r / (p + r))
    return recall, f1


def stacker_accuracy(scores: pd.DataFrame, columns: list[str], data: Data) -> str:
    """Held-out accuracy of the stacker on ``columns``, as "mean ± sd" over the seeds."""
    return mean_sd(
        held_out_accuracy(StackerClassifier, scores, columns, data, size=SIZE, grouped=True)
    )


def main() -> None:
    lines = [
        "# Agreement between systems as a stacker input (N = 300, 5 seeds)",
        "",
        "Accuracy (%) on the rows not used for fitting, mean ± sd over seeds"
        " (`experiments/peer_agreement.py`). *rows with a peer*: share of labelled rows whose"
        " question has another row; *r*: Pearson correlation of `peer_recall` with the label.",
        "",
        "| dataset | rows with a peer | r | PEDANTS | stacker, 24 inputs | + peer_recall"
        " | + peer_f1 | + crossjudge | + crossjudge + peer_recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in DATASETS:
        data = load_data(name)
        scores = cached_scores(data, log=lambda *a: None).copy()
        scores["peer_recall"], scores["peer_f1"] = peer_features(data)
        cols = score_columns(scores)
        sizes = Counter(data.groups)
        with_peer = np.mean([sizes[g] > 1 for g in data.groups])
        r = np.corrcoef(scores["peer_recall"], data.y)[0, 1]

        pedants = "n/a"
        if "pedants" in scores.columns:
            pedants = mean_sd(fixed_accuracy(scores["pedants__dec"].to_numpy(), data, size=SIZE))
        cross = "crossjudge" in scores.columns
        cells = [
            f"{100 * with_peer:.0f}%",
            f"{r:.2f}",
            pedants,
            stacker_accuracy(scores, cols, data),
            stacker_accuracy(scores, [*cols, "peer_recall"], data),
            stacker_accuracy(scores, [*cols, "peer_f1"], data),
            stacker_accuracy(scores, [*cols, "crossjudge"], data) if cross else "n/a",
            stacker_accuracy(scores, [*cols, "crossjudge", "peer_recall"], data)
            if cross
            else "n/a",
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    write_result("peer_agreement.md", lines)


if __name__ == "__main__":
    main()
