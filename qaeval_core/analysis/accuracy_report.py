"""Model accuracies with valid confidence intervals as a section of ``qaeval report``.

:func:`add_model_accuracies` puts the three estimates of
:func:`qaeval_core.analysis.estimates.estimate_accuracy` (PPI, human-only, judge-only) and the
pairwise differences of :func:`~qaeval_core.analysis.estimates.compare_models` into a
:class:`~qaeval_core.analysis.report.Report`: the JSON gets ``model_accuracies`` (the shape
``qaeval estimate`` writes), the HTML a table per estimate and one for the differences.
"""

from __future__ import annotations

import pandas as pd

from qaeval_core.analysis.estimates import estimates_to_json
from qaeval_core.analysis.report import Report

__all__ = ["add_model_accuracies"]

_NOTE = (
    "Judge ({calibration}) on every item plus human labels on a random audit sample: PPI "
    "(prediction-powered inference, power-tuned) and human-only intervals are valid at "
    "{confidence:.0%}; the judge-only estimate has no valid interval (its bias is unknown "
    "without labels). Labels from triage or the ordinary queue are not a random sample and "
    "are left out (n_not_random)."
)


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    cols = [
        "model", "n_items", "n_labelled", "n_not_random",
        "ppi_estimate", "ppi_ci_low", "ppi_ci_high",
        "human_only_estimate", "human_only_ci_low", "human_only_ci_high",
        "judge_only_estimate", "reason",
    ]  # fmt: skip
    return table[[c for c in cols if c in table.columns]]


def add_model_accuracies(
    report: Report,
    table: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    calibration: str,
    confidence: float = 0.95,
) -> Report:
    """``report`` with the estimates added (numbers, tables and an HTML section)."""
    report.numbers["model_accuracies"] = {
        "calibration": calibration,
        "confidence": confidence,
        "estimates": estimates_to_json(table),
        "comparisons": comparisons.to_dict(orient="records"),
    }
    report.tables["model_accuracies"] = table
    report.tables["model_differences"] = comparisons
    note = _NOTE.format(calibration=calibration, confidence=confidence)
    report.sections.append(("Model accuracies (judge + random human labels)", note, _shown(table)))
    if not comparisons.empty:
        report.sections.append(
            ("Differences between models (PPI)", "CI excludes 0: significant.", comparisons)
        )
    return report
