"""What the triage views share (assign, data, explorer, leaderboard): the saved-calibration
picker, final labels and the estimation frame cached until the store changes, and the display
names and cell formatting that keep ``nan`` / ``None`` out of tables.

The numbers come from :mod:`qaeval_core.workflows.triage`; this module only caches and renders
them. The cache key adds the dataset's newest deal and the calibration's save time to
:func:`qaeval_core.analysis.data_version`, because an audit deal over items that are already
labelled changes which labels are a random sample without writing a label or a score.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import streamlit as st

from qaeval_core import analysis, store, workflows
from qaeval_core.judge.file_summary import JudgeSummary, judge_summary

__all__ = [
    "AGGREGATE_NAMES",
    "NO_CALIBRATION",
    "OUTCOME_NAMES",
    "SAMPLE_NAMES",
    "SOURCE_NAMES",
    "band_text",
    "calibration_picker",
    "cell",
    "estimation_frame",
    "final_labels",
    "final_table",
    "show_source_counts",
]

#: The picker's "no calibration" choice (final labels from people only).
NO_CALIBRATION = "(none: people's labels only)"
#: ``source`` of a final label, as the pages name it.
SOURCE_NAMES = {
    "adjudication": "Adjudication",
    "annotators": "Annotators",
    "judge": "Judge",
    "none": "No label",
}
#: ``label_sample``: how the item's human labels were chosen.
SAMPLE_NAMES = {
    "random": "random audit",
    "triage": "triage",
    "queue": "queue",
    "import": "imported",
    "adjudication": "adjudication only",
}
OUTCOME_NAMES = {"correct": "correct", "incorrect": "incorrect", "uncertain": "uncertain"}
#: How the annotators' labels of an item become one (``aggregate`` of
#: :func:`qaeval_core.workflows.final_labels`; :data:`qaeval_core.analysis.aggregation.AGGREGATES`).
AGGREGATE_NAMES = {"majority": "Majority vote", "dawid_skene": "Dawid-Skene (weighted)"}


def cell(value: Any, digits: int = 3) -> str:
    """A table cell as text: numbers rounded, missing values (None, NaN, NA) empty."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def band_text(summary: JudgeSummary) -> str:
    """``"band: 20% to people"`` for a judge file (:func:`judge_summary`); says when it has
    none."""
    share = summary.band_share
    if share is None:
        return "no triage band"
    if share <= 0:
        return "band: nothing left to people"
    return f"band: {share:.0%} to people"


def calibration_picker(
    url: str,
    *,
    key: str,
    dataset: str | None = None,
    optional: bool = False,
    label: str = "Saved calibration",
    help: str | None = None,
    container: Any = st,
) -> str | None:
    """A select box of saved calibrations, newest first, the newest one fitted on ``dataset``
    preselected (again whenever ``dataset`` changes). ``optional`` adds :data:`NO_CALIBRATION`
    (returned as None). Without saved calibrations (and not ``optional``) it says where to make
    one and returns None."""
    saved = store.list_calibrations(url)
    if not saved and not optional:
        container.info(
            "No saved calibration yet: fit a judge on the Calibrate page and save it "
            "(or `qaeval calibrate --save NAME`)."
        )
        return None
    described = {
        c.name: f"{c.name} ({c.dataset or 'no dataset'}; {band_text(judge_summary(c.config))})"
        for c in saved
    }
    options = ([NO_CALIBRATION] if optional else []) + list(described)
    own = [c.name for c in saved if dataset is not None and c.dataset == dataset]
    index = options.index(own[0]) if own else 0
    if st.session_state.get(f"{key}__dataset", dataset) != dataset:
        st.session_state.pop(key, None)  # another dataset: preselect its own calibration again
    st.session_state[f"{key}__dataset"] = dataset
    choice = container.selectbox(
        label,
        options,
        index=index,
        key=key,
        help=help,
        format_func=lambda name: described.get(name, name),
    )
    return None if choice in (None, NO_CALIBRATION) else str(choice)


def _version(url: str, dataset: str, calibration: str | None) -> tuple[Any, ...]:
    deals = store.list_deals(url, dataset)
    last_deal = int(deals["deal_id"].max()) if len(deals) else 0
    saved = "" if calibration is None else str(store.get_calibration(url, calibration).created_at)
    return (*analysis.data_version(url), last_deal, saved)


@st.cache_data(show_spinner="Applying the judge...", max_entries=16)
def _final(
    url: str, dataset: str, calibration: str | None, aggregate: str, version: tuple[Any, ...]
):
    return workflows.final_labels(url, dataset, calibration, aggregate=aggregate)  # type: ignore[arg-type]


@st.cache_data(show_spinner="Applying the judge...", max_entries=16)
def _estimation(url: str, dataset: str, calibration: str, version: tuple[Any, ...]):
    return workflows.estimation_frame(url, dataset, calibration)


def final_labels(
    url: str, dataset: str, calibration: str | None, *, aggregate: str = "majority"
) -> pd.DataFrame:
    """:func:`qaeval_core.workflows.final_labels` with the annotators' ``aggregate`` (a key of
    :data:`AGGREGATE_NAMES`), cached until the store changes."""
    return _final(url, dataset, calibration, aggregate, _version(url, dataset, calibration))


def estimation_frame(url: str, dataset: str, calibration: str) -> pd.DataFrame:
    """:func:`qaeval_core.workflows.estimation_frame`, cached until the store changes."""
    return _estimation(url, dataset, calibration, _version(url, dataset, calibration))


def _references(refs: Any) -> str:
    if refs is None or isinstance(refs, str | float):
        return cell(refs)
    return " | ".join(map(str, refs))


def show_source_counts(final: pd.DataFrame) -> None:
    """One tile per final-label source with its number of items."""
    counts = final["source"].value_counts()
    for column, (source, name) in zip(
        st.columns(len(SOURCE_NAMES)), SOURCE_NAMES.items(), strict=True
    ):
        column.metric(name, int(counts.get(source, 0)))


def final_table(final: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """The final labels for display: friendly headers, text cells, nothing shown as nan/None.

    ``items`` (item_id, question, candidate, references) adds the item's text."""
    out = pd.DataFrame(
        {
            "Item": final["external_id"].map(cell),  # the id annotators see
            "QA model": final["qa_model"].map(cell),
            "Final label": final["final_label"].map(analysis.label_text),
            "From": final["source"].map(lambda s: SOURCE_NAMES.get(s, cell(s))),
            "Labels chosen by": final["label_sample"].map(lambda s: SAMPLE_NAMES.get(s, cell(s))),
            "Judge P(correct)": final["judge_probability"].map(cell),
            "Judge says": final["judge_outcome"].map(lambda s: OUTCOME_NAMES.get(s, cell(s))),
        }
    )
    if items is not None:
        text = items.set_index("item_id").reindex(final["item_id"].astype(int))
        out["Question"] = text["question"].map(cell).to_numpy()
        out["Answer"] = text["candidate"].map(cell).to_numpy()
        out["References"] = text["references"].map(_references).to_numpy()
    return out.reset_index(drop=True)
