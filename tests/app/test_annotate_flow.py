"""The Annotate page's logic through AppTest (issue 14, problems 1, 5, 6, 10 and the queue).

AppTest cannot run the browser component, so ``_picker.send`` delivers a message exactly as
the component does and the page's callback handles it. The keyboard itself is tested in
tests/app/browser/test_browser_keys.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _apptest import DEMO, build_demo_store, copy_store, finish_store, logged_in
from _picker import picker_data, send, send_raw

from qaeval_core import store as qstore


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, url = build_demo_store(tmp_path_factory.mktemp("flow"))
    qstore.deal(url, DEMO, ["ann"])
    finish_store(url)
    return path


@pytest.fixture
def store(demo_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return copy_store(demo_store, tmp_path, monkeypatch)


def mine(url: str):  # a DataFrame
    """The labels ``ann`` wrote (the demo also holds imported raters' labels)."""
    labels = qstore.label_history_frame(url, DEMO)
    return labels[labels["user"] == "ann"].reset_index(drop=True)


def test_a_save_carries_its_item_and_a_stale_one_is_refused(store: str) -> None:
    at = logged_in("ann")
    first = picker_data(at)
    send(at, "save", value=2, rule=1, note="full name", active=3.0, wall=3.5)
    second = picker_data(at)
    assert second["item"]["id"] != first["item"]["id"]
    assert second["ack"]["status"] == "success" and "Saved" in second["ack"]["text"]
    # A message for the item that was on screen before (label + Enter split across reruns)
    # is refused, visibly, and saves nothing.
    send(at, "save", stale=first, value=0)
    third = picker_data(at)
    assert third["ack"]["status"] == "refused" and "Not applied" in third["ack"]["text"]
    assert third["item"]["id"] == second["item"]["id"]
    labels = mine(store)
    assert [(int(r.item_id), int(r.value)) for r in labels.itertuples()] == [
        (first["item"]["id"], 2)
    ]


def test_the_same_message_twice_saves_once(store: str) -> None:
    at = logged_in("ann")
    data = picker_data(at)
    msg = {"value": 1, "active": 1.0, "wall": 1.0}
    send(at, "save", **msg)
    # The same nonce again (a resend after a slow answer) is not a second save.
    again = {
        "action": "save",
        "nonce": at.session_state["ann_last_nonce"],
        "view": data["view"],
        "item_id": data["item"]["id"],
        **msg,
    }
    send_raw(at, again)
    assert len(mine(store)) == 1


def test_active_time_is_capped_and_wall_time_kept(store: str) -> None:
    at = logged_in("ann")
    at.session_state["ann_started"] = at.session_state["ann_started"] - 100  # open for 100 s
    send(at, "save", value=2, active=12.5, wall=75.0)  # 62.5 s of it idle, cut by the browser
    hist = qstore.label_history(store, "ann", int(mine(store).iloc[0]["item_id"]))[0]
    assert (hist.seconds, hist.wall_seconds) == (pytest.approx(12.5), pytest.approx(75.0))
    # A browser cannot claim more than the server saw the item open (here about 0 s).
    send(at, "save", value=1, active=500.0, wall=900.0)
    hist = qstore.label_history(store, "ann", int(mine(store).iloc[1]["item_id"]))[0]
    assert hist.wall_seconds is not None and hist.seconds <= hist.wall_seconds < 5.0
    # Without the browser's measure, a long gap counts at most the idle cap.
    at.session_state["ann_started"] = at.session_state["ann_started"] - 600
    send(at, "save", value=0)
    latest = mine(store).iloc[-1]
    guide = qstore.get_guidelines(store, DEMO)
    assert float(latest["seconds"]) == pytest.approx(guide.idle_cap_seconds)


def test_skip_survives_a_new_session_and_comes_back_on_request(store: str) -> None:
    at = logged_in("ann")
    skipped = picker_data(at)["item"]
    send(at, "skip")
    assert picker_data(at)["item"]["id"] != skipped["id"]
    again = logged_in("ann")  # a new browser session
    assert picker_data(again)["item"]["id"] != skipped["id"]
    assert [e.item_id for e in qstore.queue_entries(store, "ann", DEMO, "skipped")] == [
        skipped["id"]
    ]
    assert qstore.revisit_skipped(store, "ann", DEMO) == 1
    assert logged_in("ann").session_state["ann_item"] == skipped["id"]


def test_flag_for_review_with_a_reason_reaches_the_flags_page(store: str) -> None:
    at = logged_in("ann")
    item = picker_data(at)["item"]
    send(at, "flag", reason="")
    assert picker_data(at)["ack"]["status"] == "error"  # a reason is required
    send(at, "flag", reason="<b>reference</b> is wrong")
    assert picker_data(at)["item"]["id"] != item["id"]
    flags = qstore.list_flags(store, DEMO)
    assert list(flags["item_id"]) == [item["id"]]
    res = logged_in("res")
    res.switch_page("views/flags.py").run()
    assert not res.exception, res.exception
    assert "<b>reference</b> is wrong" in res.dataframe[0].value["Reason"].tolist()
    res.selectbox(key="flags_pick").set_value(int(flags["flag_id"][0]))
    res.text_input(key="flags_resolution").input("fixed the reference")
    res.button(key="flags_resolve").click().run()
    assert qstore.list_flags(store, DEMO).empty
    assert qstore.list_flags(store, DEMO, open_only=False)["resolution"][0] == "fixed the reference"


def test_queue_filters_and_next_unlabelled(store: str) -> None:
    at = logged_in("ann")
    first = picker_data(at)["item"]["id"]
    send(at, "save", value=2)
    second = picker_data(at)["item"]["id"]
    send(at, "skip")
    at.segmented_control(key="ann_filter").set_value("done").run()
    at.selectbox(key="ann_queue_item").set_value(first)
    at.button(key="ann_open_queue").click().run()
    data = picker_data(at)
    assert data["item"]["id"] == first and data["review"] and data["pick"]["value"] == 2
    send(at, "queue")  # Q: jump to the next unlabelled item (the skipped one is left out)
    nxt = picker_data(at)["item"]["id"]
    assert nxt not in (first, second)
    pending = qstore.queue_entries(store, "ann", DEMO, "pending")
    assert pending[0].item_id == nxt


def test_guidelines_rules_and_keys_come_from_the_store(store: str) -> None:
    qstore.save_guidelines(
        store,
        DEMO,
        "res",
        text="Be strict. <script>alert(1)</script>",
        rules=[{"name": "Exact", "description": "Only exact answers"}, {"name": "Alias"}],
        label_keys={"correct": "J", "unclear": "K", "incorrect": "L"},
        idle_cap_seconds=30,
        roles=("researcher", "admin"),
    )
    at = logged_in("ann")
    data = picker_data(at)
    assert [lab["key"] for lab in data["labels"]] == ["J", "K", "L"]
    assert [r["name"] for r in data["rules"]] == ["Exact", "Alias"]
    assert data["idle_cap"] == 30
    shown = [m.value for m in at.markdown]
    assert any("Be strict" in m and "\\<script\\>" in m for m in shown)
    send(at, "save", value=2, rule=3)  # rule 3 is not in this project's list
    assert picker_data(at)["ack"]["status"] == "error"
    send(at, "save", value=2, rule=2)
    assert int(mine(store)["rule"].iloc[0]) == 2


def test_researcher_edits_guidelines_as_a_new_version(store: str) -> None:
    at = logged_in("res")
    at.switch_page("views/guidelines.py").run()
    assert not at.exception, at.exception
    at.text_area(key=f"gl_text_{DEMO}_0").input("# Our rules\n\nJudge the *answer*.")
    at.button(key="gl_save").click().run()
    assert not at.exception, at.exception
    history = qstore.guideline_history(store, DEMO)
    assert [g.version for g in history] == [1]
    assert history[0].text.startswith("# Our rules") and len(history[0].rules) == 7
