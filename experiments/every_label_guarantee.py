"""Triage with a guarantee (issue 24, item 3) on real labelled data: does the promise hold?

    .venv/bin/python experiments/every_label_guarantee.py

The judge is the cheap judge of ``cascade.py``, read from its cache
(``cache/cascade_tier1_<dataset>_<seed>_*.npz``, seeds 0-4: fitted on 300 labels drawn by
question; its calibrated P(correct) on every other labelled row). Those other rows are rows
the judge never saw, so on them it is a fixed judge, as the guarantee assumes. Per dataset,
seed and draw (40 draws per seed: 200 calibration splits):

* 300 of the judge's unseen rows, drawn by whole question, are the calibration labels; the
  walk (:func:`qaeval_core.calibrate.guarantee.fit_guarantee`, the effort curve's bands, risk
  0.1) chooses the widest band it can guarantee;
* the band's realised accuracy is measured on the judge's decided rows among the *rest* of
  the unseen rows (what a team would see next) and among *all* unseen rows (the population
  the calibration labels were drawn from: the quantity the guarantee is about);
* the share of rows the judge decides alone, and the widest band whose accuracy on all unseen
  rows reaches the target (an oracle: what a guarantee could at best leave to the judge).

A draw that supports no band promises nothing and counts as held (the judge decides nothing
alone); the table says how often that happened and, on one draw per seed, how many more labels
the library estimates. Also, as ``qaeval calibrate`` runs it: the walk on the 300 fitting rows'
out-of-fold probabilities, the band applied to the unseen rows (one split per seed).

The verdict is ``P(correct) >= 0.5``, as ``cascade.py`` reads these caches (the combiner's own
score is not cached; the two differ only where Platt scaling moves the 0.5 crossing).
Output: ``experiments/results/every_label_guarantee.md`` and ``every_label_guarantee.csv``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.common import CACHE, RESULTS, load_data, write_result
from qaeval_core.calibrate import held_out_split
from qaeval_core.calibrate.guarantee import band_thresholds, fit_guarantee
from qaeval_core.calibrate.triage import CURVE_SHARES
from qaeval_core.judge.triage import doubt

SEEDS = range(5)
#: How the calibration labels are drawn from the unseen rows: whole questions (as `qaeval
#: calibrate --max-labels` draws, and as labels often come: every model's answer to a question)
#: or single rows at random (the independent draws the binomial test assumes).
DRAWN_BY = ("question", "row")
#: The test at each band: the plain exact binomial test (every label independent), or the same
#: on counts deflated by the band's design effect over the labels' questions (what `qaeval
#: calibrate` runs: it knows each label's question).
TESTS = ("binomial", "design effect")
DRAWS = 40
N_CAL = 300
RISK = 0.1
#: Targets per dataset: on NQ301 the cheap judge's surest 10% are about 93% right, so 0.95 is
#: out of reach there (reported to show the "cannot be supported" answer); on MMLU-Pro its
#: surest half are about 97% right.
TARGETS = {"kamalloo_nq301": (0.85, 0.9, 0.95), "answer_matching_mmlu_pro": (0.9, 0.95)}


def _cached(name: str, seed: int) -> dict[str, np.ndarray]:
    (path,) = CACHE.glob(f"cascade_tier1_{name}_{seed}_*.npz")
    return dict(np.load(path))


def _decided(d: np.ndarray, share: float, threshold: float) -> np.ndarray:
    return np.ones(len(d), bool) if share <= 0 else d < threshold


def _oracle_share(d: np.ndarray, right: np.ndarray, target: float) -> float:
    """The largest share the judge can decide alone (a curve band) with accuracy >= target."""
    best = 0.0
    for share, threshold in zip(CURVE_SHARES, band_thresholds(d, CURVE_SHARES), strict=True):
        kept = _decided(d, share, threshold)
        if kept.any() and right[kept].mean() >= target:
            best = max(best, float(kept.mean()))
    return best


def _walk(d: np.ndarray, right: np.ndarray, target: float, estimate: bool, groups=None):
    return fit_guarantee(
        d,
        right,
        CURVE_SHARES,
        band_thresholds(d, CURVE_SHARES),
        guarantee=target,
        risk=RISK,
        estimate_labels=estimate,
        groups=groups,
    )


def _split_row(d, right, cal, rest, walk) -> dict:
    """What one calibration split's guarantee leaves to the judge, and how accurate it is."""
    g = walk.guarantee
    if g is None:
        return {"decided_rest": 0.0, "decided_all": 0.0, "acc_rest": np.nan, "acc_all": np.nan}
    kept = _decided(d, g.share, g.threshold)
    return {
        "share_to_people": g.share,
        "design_effect": g.design_effect,
        "decided_cal": g.n_decided / g.n_labels,
        "decided_rest": float(kept[rest].mean()),
        "decided_all": float(kept.mean()),
        "acc_rest": float(right[rest][kept[rest]].mean()) if kept[rest].any() else 1.0,
        "acc_all": float(right[kept].mean()),
    }


