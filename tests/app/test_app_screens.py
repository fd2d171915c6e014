"""Tables and messages as people read them (issue 21, items 10 and 11), through AppTest on the
demo store.

* Item 10: the Flags page and the judge-outcomes table name their columns in words, not code
  names; the annotator-quality table puts the Dawid-Skene columns next to the rater (it ran
  off a 1400 px screen); one percentage format.
* Item 11: an item has one id on every page, the one annotators see; routing that routes
  nothing is a warning, not a green success.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _apptest import DEMO, build_demo_store, copy_store, finish_store, logged_in
from streamlit.testing.v1 import AppTest

from qaeval_core import analysis
from qaeval_core import store as qstore
from qaeval_core.analysis.accuracy_report import judge_outcome_table
from qaeval_core.analysis.formatting import percent_text
from qaeval_core.judge.outcomes import REASONS
from qaeval_core.workflows import score_dataset


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store, scored with F1, with one flag raised by the annotator ``ann``."""
    path, url = build_demo_store(tmp_path_factory.mktemp("screens-demo"))
    score_dataset(url, DEMO, ["f1"])
    qstore.deal(url, DEMO, ["ann"])
    item = qstore.next_item(url, "ann", DEMO)
    assert item is not None
    qstore.flag_item(url, "ann", item.id, "the reference is <b>wrong</b>")
    finish_store(url)
    return path


