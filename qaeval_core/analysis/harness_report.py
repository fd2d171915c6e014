"""Imported harness logs in ``qaeval report``: the harness's own metric next to the judges'.

Why this exists: a harness (lm-eval, lighteval, Inspect, HELM, OpenCompass) reports one number
per (model, task), computed with its own matcher, and nothing says how far that number is from
what people would call correct. For every (model, task, variant) of the items a format reader
imported (``meta.harness``, :mod:`qaeval_core.io.formats`) this section gives

* the harness's metric: the mean of its per-sample scores (``meta.harness_scores``), which is
  the harness's aggregate for mean-aggregated metrics such as exact match;
* each judge's accuracy: every stored metric's decisions (``qaeval score --dataset D``) and,
  with ``--calibration``, the calibrated judge's;
* per judge, the PPI estimate with its interval when the model has enough labels from a random
  audit sample (:func:`qaeval_core.analysis.estimates.estimate_accuracy`, whose selection
  rules apply: only ``label_sample == "random"`` labels count);
* where rankings flip: pairs of models of one task that the harness orders one way and a judge
  (its accuracy, or its PPI estimate with whether the difference is significant) the other.

The ``variant`` (an lm-eval filter, an Inspect epoch, a HELM trial) stays part of the key
because the harness reports each filter separately.

This module computes the section from frames (:func:`harness_numbers`); reading them from a
stored dataset, the calibrated judge's verdicts and the final labels included, is
:func:`qaeval_core.workflows.harness.harness_results` (only ``workflows/`` joins the store and
a saved judge).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.analysis.estimates import compare_estimates, estimate_accuracy
from qaeval_core.analysis.report import Report
from qaeval_core.errors import InputError

__all__ = ["DECIDED", "HARNESS_ITEM_COLUMNS", "JUDGE", "add_harness_results", "harness_numbers"]

#: The name of the calibrated judge among the judges (stored metrics keep their ids).
JUDGE = "judge"
#: The calibrated judge's decisions (``judge_correct``): its accuracy is the share of these,
#: as in the report's and the Leaderboard's "judge accuracy", not the share of P >= 0.5.
DECIDED = "judge_decided"
#: The columns of the harness items :func:`harness_numbers` reads.
HARNESS_ITEM_COLUMNS = ["item_id", "model", "task", "variant", "harness", "scores"]
_KEY = ["model", "task", "variant"]
_NOTE = (
    "Per (model, task, variant) of imported harness logs: the harness's own metric (mean of "
    "its per-sample scores), each judge's accuracy (share judged correct), and the PPI "
    "estimate with its {confidence:.0%} interval where the model has at least {min_labels} "
    "labels from a random audit sample (otherwise 'reason' says why)."
)


def _ppi(part: pd.DataFrame, judge: str, model: str, confidence: float, min_labels: int):
    """The model's PPI row of :func:`estimate_accuracy` for one judge, or the reason none."""
    frame = pd.DataFrame(
        {
            "qa_model": model,
            "prediction": part[judge].to_numpy(float),
            "gold_label": part["gold_label"],
            "label_scale": "three",
            "label_sample": part["label_sample"].fillna(""),
        }
    )
    try:
        table = estimate_accuracy(
            frame, prediction="prediction", confidence=confidence, min_labels=min_labels
        )
    except InputError as exc:  # no labels, or none from a random sample: say which
        return None, str(exc).split(". ")[0]
    row = table[table["model"] == model].iloc[0].to_dict()
    return row, row["reason"]


def _groups(items: pd.DataFrame, preds: pd.DataFrame, judges: list[str], confidence, min_labels):
    rows = []
    joined = items.join(preds, on="item_id")
    for (model, task, variant), part in joined.groupby(_KEY, sort=True):
        names = sorted({k for s in part["scores"] for k in s})
        harness = {n: float(np.mean([s[n] for s in part["scores"] if n in s])) for n in names}
        labelled = part["gold_label"].notna()
        entry: dict[str, Any] = {
            "model": model,
            "task": task,
            "variant": variant,
            "n_items": len(part),
            "harness_format": part["harness"].iloc[0],
            "harness": harness,
            "human": {
                "n_labelled": int(labelled.sum()),
                "accuracy": float((part.loc[labelled, "gold_label"] == 2).mean())
                if labelled.any()
                else None,
            },
            "judges": {},
        }
        for judge in judges:
            scored = part[judge].notna()
            decided = part[DECIDED] if judge == JUDGE else part[judge] >= 0.5
            info: dict[str, Any] = {
                "n_scored": int(scored.sum()),
                "accuracy": float(decided[scored].astype(float).mean()) if scored.any() else None,
                "ppi": None,
                "reason": "",
            }
            if scored.all() and len(part):
                row, reason = _ppi(part, judge, model, confidence, min_labels)
                info["reason"] = reason
                if row is not None and not np.isnan(row["ppi_estimate"]):
                    info["ppi"] = {
                        k: float(row[f"ppi_{k}"]) for k in ("estimate", "ci_low", "ci_high", "se")
                    }
                    info["ppi"]["n_labelled"] = int(row["n_labelled"])
            elif not scored.all():
                info["reason"] = f"{int((~scored).sum())} item(s) not scored by {judge}"
            entry["judges"][judge] = info
        rows.append(entry)
    return rows