def run_dataset(name: str) -> tuple[list[dict], list[dict]]:
    data = load_data(name)
    splits, library = [], []
    for seed in SEEDS:
        fit = _cached(name, seed)
        te, p = fit["te"], fit["p_te"]
        verdict = p >= 0.5
        d, right, groups = doubt(p, verdict), verdict == data.y[te], data.groups[te]
        for target in TARGETS[name]:
            oracle = _oracle_share(d, right, target)
            for by, draw in itertools.product(DRAWN_BY, range(DRAWS)):
                by_question = groups if by == "question" else None
                cal, rest = held_out_split(
                    len(te), N_CAL, groups=by_question, seed=1000 * seed + draw
                )
                for test in TESTS:
                    estimate = draw == 0 and by == "question" and test == "design effect"
                    by_group = groups[cal] if test == "design effect" else None
                    walk = _walk(d[cal], right[cal], target, estimate, groups=by_group)
                    splits.append(
                        {
                            "dataset": name,
                            "drawn_by": by,
                            "test": test,
                            "seed": seed,
                            "draw": draw,
                            "target": target,
                            "n_cal": len(cal),
                            "n_rest": len(rest),
                            "supported": walk.supported,
                            "more_labels": walk.more_labels,
                            "oracle_decided": oracle,
                            **_split_row(d, right, cal, rest, walk),
                        }
                    )
            # As `qaeval calibrate` runs it: out-of-fold doubt on the 300 fitting rows.
            tr, p_cal = fit["tr"], fit["p_cal"]
            v_cal = p_cal >= 0.5
            walk = _walk(
                doubt(p_cal, v_cal), v_cal == data.y[tr], target, False, groups=data.groups[tr]
            )
            g = walk.guarantee
            entry = {"dataset": name, "seed": seed, "target": target, "supported": g is not None}
            if g is not None:
                kept = _decided(d, g.share, g.threshold)
                entry.update(decided=float(kept.mean()), acc=float(right[kept].mean()))
            library.append(entry)
    return splits, library


def _pct(x: float) -> str:
    return "-" if pd.isna(x) else f"{100 * x:.1f}"


