"""Assign (researchers): deal a dataset (or a batch of it) into annotators' queues, draw a
random audit sample, route the items a saved judge is unsure of, watch progress, release a
queue, reassign.

Dealing is idempotent (dealing again only tops queues up) and never gives an item twice to one
person; see :func:`qaeval_core.store.deal`. The audit sample is
:class:`~qaeval_core.store.AuditSample` (a seeded uniform sample, recorded as
such: the labels accuracy estimates with valid CIs need) and triage is
:func:`qaeval_core.workflows.route_uncertain`. A batch (the next N items, a range, a quota per
person) is :class:`~qaeval_core.store.ItemBatch`; every deal says what it left
alone and who holds it, and "Release a queue" frees someone's unlabelled items
(:func:`~qaeval_core.store.release_queue`). Progress shows counts only.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components import auth, safe_text
from app.components import triage_widgets as tw
from qaeval_core import store, workflows
from qaeval_core.analysis.formatting import percent_text
from qaeval_core.errors import NothingToDraw, QAEvalError

#: The deal form's choice of items -> how :func:`_deal_items` reads the inputs.
ITEM_CHOICES = {
    "All items": "all",
    "The next N items nobody has yet": "next",
    "Items FIRST to LAST (import order)": "range",
}


def _deal_items(choice: str, n: int, first: int, last: int) -> dict[str, object]:
    """The batch options of :class:`~qaeval_core.store.ItemBatch`."""
    if choice == "next":
        return {"n": int(n)}
    if choice == "range":
        return {"item_range": (int(first), int(last))}
    return {}


def _used_with(how: str, which: str) -> str:
    """The help of an input read by one "Items" choice only: which, and whether it is now."""
    name = next(k for k, v in ITEM_CHOICES.items() if v == how)
    now = "" if ITEM_CHOICES[which] == how else f" Ignored now ('{which}')."
    return f"Used with Items '{name}'.{now}"


def show_deal_notes(result: store.DealResult) -> None:
    """What a deal left alone and why (:meth:`~qaeval_core.store.DealResult.notes`)."""
    for note in result.notes():
        st.warning(note, icon=":material/info:")


def _deal_form(dataset: str, people: list[str], url: str, user: str) -> None:
    # Not an st.form: the "Items" choice reruns the page, so N / FIRST / LAST are disabled,
    # with the reason, under a choice that ignores them (issue 33). Nothing is dealt before
    # "Deal".
    with st.container(border=True):
        safe_text.section("Deal items")
        chosen = st.multiselect("Annotators", people, key="deal_annotators")
        c1, c2, c3 = st.columns(3)
        base = c1.number_input("Annotators per item", 1, 50, 1, key="deal_base")
        share = c2.slider("Overlap sample (% of items)", 0, 100, 20, 5, key="deal_share")
        extra_k = c3.number_input(
            "Annotators per overlap item",
            1,
            50,
            2,
            key="deal_k",
            help="Capped at the number of annotators picked.",
        )
        which = st.radio("Items", list(ITEM_CHOICES), horizontal=True, key="deal_which")
        i1, i2, i3, i4 = st.columns(4)
        how = ITEM_CHOICES[which]
        n = i1.number_input(
            "N",
            1,
            10_000_000,
            40,
            key="deal_n",
            disabled=how != "next",
            help=_used_with("next", which),
        )
        first = i2.number_input(
            "FIRST",
            1,
            10_000_000,
            1,
            key="deal_first",
            disabled=how != "range",
            help=_used_with("range", which),
        )
        last = i3.number_input(
            "LAST",
            1,
            10_000_000,
            40,
            key="deal_last",
            disabled=how != "range",
            help=_used_with("range", which),
        )
        quota = i4.number_input(
            "Max new items per annotator",
            0,
            10_000_000,
            0,
            key="deal_quota",
            help="0: no limit. Items the quota leaves stay undealt (the result says how many).",
        )
        c4, c5 = st.columns(2)
        order = c4.radio(
            "Order",
            ["dataset", "shuffled"],
            horizontal=True,
            key="deal_order",
            help="Shuffled uses the same seeded order for everyone, so overlap labels come early.",
        )
        seed = c5.number_input("Seed", 0, 2**31 - 1, 0, key="deal_seed")
        submitted = st.button("Deal", type="primary", key="deal_submit")
    if not submitted:
        return
    overlap = {
        "base": int(base),
        "extra_fraction": share / 100 if share else 0.0,
        # Two annotators and the default 20% overlap must just work: an overlap item cannot
        # have more annotators than were picked.
        "extra_k": max(int(base), min(int(extra_k), len(chosen))) if chosen else int(extra_k),
        "seed": int(seed),
        "order": order,
    }
    items = _deal_items(ITEM_CHOICES[which], n, first, last)
    try:
        if items or quota:
            batch = store.ItemBatch(quota=int(quota) or None, **items)
            result = store.deal(
                url, dataset, chosen, batch, store.DealOptions(created_by=user, **overlap)
            )
        else:
            result = store.deal(
                url, dataset, chosen, options=store.DealOptions(created_by=user, **overlap)
            )
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_annotator.items())
    st.success(f"Dealt {result.added} new assignment(s) over {result.items} items ({per}).")
    if overlap["extra_k"] != int(extra_k) and share:
        st.info(
            f"Annotators per overlap item: {overlap['extra_k']} (asked {int(extra_k)}; "
            f"{len(chosen)} annotator(s) picked)."
        )
    show_deal_notes(result)


def _release_form(dataset: str, holders: list[str], url: str, user: str) -> None:
    """Take back someone's unlabelled items (e.g. after "Queue it for me") so a deal can give
    them to others; labelled items stay theirs."""
    with st.form("release"):
        safe_text.section("Release a queue")
        st.caption(
            "Removes the unlabelled items from one person's queue in this dataset (their labels "
            "stay). Use it after 'Queue it for me' before dealing the dataset to the team."
        )
        index = holders.index(user) if user in holders else None
        holder = st.selectbox("Whose queue", holders, index=index, key="release_user")
        submitted = st.form_submit_button("Release their unlabelled items", key="release_submit")
    if not submitted:
        return
    if holder is None:
        st.warning("Pick whose queue to release.")
        return
    try:
        result = store.release_queue(url, dataset, holder, by=user)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    st.success(result.summary())


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
        options = store.DealOptions(
            base=base, extra_fraction=overlap, extra_k=extra_k, seed=seed, created_by=user
        )
        result = store.deal(url, dataset, chosen, store.AuditSample(**size), options)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_annotator.items())
    st.success(
        f"Drew a random audit sample of {result.items} item(s) (seed {seed}, deal "
        f"{result.deal_id}); {result.added} new assignment(s) ({per})."
    )
    show_deal_notes(result)


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
            "Route",
            list(_ROUTE_BY),
            key="triage_by",
            help="Its band: the items its saved "
            "triage band calls 'uncertain'. Another share: the band routing that share instead "
            "(read off its effort curve). N most doubtful: the N items of highest P(verdict "
            "wrong), labelled or not.",
        )
        share = c2.slider("Share (%)", 1, 50, 20, key="triage_share")
        top = c3.number_input("N", 1, 10_000_000, 20, key="triage_n")
        d1, d2 = st.columns(2)
        by_chance = d1.checkbox(
            "Draw by chance (labels count in accuracy estimates)",
            key="triage_by_chance",
            help="Instead of the most doubtful items, draw as many at random, each with a known "
            "probability that grows with the judge's doubt and is never below the floor. The "
            "probabilities are recorded, so every label counts in the Leaderboard's estimates "
            "(weighted by 1 / probability) and no separate audit sample is needed.",
        )
        floor = d2.number_input(
            "Floor: least chance per unlabelled item (%)",
            0.01,
            100.0,
            1.0,
            step=0.5,
            key="triage_floor",
            help="Every unlabelled item keeps at least this chance to be "
            "drawn (must fit the budget: floor x items <= items routed).",
        )
        chosen = st.multiselect("Annotators", people, key="triage_annotators")
        base, overlap, extra_k, seed = _overlap_inputs("triage")
        submitted = st.form_submit_button("Route", type="primary", key="triage_submit")
    if not submitted:
        return
    how = _ROUTE_BY[by]
    choice: dict[str, object] = {
        "share": {"human_share": share / 100},
        "top": {"n_most_uncertain": int(top)},
    }.get(how, {})
    if by_chance:
        choice = {**choice, "floor": float(floor) / 100}
    try:
        with st.spinner("Applying the judge and dealing..."):
            result = workflows.route_uncertain(
                url,
                dataset,
                calibration,
                chosen,
                seed=seed,
                base=base,
                extra_fraction=overlap,
                extra_k=extra_k,
                created_by=user,
                **choice,
            )
    except NothingToDraw as exc:  # a state, said as routing none is (routed_notice)
        st.warning(
            f"Drew 0 items: {exc} Nobody got a new item; to have more labelled, choose "
            "another dataset or deal a random audit sample above (its labels count in the "
            "estimates)."
        )
        return
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    _triage_result(result)


def routed_notice(
    dealt: int, selected: int, added: int, per_annotator: dict[str, int]
) -> tuple[str, str]:
    """What routing says, and how (the Streamlit call's name): a success only when every
    selected item went to people; nothing routed is a warning (issue 21, item 11: "Routed 0 of
    10" was a green success), some routed is neutral information."""
    per = ", ".join(f"{n}: +{k}" for n, k in per_annotator.items())
    text = f"Routed {dealt} of {selected} selected item(s)"
    if dealt == 0:
        return "warning", (
            f"{text}: each one already has a human label or is in someone's queue (see "
            "'What happened' below); nobody got a new item."
        )
    kind = "success" if dealt == selected else "info"
    return kind, f"{text} ({added} new assignment(s): {per})."


def _triage_result(result: workflows.TriageResult) -> None:
    items = result.items
    skipped = result.skipped
    if items.empty:
        st.info(f"The judge is sure of every item ({result.selection}): nothing to route.")
        return
    kind, text = routed_notice(
        len(result.dealt), len(items), result.deal.added, result.deal.per_annotator
    )
    getattr(st, kind)(text)
    m = st.columns(4)
    by_chance = "inclusion_probability" in items.columns
    m[0].metric("Drawn" if by_chance else "Selected", len(items))
    m[1].metric("Dealt", len(result.dealt))
    if by_chance:
        m[2].metric("Labelled before: count for sure", len(result.deal.skipped_labelled))
    else:
        m[2].metric("Skipped: labelled", len(skipped["labelled"]))
    m[3].metric("Skipped: queued", len(skipped["queued"]))
    if by_chance:
        st.caption(
            f"Selected: {result.selection}. Each item's chance is recorded: its labels count in "
            "the Leaderboard's accuracy estimates, weighted by 1 / P(drawn)."
        )
    else:
        st.caption(f"Selected: {result.selection}, most doubtful first.")
    drawn = {"P(drawn)": items["inclusion_probability"].map(tw.cell)} if by_chance else {}
    st.dataframe(
        pd.DataFrame(
            {
                "Item": items["external_id"].map(tw.cell),
                "QA model": items["qa_model"].map(tw.cell),
                **drawn,
                "Judge P(correct)": items["judge_probability"].map(tw.cell),
                "P(verdict wrong)": items["judge_doubt"].map(tw.cell),
                "Judge says": items["judge_outcome"].map(
                    lambda s: tw.OUTCOME_NAMES.get(s, tw.cell(s))
                ),
                "What happened": items["status"].map(_STATUS),
            }
        ),
        hide_index=True,
        key="triage_items",
    )


def _deals(dataset: str, url: str) -> None:
    deals = store.list_deals(url, dataset)
    if deals.empty:
        return
    with st.expander(f"Recorded deals ({len(deals)})"):
        st.dataframe(
            pd.DataFrame(
                {
                    "Deal": deals["deal_id"].astype(int),
                    "Kind": deals["kind"].map(tw.cell),
                    "Items": deals["n_items"].astype(int),
                    "Assignments added": deals["added"].astype(int),
                    "Seed": deals["seed"].map(lambda v: "" if pd.isna(v) else str(int(v))),
                    "By": deals["created_by"].map(tw.cell),
                    "When": deals["created_at"].map(tw.cell),
                }
            ),
            hide_index=True,
            key="assign_deals",
        )


def _progress(dataset: str, url: str) -> list[str]:
    prog = store.dataset_progress(url, dataset)
    safe_text.section("Progress")
    st.progress(
        prog.fraction,
        text=f"{prog.done_assignments} of {prog.assignments} assignments done "
        f"({percent_text(prog.fraction)})",
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
            "done": [100.0 * p.fraction for p in prog.annotators],
            # Text, blank before the first label: a number column would show "None" there.
            "mean seconds": [
                "" if p.seconds_mean is None else f"{p.seconds_mean:.1f}" for p in prog.annotators
            ],
        }
    )
    st.dataframe(
        frame,
        hide_index=True,
        column_config={
            # The app's one percentage format (percent_text): one decimal, "19.6%".
            "done": st.column_config.ProgressColumn(
                "done", format="%.1f%%", min_value=0, max_value=100
            ),
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
        result = store.reassign(url, dataset, absent, to)
    except QAEvalError as exc:
        safe_text.show_error(exc)
        return
    per = ", ".join(f"{n}: +{k}" for n, k in result.per_recipient.items())
    st.success(f"Moved {result.moved} item(s) from {result.absent} ({per}).")
    if result.kept:
        st.warning(f"{result.kept} item(s) stay with {result.absent}: every recipient has them.")


def main() -> None:
    user = auth.page_setup(
        "Assign",
        auth.RESEARCHERS,
        caption="Deal queues, audit samples and the judge's uncertain items; follow progress.",
    )
    url = auth.store_url()
    datasets = [d.name for d in store.list_datasets(url)]
    if not datasets:
        st.info("No datasets yet. Import one on the Data page.")
        return
    dataset = st.selectbox("Dataset", datasets, key="assign_dataset")
    people = [name for name, _role in store.queue_users(url)]
    _deal_form(dataset, people, url, user.name)
    _audit_form(dataset, people, url, user.name)
    _triage_form(dataset, people, url, user.name)
    holders = _progress(dataset, url)
    _deals(dataset, url)
    if holders:
        _release_form(dataset, holders, url, user.name)
        _reassign_form(dataset, holders, people, url)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
