"""What ``qaeval estimate`` prints: one compact row per QA model, pairs only on request.

Issue 32, item 7: the terminal output had one row per model pair as well (270 lines for the
demo, 66 of them "no PPI estimate for ..."), and its "judge only" column meant the mean
probability where the report's meant the share judged correct. Here the judge's two numbers
have their own columns, a reason every model shares is said once, and pairs are counted
unless asked for (the JSON written by :mod:`qaeval_core.cli.estimate` always has them).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from qaeval_core.cli.common import console

__all__ = ["print_estimates"]


def _fmt(est: float, low: float | None = None, high: float | None = None) -> str:
    import math

    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "n/a"
    return f"{est:.3f}" if low is None else f"{est:.3f} [{low:.3f}, {high:.3f}]"


def print_estimates(table: Any, pairs: Any, confidence: float, show_pairs: bool) -> None:
    """The per-model table in the one ranking of models
    (:func:`~qaeval_core.analysis.ranking.ranked_models`, its rule said under it; the reason
    said once when every model shares it), the PPI notes, and the pairs: counted, or listed
    with ``show_pairs`` (only those with an estimate)."""
    from rich.table import Table

    from qaeval_core.analysis.ranking import RANK_RULE, ranked_models

    pct = f"{confidence:.0%}"
    records = ranked_models(table).to_dict("records")
    reasons = {r["reason"] for r in records}
    shared = reasons.pop() if len(reasons) == 1 else None  # said once, under the table
    out = Table(
        title=f"accuracy per QA model, {pct} intervals",
        caption="labels: labels used (weighted: of them, weighted by 1 / sample probability); "
        "left out: labels not from a random sample or with no known sample probability; "
        "judge accuracy: share of items judged correct; judge mean prob.: mean P(correct); "
        "neither has a valid CI (the judge's bias is unknown without labels)",
    )
    columns = ["rank", "model", "items", "labels"]
    weighted = bool(table.attrs.get("weighted"))
    columns += ["weighted"] if weighted else []
    for col in (*columns, "left out", "PPI", "human only", "judge accuracy", "judge mean prob."):
        out.add_column(col, overflow="fold")
    if shared is None:
        out.add_column("why no estimate", overflow="fold")
    for r in records:
        counted = [str(r["n_labelled"])] + ([str(r["n_weighted"])] if weighted else [])
        out.add_row(
            str(r["rank"]) if isinstance(r["rank"], Integral) else "",
            str(r["model"]),
            str(r["n_items"]),
            *counted,
            str(r["n_not_random"]),
            _fmt(r["ppi_estimate"], r["ppi_ci_low"], r["ppi_ci_high"]),
            _fmt(r["human_only_estimate"], r["human_only_ci_low"], r["human_only_ci_high"]),
            _fmt(r["judge_accuracy"]),
            _fmt(r["judge_mean_probability"]),
            *([] if shared is not None else [r["reason"]]),
        )
    console.print(out)
    console.print(RANK_RULE, markup=False, soft_wrap=True)
    if shared:
        console.print(f"No PPI estimate for any model: {shared}.", markup=False, soft_wrap=True)
    for note in sorted({r["ppi_note"] for r in records if r.get("ppi_note")}):
        console.print(f"PPI: {note}.", markup=False, soft_wrap=True)
    compared = pairs[pairs["reason"] == ""]
    if pairs.attrs.get("note"):
        console.print(
            f"Comparisons: {pairs.attrs['note']} (--pairs all|top to choose others).",
            markup=False,
            soft_wrap=True,
        )
    if not show_pairs:
        if len(compared):
            console.print(
                f"{len(compared)} model pair(s) compared, {int(compared['significant'].sum())} "
                "significant (in the JSON; --pairs auto lists them).",
                markup=False,
                soft_wrap=True,
            )
        return
    if len(compared):
        diff = Table(title=f"PPI accuracy differences (a - b, {pct} CI, independence assumed)")
        for col in ("a", "b", "difference", "significant"):
            diff.add_column(col, overflow="fold")
        for r in compared.to_dict("records"):
            diff.add_row(
                str(r["model_a"]),
                str(r["model_b"]),
                _fmt(r["difference"], r["ci_low"], r["ci_high"]),
                "yes" if r["significant"] else "no",
            )
        console.print(diff)
    if len(pairs) > len(compared):
        console.print(
            f"{len(pairs) - len(compared)} pair(s) not compared: a model of each has no PPI "
            "estimate (see the table).",
            markup=False,
            soft_wrap=True,
        )
