"""Every label counts (issue 24, item 2): what answers people taught the judge are worth.

On NQ301 and MMLU-Pro, for 10% and 20% of the rows labelled (a uniform random sample of rows,
5 seeds), the labelled rows' suggestions (:func:`qaeval_core.knowledge.suggest_knowledge`:
correct answers that contain no reference become aliases, wrong ones known wrong answers) are
all accepted, as a researcher who agrees with the labels would, and applied to the
**unlabelled** rows of the same questions. Measured on the unlabelled rows only (their human
labels are the truth; none of them made any knowledge):

* **verdicts fixed**: rescoring (:func:`qaeval_core.judge.rescoring.rescore_items`: the
  knowledge laid over the items, and answers people already judged get that verdict) of the
  ``contains`` metric's decisions and of the judge fitted without knowledge; fixed = wrong
  before and right after, broken = right before and wrong after;
* **the judge's accuracy** with the new input: the project's stacker
  (:class:`~qaeval_core.judge.combiners.stacker.StackerClassifier`, folds by question) fitted
  on the labelled rows with (a) the cheap metrics as today, (b) plus the knowledge similarity
  input (:func:`qaeval_core.knowledge.knowledge_similarity`, leave-one-out on the labelled
  rows), (c) plus the metrics computed on the items with the knowledge laid over them
  (leave-one-out for the labelled rows: :func:`qaeval_core.knowledge.leave_one_out_items`) and
  the verdicts people already gave the same answer.

CPU-cheap on purpose: the judge's inputs are the lexical metrics and PANDA, recomputed on the
overlaid items in a few seconds per split (the neural inputs would have to be recomputed too).

Run: ``.venv/bin/python experiments/every_label_aliases.py`` -> ``results/every_label_aliases.md``
and ``.csv``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DATASETS, RESULTS, Data, load_data, mean_sd

from qaeval_core.judge.combiners.stacker import StackerClassifier
from qaeval_core.knowledge import (
    SIMILARITY_COLUMNS,
    AnswerKnowledge,
    apply_knowledge,
    knowledge_similarity,
    known_verdicts,
    leave_one_out_items,
    suggest_knowledge,
    touched,
)
from qaeval_core.scoring import score_items

#: The judge's inputs: cheap, and all of them read the references (so knowledge can reach them).
INPUTS = ("em", "contains", "f1", "precision", "recall", "word_match", "panda")
FRACTIONS = (0.10, 0.20)


def features(items: list) -> pd.DataFrame:
    results = score_items(items, list(INPUTS))
    return pd.DataFrame({c: np.asarray(r.scores, dtype=float) for c, r in results.items()})


def decisions(items: list, metric: str) -> np.ndarray:
    return np.asarray(score_items(items, [metric])[metric].decisions, dtype=bool)


def fixed_broken(before: np.ndarray, after: np.ndarray, truth: np.ndarray) -> tuple[int, int]:
    fixed = int(np.sum((before != truth) & (after == truth)))
    broken = int(np.sum((before == truth) & (after != truth)))
    return fixed, broken


def fit_predict(X: pd.DataFrame, y: np.ndarray, groups: np.ndarray, tr, te, seed: int):
    model = StackerClassifier(seed=seed).fit(X.iloc[tr], y[tr], groups=groups[tr])
    return np.asarray(model.predict(X.iloc[te]), dtype=bool)


def run_split(data: Data, base: pd.DataFrame, fraction: float, seed: int) -> dict:
    n = len(data.y)
    rng = np.random.default_rng(seed)
    tr = np.sort(rng.choice(n, size=int(round(fraction * n)), replace=False))
    te = np.setdiff1d(np.arange(n), tr)
    labels: list[int | None] = [None] * n
    for i in tr:
        labels[i] = 2 if data.y[i] else 0
    found = suggest_knowledge(data.items, labels)
    knowledge = AnswerKnowledge.from_frame(found)
    unlabelled = [data.items[i] for i in te]
    truth = data.y[te]
    hit = touched(unlabelled, knowledge)
    known = known_verdicts(unlabelled, knowledge)
    is_known = known.notna().to_numpy()
    known_value = known.fillna(False).to_numpy(dtype=bool)
    overlaid = apply_knowledge(unlabelled, knowledge)

    contains_before = base["contains__dec"].to_numpy(dtype=bool)[te]
    contains_after = np.where(is_known, known_value, decisions(overlaid, "contains"))
    c_fixed, c_broken = fixed_broken(contains_before, contains_after, truth)

    cols = list(INPUTS)
    sim = knowledge_similarity(data.items, labels)
    loo = features(leave_one_out_items(data.items, labels))
    today = fit_predict(base[cols], data.y, data.groups, tr, te, seed)
    with_input = fit_predict(
        pd.concat([base[cols], sim], axis=1), data.y, data.groups, tr, te, seed
    )
    with_all = fit_predict(pd.concat([loo[cols], sim], axis=1), data.y, data.groups, tr, te, seed)
    with_all = np.where(is_known, known_value, with_all)
    # the judge fitted as today, rescored with the knowledge (what the app's rescoring shows)
    model = StackerClassifier(seed=seed).fit(
        base[cols].iloc[tr], data.y[tr], groups=data.groups[tr]
    )
    rescored = np.asarray(model.predict(features(overlaid)[cols]), dtype=bool)
    rescored = np.where(is_known, known_value, rescored)
    j_fixed, j_broken = fixed_broken(today, rescored, truth)
    return {
        "dataset": data.name,
        "fraction": fraction,
        "seed": seed,
        "labelled": len(tr),
        "unlabelled": len(te),
        "aliases": int((found["kind"] == "alias").sum()),
        "wrong_answers": int((found["kind"] == "wrong").sum()),
        "touched": int(hit.sum()),
        "known_answer": int(is_known.sum()),
        "contains_fixed": c_fixed,
        "contains_broken": c_broken,
        "judge_fixed": j_fixed,
        "judge_broken": j_broken,
        "acc_today": float(np.mean(today == truth)),
        "acc_rescored": float(np.mean(rescored == truth)),
        "acc_with_input": float(np.mean(with_input == truth)),
        "acc_with_knowledge": float(np.mean(with_all == truth)),
        "sim_columns": ",".join(SIMILARITY_COLUMNS),
    }


def _mean(values: pd.Series) -> str:
    return f"{values.mean():.1f} ± {values.std(ddof=0):.1f}"


def summary(frame: pd.DataFrame) -> list[str]:
    lines = [
        "# Every label counts: answers people taught the judge (issue 24, item 2)",
        "",
        "`experiments/every_label_aliases.py`: a uniform random 10% / 20% of the rows labelled "
        "(5 seeds), every suggestion those labels make accepted, and applied to the unlabelled "
        "rows of the same questions. All numbers are on the unlabelled rows (mean ± sd over "
        "seeds). Fixed: the verdict was wrong before the knowledge and right after; broken: "
        "the reverse. Judge: the project's stacker on cheap inputs "
        f"({', '.join(INPUTS)}), fitted on the labelled rows only.",
        "",
        "| dataset | labelled | unlabelled | suggestions (alias / wrong) | unlabelled rows "
        "touched | of them an answer people judged | contains: fixed / broken | judge: fixed / "
        "broken |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, fraction), part in frame.groupby(["dataset", "fraction"], sort=False):
        lines.append(
            f"| {name} | {fraction:.0%} ({part['labelled'].iloc[0]}) "
            f"| {part['unlabelled'].iloc[0]} "
            f"| {_mean(part['aliases'])} / {_mean(part['wrong_answers'])} "
            f"| {_mean(part['touched'])} | {_mean(part['known_answer'])} "
            f"| {_mean(part['contains_fixed'])} / {_mean(part['contains_broken'])} "
            f"| {_mean(part['judge_fixed'])} / {_mean(part['judge_broken'])} |"
        )
    lines += [
        "",
        "Judge accuracy on the unlabelled rows (%): as today; the same judge rescored with the "
        "accepted knowledge; refitted with the knowledge similarity input (leave-one-out); "
        "refitted with the input, the metrics on the overlaid items and the answers people "
        "judged.",
        "",
        "| dataset | labelled | today | rescored | + similarity input | + input, overlay, "
        "judged answers |",
        "|---|---|---|---|---|---|",
    ]
    for (name, fraction), part in frame.groupby(["dataset", "fraction"], sort=False):
        cells = [
            mean_sd(part[c].tolist())
            for c in ("acc_today", "acc_rescored", "acc_with_input", "acc_with_knowledge")
        ]
        lines.append(f"| {name} | {fraction:.0%} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Paired differences from the judge as today (points, mean ± sd over the same seeds' "
        "splits):",
        "",
        "| dataset | labelled | rescored | + similarity input | + input, overlay, judged answers |",
        "|---|---|---|---|---|",
    ]
    for (name, fraction), part in frame.groupby(["dataset", "fraction"], sort=False):
        cells = [
            _mean(100 * (part[c] - part["acc_today"]))
            for c in ("acc_rescored", "acc_with_input", "acc_with_knowledge")
        ]
        lines.append(f"| {name} | {fraction:.0%} | " + " | ".join(cells) + " |")
    return lines


def census(data: Data) -> dict:
    """With every row labelled: the suggestions, and how many rows back an alias whose question
    has another such row (the issue's "284 of 328 have a sibling" count, by this project's
    containment rule)."""
    found = suggest_knowledge(data.items, [2 if y else 0 for y in data.y])
    aliases = found[found["kind"] == "alias"]
    per_question = aliases.groupby("question_key")["n_labels"].sum()
    return {
        "dataset": data.name,
        "rows": len(data.y),
        "questions": len(set(data.groups)),
        "alias_suggestions": len(aliases),
        "alias_rows": int(aliases["n_labels"].sum()),
        "alias_rows_with_sibling": int(per_question[per_question > 1].sum()),
        "wrong_suggestions": int((found["kind"] == "wrong").sum()),
    }


def census_lines(rows: list[dict]) -> list[str]:
    lines = [
        "",
        "## Every row labelled",
        "",
        "Correct answers that contain no reference (alias rows), and those whose question has "
        "another such row from another model:",
        "",
        "| dataset | rows | questions | alias suggestions | alias rows | with a sibling alias "
        "row | wrong-answer suggestions |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['rows']} | {r['questions']} | {r['alias_suggestions']} "
            f"| {r['alias_rows']} | {r['alias_rows_with_sibling']} | {r['wrong_suggestions']} |"
        )
    return lines


def reading(frame: pd.DataFrame) -> list[str]:
    """The table in sentences: net verdicts fixed (fixed - broken) per dataset and share."""
    lines = ["", "## Reading", ""]
    for (name, fraction), part in frame.groupby(["dataset", "fraction"], sort=False):
        net_c = (part["contains_fixed"] - part["contains_broken"]).mean()
        net_j = (part["judge_fixed"] - part["judge_broken"]).mean()
        lines.append(
            f"- {name}, {fraction:.0%} labelled: the accepted suggestions touch "
            f"{part['touched'].mean():.0f} of {part['unlabelled'].iloc[0]} unlabelled rows; "
            f"net verdicts fixed (fixed - broken) {net_c:+.1f} for contains and {net_j:+.1f} "
            f"for the judge; the judge refitted with everything: "
            f"{100 * (part['acc_with_knowledge'] - part['acc_today']).mean():+.1f} points."
        )
    lines += [
        "",
        "The researcher here accepts every suggestion; a real one would reject some, and a "
        "rejected suggestion takes its fixes and its breaks with it. A break is an alias that "
        "lends its words to a wrong answer of another model (token metrics take the best "
        "reference). Questions repeat across models on NQ301 (1,490 rows, 301 questions), "
        "hardly on MMLU-Pro (781 labelled rows, 717 questions), so the knowledge reaches few "
        "MMLU-Pro rows.",
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    rows, counts = [], []
    for name in args.datasets:
        data = load_data(name)
        counts.append(census(data))
        t0 = time.time()
        base = features(data.items)
        base["contains__dec"] = decisions(data.items, "contains")
        for fraction in FRACTIONS:
            for seed in range(args.seeds):
                rows.append(run_split(data, base, fraction, seed))
                print(f"{name} {fraction:.0%} seed {seed}: {rows[-1]}", flush=True)
        print(f"{name}: {time.time() - t0:.1f} s", flush=True)
    frame = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    frame.drop(columns=["sim_columns"]).to_csv(RESULTS / "every_label_aliases.csv", index=False)
    text = "\n".join(summary(frame) + census_lines(counts) + reading(frame)) + "\n"
    (RESULTS / "every_label_aliases.md").write_text(text, "utf-8")
    print(text)


if __name__ == "__main__":
    main()
