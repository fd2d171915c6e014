"""The Leaderboard's QA-model accuracies with valid confidence intervals.

For a saved calibration, each QA model's accuracy three ways
(:func:`qaeval_core.analysis.estimates.estimate_accuracy` on
:func:`qaeval_core.workflows.estimation_frame`): prediction-powered inference (the judge on
every item, corrected by the random audit labels; valid CI), the random audit labels alone
(valid CI), and the judge alone as two named numbers, its accuracy (share judged correct) and
its mean probability (no valid CI: its bias is unknown without labels). Then the ranking with
its CIs and whether two models differ (:func:`compare_estimates`). Only labels of a random
audit sample count; without any the section says so, links to the Assign page, and still shows
every model's judge numbers (issue 32, item 9).

The ranking rule (:data:`~qaeval_core.analysis.ranking.RANK_RULE`, said on the page, applied by
:func:`~qaeval_core.analysis.ranking.ranked_models` as in ``qaeval estimate`` and the report):
models are ranked by their PPI estimate only when every model has one; otherwise no model gets
a rank and they are listed by name, since ranking the models with enough random labels above
those without would rank on less evidence (the demo had put its one estimated model first
although its judge accuracy was the lowest).

Model names come from the data: charts get them HTML-escaped, text gets them markdown-escaped.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import safe_text
from app.components import triage_widgets as tw
from qaeval_core.analysis.estimates import ALL_MODELS, compare_estimates, estimate_accuracy
from qaeval_core.analysis.ranking import RANK_RULE, ranked_models
from qaeval_core.errors import QAEvalError

__all__ = ["estimates_section", "estimates_table", "ranking_chart"]

ASSIGN_PAGE = "views/assign.py"
_NO_CI = "no valid CI"
#: The table's column of reasons for no estimate (shown under the grid, not in it).
REASON = "Why no estimate"
#: estimate_accuracy's column arguments for an estimation frame.
COLUMNS = {
    "prediction": "judge_probability",
    "label": "gold_label",
    "model": "qa_model",
    "sample": "label_sample",
    "probability": "sample_probability",
}


def _ci(est: Any, lo: Any, hi: Any) -> str:
    """``0.712 [0.650, 0.770]``; a CI clipped to [0, 1] (accuracy cannot leave it); empty
    when there is no estimate."""
    if pd.isna(est):
        return ""
    return aui.fmt_ci(est, max(0.0, float(lo)), min(1.0, float(hi)))


def estimates_table(table: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """One row per model (the overall row last) with friendly headers and text cells."""
    ranked = ranked_models(table)
    level = f"{confidence:.0%} CI"
    weighted = bool(table.attrs.get("weighted"))
    used = (
        {"Weighted labels": ranked["n_labelled"].astype(int)}
        if weighted
        else {"Random labels": ranked["n_labelled"].astype(int)}
    )
    return pd.DataFrame(
        {
            "Rank": [str(r) if pd.notna(r) else "" for r in ranked["rank"]],
            "QA model": ranked["model"].map(tw.cell),
            "Items": ranked["n_items"].astype(int),
            **used,
            "Not used": ranked["n_not_random"].astype(int),
            f"PPI accuracy [{level}]": [
                _ci(*r) for r in ranked[["ppi_estimate", "ppi_ci_low", "ppi_ci_high"]].to_numpy()
            ],
            f"Labels only [{level}]": [
                _ci(*r)
                for r in ranked[
                    ["human_only_estimate", "human_only_ci_low", "human_only_ci_high"]
                ].to_numpy()
            ],
            "Judge accuracy": [aui.fmt(v) if pd.notna(v) else "" for v in ranked["judge_accuracy"]],
            "Judge mean P": [
                aui.fmt(v) if pd.notna(v) else "" for v in ranked["judge_mean_probability"]
            ],
            REASON: ranked["reason"].map(tw.cell),
        }
    ).reset_index(drop=True)


#: Pixel widths of the estimates grid's columns (:func:`_show_table`): each header shows whole
#: and together they fit the page's 904 px at a 1366 px screen (issue 32.9; the browser walk
#: measures it). The interval columns take what their cells need.
WIDTHS = {
    "Rank": 48,
    "QA model": 140,
    "Items": 52,
    "Random labels": 100,
    "Weighted labels": 100,
    "Not used": 72,
    "Judge accuracy": 108,
    "Judge mean P": 100,
}


def reasons_text(shown: pd.DataFrame) -> str:
    """The rows' reasons for no estimate, one line per reason with its models, for under the
    grid (a column of long sentences does not fit the page)."""
    rows = shown[shown[REASON] != ""]
    lines = [
        f"No estimate for {', '.join(map(safe_text.escape_markdown, group['QA model']))}: "
        f"{safe_text.escape_markdown(reason)}."
        for reason, group in rows.groupby(REASON, sort=False)
    ]
    return "  \n".join(lines)


def _show_table(shown: pd.DataFrame) -> None:
    """The estimates grid, its columns sized by :data:`WIDTHS` so that all fit the page at
    1366 px (issue 32.9: the judge column was cut there); the reasons for no estimate and the
    ranking rule under it."""
    widths = {c: st.column_config.Column(width=WIDTHS[c]) for c in shown.columns if c in WIDTHS}
    st.dataframe(
        shown.drop(columns=REASON),
        hide_index=True,
        key="estimates_table",
        column_config=widths,
        height=min(35 * (len(shown) + 1) + 3, 738),
    )
    if reasons := reasons_text(shown):
        st.caption(reasons)
    st.caption(RANK_RULE)


def ranking_chart(table: pd.DataFrame) -> go.Figure:
    """Models in the table's order (by PPI when ranked, else by name), each with its PPI and
    random-labels-only CIs and the judge's accuracy; a dotted line at the overall PPI."""
    ranked = ranked_models(table)
    overall = ranked[ranked["model"] == ALL_MODELS]
    models = ranked[ranked["model"] != ALL_MODELS].reset_index(drop=True)
    pos = np.arange(len(models), dtype=float)
    fig = go.Figure()
    for name, prefix, shift, color in (
        ("PPI (judge + random labels)", "ppi", -0.2, "#1f77b4"),
        ("random labels only", "human_only", 0.0, "#2ca02c"),
    ):
        est = models[f"{prefix}_estimate"]
        lo, hi = models[f"{prefix}_ci_low"].clip(lower=0), models[f"{prefix}_ci_high"].clip(upper=1)
        fig.add_scatter(
            x=est,
            y=pos + shift,
            mode="markers",
            name=name,
            marker={"color": color, "size": 9},
            error_x={
                "type": "data",
                "symmetric": False,
                "array": hi - est,
                "arrayminus": est - lo,
                "thickness": 2,
            },
        )
    fig.add_scatter(
        x=models["judge_accuracy"],
        y=pos + 0.2,
        mode="markers",
        name=f"judge accuracy ({_NO_CI})",
        marker={"color": "#ff7f0e", "symbol": "x", "size": 9},
    )
    if not overall.empty and pd.notna(overall["ppi_estimate"].iloc[0]):
        fig.add_vline(
            x=float(overall["ppi_estimate"].iloc[0]),
            line={"dash": "dot"},
            annotation_text="all models (PPI)",
        )
    fig.update_layout(
        xaxis={"title": "accuracy", "range": [-0.01, 1.01], "dtick": 0.1},
        height=max(260, 60 + 42 * len(models)),
        yaxis={
            "tickvals": pos,
            "ticktext": aui.chart_labels(models["model"]),
            "autorange": "reversed",
        },
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        margin={"t": 60},
    )
    return fig


