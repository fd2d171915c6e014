"""Would porting PEDANTS into qaeval close the NQ301 gap? Give the stacker PEDANTS' own score.

    .venv/bin/python experiments/pedants_as_input.py

Same protocol as ``calibration.py`` at N = 300 (5 seeds, fit rows drawn by whole question,
accuracy on every other labelled row): the logistic stacker on the 24 default inputs, then on
the same 24 plus the cached PEDANTS score of each row (``experiments/cache/pedants_*.csv``,
made by ``pedants_anchor.py`` in the qa-metrics venv). If even that stacker cannot beat PEDANTS
by 2 points, shipping a converted copy of PEDANTS' classifiers would not either. Output:
``experiments/results/pedants_as_input.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import (
    DATASETS,
    cached_scores,
    fixed_accuracy,
    held_out_accuracy,
    load_data,
    mean_sd,
    score_columns,
    write_result,
)
from qaeval_core.calibrate import StackerClassifier, ThresholdClassifier

SIZE = 300


def main() -> None:
    lines = [
        "# PEDANTS as a stacker input (N = 300, 5 seeds)",
        "",
        "Accuracy (%) on the rows not used for fitting, mean ± sd over seeds"
        " (`experiments/pedants_as_input.py`).",
        "",
        "| dataset | PEDANTS | PEDANTS, threshold fitted on N | stacker, 24 inputs"
        " | stacker, 24 inputs + PEDANTS |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in DATASETS:
        data = load_data(name)
        scores = cached_scores(data, log=lambda *a: None)
        if "pedants" not in scores.columns:
            sys.exit(f"no PEDANTS scores cached for {name}: run experiments/pedants_anchor.py")
        cols = score_columns(scores)
        acc = {
            "pedants": fixed_accuracy(scores["pedants__dec"].to_numpy(), data, size=SIZE),
            "refit": held_out_accuracy(ThresholdClassifier, scores, ["pedants"], data, size=SIZE),
            "stacker": held_out_accuracy(
                StackerClassifier, scores, cols, data, size=SIZE, grouped=True
            ),
            "with": held_out_accuracy(
                StackerClassifier, scores, [*cols, "pedants"], data, size=SIZE, grouped=True
            ),
        }
        lines.append(f"| {name} | " + " | ".join(map(mean_sd, acc.values())) + " |")
    write_result("pedants_as_input.md", lines)


if __name__ == "__main__":
    main()
