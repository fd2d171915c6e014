"""The Calibrate view's accuracy against cost: what each input set costs per 1,000 rows.

Reads the judge's ``cost`` record (:mod:`qaeval_core.calibrate.cost`, written by a cost-aware
fit) through :func:`qaeval_core.judge.file_summary.cost_summary`: every input set the
selection evaluated, cross-validated accuracy against measured seconds per 1,000 rows on this
machine, the frontier (no set both cheaper and more accurate) and the chosen set; below it,
each input family's measured cost and cold load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from qaeval_core.judge.file_summary import CostSummary, cost_summary

__all__ = ["cost_section", "family_table", "frontier_chart", "frontier_frame"]

_POINT, _FRONTIER, _CHOSEN = "#7f7f7f", "#1f77b4", "#d62728"


def frontier_frame(cost: CostSummary) -> pd.DataFrame:
    """One row per evaluated input set: families, cost, accuracy (%), frontier, chosen."""
    frame = pd.DataFrame(
        [
            {
                "inputs": ", ".join(r.families),
                "cost": r.cost,
                "accuracy": 100 * r.cv_accuracy,
                "frontier": r.frontier,
                "chosen": r.chosen,
            }
            for r in cost.evaluated
        ],
        columns=["inputs", "cost", "accuracy", "frontier", "chosen"],
    )
    return frame.sort_values("cost").reset_index(drop=True)


def family_table(cost: CostSummary) -> pd.DataFrame:
    """Each input family: its inputs, seconds per 1,000 rows, cold load seconds."""
    out: dict[str, dict[str, Any]] = {}
    for c in cost.inputs:
        row = out.setdefault(c.family, {"family": c.family, "inputs": [], "s": 0.0, "l": 0.0})
        row["inputs"].append(c.column)
        row["s"] += c.s_per_1000
        row["l"] += c.load_s
    return pd.DataFrame(
        [
            {
                "family": r["family"],
                "inputs": ", ".join(r["inputs"]),
                "seconds per 1,000 rows": round(r["s"], 3),
                "cold load (s)": round(r["l"], 2),
            }
            for r in out.values()
        ],
        columns=["family", "inputs", "seconds per 1,000 rows", "cold load (s)"],
    )


def frontier_chart(frame: pd.DataFrame) -> go.Figure:
    """Accuracy against cost (log axis) of every evaluated set; the frontier joined by a line."""
    fig = go.Figure()
    fig.add_scatter(
        x=frame["cost"],
        y=frame["accuracy"],
        mode="markers",
        name="input set",
        marker={"color": _POINT, "size": 8},
        text=frame["inputs"],
        hovertemplate="%{text}<br>%{x:.3g} s / 1,000 rows<br>%{y:.1f}%<extra></extra>",
    )
    front = frame[frame["frontier"]]
    fig.add_scatter(
        x=front["cost"],
        y=front["accuracy"],
        mode="lines+markers",
        name="frontier",
        line={"color": _FRONTIER},
        marker={"size": 9},
        text=front["inputs"],
        hovertemplate="%{text}<br>%{x:.3g} s / 1,000 rows<br>%{y:.1f}%<extra></extra>",
    )
    chosen = frame[frame["chosen"]]
    fig.add_scatter(
        x=chosen["cost"],
        y=chosen["accuracy"],
        mode="markers",
        name="chosen",
        marker={"color": _CHOSEN, "size": 14, "symbol": "star"},
        text=chosen["inputs"],
        hovertemplate="%{text}<br>%{x:.3g} s / 1,000 rows<br>%{y:.1f}%<extra></extra>",
    )
    fig.update_layout(
        xaxis_title="input cost, seconds per 1,000 rows (log)",
        yaxis_title="cross-validated accuracy (%)",
        xaxis_type="log",
        height=380,
        margin={"t": 30},
    )
    return fig


def cost_section(cost: Mapping[str, Any] | None, *, key: str) -> None:
    """The section: nothing when the fit measured no cost (``inputs`` = all). ``cost`` is the
    judge's measured cost (:attr:`Judge.cost`), read by :func:`cost_summary`."""
    st.subheader("Accuracy against cost")
    summary = cost_summary(cost)
    if summary is None:
        st.caption("Every input was used and no cost was measured (inputs: all).")
        return
    where = ", ".join(str(v) for v in (summary.cpu, f"{summary.cpus} cores") if v is not None)
    c = st.columns(3)
    c[0].metric("Judge inputs, s / 1,000 rows", f"{summary.judge_s_per_1000 or 0.0:.3g}")
    c[1].metric("Cold load (s)", f"{summary.judge_load_s:.1f}")
    c[2].metric("Inputs rule", summary.inputs_rule)
    frame = frontier_frame(summary)
    if not frame.empty:
        st.plotly_chart(frontier_chart(frame), key=f"{key}_chart")
    st.dataframe(family_table(summary), hide_index=True, key=f"{key}_families")
    st.caption(
        f"Measured on {summary.rows} of the calibration's items on this machine ({where}), "
        f"{_provenance(summary)}: {summary.method}. Accuracy is cross-validated on the "
        "same labels and folds; the chosen set is the cheapest within the tolerance of the best."
    )


def _provenance(cost: CostSummary) -> str:
    """Whether the costs were measured by this fit or read from the cost cache, and when."""
    when = cost.measured_at
    if not cost.cached_families:
        return f"measured by this fit ({when})" if when else "measured by this fit"
    families = ", ".join(cost.cached_families)
    return f"{cost.source}: {families} from the cost cache, measured from {when}"
