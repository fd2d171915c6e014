"""Model accuracies with valid confidence intervals as a section of ``qaeval report``.

:func:`add_model_accuracies` puts the three estimates of
:func:`qaeval_core.analysis.estimates.estimate_accuracy` (PPI, human-only, the judge's mean
probability and its accuracy) and the
pairwise differences of :func:`~qaeval_core.analysis.estimates.compare_models` into a
:class:`~qaeval_core.analysis.report.Report`: the JSON gets ``model_accuracies`` (the shape
``qaeval estimate`` writes), the HTML a table per estimate and one for the differences.

:func:`judge_outcome_table` counts the judge's ``judge_reason`` values per QA model (matched,
not matched, uncertain, not attempted, extraction failed, hedged, judge error;
``docs/outcomes.md``) with the share judged correct over all items and over the attempted ones
only: a model that refuses often is not wrong the way one that answers wrongly is, and the two
accuracies show which it is. Given the estimation frame, :func:`add_model_accuracies` adds it.

Without a label from a random audit sample (issue 32, item 6) the section is still there: every
model's judge accuracy and mean probability, the PPI and human-only columns empty, and a note
saying why and how to deal an audit sample (``audit_advice``: the caller's words, a command for
the CLI, a page for the app; the library names neither).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from qaeval_core.analysis.estimates import ALL_MODELS, estimates_to_json
from qaeval_core.analysis.ranking import RANK_RULE, ranked_models
from qaeval_core.analysis.report import Report
from qaeval_core.judge.outcomes import REASONS
from qaeval_core.schema import split_models

__all__ = ["add_model_accuracies", "judge_outcome_table"]

_OUTCOME_NOTE = (
    "Why the judge decided as it did (judge_reason, docs/outcomes.md), per QA model. "
    "'judge accuracy' is the share of items judged correct; 'attempted only' leaves out the "
    "not-attempted items (refusals, empty answers), which are never judged correct."
)


def _models(cell: object) -> list[str]:
    if isinstance(cell, list | tuple | np.ndarray):
        return [str(m) for m in cell if str(m).strip()]
    return split_models(None if cell is None or cell is pd.NA else str(cell))


def judge_outcome_table(frame: pd.DataFrame, *, model: str = "qa_model") -> pd.DataFrame:
    """Per QA model (a row per model a cell names, then ``(all)`` counting each item once):
    ``n_items``, one count column per reason (:data:`~qaeval_core.judge.outcomes.REASONS`),
    ``judge_accuracy`` (share judged correct), ``judge_accuracy_attempted`` (the same without
    not-attempted items; NaN when none is left) and ``not_attempted_share``.

    ``frame`` needs ``judge_reason`` and ``judge_correct``; without a ``model`` column only the
    ``(all)`` row is given.
    """
    missing = [c for c in ("judge_reason", "judge_correct") if c not in frame.columns]
    if missing:
        raise KeyError(f"the frame lacks {missing}: apply a judge (Judge.judge) first")
    reason = frame["judge_reason"].astype(object).to_numpy()
    correct = frame["judge_correct"].fillna(False).astype(bool).to_numpy()
    groups: dict[str, list[int]] = {}
    if model in frame.columns:
        for i, cell in enumerate(frame[model].tolist()):
            for name in _models(cell):
                groups.setdefault(name, []).append(i)
    rows = []
    for name, index in [*sorted(groups.items()), (ALL_MODELS, list(range(len(frame))))]:
        r, c = reason[index], correct[index]
        attempted = r != "not_attempted"
        row: dict[str, object] = {"model": name, "n_items": len(index)}
        row.update({k: int((r == k).sum()) for k in REASONS})
        row["judge_accuracy"] = float(c.mean()) if len(c) else float("nan")
        row["judge_accuracy_attempted"] = (
            float(c[attempted].mean()) if attempted.any() else float("nan")
        )
        row["not_attempted_share"] = float((~attempted).mean()) if len(c) else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


_NO_AUDIT_NOTE = (
    "Judge ({calibration}) on every item; no PPI or human-only estimate yet: none of the "
    "{labelled} labelled item(s) was drawn by a random audit sample, and labels chosen any "
    "other way (imported, queued, routed by the judge's doubt) give no valid interval. "
    "'judge accuracy' is the share of items the judge called correct, 'judge mean probability' "
    "the mean of its P(correct); neither has a valid interval. {advice}"
)
_NOTE = (
    "Judge ({calibration}) on every item plus human labels on a random audit sample: PPI "
    "(prediction-powered inference, power-tuned) and human-only intervals are valid at "
    "{confidence:.0%}; the judge's accuracy (share judged correct) and mean probability have no "
    "valid interval (its bias is unknown without labels). Labels from triage or the ordinary "
    "queue are not a random sample and are left out (n_not_random)."
)
_WEIGHTED_NOTE = (
    "Judge ({calibration}) on every item plus human labels drawn at random with known "
    "probabilities (triage by chance: more likely where the judge doubts): each label counts "
    "weighted by 1 / its probability (inverse-probability-weighted PPI, Zrnic & Candes 2024); "
    "PPI and human-only intervals are valid at {confidence:.0%}; the judge's accuracy and mean "
    "probability have no valid interval. n_labelled: labels used; n_weighted: of them, "
    "weighted; labels with no known probability (deterministic triage, the ordinary queue) "
    "are left out (n_not_random)."
)


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    """The table in the one ranking of models (:func:`.ranking.ranked_models`), rank first."""
    table = ranked_models(table)
    cols = [
        "rank",
        "model",
        "n_items",
        "n_labelled",
        "n_weighted",
        "n_not_random",
        "ppi_estimate",
        "ppi_ci_low",
        "ppi_ci_high",
        "human_only_estimate",
        "human_only_ci_low",
        "human_only_ci_high",
        "judge_accuracy",
        "judge_mean_probability",
        "reason",
    ]
    return table[[c for c in cols if c in table.columns]]


def add_model_accuracies(
    report: Report,
    table: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    calibration: str,
    confidence: float = 0.95,
    frame: pd.DataFrame | None = None,
    audit_advice: str = "",
) -> Report:
    """``report`` with the estimates added (numbers, tables and an HTML section); with the
    estimation ``frame`` (holding ``judge_reason``) the judge's outcomes too. A ``table`` made
    without random labels (``estimate_accuracy(..., require_labels=False)``) gets the note
    saying so, ending with ``audit_advice``."""
    report.numbers["model_accuracies"] = {
        "calibration": calibration,
        "confidence": confidence,
        "estimates": estimates_to_json(table),
        "comparisons": comparisons.to_dict(orient="records"),
    }
    report.tables["model_accuracies"] = table
    report.tables["model_differences"] = comparisons
    weighted = bool(table.attrs.get("weighted"))
    no_audit = table.attrs.get("audit_labels") is False
    note = (_WEIGHTED_NOTE if weighted else _NOTE).format(
        calibration=calibration, confidence=confidence
    )
    title = "weighted human labels" if weighted else "random human labels"
    if no_audit:
        labelled = int(frame["gold_label"].notna().sum()) if frame is not None else 0
        note = _NO_AUDIT_NOTE.format(
            calibration=calibration, labelled=labelled, advice=audit_advice
        ).strip()
        title = "no random audit labels yet"
    report.numbers["model_accuracies"]["audit_labels"] = not no_audit
    shown = (
        _shown(table) if weighted else _shown(table).drop(columns=["n_weighted"], errors="ignore")
    )
    report.sections.append((f"Model accuracies (judge + {title})", f"{note} {RANK_RULE}", shown))
    if not comparisons.empty:
        report.sections.append(
            ("Differences between models (PPI)", "CI excludes 0: significant.", comparisons)
        )
    if frame is not None and "judge_reason" in frame.columns:
        outcomes = judge_outcome_table(frame)
        report.numbers["judge_outcomes"] = outcomes.to_dict(orient="records")
        report.tables["judge_outcomes"] = outcomes
        report.sections.append(("Judge outcomes per QA model", _OUTCOME_NOTE, outcomes))
    return report
