"""The Calibrate view's accuracy-vs-human-effort curve and the triage band chosen on it.

The curve is the fit's :attr:`CalibrationReport.effort_curve` (cross-validated, see
:mod:`qaeval_core.calibrate.triage`): for each share of items left to people, the combined
accuracy (people right on the most doubtful items, the judge on the rest) with its 95% bootstrap
band, next to leaving the same share to people at random. The band can be moved along the curve
without refitting (:meth:`qaeval_core.judge.Judge.with_share`); the band shown is the one saved.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import analysis_widgets as aui
from qaeval_core.judge import Judge

__all__ = ["MAX_SHARE", "curve_chart", "effort_section"]

#: The page shows shares up to this (the curve itself goes to 99%).
MAX_SHARE = 0.5
_COMBINED, _RANDOM = "#1f77b4", "#7f7f7f"


def _band(fig: go.Figure, x: pd.Series, lo: pd.Series, hi: pd.Series, color: str) -> None:
    fig.add_scatter(
        x=pd.concat([x, x[::-1]]),
        y=pd.concat([hi, lo[::-1]]),
        fill="toself",
        opacity=0.18,
        line={"width": 0},
        fillcolor=color,
        hoverinfo="skip",
        showlegend=False,
    )


def curve_chart(curve: pd.DataFrame, share: float | None, limit: float = MAX_SHARE) -> go.Figure:
    """Combined and random-routing accuracy (with 95% bands) against the share left to people
    (up to ``limit``), and a line at ``share``."""
    part = curve[curve["share"] <= limit + 1e-9].sort_values("share")
    x = part["share"] * 100
    fig = go.Figure()
    _band(fig, x, part["random_lo"], part["random_hi"], _RANDOM)
    _band(fig, x, part["combined_lo"], part["combined_hi"], _COMBINED)
    fig.add_scatter(
        x=x,
        y=part["random_accuracy"],
        mode="lines",
        name="random share to people",
        line={"color": _RANDOM, "dash": "dash"},
    )
    fig.add_scatter(
        x=x,
        y=part["combined_accuracy"],
        mode="lines",
        name="most doubtful share to people",
        line={"color": _COMBINED, "width": 3},
    )
    if share is not None:
        fig.add_vline(
            x=share * 100,
            line={"color": "#d62728", "dash": "dot"},
            annotation_text=f"band: {share:.0%}",
            annotation_position="top left",
        )
    fig.update_layout(
        xaxis_title="items left to people (%)",
        yaxis_title="accuracy (cross-validated)",
        height=400,
        legend={"orientation": "h", "y": 1.14},
        margin={"t": 50},
        xaxis_range=[0, limit * 100],
    )
    return fig


def _row(curve: pd.DataFrame, share: float) -> pd.Series:
    return curve.iloc[int((curve["share"] - share).abs().to_numpy().argmin())]


def effort_section(judge: Judge, curve: pd.DataFrame, *, key: str, n_items: int) -> Judge:
    """The curve, a slider that moves the band along it, and the band's numbers.

    Returns the judge with the chosen band (the one to save).
    """
    st.subheader("Accuracy vs human effort")
    if curve.empty or judge.triage is None:
        st.info("This fit has no effort curve (no calibrated probability), so no triage band.")
        return judge
    fitted = float(judge.triage.share)
    top = max(int(MAX_SHARE * 100), int(round(fitted * 100)))  # a target may need more than half
    pct = st.slider(
        "Items left to people (%)",
        0,
        top,
        int(round(fitted * 100)),
        key=f"{key}_{fitted:.2f}",
        help="The fit chose this band from the form's share or target accuracy; moving it "
        "reads another band off the same curve (no refit). The band shown is the one saved.",
    )
    share = pct / 100
    chosen = judge if abs(share - fitted) < 1e-9 else judge.with_share(share)
    st.plotly_chart(curve_chart(curve, share, top / 100), key=f"{key}_chart")
    row = _row(curve, share)
    m = st.columns(5)
    m[0].metric(
        "Left to people",
        f"{share:.0%}",
        help=f"about {round(share * n_items)} of the dataset's {n_items} items",
    )
    m[1].metric(
        "Doubt threshold",
        aui.fmt(row["threshold"]),
        help="Items whose P(verdict wrong) reaches this are 'uncertain'.",
    )
    m[2].metric("Combined accuracy", aui.fmt(row["combined_accuracy"]))
    m[3].metric("Random share instead", aui.fmt(row["random_accuracy"]))
    m[4].metric("Judge alone on the rest", aui.fmt(row["confident_accuracy"]))
    gain = float(row["combined_accuracy"] - row["random_accuracy"])
    st.caption(
        f"Combined accuracy {aui.fmt_ci(*row[['combined_accuracy', 'combined_lo', 'combined_hi']])}"
        f" with people deciding the {share:.0%} the judge doubts most, against "
        f"{aui.fmt_ci(*row[['random_accuracy', 'random_lo', 'random_hi']])} for the same share "
        f"chosen at random ({gain:+.3f}); out-of-fold, 95% bootstrap CIs over questions. "
        "Saving keeps this band in the judge config."
    )
    return chosen
