"""Metric explorer (researchers): where one automatic judge parts from the humans, item by item.

A confusion matrix against the human verdict (adjudicated label, else the raters' majority),
the metric's score distribution per human label, and the contradictions the metric is most
confident about, with its details (subscores, best reference or n-gram, rationale). Selecting a
row opens the item with every rater's label and the adjudication history.

The "Final labels" tab lists the items by where their final label comes from (adjudication,
annotators (their majority or Dawid-Skene's weighted aggregate), a saved calibration's judge,
none; :func:`qaeval_core.workflows.final_labels`);
with a calibration chosen there, the opened item can show the judge's trace (its reason, rule,
matched reference and each input's push; :mod:`app.components.judge_trace`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth, judge_trace, safe_text
from app.components import triage_widgets as tw
from qaeval_core import analysis
from qaeval_core.analysis.formatting import config_label, display_frame
from qaeval_core.errors import QAEvalError

ITEM_KEY = "explorer_item"
TABLE_KEY = "explorer_worst"
FINAL_ITEM_KEY = "explorer_final_item"
FINAL_TABLE_KEY = "explorer_final_table"
#: The worst-disagreements table's columns, in order, with their headers ("value" is renamed
#: after the metric).
WORST_HEADERS = {
    "external_id": "Item",  # the id annotators see (one id per item on every page)
    "confidence": "Confidence",
    "value": "Score",
    "human": "Human verdict",
    "candidate": "Answer",
    "references": "References",
    "details_text": "Metric details",
    "question": "Question",
    "qa_model": "QA model",
}
TILES = {
    "accuracy": "Accuracy",
    "balanced_accuracy": "Balanced acc.",
    "precision": "Precision",
    "recall": "Recall",
    "kendall_tau_b": "Kendall tau-b",
}


def _pick_row(item_ids: list[int], table: str = TABLE_KEY, item: str = ITEM_KEY) -> None:
    """Selecting a row of a table opens that item below it."""
    rows = st.session_state[table].selection.rows
    if rows:
        st.session_state[item] = item_ids[rows[0]]


def _confusion_chart(confusion: pd.DataFrame) -> go.Figure:
    z = confusion.to_numpy()
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[analysis.label_text(c) for c in confusion.columns],
            y=["metric: not correct", "metric: correct"],
            colorscale="Blues",
            text=z,
            texttemplate="%{text}",
            showscale=False,
        )
    )
    fig.update_layout(xaxis_title="human verdict", height=320, margin={"t": 30, "b": 40})
    return fig


def _distribution_chart(joined: pd.DataFrame, metric_id: str) -> go.Figure:
    fig = go.Figure()
    for final, part in joined.groupby("final", sort=True):
        fig.add_box(
            y=part["value"],
            name=analysis.label_text(final),
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker={"size": 4, "opacity": 0.5},
        )
    fig.update_layout(
        yaxis_title=f"{aui.chart_labels([metric_id])[0]} score",
        xaxis_title="human verdict",
        showlegend=False,
        height=320,
        margin={"t": 30, "b": 40},
    )
    return fig


def main() -> None:
    auth.page_setup(
        "Metric explorer",
        auth.RESEARCHERS,
        caption="Pick a metric: where does it disagree with people, and why?",
    )
    url = auth.store_url()
    c1, _ = st.columns(2)
    with c1:
        dataset = aui.dataset_picker(url, key="explorer_dataset")
    assert dataset is not None
    frames = aui.load_frames(url, dataset)
    metric_tab, final_tab = st.tabs(["Metric vs humans", "Final labels"])
    with metric_tab:
        # The metric picker lives in the tab that reads it: above the tabs it stayed live on
        # "Final labels", which ignores it (issue 33).
        _metric(url, dataset, frames, st.columns(2)[0])
    with final_tab:
        _final_labels(url, dataset, frames)


def _final_labels(url: str, dataset: str, frames: analysis.Frames) -> None:
    """The items filtered by where their final label comes from; a row opens the item."""
    c1, c2, c3 = st.columns([2, 2, 1])
    calibration = tw.calibration_picker(
        url,
        key="explorer_final_calibration",
        dataset=dataset,
        optional=True,
        label="Judge for items nobody labelled",
        container=c1,
    )
    aggregate = c3.radio(
        "Annotators' aggregate",
        list(tw.AGGREGATE_NAMES),
        format_func=tw.AGGREGATE_NAMES.get,
        key="explorer_final_aggregate",
        help="How several annotators' labels of an item become one (adjudication wins).",
    )
    try:
        final = tw.final_labels(url, dataset, calibration, aggregate=str(aggregate))
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    sources = c2.multiselect(
        "Final label from",
        list(tw.SOURCE_NAMES),
        default=list(tw.SOURCE_NAMES),
        format_func=tw.SOURCE_NAMES.get,
        key="explorer_final_sources",
    )
    tw.show_source_counts(final)
    shown = final[final["source"].isin(sources)].reset_index(drop=True)
    if shown.empty:
        st.info("No item has its final label from the chosen source(s).")
        return
    item_ids = shown["item_id"].astype(int).tolist()
    st.dataframe(
        tw.final_table(shown, frames.items),
        hide_index=True,
        key=FINAL_TABLE_KEY,
        on_select=partial(_pick_row, item_ids, FINAL_TABLE_KEY, FINAL_ITEM_KEY),
        selection_mode="single-row",
        height=320,
    )
    st.caption(f"{len(shown)} item(s). Select a row to open the item.")
    names = dict(zip(item_ids, shown["external_id"].astype(str), strict=True))
    item_id = aui.item_picker("Item", item_ids, key=FINAL_ITEM_KEY, format_func=names.get)
    detail = analysis.item_detail(url, int(item_id))
    aui.show_item(detail, key="explorer_final_detail")
    judge_trace.trace_section(url, calibration, detail.item, key="explorer_final_trace")


def _metric(url: str, dataset: str, frames: analysis.Frames, picker: Any) -> None:
    """Confusion, score distribution and worst disagreements of one metric."""
    if not frames.metric_ids:
        aui.offer_scoring(url, frames.items["dataset"].iloc[0], key="explorer_score")
        return
    metric_id = picker.selectbox("Metric", frames.metric_ids, key="explorer_metric")
    view = analysis.metric_view(frames, metric_id, limit=None)
    st.caption(
        f"{config_label(metric_id, view.config_hash)} · {int(view.statistics['n_items'])} items "
        "with a human verdict · the latest scored configuration of each metric is used"
    )
    for col, (stat, title) in zip(st.columns(len(TILES)), TILES.items(), strict=True):
        col.metric(title, aui.fmt(view.statistics[stat]))

    left, right = st.columns(2)
    with left:
        st.markdown("###### Decision vs human verdict")
        st.plotly_chart(_confusion_chart(view.confusion), key="explorer_confusion")
    with right:
        st.markdown("###### Score per human verdict")
        st.plotly_chart(_distribution_chart(view.joined, metric_id), key="explorer_scores")

    st.markdown("###### Worst disagreements (metric confident, humans opposite)")
    strict = st.toggle(
        "Clear opposites only (leave out items humans found unclear)", key="explorer_strict"
    )
    worst = analysis.metric_view(frames, metric_id, strict=strict, limit=100).worst
    if worst.empty:
        st.success("The metric agrees with the humans on every judged item.")
        return
    item_ids = worst["item_id"].astype(int).tolist()
    table = worst.assign(
        human=worst["final"].map(analysis.label_text),
        references=worst["references"].map(lambda refs: " | ".join(map(str, refs))),
    )
    score = f"{metric_id} score"
    st.dataframe(
        display_frame(table[list(WORST_HEADERS)], {**WORST_HEADERS, "value": score}),
        hide_index=True,
        key=TABLE_KEY,
        on_select=partial(_pick_row, item_ids),
        selection_mode="single-row",
        height=320,
        column_config={
            "Confidence": st.column_config.ProgressColumn(min_value=0, max_value=1, format="%.2f"),
            score: st.column_config.NumberColumn(format="%.3f"),
            "Question": st.column_config.TextColumn(width="medium"),
            "Answer": st.column_config.TextColumn(width="medium"),
            "Metric details": st.column_config.TextColumn(width="large"),
        },
    )
    st.caption("Select a row to open the item.")
    names = dict(zip(item_ids, worst["external_id"].astype(str), strict=True))
    item_id = aui.item_picker("Item", item_ids, key=ITEM_KEY, format_func=names.get)
    detail = analysis.item_detail(url, int(item_id))
    aui.show_item(detail, key="explorer_detail")
    judge_trace.trace_picker(url, dataset, detail.item, key="explorer_trace")


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