def _no_random_labels(frame: pd.DataFrame, confidence: float) -> None:
    labelled = int(frame["gold_label"].notna().sum())
    st.warning(
        f"No random audit labels yet: {labelled} item(s) have a human label, but none was "
        "chosen at random (they were queued, imported or routed by the judge's doubt), so no "
        "valid confidence interval can be drawn from them. Deal a seeded random audit sample "
        "and have it labelled; audited items that already carry a label count at once.",
        icon=":material/casino:",
    )
    st.page_link(
        ASSIGN_PAGE,
        label="Deal a random audit sample on the Assign page",
        icon=":material/group_add:",
    )
    table = estimate_accuracy(frame, confidence=confidence, require_labels=False, **COLUMNS)
    overall = table[table["model"] == ALL_MODELS].iloc[0]
    m = st.columns(2)
    m[0].metric(f"Judge accuracy, all items ({_NO_CI})", aui.fmt(overall["judge_accuracy"]))
    m[1].metric(f"Judge mean probability ({_NO_CI})", aui.fmt(overall["judge_mean_probability"]))
    shown = estimates_table(table, confidence)
    _show_table(shown)


def _comparison(frame: pd.DataFrame, table: pd.DataFrame, confidence: float, min_labels: int):
    models = [m for m in ranked_models(table)["model"] if m != ALL_MODELS]
    ready = [m for m in models if pd.notna(table.set_index("model").loc[m, "ppi_estimate"])]
    safe_text.section("Do two models differ?")
    if len(ready) < 2:
        st.info("Comparing needs two models with a PPI estimate (enough random labels each).")
        return
    c1, c2 = st.columns(2)
    a = c1.selectbox("Model A", ready, index=0, key="estimates_model_a")
    b = c2.selectbox("Model B", ready, index=1, key="estimates_model_b")
    if a == b:
        st.info("Pick two different models.")
        return
    # Only the chosen pair: a large leaderboard's default comparison is adjacent ranks only.
    pairs = compare_estimates(table[table["model"].isin([a, b])], confidence, pairs="all")
    row = pairs[(pairs["model_a"] == a) & (pairs["model_b"] == b)]
    sign = 1.0
    if row.empty:
        row, sign = pairs[(pairs["model_a"] == b) & (pairs["model_b"] == a)], -1.0
    r = row.iloc[0]
    diff = sign * float(r["difference"])
    lo, hi = sorted((sign * float(r["ci_low"]), sign * float(r["ci_high"])))
    st.metric(f"Accuracy of A minus B ({confidence:.0%} CI)", f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    names = f"{safe_text.escape_markdown(a)} and {safe_text.escape_markdown(b)}"
    if bool(r["significant"]):
        st.success(f"Significant: the interval excludes 0, so {names} differ.")
    else:
        st.info(f"Not significant: the interval includes 0; {names} may be equally accurate.")
    st.caption(
        "PPI difference with a normal interval that treats the two estimates as independent; "
        "answers to the same questions usually make them positively correlated, which makes "
        "this interval conservative (too wide)."
    )


def estimates_section(url: str, dataset: str | None) -> None:
    """The whole section: calibration, options, the three estimates, ranking, comparison."""
    st.subheader("Model accuracy with valid confidence intervals")
    if dataset is None:
        st.info("Pick one dataset to estimate its QA models' accuracy.")
        return
    c1, c2, c3 = st.columns([3, 1, 1])
    calibration = tw.calibration_picker(
        url,
        key="estimates_calibration",
        dataset=dataset,
        container=c1,
        help="The saved judge whose P(correct) is averaged over every item.",
    )
    confidence = c2.selectbox("Confidence", [0.9, 0.95, 0.99], index=1, key="estimates_conf")
    min_labels = int(c3.number_input("Min. random labels", 2, 10_000, 10, key="estimates_min"))
    if calibration is None:
        return
    try:
        frame = tw.estimation_frame(url, dataset, calibration)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    known = frame["sample_probability"].notna() if "sample_probability" in frame else False
    random = ((frame["label_sample"] == "random") | known) & frame["gold_label"].notna()
    if not random.any():
        _no_random_labels(frame, confidence)
        return
    table = estimate_accuracy(frame, confidence=confidence, min_labels=min_labels, **COLUMNS)
    overall = table[table["model"] == ALL_MODELS].iloc[0]
    m = st.columns(3)
    m[0].metric(
        "PPI: judge + random labels",
        _ci(*overall[["ppi_estimate", "ppi_ci_low", "ppi_ci_high"]]) or "—",
    )
    m[1].metric(
        "Random labels only",
        _ci(*overall[["human_only_estimate", "human_only_ci_low", "human_only_ci_high"]]) or "—",
    )
    m[2].metric(f"Judge accuracy ({_NO_CI})", aui.fmt(overall["judge_accuracy"]))
    if table.attrs.get("weighted"):
        st.caption(
            f"All {int(overall['n_items'])} items; {int(overall['n_labelled'])} label(s) used, "
            "each weighted by 1 / the probability it was drawn (triage by chance: labels chosen "
            f"by the judge's doubt still count); {int(overall['n_not_random'])} label(s) left "
            "out: no known probability (deterministic triage, the queue). "
            f"{confidence:.0%} intervals, clipped to [0, 1]."
        )
    else:
        st.caption(
            f"All {int(overall['n_items'])} items; {int(overall['n_labelled'])} random audit "
            f"label(s) used, {int(overall['n_not_random'])} other label(s) left out (not a "
            f"random sample). {confidence:.0%} intervals, clipped to [0, 1]."
        )
    shown = estimates_table(table, confidence)
    _show_table(shown)
    st.plotly_chart(ranking_chart(table), key="estimates_chart")
    _comparison(frame, table, confidence, min_labels)
