"""Annotate: judge the next answer in your queue, keyboard first.

The item and every key live in one browser component, :mod:`app.components.label_picker`:
the project's label keys (default Y / U / N), 1-9 the rule (0 clears it), Enter saves and
moves on, S skips, B goes back to your previous label, F forward again, Q jumps to the next
unlabelled item, R flags the item for review with a reason. The component sends one message
per action carrying the item and view it was pressed on; :func:`handle_message` applies it only
if that is still the item on screen (else it is refused and says so), and answers with an
``ack`` the component shows. Every save appends to your history; nothing is overwritten.

Skips and flags are stored, so they survive reloads; the queue filters (pending / done /
skipped / flagged) and "next unlabelled" read the store. The dataset's guidelines, rule list,
label keys and idle cap come from the store too (edited on the Guidelines page).

A researcher who queued a dataset for themselves ("Queue it for me") can release the unlabelled
part of that queue here (:func:`~qaeval_core.store.release_queue`) before dealing it
to the team.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import streamlit as st

from app.components import auth, guidelines_view, label_picker
from qaeval_core import store
from qaeval_core.errors import PermissionDenied, QAEvalError
from qaeval_core.label_times import bounded_label_times

S = st.session_state

_DEFAULTS: dict[str, Any] = {
    "ann_item": None,  # the item on screen (id) or None
    "ann_item_name": None,  # its external id: every acknowledgement names its item
    "ann_review": False,  # editing an earlier label
    "ann_view": 0,  # increases each time an item is opened: messages name the view they saw
    "ann_pick": None,  # preloaded pick for review mode
    "ann_ack": None,  # the answer to the component's last message
    "ann_flash": None,  # a message not tied to a key press (reassignment, ...)
    "ann_focus": 0,  # increases when the component should take the keyboard back
    "ann_started": None,  # when the item was opened (server clock); None: open the queue
    "ann_last_nonce": None,  # the last message handled (a repeat is not applied twice)
}


# ----------------------------------------------------------------------------- state changes


def _open(item: store.QueueItem | None, *, review: bool, user_id: int, url: str) -> None:
    """Show ``item`` as a new view; in review mode preload the user's current label."""
    S.ann_item = item.id if item else None
    S.ann_item_name = item.external_id if item else None
    S.ann_review = review and item is not None
    S.ann_view = int(S.ann_view) + 1
    S.ann_started = time.time()
    S.ann_pick = None
    if S.ann_review and item is not None:
        cur = store.current_label(url, user_id, item.id)
        if cur is not None:
            S.ann_pick = {"value": int(cur.value), "rule": cur.rule, "note": cur.note or ""}


def _open_next(user_id: int, dataset: str, url: str) -> None:
    _open(store.next_item(url, user_id, dataset), review=False, user_id=user_id, url=url)


def _ack(nonce: str, status: str, text: str) -> None:
    """Answer the message ``nonce``; the answer belongs to the view on screen now (an action
    that opens another item moves it there: :func:`handle_message`). ``item`` names the item
    the message acted on, so the picker never shows it as the next item's state (issue 33)."""
    S.ann_ack = {
        "nonce": nonce,
        "status": status,
        "text": text,
        "view": S.ann_view,
        "item": S.ann_item_name,
    }


def _shown_ack() -> dict[str, Any] | None:
    """The ack to draw: only on the view it answered. An item opened otherwise (from the
    queue, "Revisit skipped", "Back" after the queue ran out) is a fresh start and must not
    show the last key's "Saved: ..." as if it were its own (issue 21, item 7)."""
    ack = S.ann_ack
    return ack if isinstance(ack, dict) and ack.get("view") == S.ann_view else None


