"""Assign (researchers): deal a dataset into annotators' queues, watch progress, reassign.

Dealing is idempotent (dealing again only tops queues up) and never gives an item twice to one
person; see :func:`qaeval_core.store.annotation.deal`. Progress shows counts only.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, safe_text
from qaeval_core.errors import QAEvalError
from qaeval_core.store import annotation as ann
from qaeval_core.store import repo


def _deal_form(dataset: str, people: list[str], url: str) -> None:
    with st.form("deal"):
        safe_text.section("Deal items")
        chosen = st.multiselect("Annotators", people, key="deal_annotators")
        c1, c2, c3 = st.columns(3)
        base = c1.number_input("Annotators per item", 1, 50, 1, key="deal_base")
        share = c2.slider("Overlap sample (% of items)", 0, 100, 20, 5, key="deal_share")
        extra_k = c3.number_input("Annotators per overlap item", 1, 50, 3, key="deal_k")
        c4, c5 = st.columns(2)
        order = c4.radio(
            "Order",
            ["dataset", "shuffled"],
            horizontal=True,
            key="deal_order",
            help="Shuffled uses the same seeded order for everyone, so overlap labels come early.",
        )
        seed = c5.number_input("Seed", 0, 2**31 - 1, 0, key="deal_seed")
        submitted = st.form_submit_button("Deal", type="primary", key="deal_submit")
    if not submitted:
        return
    try:
        result = ann.deal(
            dataset,
            chosen,
            base=int(base),
            extra_fraction=share / 100 if share else 0.0,
            extra_k=int(extra_k),
            seed=int(seed),
            order=order,
            url=url,
        )
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_annotator.items())
    st.success(f"Dealt {result.added} new assignment(s) over {result.items} items ({per}).")
    if result.skipped_items:
        st.warning(
            f"{result.skipped_items} item(s) could not get as many annotators as asked "
            "(too few annotators picked)."
        )


def _progress(dataset: str, url: str) -> list[str]:
    prog = ann.dataset_progress(dataset, url=url)
    safe_text.section("Progress")
    st.progress(
        prog.fraction,
        text=f"{prog.done_assignments} of {prog.assignments} assignments done "
        f"({prog.fraction:.0%})",
    )
    m = st.columns(4)
    m[0].metric("Items", prog.items)
    m[1].metric("In a queue", prog.assigned_items)
    m[2].metric("Labelled by someone", prog.labelled_items)
    m[3].metric("Fully labelled", prog.complete_items)
    if not prog.annotators:
        st.info("Nobody has a queue in this dataset yet.")
        return []
    frame = pd.DataFrame(
        {
            "annotator": [p.user for p in prog.annotators],
            "assigned": [p.assigned for p in prog.annotators],
            "labelled": [p.labelled for p in prog.annotators],
            "remaining": [p.remaining for p in prog.annotators],
            "done": [p.fraction for p in prog.annotators],
            "mean seconds": [p.seconds_mean for p in prog.annotators],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        column_config={
            "done": st.column_config.ProgressColumn(
                "done", format="percent", min_value=0, max_value=1
            ),
            "mean seconds": st.column_config.NumberColumn(format="%.1f"),
        },
    )
    return [p.user for p in prog.annotators]


def _reassign_form(dataset: str, holders: list[str], people: list[str], url: str) -> None:
    with st.form("reassign"):
        safe_text.section("Reassign an absent annotator's remaining items")
        absent = st.selectbox("Absent annotator", holders, key="re_absent", index=None)
        to = st.multiselect("Give their unlabelled items to", people, key="re_to")
        submitted = st.form_submit_button("Reassign", key="re_submit")
    if not submitted:
        return
    if absent is None:
        st.warning("Pick the absent annotator.")
        return
    try:
        result = ann.reassign(dataset, absent, to, url=url)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_recipient.items())
    st.success(f"Moved {result.moved} item(s) from {result.absent} ({per}).")
    if result.kept:
        st.warning(f"{result.kept} item(s) stay with {result.absent}: every recipient has them.")


def main() -> None:
    auth.page_setup("Assign", auth.RESEARCHERS, caption="Deal queues, follow progress, reassign.")
    url = auth.store_url()
    datasets = [d.name for d in repo.list_datasets(url)]
    if not datasets:
        st.info("No datasets yet. Import one on the Data page.")
        return
    dataset = st.selectbox("Dataset", datasets, key="assign_dataset")
    people = [name for name, _role in ann.queue_users(url=url)]
    _deal_form(dataset, people, url)
    holders = _progress(dataset, url)
    if holders:
        _reassign_form(dataset, holders, people, url)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
