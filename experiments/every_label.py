"""Every label counts three times (issue 24): the three experiments and one summary.

    .venv/bin/python experiments/every_label.py              # run all three, then summarise
    .venv/bin/python experiments/every_label.py --summary-only

Runs, on NQ301 and MMLU-Pro with 5 seeds each:

1. ``every_label_estimates.py``: labels chosen by doubt, weighted by 1 / their probability
   (coverage and width of the selection-aware intervals vs human-only);
2. ``every_label_aliases.py``: answers people taught the judge (verdicts fixed at 10 / 20%
   labelled, and the judge's accuracy with the knowledge input);
3. ``every_label_guarantee.py``: triage with a guarantee (realised accuracy of the guaranteed
   band over 200 calibration splits per dataset and target).

Each writes its own ``results/every_label_<part>.md`` and ``.csv``; this script reads the three
CSVs back and writes ``results/every_label.md``: one line per "Done when" of the issue, with the
numbers it rests on, so the summary is never typed by hand.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
PARTS = ("estimates", "aliases", "guarantee")


def _estimates(frame: pd.DataFrame) -> list[str]:
    models = frame[frame["model"] != "(all)"]
    out = []
    for (dataset, share), rows in models.groupby(["dataset", "share"]):
        out.append(
            f"- {dataset}, {share:.0%} labelled: per-model coverage "
            f"{rows['aware_coverage'].min():.3f}-{rows['aware_coverage'].max():.3f} (target >= "
            f"0.93); width / human-only {rows['aware_over_human'].min():.2f}-"
            f"{rows['aware_over_human'].max():.2f} (uniform PPI "
            f"{rows['uniform_ppi_over_human'].min():.2f}-{rows['uniform_ppi_over_human'].max():.2f})"
        )
    return out


def _aliases(frame: pd.DataFrame) -> list[str]:
    out = []
    for (dataset, fraction), rows in frame.groupby(["dataset", "fraction"], sort=False):
        net = rows["judge_fixed"] - rows["judge_broken"]
        gain = 100 * (rows["acc_with_knowledge"] - rows["acc_today"])
        out.append(
            f"- {dataset}, {fraction:.0%} labelled: {rows['touched'].mean():.0f} unlabelled rows "
            f"touched; judge verdicts fixed {rows['judge_fixed'].mean():.1f}, broken "
            f"{rows['judge_broken'].mean():.1f} (net {net.mean():+.1f}); judge accuracy "
            f"{100 * rows['acc_today'].mean():.1f} -> {100 * rows['acc_with_knowledge'].mean():.1f}"
            f" ({gain.mean():+.1f} points)"
        )
    return out


def _guarantee(frame: pd.DataFrame) -> list[str]:
    used = frame[(frame["drawn_by"] == "question") & (frame["test"] == "design effect")]
    out = []
    for (dataset, target), rows in used.groupby(["dataset", "target"], sort=False):
        held_all = (~rows["supported"] | (rows["acc_all"] >= target)).mean()
        held_rest = (~rows["supported"] | (rows["acc_rest"] >= target)).mean()
        out.append(
            f"- {dataset}, target {target}: {len(rows)} splits, supported in "
            f"{rows['supported'].mean():.0%}; held on all unseen rows in {held_all:.1%}, on the "
            f"rest in {held_rest:.1%} (goal >= 90%); decided alone "
            f"{rows['decided_all'].fillna(0).mean():.1%}"
        )
    return out


def summarise() -> Path:
    frames = {part: pd.read_csv(RESULTS / f"every_label_{part}.csv") for part in PARTS}
    lines = [
        "# Every label counts three times (issue 24): summary",
        "",
        "Written by `experiments/every_label.py` from the three parts' CSVs; details in",
        "`every_label_estimates.md`, `every_label_aliases.md` and `every_label_guarantee.md`.",
        "",
        "## 1. Labels chosen by doubt still count (selection-aware intervals)",
        *_estimates(frames["estimates"]),
        "",
        "## 2. Answers people taught the judge",
        *_aliases(frames["aliases"]),
        "",
        "## 3. Triage with a guarantee (risk 0.1; labels drawn by question, design-effect test)",
        *_guarantee(frames["guarantee"]),
        "",
    ]
    path = RESULTS / "every_label.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary-only", action="store_true", help="Only re-read the CSVs.")
    args = ap.parse_args()
    if not args.summary_only:
        for part in PARTS:
            script = HERE / f"every_label_{part}.py"
            print(f"== {script.name}", flush=True)
            subprocess.run([sys.executable, str(script)], check=True)
    print(f"Wrote {summarise()}")


if __name__ == "__main__":
    main()
