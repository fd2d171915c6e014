"""The Streamlit pages through ``streamlit.testing.v1.AppTest``: login, roles, labelling,
editing, assignment, data and users.

AppTest cannot press keyboard shortcuts (tests/app/browser/test_browser.py does that in
Chromium); clicking a button here runs the same callback a shortcut would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from _apptest import APP
from _apptest import logged_in as log_in
from _picker import picker_data, send
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from app.components import safe_text
from qaeval_core import store as qstore
from qaeval_core.store import session as store_session

EVIL = "<script>alert('x')</script> ![img](http://evil.example/a.png) [click](http://x.example)"
ROWS = [
    {
        "id": "q0",
        "question": "Who wrote Hamlet?",
        "references": ["William Shakespeare"],
        "candidate": "It was written by William Shakespeare around 1600.",
    },
    {"id": "q1", "question": "Capital of France?", "references": ["Paris"], "candidate": EVIL},
    {
        "id": "q2",
        "question": "Largest planet?",
        "references": ["Jupiter"],
        "candidate": "Saturn, probably.",
    },
    {
        "id": "q3",
        "question": "Boiling point of water in C?",
        "references": ["100"],
        "candidate": "100 degrees Celsius at sea level.",
    },
]
USERS = {"admin": "admin", "res": "researcher", "ann1": "annotator", "ann2": "annotator"}


@pytest.fixture
def store(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = sqlite_url
    qstore.import_items(url, "ds", ROWS, source="test")
    for name, role in USERS.items():
        qstore.add_user(url, name, role, f"pw-{name}")
    monkeypatch.setenv("QAEVAL_DATABASE_URL", url)
    yield url


def app() -> AppTest:
    return AppTest.from_file(str(APP / "main.py"), default_timeout=60)


def logged_in(name: str) -> AppTest:
    return log_in(name, timeout=60)


def texts(at: AppTest) -> str:
    """Everything the page shows as text, for "is it there / is it absent" checks."""
    parts = [
        e.value
        for kind in (
            "markdown",
            "caption",
            "text",
            "title",
            "subheader",
            "success",
            "info",
            "warning",
            "error",
        )
        for e in getattr(at, kind)
    ]
    return "\n".join(str(p) for p in parts)


# ----------------------------------------------------------------------------- login and roles


def test_login_rejects_a_wrong_password_and_accepts_the_right_one(store: str) -> None:
    at = app().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["qaeval"]
    at.text_input(key="login_name").input("ann1")
    at.text_input(key="login_password").input("nope")
    at.button(key="login_submit").click().run()
    assert "wrong password" in at.error[0].value
    at.text_input(key="login_password").input("pw-ann1")
    at.button(key="login_submit").click().run()
    assert [t.value for t in at.title] == ["Annotate"]
    at.button(key="logout").click().run()
    assert [t.value for t in at.title] == ["qaeval"]


def test_annotator_cannot_reach_researcher_pages_even_by_url(store: str) -> None:
    at = logged_in("ann1")
    for page in ("views/assign.py", "views/data.py", "views/users.py"):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(page)
    # Typing /assign into the address bar requests the page by its url-path hash: the router
    # does not know it for this user and falls back to the annotate page.
    at._page_hash = calc_hash("assign")
    at.run()
    assert [t.value for t in at.title] == ["Annotate"]
    assert "deal_submit" not in [b.key for b in at.button]


def reloaded(token: str) -> AppTest:
    """A new browser connection (a reload) on a URL that carries ``?session=token``."""
    at = app()
    at.query_params["session"] = token
    return at.run()


def test_a_reload_keeps_the_user_logged_in_until_logout(store: str) -> None:
    at = logged_in("ann1")
    token = at.query_params["session"]
    assert len(token) >= 40 and [t.value for t in at.title] == ["Annotate"]
    # navigation clears the URL's parameters; the next run puts the token back
    at.switch_page("views/annotate.py").run()
    assert at.query_params["session"] == token
    again = reloaded(token)
    assert not again.exception and [t.value for t in again.title] == ["Annotate"]
    assert "ann1" in again.sidebar.caption[0].value
    # the store keeps only a hash of the token
    with store_session.session_scope(store) as s:
        from qaeval_core.store.orm import LoginSession

        stored = s.query(LoginSession.token_hash).scalar()
    assert stored != token and len(stored) == 64
    # logging out ends the session for every tab holding the URL, open ones included
    other_tab = reloaded(token)
    again.sidebar.button(key="logout").click().run()
    assert "session" not in again.query_params
    assert "No account yet?" in texts(reloaded(token))
    other_tab.run()  # its next click
    assert "No account yet?" in texts(other_tab) and "session" not in other_tab.query_params


def test_a_stale_or_forged_session_shows_the_login_form(store: str) -> None:
    from datetime import timedelta

    from qaeval_core import store as qstore
    from qaeval_core.store.orm import LoginSession, User, utcnow

    ann1 = qstore.get_user(store, "ann1")
    for bad in ["forged-token", "x" * 5000, ""]:
        at = reloaded(bad)
        assert not at.exception and "No account yet?" in texts(at)
        assert "session" not in at.query_params or at.query_params["session"] == ""
    expired = qstore.open_session(store, ann1.id)
    with store_session.write_scope(store) as s:
        s.query(LoginSession).update({"expires_at": utcnow() - timedelta(minutes=1)})
    assert "No account yet?" in texts(reloaded(expired))
    live = qstore.open_session(store, ann1.id)
    assert qstore.resume_session(store, live) is not None
    with store_session.write_scope(store) as s:
        s.query(User).filter(User.name == "ann1").update({"active": False})
    assert qstore.resume_session(store, live) is None  # a deactivated account
    assert "No account yet?" in texts(reloaded(live))
    with pytest.raises(ValueError):
        qstore.open_session(store, ann1.id, hours=0)


def test_page_without_login_asks_to_log_in(store: str) -> None:
    at = AppTest.from_file(str(APP / "views" / "annotate.py"), default_timeout=60).run()
    assert "log in" in at.warning[0].value


def test_role_change_takes_effect_without_new_login(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/assign.py").run()
    assert [t.value for t in at.title] == ["Assign"]
    with store_session.write_scope(store) as s:
        from qaeval_core.store.orm import User

        s.query(User).filter(User.name == "res").update({"role": "annotator"})
    at.run()
    assert [t.value for t in at.title] == ["Annotate"]


# ----------------------------------------------------------------------------- assignment


def test_researcher_deals_queues_and_sees_progress(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/assign.py").run()
    assert "Nobody has a queue" in texts(at)
    at.multiselect(key="deal_annotators").set_value(["ann1", "ann2"])
    at.number_input(key="deal_base").set_value(1)
    at.slider(key="deal_share").set_value(50)
    at.number_input(key="deal_k").set_value(2)
    at.button(key="deal_submit").click().run()
    assert not at.exception, at.exception
    assert "Dealt 6 new assignment(s) over 4 items" in at.success[0].value
    frame = at.dataframe[0].value
    assert list(frame["annotator"]) == ["ann1", "ann2"]
    assert list(frame["assigned"]) == [3, 3]
    # Dealing again adds nothing.
    at.button(key="deal_submit").click().run()
    assert "Dealt 0 new assignment(s)" in at.success[0].value
    # Reassign ann2's queue to ann1 (ann1 already holds the overlap items).
    at.selectbox(key="re_absent").set_value("ann2")
    at.multiselect(key="re_to").set_value(["ann1"])
    at.button(key="re_submit").click().run()
    assert not at.exception, at.exception
    assert "Moved 1 item(s) from ann2" in at.success[0].value


def test_deal_errors_are_shown_not_raised(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/assign.py").run()
    at.multiselect(key="deal_annotators").set_value(["ann1"])
    at.number_input(key="deal_base").set_value(2)
    at.button(key="deal_submit").click().run()
    assert not at.exception
    assert "base must be between 1 and the number of annotators" in at.error[0].value


# ----------------------------------------------------------------------------- labelling


def dealt(store: str) -> None:
    qstore.deal(store, "ds", ["ann1", "ann2"], options=qstore.DealOptions(base=2))


def test_annotator_without_queue_is_told_so(store: str) -> None:
    at = logged_in("ann1")
    assert "No items are assigned to you yet" in at.info[0].value


def test_researcher_with_empty_queue_queues_a_dataset_in_one_click(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/annotate.py").run()
    assert "Queue a dataset for yourself" in at.info[0].value
    at.selectbox(key="ann_self_dataset").set_value("ds")
    at.button(key="ann_self_deal").click().run()
    assert not at.exception, at.exception
    assert picker_data(at)["item"]["question"] == "Who wrote Hamlet?"  # ready to label
    assert qstore.user_progress(store, "res", "ds").assigned == len(ROWS)
    # an annotator dealt nothing more: every item already has its one annotator
    qstore.reassign(store, "ds", "res", ["ann1"])
    at = logged_in("admin")
    at.switch_page("views/annotate.py").run()
    at.button(key="ann_self_deal").click().run()
    assert "already has its annotator" in at.warning[0].value


def test_label_save_advance_and_time_recorded(store: str) -> None:
    dealt(store)
    at = logged_in("ann1")
    assert picker_data(at)["item"]["question"] == "Who wrote Hamlet?"
    assert "0 of 4 labelled" in at.get("progress")[0].proto.text
    send(at, "save", value=None)  # no label picked (the browser says so before sending)
    assert picker_data(at)["ack"]["status"] == "error"
    send(at, "save", value=2, rule=1, note="full name", active=2.0, wall=2.0)
    data = picker_data(at)
    assert data["ack"]["text"].startswith("Saved item q0: clearly correct · rule 1")
    assert data["ack"]["item"] == "q0"  # it names its item, not the one now shown
    assert data["item"]["question"] == "Capital of France?"
    history = qstore.label_history_frame(store, "ds")
    assert len(history) == 1
    row = history.iloc[0]
    assert (row["user"], row["value"], row["rule"], row["note"]) == ("ann1", 2, 1, "full name")
    assert row["seconds"] >= 0
    assert data["pick"] is None  # nothing carries over to the next item


def test_untrusted_text_is_escaped(store: str) -> None:
    dealt(store)
    at = logged_in("ann1")
    send(at, "skip")  # skip q0; q1 holds the hostile answer
    item = picker_data(at)["item"]
    # The component sets text with textContent; the answer arrives as plain runs, unchanged.
    assert "<script>" in "".join(run[0] for run in item["candidate"])
    assert not at.get("html")
    assert all("<script>" not in m.value for m in at.markdown)


def test_skip_back_edit_keeps_history(store: str) -> None:
    dealt(store)
    at = logged_in("ann1")
    first = at.session_state["ann_item"]
    send(at, "skip")
    second = at.session_state["ann_item"]
    assert second != first
    send(at, "save", value=0, rule=6)
    third = at.session_state["ann_item"]
    assert third not in (first, second)
    # Back: the item just labelled opens for editing with its current label chosen.
    send(at, "back")
    data = picker_data(at)
    assert at.session_state["ann_item"] == second and data["review"] is True
    assert data["pick"]["value"] == 0 and data["pick"]["rule"] == 6
    send(at, "save", value=1)
    assert "Updated item q1: unclear" in picker_data(at)["ack"]["text"]
    # After the edit we are back in the queue, at the next unlabelled item.
    assert at.session_state["ann_review"] is False
    assert at.session_state["ann_item"] == third
    history = qstore.label_history(store, "ann1", second)
    assert [int(h.value) for h in history] == [0, 1]
    # Back, then back to the queue (Q).
    send(at, "back")
    send(at, "queue")
    assert at.session_state["ann_item"] == third


def test_open_an_earlier_label_from_the_list(store: str) -> None:
    dealt(store)
    at = logged_in("ann1")
    first = at.session_state["ann_item"]
    send(at, "save", value=2)
    at.segmented_control(key="ann_filter").set_value("done").run()
    at.selectbox(key="ann_queue_item").set_value(first)
    at.button(key="ann_open_queue").click().run()
    assert at.session_state["ann_item"] == first and at.session_state["ann_review"]


def test_annotators_are_blind_to_each_other(store: str) -> None:
    dealt(store)
    other = logged_in("ann2")
    send(other, "save", value=0, note="SECRET-NOTE-OF-ANN2")
    at = logged_in("ann1")
    assert "SECRET-NOTE-OF-ANN2" not in texts(at)
    assert "SECRET-NOTE-OF-ANN2" not in json.dumps(picker_data(at))
    assert picker_data(at)["pick"] is None
    assert "0 of 4 labelled" in at.get("progress")[0].proto.text


def test_item_reassigned_while_open(store: str) -> None:
    qstore.deal(store, "ds", ["ann1"])
    at = logged_in("ann1")
    send(at, "save", value=2)  # one label kept, so ann1 keeps a queue
    qstore.reassign(store, "ds", "ann1", ["ann2"])  # a researcher moves the rest away
    send(at, "save", value=0)
    assert not at.exception, at.exception
    assert "no longer" in at.session_state["ann_ack"]["text"]
    at.run()
    assert "reassigned" in at.warning[0].value or "Your queue is done" in texts(at)
    assert "Your queue is done" in texts(at)
    assert len(qstore.label_history_frame(store, "ds")) == 1  # the refused label was not stored


def test_finished_queue_and_skipped_items(store: str) -> None:
    qstore.deal(store, "ds", ["ann1"])
    at = logged_in("ann1")
    send(at, "skip")
    for _ in range(3):
        send(at, "save", value=2)
    assert "Only skipped or flagged items are left (1)" in at.info[0].value
    at.button(key="ann_revisit").click().run()
    send(at, "save", value=1)
    assert "Your queue is done" in at.success[-1].value


# ----------------------------------------------------------------------------- data and users


def test_data_page_shows_row_numbered_errors(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/data.py").run()
    bad = (
        b'{"question": "q", "references": ["r"], "candidate": "c"}\n{"question": "q2"}\nnot json\n'
    )
    at.get("file_uploader")[0].upload("bad.jsonl", bad)
    at.text_input(key="import_dataset").input("new")
    at.button(key="import_submit").click().run()
    assert not at.exception, at.exception
    assert "nothing was imported" in at.error[0].value
    frame = at.dataframe[-1].value
    assert list(frame["row"]) == [2, 3]
    assert [d.name for d in qstore.list_datasets(store)] == ["ds"]


def test_data_page_imports_a_good_file(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/data.py").run()
    good = b'{"id": "a", "question": "q", "references": ["r"], "candidate": "c", "label": 1}\n'
    at.get("file_uploader")[0].upload("good.jsonl", good)
    at.text_input(key="import_dataset").input("new")
    at.button(key="import_submit").click().run()
    assert not at.exception, at.exception
    assert "1 item(s) added" in at.success[0].value
    assert at.get("download_button")


def test_data_page_applies_a_column_mapping(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/data.py").run()
    csv = b"qid,q,gold_answer,output\nx1,Who?,Ada,It was Ada.\n"
    at.get("file_uploader")[0].upload("mapped.csv", csv)
    at.text_input(key="import_dataset").input("mapped")
    at.text_input(key="import_map").input("qid=id, q=question, gold_answer=references")
    at.button(key="import_submit").click().run()
    assert not at.exception, at.exception
    assert "1 item(s) added" in at.success[0].value, texts(at)
    items = qstore.list_items(store, "mapped")
    assert list(items["references"].iloc[0]) == ["Ada"]
    at.text_input(key="import_map").input("nonsense")
    at.button(key="import_submit").click().run()
    assert "COLUMN=FIELD" in at.error[0].value


@pytest.mark.parametrize("what", ["items", "labels", "labels-history", "scores"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_exports_build_files(store: str, what: str, fmt: str) -> None:
    from app.views import data

    dealt(store)
    qstore.save_label(store, "ann1", qstore.next_item(store, "ann1", "ds").id, 2)
    payload = data._export_bytes(store, "ds", what, fmt)()
    assert isinstance(payload, bytes)
    if fmt == "jsonl" and what.startswith("labels"):
        assert b'"ann1"' in payload


def test_admin_adds_a_user_who_can_log_in(store: str) -> None:
    at = logged_in("admin")
    at.switch_page("views/users.py").run()
    at.text_input(key="user_name").input("newbie")
    at.selectbox(key="user_role").set_value("annotator")
    at.text_input(key="user_password").input("s3cret")
    at.text_input(key="user_confirm").input("s3cret")
    at.button(key="user_submit").click().run()
    assert not at.exception, at.exception
    assert "Created annotator 'newbie'" in at.success[0].value
    assert qstore.authenticate(store, "newbie", "s3cret") is not None
    # Mismatched confirmation creates nothing.
    at.text_input(key="user_name").input("other")
    at.text_input(key="user_password").input("a")
    at.text_input(key="user_confirm").input("b")
    at.button(key="user_submit").click().run()
    assert "differ" in at.error[0].value
    assert "other" not in [u.name for u in qstore.list_users(store)]


# ----------------------------------------------------------------------------- safe text


def test_escape_markdown_neutralises_markup() -> None:
    out = safe_text.escape_markdown("<b>x</b> ![i](u) $x$ :smile: **bold**\n    indented\n# head")
    for raw in ("<b>", "![i]", "$x$", ":smile:", "**bold**"):
        assert raw not in out
    assert out.endswith(r"\# head")
    assert out.split("  \n")[1] == "indented"


def test_highlight_marks_whole_reference_words_only() -> None:
    words = safe_text.reference_words(["William Shakespeare", "the Bard"])
    assert words == {"william", "shakespeare", "bard"}
    out = safe_text.highlight("By Shakespeare! Not Shakespeareana. <i>bard</i>", words)
    assert ":orange-background[**Shakespeare**]" in out
    assert "Shakespeareana" in out and "[**Shakespeareana**]" not in out
    assert r"\<i\>" in out and ":orange-background[**bard**]" in out
