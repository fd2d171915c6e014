"""What the analysis views share (agreement, disagreements, explorer, leaderboard, calibrate):
cached analysis results, the dataset picker, number formatting and the item detail panel.

The numbers come from :mod:`qaeval_core.analysis`; this module only caches and renders them.
Caches are keyed on :func:`qaeval_core.analysis.data_version`, a fingerprint of the store that
changes on every write: a bootstrap takes seconds and Streamlit reruns the page on every click,
so unchanged data is analysed once, while an adjudication shows on the very next rerun.

Item text, rater names, notes and reasons are untrusted: they are shown with ``st.text``, in
dataframes, or through :func:`app.components.safe_text.escape_markdown`, never as HTML; chart
labels are HTML-escaped because plotly.js interprets a few tags in them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from app.components import safe_text
from qaeval_core import analysis, store, workflows
from qaeval_core.analysis import aggregation, formatting
from qaeval_core.errors import QAEvalError
from qaeval_core.vocabulary import FAST_METRICS

__all__ = [
    "ALL_DATASETS",
    "dataset_picker",
    "load_frames",
    "agreement",
    "metric_statistics",
    "chart_labels",
    "fmt",
    "fmt_ci",
    "show_labels",
    "show_item",
    "score_table",
    "item_picker",
    "scoped_key",
    "offer_scoring",
    "annotator_quality",
]

ALL_DATASETS = "(all datasets)"


def dataset_picker(url: str, *, key: str, allow_all: bool = False) -> str | None:
    """A dataset select box; stops the page with a hint when the store has no data.

    Returns the dataset name, or None for "all datasets" when ``allow_all``.
    """
    names = [d.name for d in store.list_datasets(url) if d.n_items]
    if not names:
        st.info("The store has no items yet. Import a dataset on the Data page (or `qaeval demo`).")
        st.stop()
    options = ([ALL_DATASETS] if allow_all and len(names) > 1 else []) + names
    choice = st.selectbox("Dataset", options, key=key)
    return None if choice == ALL_DATASETS else choice


@st.cache_data(show_spinner="Reading the store...", max_entries=16)
def _frames(url: str, dataset: str | None, version: tuple[Any, ...]) -> analysis.Frames:
    return analysis.load_frames(url, dataset)


def load_frames(url: str, dataset: str | None) -> analysis.Frames:
    """The dataset's frames (latest configuration per metric), cached until the store changes."""
    return _frames(url, dataset, analysis.data_version(url))


@st.cache_data(show_spinner="Bootstrapping agreement...", max_entries=16)
def _agreement(
    url: str, dataset: str | None, version: tuple[Any, ...], n_boot: int, seed: int
) -> analysis.AgreementTables:
    return analysis.agreement_tables(_frames(url, dataset, version), n_boot=n_boot, seed=seed)


def agreement(url: str, dataset: str | None, *, n_boot: int, seed: int) -> analysis.AgreementTables:
    """:func:`qaeval_core.analysis.agreement_tables`, cached until the store changes."""
    return _agreement(url, dataset, analysis.data_version(url), n_boot, seed)


@st.cache_data(show_spinner="Bootstrapping metric statistics...", max_entries=16)
def _metric_statistics(
    url: str, dataset: str | None, version: tuple[Any, ...], n_boot: int, seed: int
) -> pd.DataFrame:
    return analysis.metric_statistics(_frames(url, dataset, version), n_boot=n_boot, seed=seed)


def metric_statistics(url: str, dataset: str | None, *, n_boot: int, seed: int) -> pd.DataFrame:
    """:func:`qaeval_core.analysis.metric_statistics`, cached until the store changes."""
    return _metric_statistics(url, dataset, analysis.data_version(url), n_boot, seed)


@st.cache_data(show_spinner="Fitting Dawid-Skene...", max_entries=16)
def _quality(url: str, dataset: str | None, version: tuple[Any, ...]) -> pd.DataFrame:
    frames = _frames(url, dataset, version)
    return aggregation.annotator_quality(frames.labels, frames.adjudications)


def annotator_quality(url: str, dataset: str | None) -> pd.DataFrame:
    """:func:`qaeval_core.analysis.aggregation.annotator_quality`, cached until the store
    changes."""
    return _quality(url, dataset, analysis.data_version(url))


# -- empty pages -------------------------------------------------------------------------------
def offer_scoring(url: str, dataset: str | None, *, key: str) -> None:
    """An empty metric page's way out: say why it is empty and score the dataset (every
    dataset for ``None``) with the fast metrics right here, then rerun the page."""
    names = [dataset] if dataset is not None else [d.name for d in store.list_datasets(url)]
    where = f"Dataset {dataset}" if dataset is not None else "No dataset"
    st.info(
        f"{where} has no metric scores yet. Score it here with the fast metrics "
        f"({', '.join(FAST_METRICS)}: seconds), or with any metric through "
        "`qaeval score --dataset NAME --metrics ...`.",
        icon=":material/info:",
    )
    if not st.button("Score with the fast metrics", key=key, type="primary"):
        return
    try:
        with st.spinner("Scoring..."):
            for name in names:
                workflows.score_dataset(url, name, list(FAST_METRICS))
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.rerun()


# -- item pickers ------------------------------------------------------------------------------
def scoped_key(base: str, scope: Any) -> str:
    """A widget key per dataset (or other scope): a table's row selection (kept by row
    position) starts fresh in another dataset instead of marking an unrelated row."""
    return f"{base}:{scope}"


