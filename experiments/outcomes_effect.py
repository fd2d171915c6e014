"""Does forcing an answer-level reason to "incorrect" help a calibrated judge? (docs/outcomes.md)

Run from the repository root::

    .venv/bin/python experiments/outcomes_effect.py
    .venv/bin/python experiments/outcomes_effect.py --datasets pedants_ae_augmented_train

Protocol, per dataset: the labelled rows; eight cheap metrics (no model); a
:class:`~qaeval_core.judge.combiners.stacker.StackerClassifier` predicted out of fold (5 folds
that keep a question's answers together, seed 0); the answer-level reasons of
:mod:`qaeval_core.judge.outcomes`. For each reason, the accuracy against people when its rows
are forced incorrect, next to the stacker's own. Prints a table; CPU only, seconds.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from qaeval_core.calibrate.protocol import cross_val_predict_proba
from qaeval_core.judge.combiners.folds import assign_folds
from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.judge.outcomes import ANSWER_REASONS, answer_reasons
from qaeval_core.schema import Item
from qaeval_core.scoring import score_items

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
METRICS = ["em", "f1", "recall", "contains", "number_agree", "number_match", "brevity", "no_hedge"]


def measure(name: str) -> None:
    rows = [json.loads(line) for line in (DATA / f"{name}.jsonl").open(encoding="utf-8")]
    rows = [r for r in rows if r["human"]["label"] is not None]
    items = [
        Item(
            question=str(r["question"]),
            references=[str(x) for x in r["references"]],
            candidate=str(r["candidate"]),
        )
        for r in rows
    ]
    y = np.array([bool(r["human"]["label"]) for r in rows])
    groups = np.array([str(r["question"]) for r in rows], dtype=object)
    X = pd.DataFrame({k: v.scores for k, v in score_items(items, METRICS).items()})
    folds = assign_folds(len(y), 5, groups=groups, y=y, seed=0)
    verdict = cross_val_predict_proba(StackerClassifier(), X, y, folds, groups=groups) >= 0.5
    reasons = np.array([a.reason for a in answer_reasons(items)], dtype=object)
    base = float((verdict == y).mean())
    print(f"\n{name}: {len(y)} labelled rows, CV stacker accuracy {base:.4f}")
    print("| reason | rows | people: correct | stacker: correct | forced accuracy | change |")
    print("|---|---|---|---|---|---|")
    for reason in ANSWER_REASONS:
        mask = reasons == reason
        acc = float(((verdict & ~mask) == y).mean())
        print(
            f"| {reason} | {mask.sum()} | {int(y[mask].sum())} | {int(verdict[mask].sum())} "
            f"| {acc:.4f} | {acc - base:+.4f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["kamalloo_nq301", "answer_matching_mmlu_pro"]
    )
    for name in parser.parse_args().datasets:
        measure(name)


if __name__ == "__main__":
    main()
