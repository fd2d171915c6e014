"""Annotate: judge the next answer in your queue, keyboard first.

Keys (Streamlit native shortcuts; they do nothing while the cursor is in the note field, where
Enter saves instead): Y / U / N pick the label, 1-7 the rule (0 clears it), Enter saves and
moves on, S skips, B goes back to your previous label, F forward again, Q returns to the queue.
Every save appends to your history; nothing is overwritten. You only ever see your own labels.

The label and rule buttons are :mod:`app.components.label_picker`; this view moves through the
queue (open, save, skip, back / forward, earlier labels) and draws the item and its note form.
"""

from __future__ import annotations

import time

import streamlit as st

from app.components import auth, label_picker, safe_text
from qaeval_core.errors import PermissionDenied, QAEvalError
from qaeval_core.store import annotation as ann
from qaeval_core.store import repo

KEY_LEGEND = (
    "**Keys** — `Y` clearly correct · `U` unclear · `N` clearly incorrect · `1`-`7` rule · "
    "`0` no rule · `Enter` save & next · `S` skip · `B` back · `F` forward · `Q` back to queue. "
    "In the note field, `Enter` saves."
)

S = st.session_state


# ----------------------------------------------------------------------------- state changes
# All changes happen in button callbacks, which run before the page is drawn again, so what is
# shown always matches the store.


def note_key(item_id: int) -> str:
    """One note field per item: a new item gets a new field, so focus never stays in the old
    one (a key pressed right after saving from the note cannot land in the next item's note).
    """
    return f"ann_note_{item_id}"


def _open(item: ann.QueueItem | None, *, review: bool, user_id: int, url: str) -> None:
    """Show ``item``; in review mode preload the user's current label for editing."""
    S.ann_item = item.id if item else None
    S.ann_review = review and item is not None
    S.ann_started = time.time()
    S.ann_value, S.ann_rule = None, None
    note = ""
    if S.ann_review and item is not None:
        cur = ann.current_label(user_id, item.id, url=url)
        if cur is not None:
            S.ann_value, S.ann_rule, note = int(cur.value), cur.rule, cur.note or ""
    if item is not None:
        S[note_key(item.id)] = note


def _open_next(user_id: int, dataset: str, url: str) -> None:
    item = ann.next_item(user_id, dataset, skip=S.ann_skip, url=url)
    _open(item, review=False, user_id=user_id, url=url)


def _flash(kind: str, text: str) -> None:
    S.ann_flash = (kind, text)


def _save(user_id: int, dataset: str, url: str) -> None:
    item_id = S.ann_item
    if item_id is None:
        return
    if S.ann_value is None:
        _flash("warning", "Pick a label first: Y clearly correct, U unclear, N clearly incorrect.")
        return
    seconds = max(0.0, time.time() - (S.ann_started or time.time()))
    try:
        rec = ann.save_label(
            user_id,
            item_id,
            S.ann_value,
            rule=S.ann_rule,
            note=S.get(note_key(item_id), ""),
            seconds=seconds,
            url=url,
        )
    except QAEvalError as exc:
        _flash("error", str(exc))
        return
    rule = f" · rule {rec.rule}" if rec.rule else ""
    verb = "Updated" if S.ann_review else "Saved"
    _flash("success", f"{verb}: {rec.value.title}{rule} · {rec.seconds or 0:.1f} s")
    if S.ann_review:
        nxt = ann.following_item(user_id, dataset, after=item_id, url=url)
        if nxt is not None:
            _open(nxt, review=True, user_id=user_id, url=url)
            return
    _open_next(user_id, dataset, url)


def _skip(user_id: int, dataset: str, url: str) -> None:
    if S.ann_item is not None and S.ann_item not in S.ann_skip:
        S.ann_skip = [*S.ann_skip, S.ann_item]
    _flash("info", "Skipped; it comes back after the rest of your queue.")
    _open_next(user_id, dataset, url)


def _back(user_id: int, dataset: str, url: str) -> None:
    prev = ann.previous_item(user_id, dataset, before=S.ann_item, url=url)
    if prev is None:
        _flash("info", "Nothing earlier: this is your first labelled item.")
        return
    S.ann_flash = None
    _open(prev, review=True, user_id=user_id, url=url)


def _forward(user_id: int, dataset: str, url: str) -> None:
    S.ann_flash = None
    nxt = ann.following_item(user_id, dataset, after=S.ann_item, url=url) if S.ann_item else None
    if nxt is not None:
        _open(nxt, review=True, user_id=user_id, url=url)
    else:
        _open_next(user_id, dataset, url)