def item_picker(
    label: str,
    item_ids: Sequence[int],
    *,
    key: str,
    format_func: Callable[[int], str] | None = None,
) -> int:
    """An item select box that never shows an item that is not in ``item_ids``.

    When the remembered item left the list (another dataset, a filter, an item just decided),
    the first item is *set* as the widget's value rather than the remembered one dropped:
    dropping it makes Streamlit fall back to the default without telling the browser, which
    keeps showing the old item while the page renders another.
    """
    ids = [int(i) for i in item_ids]
    if st.session_state.get(key) not in ids:
        st.session_state[key] = ids[0]
    kwargs = {"format_func": format_func} if format_func is not None else {}
    return int(st.selectbox(label, ids, key=key, **kwargs))


# -- formatting --------------------------------------------------------------------------------
def chart_labels(values: Iterable[Any]) -> list[str]:
    """Category names safe for plotly (it renders ``<b>``, ``<a href>`` and friends)."""
    return [html.escape(str(v)) for v in values]


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a metric tile; an em dash when it is undefined."""
    if value is None or value is pd.NA:
        return "—"
    value = float(value)
    return "—" if math.isnan(value) else f"{value:.{digits}f}"


def fmt_ci(estimate: Any, low: Any, high: Any, digits: int = 3) -> str:
    """``0.753 [0.685, 0.820]``; ``0.753`` without an interval; ``—`` when undefined."""
    if fmt(estimate) == "—":
        return "—"
    if fmt(low) == "—" or fmt(high) == "—":
        return fmt(estimate, digits)
    return f"{fmt(estimate, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def _text_block(caption: str, text: Any) -> None:
    """A captioned plain-text block; a missing value (None, NaN, empty) shows as a dash."""
    st.caption(caption)
    st.text("—" if formatting.is_blank(text) or str(text) == "" else str(text))


def show_labels(labels: Sequence[dict[str, Any]] | pd.DataFrame, *, key: str) -> None:
    """Each rater's current label, cited rule and note in side-by-side columns (plain text)."""
    rows = labels.to_dict("records") if isinstance(labels, pd.DataFrame) else list(labels)
    if not rows:
        st.info("Nobody has labelled this item yet.")
        return
    per_row = 4
    for start in range(0, len(rows), per_row):
        chunk = rows[start : start + per_row]
        for column, row in zip(st.columns(per_row), chunk, strict=False):
            with column.container(border=True):
                st.markdown(f"**{safe_text.escape_markdown(str(row['rater']))}**")
                role = row.get("role")
                st.caption("" if formatting.is_blank(role) else str(role))
                st.text(analysis.label_text(row["value"]))
                _text_block("rule", analysis.rule_text(row.get("rule")))
                _text_block("note", row.get("note"))


def show_item(detail: analysis.ItemDetail, *, key: str, show_scores: bool = True) -> None:
    """An item in full: question, references, answer, labels, adjudications and scores."""
    item = detail.item
    # One id for an item everywhere: the one annotators see on the Annotate page (issue 21,
    # item 11: researchers saw the store's number next to it, annotators only this one).
    st.text(f"Item {item['external_id']} · dataset {item['dataset']}")
    _text_block("Question", item["question"])
    _text_block("References", "\n".join(map(str, item["references"])))
    _text_block("Answer", item["candidate"])
    if item.get("context"):
        with st.expander("Context"):
            st.text(item["context"])
    _text_block("QA model(s)", item.get("qa_model"))
    st.markdown("###### Labels")
    show_labels(detail.labels, key=f"{key}_labels")
    final = detail.final
    st.markdown("###### Adjudication")
    if detail.adjudications.empty:
        majority = "" if final is None else f" Raters' majority: {analysis.label_text(final)}."
        st.text(f"Not adjudicated.{majority}")
    else:
        history = detail.adjudications.assign(
            value=detail.adjudications["value"].map(analysis.label_text)
        )
        st.dataframe(
            formatting.display_frame(
                history[["created_at", "user", "value", "reason"]],
                {"created_at": "When (UTC)", "user": "By", "value": "Final label"},
            ),
            hide_index=True,
            key=f"{key}_adjudications",
        )
    if show_scores and not detail.scores.empty:
        st.markdown("###### Metric scores")
        table, others = score_table(detail.scores)
        st.dataframe(
            table,
            hide_index=True,
            key=f"{key}_scores",
            column_config={"Details": st.column_config.TextColumn(width="large")},
        )
        if others:
            st.caption(
                "The latest configuration of each metric (the one the analysis pages use). "
                "Also scored under other settings: " + "; ".join(others) + "."
            )


def score_table(scores: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """An item's scores for its detail panel: one row per metric, the most recently scored
    configuration (the one the analysis pages use), named in words, not by its hash (issue 21,
    item 9: after a robust fit every metric was listed twice, told apart by a hash). Also
    returns the other configurations scored on the item, in words, for a caption.

    ``scores`` is :func:`qaeval_core.store.item_scores`' frame: newest first per metric.
    """
    labelled = scores.assign(
        setting=[
            formatting.config_label(m, h)
            for m, h in zip(scores["metric_id"], scores["config_hash"], strict=True)
        ],
        details=scores["details"].map(analysis.format_details),
    )
    latest = ~labelled.duplicated("metric_id")
    others = [f"{r.metric_id} ({r.setting})" for r in labelled[~latest].itertuples()]
    table = formatting.display_frame(
        labelled.loc[latest, ["metric_id", "setting", "value", "decision", "details"]],
        {
            "metric_id": "Metric",
            "setting": "Settings",
            "value": "Score",
            "decision": "Says correct",
            "details": "Details",
        },
    )
    return table.reset_index(drop=True), others
