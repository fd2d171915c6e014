"""Disagreements (researchers): settle the items where annotators gave different labels.

Ties (no majority) come first, then other splits, then items already adjudicated. Each rater's
label, cited rule and note are shown side by side as plain text; the researcher's final label
and reason are appended to the item's adjudication history (who and when are recorded, earlier
decisions are kept), and from then on override the raters in every statistic.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth, safe_text
from qaeval_core import analysis
from qaeval_core.analysis.adjudication import MAX_ADJUDICATION_REASON_CHARS
from qaeval_core.analysis.formatting import display_frame
from qaeval_core.errors import QAEvalError
from qaeval_core.schema import LabelValue

ITEM_KEY = "disagreements_item"
TABLE_KEY = "disagreements_table"
FLASH_KEY = "disagreements_flash"
TABLE_HEADERS = {
    "external_id": "Item",  # the id annotators see (one id per item on every page)
    "status": "Status",
    "question": "Question",
    "candidate": "Answer",
    "summary": "Labels",
    "adjudicated": "Final label",
}


def _pick_row(item_ids: list[int], table: str, item: str) -> None:
    """Selecting a row in the queue opens that item (sets the item picker below)."""
    rows = st.session_state[table].selection.rows
    if rows:
        st.session_state[item] = item_ids[rows[0]]


def _adjudication_form(url: str, user: auth.SessionUser, row: pd.Series) -> None:
    item_id = int(row["item_id"])
    default = row["adjudicated"] if pd.notna(row["adjudicated"]) else row["majority"]
    with st.form(f"adjudicate_{item_id}", clear_on_submit=True):
        value = st.radio(
            "Final label",
            [int(v) for v in LabelValue],
            index=int(default) if pd.notna(default) else 1,
            format_func=analysis.label_text,
            horizontal=True,
            key=f"adjudicate_value_{item_id}",
        )
        reason = st.text_area(
            "Reason",
            key=f"adjudicate_reason_{item_id}",
            placeholder="Why this label? e.g. rule 4: the extra detail does not contradict.",
            max_chars=MAX_ADJUDICATION_REASON_CHARS,
        )
        submitted = st.form_submit_button("Save final label", type="primary", key="adjudicate")
    if not submitted:
        return
    try:
        record = analysis.adjudicate(url, item_id, user.name, int(value), reason)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.session_state[FLASH_KEY] = (
        f"Item {row['external_id']}: final label {analysis.label_text(record.value)} saved by "
        f"{record.user} at {record.created_at:%Y-%m-%d %H:%M:%S} UTC."
    )
    st.rerun()


def main() -> None:
    user = auth.page_setup(
        "Disagreements",
        auth.RESEARCHERS,
        caption="Items where annotators disagree; decide the final label and say why.",
    )
    url = auth.store_url()
    if FLASH_KEY in st.session_state:
        st.success(st.session_state.pop(FLASH_KEY), icon=":material/gavel:")
    c1, c2 = st.columns([3, 1])
    with c1:
        dataset = aui.dataset_picker(url, key="disagreements_dataset")
    pending_only = c2.toggle("Only undecided", value=True, key="disagreements_pending")
    queue = analysis.disagreement_queue(url, dataset, pending_only=pending_only)
    counts = queue["status"].value_counts()
    cols = st.columns(3)
    cols[0].metric("Ties (no majority)", int(counts.get("tie", 0)))
    cols[1].metric("Other splits", int(counts.get("disagreement", 0)))
    cols[2].metric("Adjudicated (shown)", int(counts.get("adjudicated", 0)))
    if queue.empty:
        st.success("Nothing to decide: every labelled item has consistent labels.")
        return

    item_ids = queue["item_id"].astype(int).tolist()
    table = queue.assign(adjudicated=queue["adjudicated"].map(analysis.label_text))
    table_key, item_key = aui.scoped_key(TABLE_KEY, dataset), ITEM_KEY
    st.dataframe(
        display_frame(
            table[list(TABLE_HEADERS)],
            TABLE_HEADERS,
        ),
        hide_index=True,
        key=table_key,
        column_config={
            "Question": st.column_config.TextColumn(width="medium"),
            "Answer": st.column_config.TextColumn(width="medium"),
            "Labels": st.column_config.TextColumn(width="medium"),
        },
        on_select=partial(_pick_row, item_ids, table_key, item_key),
        selection_mode="single-row",
        height=280,
    )
    by_id = queue.set_index("item_id")
    item_id = aui.item_picker(
        "Item",
        item_ids,
        key=item_key,
        format_func=lambda i: (
            f"{by_id.loc[i, 'external_id']} · {by_id.loc[i, 'status']} · "
            f"{by_id.loc[i, 'question'][:80]}"
        ),
    )
    detail = analysis.item_detail(url, int(item_id))
    aui.show_item(detail, key="disagreements_detail")
    st.markdown("###### Decide")
    _adjudication_form(url, user, queue[queue["item_id"] == item_id].iloc[0])


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
