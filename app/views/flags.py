"""Flags (researchers): the items annotators flagged for review, with their reasons.

An annotator flags an item (key R on the Annotate page) when it cannot be judged as it stands:
a wrong reference, a broken question, a duplicate. The flag keeps the reason; resolving it
records who decided what (the flag stays listed under "all"). The annotator's queue keeps the
item skipped until they revisit it.
"""

from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

from app.components import analysis_widgets as aui
from app.components import auth, judge_trace
from qaeval_core import analysis, store
from qaeval_core.analysis.formatting import display_frame
from qaeval_core.errors import QAEvalError

#: The flags table's columns, in order, with headers in words (issue 21, item 10: the code
#: names were the headers). The store's item id stays out: the item is named by the id
#: annotators see (``external_id``).
FLAG_HEADERS = {
    "flag_id": "Flag",
    "dataset": "Dataset",
    "external_id": "Item",
    "question": "Question",
    "user": "Flagged by",
    "reason": "Reason",
    "created_at": "Flagged at (UTC)",
    "resolved_at": "Resolved at (UTC)",
    "resolved_by": "Resolved by",
    "resolution": "What was decided",
}


TABLE_KEY = "flags_table"
ITEM_KEY = "flags_item"


def _pick_row(flag_ids: list[int]) -> None:
    """Selecting a row opens its flagged item below the table."""
    rows = st.session_state[TABLE_KEY].selection.rows
    if rows:
        st.session_state[ITEM_KEY] = flag_ids[rows[0]]


def _flagged_item(url: str, flags: pd.DataFrame) -> None:
    """The flagged item in full, with the judge's trace (issue 33: it could not be opened)."""
    st.subheader("Flagged item")
    names = {
        int(r.flag_id): f"#{r.flag_id} · item {r.external_id} · {r.dataset}"
        for r in flags.itertuples()
    }
    items = {int(r.flag_id): int(r.item_id) for r in flags.itertuples()}
    flag_id = aui.item_picker("Flag", list(names), key=ITEM_KEY, format_func=names.get)
    detail = analysis.item_detail(url, items[flag_id])
    aui.show_item(detail, key="flags_detail")
    judge_trace.trace_picker(url, str(detail.item["dataset"]), detail.item, key="flags_trace")


def _resolve(url: str, user: str) -> None:
    flag_id = st.session_state.get("flags_pick")
    if flag_id is None:
        return
    try:
        store.resolve_flag(
            url,
            int(flag_id),
            user,
            st.session_state.get("flags_resolution", ""),
            roles=auth.RESEARCHERS,
        )
    except QAEvalError as exc:
        st.session_state.flags_flash = ("error", str(exc))
        return
    st.session_state.flags_flash = ("success", f"Flag {flag_id} resolved.")
    st.session_state.flags_pick = None
    st.session_state.flags_resolution = ""


def main() -> None:
    user = auth.page_setup("Flags", auth.RESEARCHERS)
    url = auth.store_url()
    names = [d.name for d in store.list_datasets(url)]
    if not names:
        st.info("There is no data yet: import a dataset on the Data page.")
        return
    cols = st.columns([2, 1])
    dataset = cols[0].selectbox("Dataset", ["(all datasets)", *names], key="flags_dataset")
    show = cols[1].segmented_control("Show", ["open", "all"], default="open", key="flags_show")
    flags = store.list_flags(
        url, None if dataset == "(all datasets)" else dataset, open_only=show != "all"
    )
    if flash := st.session_state.pop("flags_flash", None):
        getattr(st, flash[0])(flash[1])
    if flags.empty:
        st.success("No open flags." if show != "all" else "Nobody flagged an item yet.")
        return
    st.caption(
        f"{len(flags)} flag(s), newest first. Text is shown as typed (never as markup). "
        "Select a row to open its item below."
    )
    flag_ids = flags["flag_id"].astype(int).tolist()
    st.dataframe(
        display_frame(flags[list(FLAG_HEADERS)], FLAG_HEADERS),
        hide_index=True,
        width="stretch",
        column_config={"Question": st.column_config.TextColumn(width="medium")},
        key=TABLE_KEY,
        on_select=partial(_pick_row, flag_ids),
        selection_mode="single-row",
    )
    open_flags = flags[flags["resolved_at"].isna()]
    if not open_flags.empty:
        labels = {
            int(r.flag_id): f"#{r.flag_id} {r.external_id} ({r.user}): {str(r.reason)[:80]}"
            for r in open_flags.itertuples()
        }
        st.selectbox(
            "Resolve flag",
            list(labels),
            format_func=labels.__getitem__,
            index=None,
            key="flags_pick",
            placeholder="Choose an open flag",
        )
        st.text_input(
            "What was decided",
            key="flags_resolution",
            placeholder="e.g. reference fixed and re-imported; item dropped",
        )
        st.button("Mark resolved", key="flags_resolve", on_click=_resolve, args=(url, user.name))
    _flagged_item(url, flags)


if __name__ == "__main__":
    main()
