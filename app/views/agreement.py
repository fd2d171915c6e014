"""Agreement (researchers): how far annotators agree, before anyone trusts their labels.

Krippendorff's alpha (nominal on the binary label, ordinal on the 3-point scale) overall and per
dataset / QA model / cited rule with bootstrap CIs, Cohen's kappa per pair, each rater against
the others, and how many items have enough labels to measure agreement at all.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth
from qaeval_core.analysis.formatting import display_frame

GROUPINGS = {"overall": "Overall", "dataset": "Dataset", "qa_model": "QA model", "rule": "Rule"}
ALPHA_HEADERS = {
    "ci": "Alpha [95% CI]",
    "n_items": "Items",
    "n_pairable": "Items with 2+ labels",
    "n_labels": "Labels",
}
KAPPA_HEADERS = {
    "rater_a": "Rater A",
    "rater_b": "Rater B",
    "n_items": "Shared items",
    "agreement": "Agreement",
    "kappa": "Kappa (binary)",
    "kappa_3pt_linear": "Kappa (3-point, linear)",
}
RATER_HEADERS = {
    "n_labels": "Labels",
    "n_items": "Items compared",
    "kappa": "Kappa",
    "alpha_without": "Alpha without them",
}


def _alpha_chart(rows: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for level, part in rows.groupby("level", sort=True):
        fig.add_bar(
            name=str(level),
            x=aui.chart_labels(part["group"]),
            y=part["alpha"],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": (part["ci_high"] - part["alpha"]).fillna(0).tolist(),
                "arrayminus": (part["alpha"] - part["ci_low"]).fillna(0).tolist(),
            },
        )
    fig.update_layout(barmode="group", yaxis_title="Krippendorff's alpha", height=380)
    return fig


def _kappa_heatmap(kappa: pd.DataFrame) -> go.Figure:
    raters = sorted(set(kappa["rater_a"]) | set(kappa["rater_b"]), key=str)
    grid = pd.DataFrame(float("nan"), index=raters, columns=raters)
    for row in kappa.itertuples():
        grid.loc[row.rater_a, row.rater_b] = grid.loc[row.rater_b, row.rater_a] = row.kappa
    labels = aui.chart_labels(raters)
    fig = go.Figure(
        go.Heatmap(
            z=grid.to_numpy(),
            x=labels,
            y=labels,
            zmin=-1,
            zmax=1,
            colorscale="RdBu",
            texttemplate="%{z:.2f}",
        )
    )
    fig.update_layout(height=360)
    return fig


def label_count_chart(label_counts: pd.DataFrame) -> go.Figure:
    """Items per number of labels. The x axis is categorical: the last bin is "3+", which a
    numeric axis would silently drop."""
    bars = go.Bar(x=label_counts["n_labels"].astype(str), y=label_counts["n_items"])
    return go.Figure(bars).update_layout(
        xaxis_title="labels per item", xaxis_type="category", yaxis_title="items", height=300
    )


#: Column headers of the annotator-quality table (the frame's names are snake_case), in the
#: order shown: the Dawid-Skene columns come right after the rater, and the headers are short,
#: so the table fits a 1400 px window (issue 21, item 10: Dawid-Skene was off screen).
QUALITY_HEADERS = {
    "rater": "Rater",
    "n_labels": "Labels",
    "ds_accuracy": "Dawid-Skene accuracy",
    "agree_dawid_skene": "Agrees with Dawid-Skene",
    "n_adjudicated": "Adjudicated items",
    "agree_adjudicated": "Agrees with adjudication",
    "kappa_adjudicated": "Kappa, adjudication",
    "n_vs_rest": "Items vs others",
    "agree_rest": "Agrees with others",
    "kappa_rest": "Kappa, others",
}
#: Rates and kappas: one format (three decimals) in every row.
_RATE = st.column_config.NumberColumn(format="%.3f")


def rate_columns(frame: pd.DataFrame, names: list[str]) -> dict[str, Any]:
    """Column formats giving every rate the same three decimals (Streamlit otherwise prints
    "0.5" above "0.9662"). Only numeric columns: a column that :func:`display_frame` turned
    into text for its blanks is formatted already, and a number format would show "None"."""
    return {n: _RATE for n in names if n in frame and pd.api.types.is_numeric_dtype(frame[n])}


def _quality_section(url: str, dataset: str | None) -> None:
    """Each annotator against the adjudicated labels, the others and Dawid-Skene."""
    st.subheader("Annotator quality")
    quality = aui.annotator_quality(url, dataset)
    if quality.empty:
        st.info("No labels yet.")
        return
    # display_frame: an undefined rate (no adjudicated item, nobody else) is a blank cell,
    # not Streamlit's "None"; rates are shown with three decimals either way.
    shown = display_frame(
        quality[[c for c in QUALITY_HEADERS if c in quality.columns]], QUALITY_HEADERS
    )
    rates = [h for c, h in QUALITY_HEADERS.items() if c.startswith(("agree", "kappa", "ds_"))]
    st.dataframe(
        shown, hide_index=True, key="agreement_quality", column_config=rate_columns(shown, rates)
    )
    st.caption(
        "Agreement on the 3-point label with the researchers' adjudications; binary agreement "
        "and kappa with the majority of the other raters; Dawid-Skene (crowd-kit) weighs each "
        "rater by an estimated confusion matrix, and its aggregate can replace the majority "
        "in the final labels (Data page, or `qaeval export --what final --aggregate "
        "dawid_skene`). Empty: undefined (no adjudicated item, nobody else on their items)."
    )


def main() -> None:
    auth.page_setup(
        "Agreement",
        auth.RESEARCHERS,
        caption="Krippendorff's alpha with bootstrap CIs, Cohen's kappa, each rater vs the rest.",
    )
    url = auth.store_url()
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        dataset = aui.dataset_picker(url, key="agreement_dataset", allow_all=True)
    n_boot = c2.number_input("Bootstrap resamples", 0, 10_000, 1000, 100, key="agreement_n_boot")
    seed = c3.number_input("Seed", 0, 2**31 - 1, 0, key="agreement_seed")
    tables = aui.agreement(url, dataset, n_boot=int(n_boot), seed=int(seed))
    s = tables.summary
    if s["labels"] == 0:
        st.info("No labels yet: assign items and let annotators label them first.")
        return

    overall = tables.alpha[tables.alpha["grouping"] == "overall"].set_index("level")
    cols = st.columns(5)
    for col, level in zip(cols[:2], ("nominal", "ordinal"), strict=True):
        row = overall.loc[level]
        col.metric(
            f"alpha {level}",
            aui.fmt(row["alpha"]),
            help=f"95% CI {aui.fmt_ci(row['alpha'], row['ci_low'], row['ci_high'])}; "
            f"{int(row['n_pairable'])} items with 2+ labels",
        )
    cols[2].metric("Items / labels", f"{s['items']} / {s['labels']}")
    cols[3].metric("Raters", s["raters"])
    cols[4].metric(
        "Disagreements", s["disagreements"], help=f"{s['needs_adjudication']} ties to adjudicate"
    )

    st.subheader("Krippendorff's alpha")
    shown = tables.alpha.assign(
        ci=[
            aui.fmt_ci(a, lo, hi)
            for a, lo, hi in tables.alpha[["alpha", "ci_low", "ci_high"]].itertuples(index=False)
        ]
    )
    for grouping, title in GROUPINGS.items():
        rows = tables.alpha[tables.alpha["grouping"] == grouping]
        if rows.empty:
            continue
        with st.expander(f"{title} ({rows['group'].nunique()})", expanded=grouping != "qa_model"):
            st.plotly_chart(_alpha_chart(rows), key=f"agreement_alpha_{grouping}")
            st.dataframe(
                display_frame(
                    shown.loc[
                        rows.index, ["group", "level", "ci", "n_items", "n_pairable", "n_labels"]
                    ],
                    ALPHA_HEADERS,
                ),
                hide_index=True,
                key=f"agreement_alpha_table_{grouping}",
            )

    st.subheader("Annotator pairs (Cohen's kappa)")
    left, right = st.columns(2)
    if tables.kappa.empty:
        left.info("Only one rater: no pairs to compare.")
    else:
        left.caption("Binary label (clearly correct vs not)")
        left.plotly_chart(_kappa_heatmap(tables.kappa), key="agreement_kappa_chart")
        merged = tables.kappa.merge(
            tables.kappa_ordinal[["rater_a", "rater_b", "kappa"]],
            on=["rater_a", "rater_b"],
            suffixes=("", "_3pt_linear"),
        )
        right.caption("Per pair: shared items, raw agreement, kappa binary and 3-point (linear)")
        right.dataframe(
            display_frame(merged, KAPPA_HEADERS), hide_index=True, key="agreement_kappa_table"
        )

    st.subheader("Each rater against the others' majority")
    raters = display_frame(tables.raters, RATER_HEADERS)
    rater_rates = ["Agreement", RATER_HEADERS["kappa"], RATER_HEADERS["alpha_without"]]
    st.dataframe(
        raters,
        hide_index=True,
        key="agreement_raters",
        column_config=rate_columns(raters, rater_rates),
    )
    st.caption(
        "Alpha without: nominal alpha of everyone else; a rater whose removal raises it a lot "
        "is the one to talk to."
    )

    _quality_section(url, dataset)

    st.subheader("Labels per item")
    left, right = st.columns(2)
    counts = tables.label_counts.rename(columns={"n_labels": "Labels per item", "n_items": "Items"})
    left.dataframe(counts, hide_index=True, key="agreement_label_counts")
    right.plotly_chart(label_count_chart(tables.label_counts), key="agreement_label_counts_chart")


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