def _to_queue(user_id: int, dataset: str, url: str) -> None:
    S.ann_flash = None
    _open_next(user_id, dataset, url)


def _revisit_skipped(user_id: int, dataset: str, url: str) -> None:
    S.ann_skip = []
    _open_next(user_id, dataset, url)


def _open_earlier(user_id: int, url: str) -> None:
    choice = S.get("ann_earlier")
    if choice is None:
        return
    try:
        item = ann.get_item(user_id, int(choice), url=url)
    except QAEvalError as exc:
        _flash("error", str(exc))
        return
    S.ann_flash = None
    _open(item, review=True, user_id=user_id, url=url)


def _current_item(user_id: int, dataset: str, url: str) -> ann.QueueItem | None:
    """The item on screen; if a researcher reassigned it meanwhile, the next one instead."""
    if S.ann_item is None:
        return None
    try:
        return ann.get_item(user_id, S.ann_item, url=url)
    except PermissionDenied:
        _flash("warning", "The item you had open was reassigned; here is your next one.")
        _open_next(user_id, dataset, url)
        return ann.get_item(user_id, S.ann_item, url=url) if S.ann_item is not None else None


def _change_dataset() -> None:
    S.ann_item, S.ann_skip, S.ann_flash = None, [], None
    S.ann_started = None


# ----------------------------------------------------------------------------- drawing


def _show_item(item: ann.QueueItem) -> None:
    safe_text.section("Question")
    st.subheader(safe_text.escape_markdown(item.question), anchor=False)
    safe_text.section("References")
    st.markdown("\n".join(f"- {safe_text.escape_markdown(r)}" for r in item.references) or "(none)")
    if item.choices:
        safe_text.section("Choices")
        st.markdown("\n".join(f"- {safe_text.escape_markdown(c)}" for c in item.choices))
    safe_text.section("Candidate answer")
    words = safe_text.reference_words(item.references)
    long_answer = len(item.candidate) > 700 or item.candidate.count("\n") > 12
    box = st.container(border=True, height=320 if long_answer else "content")
    box.markdown(safe_text.highlight(item.candidate, words) or "*(empty answer)*")
    st.caption(
        "Words that also occur in a reference are highlighted to help reading; "
        "overlap alone does not make an answer correct (rule 5)."
    )
    if item.context:
        with st.expander("Context passage"):
            st.text(item.context)


def _history(user_id: int, item_id: int, url: str) -> None:
    history = ann.label_history(user_id, item_id, url=url)
    if not history:
        return
    with st.expander(f"Your history for this item ({len(history)} entries)"):
        for h in history:
            when = h.created_at.strftime("%Y-%m-%d %H:%M:%S") if h.created_at else ""
            rule = f", rule {h.rule}" if h.rule else ""
            note = f" — note: {h.note}" if h.note else ""
            secs = f", {h.seconds:.1f} s" if h.seconds is not None else ""
            st.text(f"{when}  {h.value.title}{rule}{secs}{note}")


def _earlier_labels(user_id: int, dataset: str, url: str) -> None:
    entries = ann.labelled_items(user_id, dataset, limit=200, url=url)
    if not entries:
        return
    with st.expander("My earlier labels (open one to edit it)"):
        names = {
            e.item_id: f"{e.value.title:<17} {e.external_id}: {e.question[:80]}" for e in entries
        }
        st.selectbox(
            "Item",
            list(names),
            format_func=names.__getitem__,
            key="ann_earlier",
            index=None,
            placeholder="Choose an item you labelled",
        )
        st.button(
            "Open for editing", key="ann_open_earlier", on_click=_open_earlier, args=(user_id, url)
        )


def _queue_for_myself(user: auth.SessionUser, url: str) -> None:
    """A researcher's empty queue: one click deals a dataset to themselves (the first login
    after ``qaeval demo`` lands here), instead of a detour through the Assign page."""
    names = [d.name for d in repo.list_datasets(url)]
    if not names:
        st.info("There is no data to label yet: import a dataset on the Data page.")
        return
    st.info(
        "No items are assigned to you yet. Queue a dataset for yourself here, or deal it to "
        "annotators (with overlap) on the Assign page."
    )
    dataset = st.selectbox("Dataset", names, key="ann_self_dataset")
    if st.button("Queue it for me", key="ann_self_deal", type="primary"):
        try:
            result = ann.deal(dataset, [user.name], url=url)
        except QAEvalError as exc:
            st.error(str(exc))
            return
        if result.added:
            st.rerun()
        st.warning(
            f"Every item of {dataset} already has its annotator; deal it again with more "
            "annotators per item on the Assign page to label it too."
        )