@pytest.fixture
def store(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return copy_store(demo_file, tmp_path, monkeypatch)


def open_page(page: str) -> AppTest:
    at = logged_in("res")
    at.switch_page(f"views/{page}").run()
    assert not at.exception, at.exception
    return at


def frame_with(at: AppTest, *columns: str) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


def external_ids(url: str) -> dict[int, str]:
    items = analysis.load_frames(url, DEMO).items
    return dict(zip(items["item_id"].astype(int), items["external_id"].astype(str), strict=True))


# -- item 10 -----------------------------------------------------------------------------------
def test_flags_table_has_headers_in_words_and_the_annotators_item_id(store: str) -> None:
    at = open_page("flags.py")
    flags = frame_with(at, "Reason")
    assert list(flags.columns) == [
        "Flag",
        "Dataset",
        "Item",
        "Question",
        "Flagged by",
        "Reason",
        "Flagged at (UTC)",
        "Resolved at (UTC)",
        "Resolved by",
        "What was decided",
    ]
    assert flags["Item"].iloc[0] in set(external_ids(store).values())
    assert flags["Reason"].iloc[0] == "the reference is <b>wrong</b>"  # text, as typed


def test_annotator_quality_shows_dawid_skene_next_to_the_rater(store: str) -> None:
    at = open_page("agreement.py")
    quality = frame_with(at, "Rater", "Dawid-Skene accuracy")
    columns = list(quality.columns)
    assert columns[:4] == ["Rater", "Labels", "Dawid-Skene accuracy", "Agrees with Dawid-Skene"]
    assert not [c for c in columns if "_" in c]
    assert max(len(c) for c in columns) <= 24  # short headers: the table fits 1400 px
    element = next(d for d in at.dataframe if "Dawid-Skene accuracy" in d.value.columns)
    formats = json.loads(element.proto.columns)  # the page's column formats, by header
    assert formats["Dawid-Skene accuracy"]["type_config"]["format"] == "%.3f"
    for header in set(formats) & set(quality.columns):
        # a number format on a text column would draw "None" in its blank cells
        assert pd.api.types.is_numeric_dtype(quality[header]), header


def test_judge_outcome_headers_cover_every_reason_in_words() -> None:
    from app.views.leaderboard import OUTCOME_HEADERS

    frame = pd.DataFrame(
        {
            "qa_model": ["a", "a", "b"],
            "judge_reason": ["matched", "hedged", "not_attempted"],
            "judge_correct": [True, False, False],
        }
    )
    table = judge_outcome_table(frame)
    assert set(table.columns) <= set(OUTCOME_HEADERS)
    assert set(REASONS) <= set(OUTCOME_HEADERS)
    assert not [h for h in OUTCOME_HEADERS.values() if "_" in h]


def test_one_percentage_format() -> None:
    assert percent_text(0.1961) == "19.6%"
    assert percent_text(0.913) == "91.3%"
    assert percent_text(1) == "100.0%"
    assert percent_text(float("nan")) == ""


# -- item 11 -----------------------------------------------------------------------------------
def test_explorer_and_disagreements_name_an_item_by_the_annotators_id(store: str) -> None:
    names = external_ids(store)
    at = open_page("explorer.py")
    worst = frame_with(at, "Item", "Human verdict")
    assert set(worst["Item"]) <= set(names.values())
    picked = at.selectbox(key="explorer_item")
    assert picked.format_func(picked.value) == names[int(picked.value)]
    header = next(t.value for t in at.text if t.value.startswith("Item "))
    assert header == f"Item {names[int(picked.value)]} · dataset {DEMO}"

    at = open_page("disagreements.py")
    queue = frame_with(at, "Item", "Status")
    assert set(queue["Item"]) <= set(names.values())
    picked = at.selectbox(key="disagreements_item")
    assert picked.format_func(picked.value).startswith(f"{names[int(picked.value)]} · ")
    assert not [t.value for t in at.text if t.value.startswith(f"item {picked.value} ")]


def test_routing_nothing_is_a_warning_and_all_a_success() -> None:
    from app.views.assign import routed_notice

    kind, text = routed_notice(0, 10, 0, {"ann": 0})
    assert kind == "warning" and text.startswith("Routed 0 of 10 selected item(s)")
    assert routed_notice(4, 10, 4, {"ann": 4})[0] == "info"
    kind, text = routed_notice(10, 10, 10, {"ann": 6, "bob": 4})
    assert kind == "success" and "ann: +6, bob: +4" in text


def test_assign_progress_uses_the_one_percentage_format(store: str) -> None:
    item = qstore.next_item(store, "ann", DEMO)
    assert item is not None
    qstore.save_label(store, "ann", item.id, 2)
    at = open_page("assign.py")
    at.selectbox(key="assign_dataset").set_value(DEMO).run()
    assert not at.exception, at.exception
    prog = qstore.dataset_progress(store, DEMO)
    bar = next(p for p in at.get("progress") if "assignments done" in p.proto.text)
    assert f"({percent_text(prog.fraction)})" in bar.proto.text
    done = frame_with(at, "annotator", "done")
    mine = qstore.user_progress(store, "ann", DEMO).fraction
    assert done["done"].tolist() == pytest.approx([100.0 * mine])  # drawn as "%.1f%%"


# -- issue 33: open a flagged item; the judge's trace from every table of items ----------------
def _save_a_judge(url: str) -> str:
    """A small saved judge on the demo dataset (F1 with a threshold): enough for a trace."""
    import numpy as np

    from qaeval_core import store as qstore
    from qaeval_core.calibrate import feature_scores, fit_judge
    from qaeval_core.calibrate.options import CrossValidation
    from qaeval_core.metrics.base import get_metric

    items = qstore.load_items(url, DEMO)
    scores, decisions, specs = feature_scores(items, [get_metric("f1")])
    y = np.asarray(pd.DataFrame(decisions).iloc[:, 0], dtype=bool).copy()
    y[::7] = ~y[::7]  # both classes, not a copy of the input
    judge, _ = fit_judge(
        scores,
        y,
        specs,
        candidates=["threshold"],
        groups=[it.question for it in items],
        default_decisions=decisions,
        cv=CrossValidation(n_splits=3, n_boot=50),
        name="f1-judge",
    )
    qstore.save_calibration(url, "f1-judge", judge.to_config(), dataset=DEMO)
    return "f1-judge"


def test_a_flagged_item_opens_from_flags_with_the_judge_trace(store: str) -> None:
    """Issue 33: a flagged item could not be opened from Flags, and the trace was reachable
    only from Explorer -> Final labels."""
    judge = _save_a_judge(store)
    at = open_page("flags.py")
    flags = frame_with(at, "Reason")
    shown = flags["Item"].iloc[0]
    texts = [t.value for t in at.text]
    assert any(t.startswith(f"Item {shown} · dataset {DEMO}") for t in texts), texts
    assert at.selectbox(key="flags_trace_calibration").value == judge
    at.toggle(key="flags_trace_toggle").set_value(True).run()
    assert not at.exception, at.exception
    assert any(t.value.startswith("Judge: ") for t in at.text), [t.value for t in at.text]


def test_explorer_metric_table_offers_the_trace_and_its_picker_stays_in_its_tab(
    store: str,
) -> None:
    """Issue 33: the metric picker sat above the tabs, live on "Final labels" which ignores it;
    the worst-disagreements table opened an item without its trace."""
    _save_a_judge(store)
    at = open_page("explorer.py")
    metric_tab, final_tab = at.tabs
    assert [s.key for s in metric_tab.selectbox].count("explorer_metric") == 1
    assert "explorer_metric" not in [s.key for s in final_tab.selectbox]
    assert "explorer_metric" not in [s.key for s in at.main.columns[0].selectbox]
    at.toggle(key="explorer_trace_toggle").set_value(True).run()
    assert not at.exception, at.exception
    assert any(t.value.startswith("Judge: ") for t in at.tabs[0].text), [
        t.value for t in at.text
    ] + [e.value for e in at.error]