def _table(frame: pd.DataFrame) -> list[str]:
    lines = [
        "| dataset | drawn by | test | target | splits | supported | held (all) | held (rest) | "
        "accuracy all | accuracy rest | rest rows decided | decided alone | to people | "
        "oracle decided | design effect | more labels (est.) |",
        "|" + "---|" * 16,
    ]
    keys = ["dataset", "drawn_by", "test", "target"]
    for (name, by, test, target), part in frame.groupby(keys, sort=False):
        sup = part[part["supported"]]
        held_rest = ((~part["supported"]) | (part["acc_rest"] >= target)).mean()
        held_all = ((~part["supported"]) | (part["acc_all"] >= target)).mean()
        asked = part[(part["draw"] == 0) & ~part["supported"]]
        more = part["more_labels"].dropna()
        more_text = "-"
        if by == "question" and test == "design effect" and not asked.empty:
            more_text = "none would do" if more.empty else f"{int(more.median())} (median)"
        lines.append(
            f"| {name} | {by} | {test} | {target} | {len(part)} | "
            f"{_pct(len(sup) / len(part))}% | {_pct(held_all)}% | {_pct(held_rest)}% | "
            f"{_pct(sup['acc_all'].mean())} | {_pct(sup['acc_rest'].mean())} | "
            f"{(sup['decided_rest'] * sup['n_rest']).mean():.0f} | "
            f"{_pct(part['decided_rest'].mean())}% | "
            f"{_pct(sup['share_to_people'].mean()) if len(sup) else '-'}% | "
            f"{_pct(part['oracle_decided'].mean())}% | "
            f"{sup['design_effect'].mean():.2f} | {more_text} |"
        )
    return lines


def main() -> None:
    splits, library = [], []
    for name in TARGETS:
        s, lib = run_dataset(name)
        splits += s
        library += lib
    frame = pd.DataFrame(splits)
    RESULTS.mkdir(exist_ok=True)
    frame.to_csv(RESULTS / "every_label_guarantee.csv", index=False)
    lines = [
        "# Triage with a guarantee on real labels (issue 24, item 3)",
        "",
        f"Fixed-sequence testing on {N_CAL} calibration labels (risk {RISK}: the promise is "
        "accuracy >= target on what the judge decides alone, with 90% confidence). The cheap "
        "judge of `cascade.py` (seeds 0-4, cached), on the rows it never saw; "
        f"{DRAWS} calibration draws per seed = {DRAWS * len(SEEDS)} splits per dataset, draw "
        "and target. `experiments/every_label_guarantee.py`.",
        "",
        "Drawn by: whole questions (as `qaeval calibrate --max-labels` draws; several models "
        "answer each question) or single rows. Test: the plain exact binomial test, or the "
        "same on counts deflated by the band's design effect over the labels' questions "
        "(what `qaeval calibrate` runs). Held: realised accuracy of the guaranteed band >= "
        "target, on all unseen rows (the population the labels were drawn from: the quantity "
        "the guarantee is about) and on the rest of them (the rows not in the calibration "
        "set: a finite sample, and on MMLU-Pro the complement of the calibration set in a "
        "481-row pool, so a lucky calibration set means an unlucky rest); a split that "
        "supports no band promises nothing and counts as held. Decided alone: share of the "
        "rows the judge decides without people (mean over splits, 0 where unsupported); "
        "oracle: the widest band whose accuracy on all unseen rows reaches the target.",
        "",
        *_table(frame),
    ]
    lib = pd.DataFrame(library)
    lines += [
        "",
        "As `qaeval calibrate --guarantee` runs it (the walk, with design effects, on the 300 "
        "fitting rows' out-of-fold probabilities, the band applied to the judge refitted on "
        "them, measured on every unseen row; one split per seed):",
        "",
        "| dataset | target | seeds supported | held | accuracy unseen | decided alone |",
        "|---|---|---|---|---|---|",
    ]
    for (name, target), part in lib.groupby(["dataset", "target"], sort=False):
        sup = part[part["supported"]]
        acc = part["acc"] if "acc" in part else pd.Series(np.nan, index=part.index)
        decided = part["decided"] if "decided" in part else pd.Series(0.0, index=part.index)
        held = ((~part["supported"]) | (acc >= target)).sum()
        lines.append(
            f"| {name} | {target} | {len(sup)} of {len(part)} | {held} of {len(part)} | "
            f"{_pct(acc[part['supported']].mean()) if len(sup) else '-'} | "
            f"{_pct(decided.fillna(0).mean())}% |"
        )
    write_result("every_label_guarantee.md", lines)


if __name__ == "__main__":
    main()