def main() -> None:
    user = auth.page_setup("Annotate", auth.LABELLERS)
    url = auth.store_url()
    for key, default in (
        ("ann_item", None),
        ("ann_review", False),
        ("ann_skip", []),
        ("ann_value", None),
        ("ann_rule", None),
        ("ann_started", None),
        ("ann_flash", None),
    ):
        S.setdefault(key, default)

    datasets = ann.datasets_for_user(user.id, url=url)
    if not datasets:
        if user.role in auth.RESEARCHERS:
            _queue_for_myself(user, url)
        else:
            st.info("No items are assigned to you yet. A researcher deals them on the Assign page.")
        return
    if S.get("ann_dataset") not in datasets:
        S.ann_dataset = datasets[0]
        _change_dataset()
    if len(datasets) > 1:
        st.selectbox("Dataset", datasets, key="ann_dataset", on_change=_change_dataset)
    dataset: str = S.ann_dataset
    cb = {"args": (user.id, dataset, url)}

    if S.ann_started is None:  # first visit (or dataset changed): open the queue
        _open_next(user.id, dataset, url)
    item = _current_item(user.id, dataset, url)

    progress = ann.user_progress(user.id, dataset, url=url)
    mean = f" · {progress.seconds_mean:.0f} s per item" if progress.seconds_mean else ""
    st.progress(
        progress.fraction,
        text=f"{dataset}: {progress.labelled} of {progress.assigned} labelled · "
        f"{progress.remaining} left{mean}",
    )
    # Fixed slots: a message that comes and goes must not shift the widgets below it. Streamlit
    # identifies elements by position, and a shifted button is remounted, which drops a
    # keyboard shortcut pressed in that moment.
    flash_slot, banner_slot = st.empty(), st.empty()
    if S.ann_flash:
        kind, text = S.ann_flash
        getattr(flash_slot, kind)(text)

    if item is None:
        if S.ann_skip:
            st.info(f"Only skipped items are left ({len(S.ann_skip)}).")
            st.button(
                "Revisit skipped items",
                key="ann_revisit",
                shortcut="V",
                on_click=_revisit_skipped,
                **cb,
            )
        else:
            st.success("Your queue is done. Thank you!")
        cols = st.columns(2)
        cols[0].button("Back to my last label", key="ann_back", shortcut="B", on_click=_back, **cb)
        _earlier_labels(user.id, dataset, url)
        st.caption(KEY_LEGEND)
        return

    if S.ann_review:
        banner_slot.info(
            "You are editing an earlier label. Saving adds a new entry to your history "
            "(the old one is kept); `Q` returns to your queue.",
            icon=":material/history:",
        )
    left, right = st.columns([3, 2], gap="large")
    with left:
        # The item is drawn into a slot above the note form but *after* it: the browser then
        # replaces the previous item's note field (which may still hold the cursor after Enter)
        # before the new question appears, so the next key press cannot land in the old field.
        item_slot = st.container()
        with st.form("ann_note_form", border=False, enter_to_submit=True):
            st.text_input(
                "Note (optional)", key=note_key(item.id), placeholder="Why? Anything odd?"
            )
            st.form_submit_button(
                "Save & next",
                key="ann_save",
                type="primary",
                shortcut="Enter",
                icon=":material/check:",
                on_click=_save,
                **cb,
            )
        nav = st.columns(4)
        nav[0].button(
            "Back", key="ann_back", shortcut="B", icon=":material/undo:", on_click=_back, **cb
        )
        if S.ann_review:
            nav[1].button(
                "Forward",
                key="ann_forward",
                shortcut="F",
                icon=":material/redo:",
                on_click=_forward,
                **cb,
            )
            nav[2].button(
                "Back to queue",
                key="ann_queue",
                shortcut="Q",
                icon=":material/playlist_play:",
                on_click=_to_queue,
                **cb,
            )
        else:
            nav[1].button(
                "Skip",
                key="ann_skip_btn",
                shortcut="S",
                icon=":material/skip_next:",
                on_click=_skip,
                **cb,
            )
        st.caption(KEY_LEGEND)
        with item_slot:
            st.caption(f"Item {safe_text.escape_markdown(item.external_id)}")
            _show_item(item)
        _history(user.id, item.id, url)
        _earlier_labels(user.id, dataset, url)
    with right:
        label_picker.panel()


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