def _flips(rows: list[dict[str, Any]], judges: list[str], confidence: float) -> list[dict]:
    """Model pairs of one (task, variant) that the harness and a judge order differently."""
    out = []
    by_task: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        by_task.setdefault((row["task"], row["variant"]), []).append(row)
    for (task, variant), group in sorted(by_task.items()):
        for a, b in itertools.combinations(group, 2):
            metric = next((m for m in a["harness"] if m in b["harness"]), None)
            if metric is None or a["harness"][metric] == b["harness"][metric]:
                continue
            hi, lo = (a, b) if a["harness"][metric] > b["harness"][metric] else (b, a)
            for judge in judges:
                for kind in ("accuracy", "ppi"):
                    x, y = hi["judges"][judge][kind], lo["judges"][judge][kind]
                    if kind == "ppi":
                        if x is None or y is None:
                            continue
                        x, y = x["estimate"], y["estimate"]
                    if x is None or y is None or x >= y:
                        continue
                    flip = {
                        "task": task,
                        "variant": variant,
                        "harness_metric": metric,
                        "judge": judge,
                        "by": kind,
                        "harness_higher": hi["model"],
                        "judge_higher": lo["model"],
                        "harness": [hi["harness"][metric], lo["harness"][metric]],
                        "judge_values": [x, y],
                    }
                    if kind == "ppi":
                        flip["significant"] = _significant(hi, lo, judge, confidence)
                    out.append(flip)
    return out


def _significant(hi: dict, lo: dict, judge: str, confidence: float) -> bool:
    table = pd.DataFrame(
        [
            {
                "model": r["model"],
                "ppi_estimate": r["judges"][judge]["ppi"]["estimate"],
                "ppi_se": r["judges"][judge]["ppi"]["se"],
            }
            for r in (hi, lo)
        ]
    )
    return bool(compare_estimates(table, confidence)["significant"].iloc[0])


def harness_numbers(
    items: pd.DataFrame,
    preds: pd.DataFrame,
    *,
    calibration: str | None = None,
    confidence: float = 0.95,
    min_labels: int = 10,
) -> dict[str, Any]:
    """The section's numbers (module docstring) from the harness items
    (:data:`HARNESS_ITEM_COLUMNS`, one row per imported harness item) and, per item id, each
    judge's prediction in [0, 1], the calibrated judge's decisions (:data:`DECIDED`),
    ``gold_label`` and ``label_sample`` (read from a store by
    :func:`qaeval_core.workflows.harness.harness_results`).

    ``{"judges": [...], "confidence", "min_labels", "calibration", "rows": [per (model, task,
    variant)], "flips": [...]}``.
    """
    preds = preds.copy()
    judges = [c for c in preds.columns if c not in ("gold_label", "label_sample", DECIDED)]
    for column in ("gold_label", "label_sample", *judges):
        if column not in preds.columns:
            preds[column] = np.nan
    rows = _groups(items, preds, judges, confidence, min_labels)
    return {
        "judges": judges,
        "confidence": confidence,
        "min_labels": min_labels,
        "calibration": calibration,
        "rows": rows,
        "flips": _flips(rows, judges, confidence),
    }


def _flat(numbers: dict[str, Any]) -> pd.DataFrame:
    """One table row per (model, task, variant): harness metrics, then per judge its accuracy
    and PPI interval (for the HTML page)."""
    out = []
    for row in numbers["rows"]:
        flat: dict[str, Any] = {k: row[k] for k in (*_KEY, "n_items")}
        flat.update({f"harness {k}": v for k, v in row["harness"].items()})
        flat["human labelled"] = row["human"]["n_labelled"]
        for judge, info in row["judges"].items():
            flat[f"{judge} accuracy"] = info["accuracy"]
            ppi = info["ppi"]
            flat[f"{judge} PPI"] = (
                f"{ppi['estimate']:.3f} [{ppi['ci_low']:.3f}, {ppi['ci_high']:.3f}]"
                if ppi
                else info["reason"]
            )
        out.append(flat)
    return pd.DataFrame(out)


def add_harness_results(report: Report, numbers: dict[str, Any] | None) -> Report:
    """``report`` with the harness section (JSON ``harness``; HTML tables) when there is one."""
    if numbers is None:
        return report
    report.numbers["harness"] = numbers
    table = _flat(numbers)
    report.tables["harness"] = table
    note = _NOTE.format(confidence=numbers["confidence"], min_labels=numbers["min_labels"])
    report.sections.append(("Harness logs: the harness's metric and the judges'", note, table))
    flips = pd.DataFrame(numbers["flips"])
    if not flips.empty:
        report.tables["harness_flips"] = flips
        report.sections.append(
            (
                "Where the ranking flips",
                "Model pairs of one task that the harness's metric orders one way and a "
                "judge the other ('significant': the PPI difference's interval excludes 0).",
                flips,
            )
        )
    return report
