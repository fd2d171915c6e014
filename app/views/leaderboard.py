"""Leaderboard (researchers): how accurate is each QA model, and would a metric rank the QA
models the way people do?

First each QA model's accuracy under a saved calibration with valid CIs (PPI, random labels
only, the judge's accuracy and mean probability; :mod:`app.components.accuracy_estimates`)
and the judge's outcomes per QA model (``judge_reason`` counts, accuracy with and without
not-attempted items). Then each QA model's accuracy under the human verdict next to its
accuracy under every metric, with ranks, the pairs of models a metric puts in the opposite
order (the PANDA/SMILE tables), and each metric's agreement with humans with bootstrap CIs.
Tables show headers in words and no
None/nan (:func:`qaeval_core.analysis.formatting.display_frame`).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth
from app.components import triage_widgets as tw
from app.components.accuracy_estimates import estimates_section
from qaeval_core import analysis
from qaeval_core.analysis.accuracy_report import judge_outcome_table
from qaeval_core.analysis.compare import STATISTICS
from qaeval_core.analysis.formatting import display_frame
from qaeval_core.errors import QAEvalError

#: Metrics drawn next to the humans by default: more bars than this per model are unreadable.
CHART_DEFAULT = 5


#: Headers of the ranking table (``ranking_changes``' columns).
RANKING_HEADERS = {
    "dataset": "Dataset",
    "metric_id": "Metric",
    "n_models": "QA models",
    "kendall_tau_b": "Kendall tau-b",
    "n_pairs": "Pairs",
    "n_flips": "Flipped pairs",
    "flips": "Flipped pairs (human order)",
}


#: Headers of the judge-outcomes table (``judge_outcome_table``' columns; the reasons are
#: those of docs/outcomes.md), in words (issue 21, item 10: the code names were the headers).
OUTCOME_HEADERS = {
    "model": "QA model",
    "n_items": "Items",
    "matched": "Matched",
    "not_matched": "Not matched",
    "uncertain": "Uncertain (to people)",
    "not_attempted": "Not attempted",
    "extraction_failed": "No number or date found",
    "hedged": "Hedged",
    "judge_error": "Metric error",
    "judge_accuracy": "Judge accuracy",
    "judge_accuracy_attempted": "Judge accuracy, attempted",
    "not_attempted_share": "Share not attempted",
}


def model_headers(metric_ids: list[str]) -> dict[str, str]:
    """Headers of the per-model table: metric ids stay as typed (``rougeL``, not "RougeL"), one
    accuracy and one rank column each."""
    headers = {
        "dataset": "Dataset",
        "qa_model": "QA model",
        "n_items": "Judged items",
        "human_accuracy": "Human accuracy",
        "human_rank": "Human rank",
    }
    for m in metric_ids:
        headers |= {m: f"{m} accuracy", f"{m} rank": f"{m} rank"}
    return headers


def _best_rankers(board: analysis.Leaderboard, k: int = CHART_DEFAULT) -> list[str]:
    """The ``k`` metrics whose model ranking is closest to the humans' (Kendall tau-b)."""
    ranking = board.ranking.sort_values("kendall_tau_b", ascending=False, na_position="last")
    return list(dict.fromkeys(ranking["metric_id"]))[:k]


def _accuracy_chart(board: analysis.Leaderboard, metric_ids: list[str]) -> go.Figure:
    wide = board.wide
    models = aui.chart_labels(wide["qa_model"])
    fig = go.Figure()
    fig.add_bar(name="human", x=models, y=wide["human_accuracy"], marker_color="#333333")
    for metric_id in metric_ids:
        fig.add_bar(name=aui.chart_labels([metric_id])[0], x=models, y=wide[metric_id])
    fig.update_layout(
        barmode="group",
        yaxis_title="accuracy",
        yaxis_range=[0, 1],
        height=440,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
        margin={"t": 60},
    )
    return fig


def _statistics_table(stats: pd.DataFrame) -> pd.DataFrame:
    """One row per metric, one "estimate [low, high]" cell per statistic."""
    cells = stats.assign(
        cell=[
            aui.fmt_ci(e, lo, hi)
            for e, lo, hi in stats[["estimate", "ci_low", "ci_high"]].itertuples(index=False)
        ]
    )
    wide = cells.pivot(index="metric_id", columns="statistic", values="cell")
    n = stats.groupby("metric_id")["n_items"].max()
    return wide.reindex(columns=list(STATISTICS)).assign(n_items=n).reset_index()


