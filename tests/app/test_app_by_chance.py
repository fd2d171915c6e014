"""The Assign page draws triage items by chance with a floor, and the Leaderboard counts their
labels, weighted (issue 24, item 1). Uses the demo store of ``test_app_triage``."""

from __future__ import annotations

from pathlib import Path

import pytest
from _apptest import DEMO
from _triage_pages import (
    CAL,
    FRESH,
    build_triage_store,
    metrics,
    ok,
    open_page,
    private_copy,
    table,
)

from qaeval_core import store as qstore
from qaeval_core import workflows
from qaeval_core.analysis.estimates import estimate_accuracy


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_triage_store(tmp_path_factory.mktemp("triage-demo"))


@pytest.fixture
def store(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return private_copy(demo_file, tmp_path, monkeypatch)


def test_assign_draws_by_chance_and_the_leaderboard_weights_the_labels(store: str) -> None:
    at = open_page("assign.py")
    at.selectbox(key="assign_dataset").set_value(FRESH).run()
    at.radio(key="triage_by").set_value("the N most doubtful")
    at.number_input(key="triage_n").set_value(16)
    at.checkbox(key="triage_by_chance").check()
    at.number_input(key="triage_floor").set_value(5.0)
    at.multiselect(key="triage_annotators").set_value(["ann"])
    at.button(key="triage_submit").click().run()
    ok(at)
    shown = metrics(at)
    items = table(at, "P(drawn)", "What happened")
    assert shown["Drawn"] == str(len(items)) and int(shown["Dealt"]) == len(items) > 0
    assert items["P(drawn)"].astype(float).between(0.05, 1).all()
    params = qstore.list_deals(store, FRESH).iloc[-1]["params"]
    assert params["selection"] == qstore.SELECTION_BY_CHANCE and params["floor"] == 0.05
    # ann labels what was drawn; the Leaderboard weighs those labels.
    for k, item_id in enumerate(qstore.deal_item_rows(store, FRESH)["item_id"]):
        qstore.save_label(store, "ann", int(item_id), 2 if k % 3 else 0)
    at = open_page("leaderboard.py")
    at.selectbox(key="leaderboard_dataset").set_value(FRESH).run()
    at.number_input(key="estimates_min").set_value(2).run()
    ok(at)
    assert at.selectbox(key="estimates_calibration").value == CAL
    board = table(at, "QA model", "Weighted labels")
    want = estimate_accuracy(workflows.estimation_frame(store, FRESH, CAL), min_labels=2)
    overall = want.set_index("model").loc["(all)"]
    assert want.attrs["weighted"] is True
    assert board["Weighted labels"].iloc[-1] == overall["n_labelled"]
    assert overall["n_labelled"] == len(items)
    assert any("weighted by 1 / the probability" in str(c.value) for c in at.caption)


def test_drawing_by_chance_on_a_labelled_dataset_is_a_notice_like_routing_none(
    store: str,
) -> None:
    """Every item of the demo carries a label: drawing by chance has nothing to draw. The page
    says so as routing 0 items does (a warning saying why and what to do), not as a red error."""
    deals = len(qstore.list_deals(store, DEMO))
    at = open_page("assign.py")
    at.selectbox(key="assign_dataset").set_value(DEMO).run()
    at.checkbox(key="triage_by_chance").check()
    at.multiselect(key="triage_annotators").set_value(["ann"])
    at.button(key="triage_submit").click().run()
    ok(at)  # no error element
    said = [w.value for w in at.warning]
    assert any(
        w.startswith("Drew 0 items: Nothing to draw") and "audit sample" in w for w in said
    ), said
    assert len(qstore.list_deals(store, DEMO)) == deals  # nothing dealt
