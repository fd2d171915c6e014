"""Assign (researchers): deal a dataset into annotators' queues, draw a random audit sample,
route the items a saved judge is unsure of, watch progress, reassign.

Dealing is idempotent (dealing again only tops queues up) and never gives an item twice to one
person; see :func:`qaeval_core.store.annotation.deal`. The audit sample is
:func:`~qaeval_core.store.annotation.deal_audit_sample` (a seeded uniform sample, recorded as
such: the labels accuracy estimates with valid CIs need) and triage is
:func:`qaeval_core.workflows.route_uncertain`. Progress shows counts only.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, safe_text
from app.components import triage_widgets as tw
from qaeval_core import workflows
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


def _overlap_inputs(prefix: str) -> tuple[int, float, int, int]:
    """Annotators per item, overlap fraction, annotators per overlap item, seed."""
    c1, c2, c3, c4 = st.columns(4)
    base = c1.number_input("Annotators per item", 1, 50, 1, key=f"{prefix}_base")
    share = c2.slider("Overlap sample (% of items)", 0, 100, 0, 5, key=f"{prefix}_overlap")
    extra_k = c3.number_input("Annotators per overlap item", 1, 50, 2, key=f"{prefix}_k")
    seed = c4.number_input("Seed", 0, 2**31 - 1, 0, key=f"{prefix}_seed")
    return int(base), share / 100, int(extra_k), int(seed)


def _audit_form(dataset: str, people: list[str], url: str, user: str) -> None:
    with st.form("audit"):
        safe_text.section("Deal a random audit sample")
        st.caption(
            "A seeded uniform random sample of the items, recorded as an audit: the only labels "
            "the Leaderboard's accuracy estimates may use. Items already in a queue are only "
            "topped up; items that already carry a label count as random labels at once."
        )
        chosen = st.multiselect("Annotators", people, key="audit_annotators")
        c1, c2, c3 = st.columns(3)
        by = c1.radio("Sample size as", ["number of items", "% of items"], key="audit_by")
        n = c2.number_input("Items", 1, 10_000_000, 50, key="audit_n")
        pct = c3.slider("% of items", 1, 100, 10, key="audit_pct")
        base, overlap, extra_k, seed = _overlap_inputs("audit")
        submitted = st.form_submit_button("Deal audit sample", type="primary", key="audit_submit")
    if not submitted:
        return
    size = {"n": int(n)} if by == "number of items" else {"fraction": pct / 100}
    try:
        result = ann.deal_audit_sample(
            dataset, chosen, seed=seed, base=base, extra_fraction=overlap, extra_k=extra_k,
            created_by=user, url=url, **size,
        )  # fmt: skip
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_annotator.items())
    st.success(
        f"Drew a random audit sample of {result.items} item(s) (seed {seed}, deal "
        f"{result.deal_id}); {result.added} new assignment(s) ({per})."
    )


_STATUS = {
    "dealt": "dealt",
    "labelled": "skipped: already has a human label",
    "queued": "skipped: already in someone's queue",
}
_ROUTE_BY = {
    "its band": "band",
    "another share": "share",
    "the N most doubtful": "top",
}


def _triage_form(dataset: str, people: list[str], url: str, user: str) -> None:
    safe_text.section("Route the judge's uncertain items to people")
    calibration = tw.calibration_picker(url, key="triage_calibration", dataset=dataset)
    if calibration is None:
        return
    with st.form("triage"):
        c1, c2, c3 = st.columns(3)
        by = c1.radio(
            "Route", list(_ROUTE_BY), key="triage_by", help="Its band: the items its saved "
            "triage band calls 'uncertain'. Another share: the band routing that share instead "
            "(read off its effort curve). N most doubtful: the N items of highest P(verdict "
            "wrong), labelled or not.",
        )  # fmt: skip
        share = c2.slider("Share (%)", 1, 50, 20, key="triage_share")
        top = c3.number_input("N", 1, 10_000_000, 20, key="triage_n")
        chosen = st.multiselect("Annotators", people, key="triage_annotators")
        base, overlap, extra_k, seed = _overlap_inputs("triage")
        submitted = st.form_submit_button("Route", type="primary", key="triage_submit")
    if not submitted:
        return
    how = _ROUTE_BY[by]
    choice = {"share": {"human_share": share / 100}, "top": {"n_most_uncertain": int(top)}}
    try:
        with st.spinner("Applying the judge and dealing..."):
            result = workflows.route_uncertain(
                url, dataset, calibration, chosen, seed=seed, base=base, extra_fraction=overlap,
                extra_k=extra_k, created_by=user, **choice.get(how, {}),
            )  # fmt: skip
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    _triage_result(result)


def _triage_result(result: workflows.TriageResult) -> None:
    items = result.items
    skipped = result.skipped
    if items.empty:
        st.info(f"The judge is sure of every item ({result.selection}): nothing to route.")
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.deal.per_annotator.items())
    st.success(
        f"Routed {len(result.dealt)} of {len(items)} selected item(s) "
        f"({result.deal.added} new assignment(s): {per})."
    )
    m = st.columns(4)
    m[0].metric("Selected", len(items))
    m[1].metric("Dealt", len(result.dealt))
    m[2].metric("Skipped: labelled", len(skipped["labelled"]))
    m[3].metric("Skipped: queued", len(skipped["queued"]))
    st.caption(f"Selected: {result.selection}, most doubtful first.")
    st.dataframe(
        pd.DataFrame({
            "Item": items["item_id"].astype(int),
            "ID": items["external_id"].map(tw.cell),
            "QA model": items["qa_model"].map(tw.cell),
            "Judge P(correct)": items["judge_probability"].map(tw.cell),
            "P(verdict wrong)": items["judge_doubt"].map(tw.cell),
            "Judge says": items["judge_outcome"].map(tw.cell),
            "What happened": items["status"].map(_STATUS),
        }),
        hide_index=True, key="triage_items",
    )  # fmt: skip


def _deals(dataset: str, url: str) -> None:
    deals = repo.list_deals(url, dataset)
    if deals.empty:
        return
    with st.expander(f"Recorded deals ({len(deals)})"):
        st.dataframe(
            pd.DataFrame({
                "Deal": deals["deal_id"].astype(int),
                "Kind": deals["kind"].map(tw.cell),
                "Items": deals["n_items"].astype(int),
                "Assignments added": deals["added"].astype(int),
                "Seed": deals["seed"].map(lambda v: "" if pd.isna(v) else str(int(v))),
                "By": deals["created_by"].map(tw.cell),
                "When": deals["created_at"].map(tw.cell),
            }),
            hide_index=True, key="assign_deals",
        )  # fmt: skip


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
    user = auth.page_setup(
        "Assign", auth.RESEARCHERS,
        caption="Deal queues, audit samples and the judge's uncertain items; follow progress.",
    )  # fmt: skip
    url = auth.store_url()
    datasets = [d.name for d in repo.list_datasets(url)]
    if not datasets:
        st.info("No datasets yet. Import one on the Data page.")
        return
    dataset = st.selectbox("Dataset", datasets, key="assign_dataset")
    people = [name for name, _role in ann.queue_users(url=url)]
    _deal_form(dataset, people, url)
    _audit_form(dataset, people, url, user.name)
    _triage_form(dataset, people, url, user.name)
    holders = _progress(dataset, url)
    _deals(dataset, url)
    if holders:
        _reassign_form(dataset, holders, people, url)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
