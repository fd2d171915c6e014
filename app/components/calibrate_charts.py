"""The Calibrate page's charts: cross-validated quality per judge and the learning curves.

Split from ``app/views/calibrate.py`` (the page's flow) so each stays readable; these only
turn the fit's summary frames into a table or a Plotly figure.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.components import analysis_widgets as aui
from qaeval_core.calibrate import summary
from qaeval_core.workflows import DatasetCalibration

#: How each measure is named in the table and the chart's legend.
MEASURE_NAMES = {"accuracy": "accuracy", "balanced_accuracy": "balanced acc.", "f1": "F1"}


def quality_wide(quality: pd.DataFrame) -> pd.DataFrame:
    """One row per judge, one "estimate [low, high]" cell per measure."""
    triples = quality[["estimate", "lo", "hi"]].itertuples(index=False)
    cells = quality.assign(cell=[aui.fmt_ci(e, lo, hi) for e, lo, hi in triples])
    wide = cells.pivot(index=["judge", "kind"], columns="measure", values="cell")
    wide = wide.reindex(columns=list(summary.MEASURES)).rename(columns=MEASURE_NAMES)
    order = {"calibrated (winner)": 0, "calibrated": 1, "uncalibrated": 2}
    wide = wide.reset_index()
    return wide.sort_values("kind", key=lambda k: k.map(order), kind="stable")


def quality_chart(quality: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    judges = list(dict.fromkeys(quality["judge"]))
    for measure in summary.MEASURES:
        part = quality[quality["measure"] == measure].set_index("judge").loc[judges]
        fig.add_bar(
            name=MEASURE_NAMES[measure],
            x=aui.chart_labels(judges),
            y=part["estimate"],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": part["hi"] - part["estimate"],
                "arrayminus": part["estimate"] - part["lo"],
            },
        )
    fig.update_layout(
        barmode="group",
        yaxis_title="cross-validated quality",
        yaxis_range=[0, 1],
        height=400,
        legend={"orientation": "h", "y": 1.12},
        margin={"t": 40},
    )
    return fig


def curve_chart(curves: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]
    for k, (judge, part) in enumerate(curves.groupby("judge", sort=True)):
        color = palette[k % len(palette)]
        name = aui.chart_labels([judge])[0]
        band = pd.concat([part["size"], part["size"][::-1]])
        fig.add_scatter(
            x=band,
            y=pd.concat([part["hi"], part["lo"][::-1]]),
            fill="toself",
            opacity=0.15,
            line={"width": 0},
            fillcolor=color,
            hoverinfo="skip",
            showlegend=False,
        )
        fig.add_scatter(
            x=part["size"],
            y=part["accuracy"],
            mode="lines+markers",
            name=name,
            line={"color": color},
        )
    fig.update_layout(
        xaxis_title="labels used for fitting",
        yaxis_title="accuracy on the unseen rest",
        height=400,
        legend={"orientation": "h", "y": 1.12},
        margin={"t": 40},
    )
    return fig


def curve_columns(fit: DatasetCalibration) -> list[str] | None:
    """The inputs the learning curves' judges read: the cost-aware fit's chosen inputs (so the
    curves are the fitted judge's), or None (every input) when no input set was chosen."""
    chosen = fit.report.inputs
    return None if chosen is None else list(chosen.columns)


def curve_inputs_text(fit: DatasetCalibration) -> str:
    chosen = fit.report.inputs
    if chosen is None:
        return "every input"
    return f"the chosen inputs ({', '.join(chosen.families)})"