def _outcomes_section(url: str, dataset: str | None) -> None:
    """Why the saved judge (the one picked above) decided as it did, per QA model: counts of
    each ``judge_reason`` and its accuracy with and without the not-attempted items."""
    calibration = st.session_state.get("estimates_calibration")
    if dataset is None or not calibration:
        return
    try:
        frame = tw.estimation_frame(url, dataset, calibration)
    except QAEvalError:
        return  # the estimates section above has shown the error
    if "judge_reason" not in frame.columns:
        return
    st.markdown("###### Judge outcomes per QA model")
    rate = st.column_config.NumberColumn(format="%.3f")
    st.dataframe(
        display_frame(judge_outcome_table(frame), OUTCOME_HEADERS),
        hide_index=True,
        key="leaderboard_outcomes",
        column_config={
            OUTCOME_HEADERS[c]: rate
            for c in ("judge_accuracy", "judge_accuracy_attempted", "not_attempted_share")
        },
    )
    st.caption(
        "Reasons: docs/outcomes.md. Judge accuracy counts every item; 'attempted' leaves out "
        "refusals and empty answers (never judged correct), so a model that declines often "
        "is told apart from one that answers wrongly."
    )


def main() -> None:
    auth.page_setup(
        "Leaderboard",
        auth.RESEARCHERS,
        caption="QA-model accuracy with valid CIs, and under each metric next to the humans'.",
    )
    url = auth.store_url()
    left, _ = st.columns([3, 1])
    with left:
        dataset = aui.dataset_picker(url, key="leaderboard_dataset", allow_all=True)
    estimates_section(url, dataset)
    _outcomes_section(url, dataset)

    st.divider()
    narrow, _ = st.columns([1, 3])
    min_items = narrow.number_input(
        "Min. judged items per model", 1, 10_000, 5, key="leaderboard_min"
    )
    frames = aui.load_frames(url, dataset)
    if not frames.metric_ids:
        aui.offer_scoring(url, dataset, key="leaderboard_score")
        return
    board = analysis.leaderboard(frames, min_items=int(min_items))
    if board.wide.empty:
        st.info("No QA model has enough judged items (lower the minimum, or label more items).")
        return

    st.subheader("Accuracy per QA model under each metric")
    shown = st.multiselect(
        "Metrics in the chart",
        sorted(board.table["metric_id"].unique()),
        default=_best_rankers(board),
        key="leaderboard_chart_metrics",
        help=f"By default the {CHART_DEFAULT} metrics that rank the QA models most like the "
        "humans (Kendall tau-b below); the table has every metric.",
    )
    st.plotly_chart(_accuracy_chart(board, shown), key="leaderboard_chart")
    percent = st.column_config.NumberColumn(format="%.3f")
    metric_ids = [str(m) for m in board.table["metric_id"].unique()]
    st.dataframe(
        display_frame(board.wide, model_headers(metric_ids)),
        hide_index=True,
        key="leaderboard_table",
        column_config=dict.fromkeys(
            ["Human accuracy", *(f"{m} accuracy" for m in metric_ids)], percent
        ),
    )

    st.subheader("Ranking changes")
    ranking = board.ranking.assign(flips=board.ranking["flips"].map("; ".join))
    st.dataframe(
        display_frame(ranking, RANKING_HEADERS),
        hide_index=True,
        key="leaderboard_ranking",
        column_config={"Kendall tau-b": st.column_config.NumberColumn(format="%.3f")},
    )
    st.caption(
        "Kendall tau-b between the models' human and metric accuracies; a flipped pair is two "
        "models the metric orders opposite to the humans."
    )

    st.subheader("Metrics against humans (95% bootstrap CIs)")
    n_boot = st.number_input("Bootstrap resamples", 0, 10_000, 1000, 100, key="leaderboard_boot")
    stats = aui.metric_statistics(url, dataset, n_boot=int(n_boot), seed=0)
    st.dataframe(
        display_frame(_statistics_table(stats), {"metric_id": "Metric"}),
        hide_index=True,
        key="leaderboard_statistics",
    )


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