def _save(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    guide = store.get_guidelines(url, dataset)
    # The browser measures, the core's rule bounds it by the server's clock.
    active, wall = bounded_label_times(
        msg.get("active"),
        msg.get("wall"),
        open_seconds=time.time() - float(S.ann_started or time.time()),
        idle_cap=guide.idle_cap_seconds,
    )
    item_id = int(S.ann_item)
    rec = store.save_label(
        url,
        user_id,
        item_id,
        msg.get("value"),
        rule=msg.get("rule"),
        note=str(msg.get("note") or ""),
        seconds=active,
        wall_seconds=wall,
        rules=guide.rule_numbers,
        login=auth.login_token(),  # the store re-checks the login in the save's transaction
    )
    rule = f" · rule {rec.rule}" if rec.rule else ""
    verb = "Updated" if S.ann_review else "Saved"
    _ack(
        nonce,
        "success",
        f"{verb} item {S.ann_item_name}: {rec.value.title}{rule} · {rec.seconds or 0:.1f} s active",
    )
    if S.ann_review:
        nxt = store.following_item(url, user_id, dataset, after=item_id)
        if nxt is not None:
            _open(nxt, review=True, user_id=user_id, url=url)
            return
    _open_next(user_id, dataset, url)


def _skip(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    store.skip_item(url, user_id, int(S.ann_item), login=auth.login_token())
    _ack(
        nonce,
        "info",
        f"Skipped item {S.ann_item_name}: it stays out of your queue (filter 'skipped') until "
        "you revisit it.",
    )
    _open_next(user_id, dataset, url)


def _flag(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    reason = str(msg.get("reason") or "")
    store.flag_item(url, user_id, int(S.ann_item), reason, login=auth.login_token())
    _ack(
        nonce,
        "info",
        f"Flagged item {S.ann_item_name} for review: a researcher will see your reason.",
    )
    _open_next(user_id, dataset, url)


def _back(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    prev = store.previous_item(url, user_id, dataset, before=S.ann_item)
    if prev is None:
        _ack(nonce, "info", "Nothing earlier: this is your first labelled item.")
        return
    _ack(nonce, "info", "Back to your previous label.")
    _open(prev, review=True, user_id=user_id, url=url)


def _forward(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    nxt = store.following_item(url, user_id, dataset, after=int(S.ann_item))
    _ack(nonce, "info", "")
    if nxt is not None:
        _open(nxt, review=True, user_id=user_id, url=url)
    else:
        _open_next(user_id, dataset, url)


def _queue(msg: dict[str, Any], nonce: str, user_id: int, dataset: str, url: str) -> None:
    _ack(nonce, "info", "")
    _open_next(user_id, dataset, url)


_ACTIONS = {
    "save": _save,
    "skip": _skip,
    "flag": _flag,
    "back": _back,
    "forward": _forward,
    "queue": _queue,
}


def handle_message(msg: dict[str, Any] | None, user_id: int, dataset: str, url: str) -> None:
    """Apply one message of the picker, if it was sent for the item and view on screen.

    A message for another view (the item changed between the key press and its arrival) is
    refused with a visible "Not applied"; a repeated nonce is ignored (its ack stays).
    """
    if not isinstance(msg, dict):
        return
    nonce = str(msg.get("nonce") or "")
    if not nonce or nonce == S.ann_last_nonce:
        return
    S.ann_last_nonce = nonce
    S.ann_flash = None
    action = _ACTIONS.get(str(msg.get("action")))
    if action is None:
        _ack(nonce, "error", f"Unknown action {msg.get('action')!r}.")
        return
    if msg.get("view") != S.ann_view or msg.get("item_id") != S.ann_item:
        _ack(
            nonce,
            "refused",
            f"Not applied to item {S.ann_item_name}: the item changed before your key arrived. "
            "Check the item on screen and press the key again.",
        )
        return
    try:
        action(msg, nonce, user_id, dataset, url)
    except QAEvalError as exc:
        _ack(nonce, "error", str(exc))
    if isinstance(S.ann_ack, dict) and S.ann_ack.get("nonce") == nonce:
        S.ann_ack["view"] = S.ann_view  # shown on the item the action opened (or kept)


def _on_message(user_id: int, dataset: str, url: str) -> None:
    handle_message(label_picker.message(), user_id, dataset, url)


def _open_from_queue(user_id: int, dataset: str, url: str) -> None:
    choice = S.get("ann_queue_item")
    if choice is None:
        return
    try:
        item = store.get_item(url, user_id, int(choice))
    except QAEvalError as exc:
        S.ann_flash = {"kind": "error", "text": str(exc)}
        return
    S.ann_flash = None
    done = S.get("ann_filter") == "done" or store.current_label(url, user_id, item.id)
    _open(item, review=bool(done), user_id=user_id, url=url)
    S.ann_focus = int(S.ann_focus) + 1


def _revisit_skipped(user_id: int, dataset: str, url: str) -> None:
    n = store.revisit_skipped(url, user_id, dataset)
    S.ann_flash = {"kind": "info", "text": f"{n} skipped item(s) are back in your queue."}
    _open_next(user_id, dataset, url)


def _current_item(user_id: int, dataset: str, url: str) -> store.QueueItem | None:
    """The item on screen; if a researcher reassigned it meanwhile, the next one instead."""
    if S.ann_item is None:
        return None
    try:
        return store.get_item(url, user_id, S.ann_item)
    except PermissionDenied:
        S.ann_flash = {
            "kind": "warning",
            "text": "The item you had open was reassigned; here is your next one.",
        }
        _open_next(user_id, dataset, url)
        return store.get_item(url, user_id, S.ann_item) if S.ann_item is not None else None


def _change_dataset() -> None:
    S.ann_item, S.ann_flash, S.ann_started = None, None, None
    S.ann_focus = int(S.ann_focus) + 1  # the picker takes the keyboard back from the box


# ----------------------------------------------------------------------------- drawing


def _history(user_id: int, item_id: int, url: str) -> None:
    history = store.label_history(url, user_id, item_id)
    if not history:
        return
    with st.expander(f"Your history for this item ({len(history)} entries)"):
        for h in history:
            when = h.created_at.strftime("%Y-%m-%d %H:%M:%S") if h.created_at else ""
            rule = f", rule {h.rule}" if h.rule else ""
            note = f" — note: {h.note}" if h.note else ""
            secs = f", {h.seconds:.1f} s active" if h.seconds is not None else ""
            wall = f" ({h.wall_seconds:.1f} s wall)" if h.wall_seconds is not None else ""
            st.text(f"{when}  {h.value.title}{rule}{secs}{wall}{note}")


def _queue_filters(user_id: int, dataset: str, url: str) -> None:
    """The annotator's own queue by status, with a button to open one of its items."""
    with st.expander("My queue: pending · done · skipped · flagged"):
        status = st.segmented_control(
            "Show", store.QUEUE_FILTERS, key="ann_filter", default="pending"
        )
        entries = store.queue_entries(url, user_id, dataset, status or "pending")
        if not entries:
            st.caption(f"No {status or 'pending'} items.")
        else:
            names = {e.item_id: f"{e.external_id}: {e.question[:80]}" for e in entries}
            st.selectbox(
                "Item",
                list(names),
                format_func=names.__getitem__,
                key="ann_queue_item",
                index=None,
                placeholder=f"Choose one of your {len(entries)} {status} items",
            )
            st.button(
                "Open",
                key="ann_open_queue",
                on_click=_open_from_queue,
                args=(user_id, dataset, url),
            )
        if status == "skipped" and entries:
            st.button(
                "Put all skipped items back in my queue",
                key="ann_revisit_all",
                on_click=_revisit_skipped,
                args=(user_id, dataset, url),
            )


def _queue_for_myself(user: auth.SessionUser, url: str) -> None:
    """A researcher's empty queue: one click deals a dataset to themselves (the first login
    after ``qaeval demo`` lands here), instead of a detour through the Assign page."""
    names = [d.name for d in store.list_datasets(url)]
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
            result = store.deal(url, dataset, [user.name])
        except QAEvalError as exc:
            st.error(str(exc))
            return
        if result.added:
            st.rerun()
        st.warning(
            f"Every item of {dataset} already has its annotator; deal it again with more "
            "annotators per item on the Assign page to label it too."
        )


def _release_mine(user: auth.SessionUser, dataset: str, url: str) -> None:
    """Give back the unlabelled part of one's own queue (after "Queue it for me", before
    dealing the dataset to the team); the summary shows on the next run."""
    try:
        result = store.release_queue(url, dataset, user.name, by=user.name)
    except QAEvalError as exc:
        S.ann_release_note = ("error", str(exc))
        return
    S.ann_release_note = ("success", result.summary())
    S.ann_item, S.ann_flash, S.ann_started = None, None, None


def _release_offer(user: auth.SessionUser, dataset: str, remaining: int, url: str) -> None:
    """A researcher holding unlabelled items here (typically from "Queue it for me") can hand
    them back, so that a deal on the Assign page can give them to the team instead."""
    if user.role not in auth.RESEARCHERS or remaining <= 0:
        return
    with st.expander("Release my unlabelled queue"):
        st.caption(
            f"Takes the {remaining} item(s) you have not labelled out of your queue in "
            f"{dataset}, so a deal can give them to annotators; your labels stay yours."
        )
        st.button(
            "Release my unlabelled queue",
            key="ann_release",
            on_click=_release_mine,
            args=(user, dataset, url),
        )


def _queue_done(user_id: int, dataset: str, url: str) -> None:
    """No item left to serve: say why and offer the way back (the picker is not mounted, so
    these buttons have their own shortcuts)."""
    skipped = store.skipped_count(url, user_id, dataset)
    if skipped:
        st.info(f"Only skipped or flagged items are left ({skipped}).")
        st.button(
            "Revisit skipped items",
            key="ann_revisit",
            shortcut="V",
            on_click=_revisit_skipped,
            args=(user_id, dataset, url),
        )
    else:
        st.success("Your queue is done. Thank you!")
    st.button(
        "Back to my last label",
        key="ann_back",
        shortcut="B",
        on_click=_back_from_done,
        args=(user_id, dataset, url),
    )


def _back_from_done(user_id: int, dataset: str, url: str) -> None:
    prev = store.previous_item(url, user_id, dataset)
    if prev is None:
        S.ann_flash = {"kind": "info", "text": "Nothing labelled yet."}
        return
    _open(prev, review=True, user_id=user_id, url=url)
    S.ann_focus = int(S.ann_focus) + 1


def main() -> None:
    user = auth.page_setup("Annotate", auth.LABELLERS)
    url = auth.store_url()
    for key, default in _DEFAULTS.items():
        S.setdefault(key, default)

    if note := S.pop("ann_release_note", None):
        getattr(st, note[0])(note[1])
    datasets = store.datasets_for_user(url, user.id)
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
    guide = store.get_guidelines(url, dataset)

    if S.ann_started is None:  # first visit (or dataset changed): open the queue
        _open_next(user.id, dataset, url)
    item = _current_item(user.id, dataset, url)

    progress = store.user_progress(url, user.id, dataset)
    mean = f" · {progress.seconds_mean:.0f} s active per item" if progress.seconds_mean else ""
    st.progress(
        progress.fraction,
        text=f"{dataset}: {progress.labelled} of {progress.assigned} labelled · "
        f"{progress.remaining} left{mean}",
    )
    guidelines_view.show_guidelines(guide)
    if item is None:
        if S.ann_flash:
            getattr(st, S.ann_flash["kind"])(S.ann_flash["text"])
        _queue_done(user.id, dataset, url)
        _queue_filters(user.id, dataset, url)
        _release_offer(user, dataset, progress.remaining, url)
        return

    data = label_picker.picker_data(
        item,
        guide,
        view=int(S.ann_view),
        review=bool(S.ann_review),
        pick=S.ann_pick,
        ack=_shown_ack(),
        flash=S.ann_flash,
        focus=int(S.ann_focus),
    )
    label_picker.picker(data, partial(_on_message, user.id, dataset, url))
    if item.context:
        with st.expander("Context passage"):
            st.text(item.context)
    _history(user.id, item.id, url)
    _queue_filters(user.id, dataset, url)
    _release_offer(user, dataset, progress.remaining, url)


if __name__ == "__main__":  # Streamlit runs pages as __main__; tests import helpers
    main()
