"""The analysis pages end to end through AppTest on the demo dataset (real multi-annotator
labels), scored with EM / F1 / contains: agreement, disagreements (adjudicating one item),
metric explorer and leaderboard, as a researcher (who may open them is
tests/app/test_app_every_page.py's part).

AppTest cannot click rows of a dataframe (that needs a browser); the item picker next to each
table does the same thing and is what these tests use.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from _apptest import (
    DEMO,
    build_demo_store,
    copy_store,
    finish_store,
    logged_in,
)
from streamlit.testing.v1 import AppTest

from app.routes import PAGES, VIEWS
from qaeval_core import analysis
from qaeval_core import store as qstore
from qaeval_core.analysis.agreement import krippendorff_alpha
from qaeval_core.cli.demo import DEMO_METRICS
from qaeval_core.workflows import score_dataset

EVIL = "<script>alert('x')</script> ![img](http://evil.example/a.png) **bold**"
#: Page file -> title, from the router's table (tests/app/test_app_every_page.py opens every page
#: for every role; this module tests what the analysis pages do).
TITLES = {VIEWS + spec.path: spec.title for spec in PAGES}


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store with lexical scores, a researcher, an annotator and an evil item."""
    path, url = build_demo_store(tmp_path_factory.mktemp("app-demo"))
    score_dataset(url, DEMO, ["em", "f1", "contains"])
    qstore.import_items(
        url,
        "evil",
        [
            {
                "id": "e0",
                "question": f"Q {EVIL}",
                "references": ["Paris"],
                "candidate": EVIL,
                "human": {
                    "scale": "three",
                    "raters": [
                        {"rater": "r1", "label": 2, "rule": 4, "note": f"note {EVIL}"},
                        {"rater": "r2", "label": 0, "rule": 6},
                    ],
                },
            },
        ],
    )
    finish_store(url)
    return path


@pytest.fixture
def store(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return copy_store(demo_file, tmp_path, monkeypatch)


def open_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == [TITLES[page]]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def table(at: AppTest, *columns: str) -> pd.DataFrame:
    """The first dataframe on the page with these columns (AppTest gives tables no key)."""
    for element in at.dataframe:
        if set(columns) <= set(element.value.columns):
            return element.value
    raise AssertionError(f"no table with columns {columns}")


def markdown(at: AppTest) -> str:
    kinds = ("markdown", "caption", "success", "info", "warning", "error")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(at, kind))


def test_agreement_page_shows_alpha_and_pairs(store: str) -> None:
    at = open_page(logged_in("res"), "views/agreement.py")
    at.selectbox(key="agreement_dataset").set_value(DEMO).run()
    assert not at.exception, at.exception
    labels = analysis.load_frames(store, DEMO).labels
    shown = metrics(at)
    assert shown["alpha nominal"] == f"{krippendorff_alpha(labels):.3f}" == "0.753"
    assert shown["Items / labels"] == "298 / 635"
    assert shown["Raters"] == "3"
    assert shown["Disagreements"] == "39"
    kappa = table(at, "Rater A", "Rater B", "Kappa (binary)", "Kappa (3-point, linear)")
    assert len(kappa) == 3
    counts = table(at, "Labels per item", "Items")
    assert dict(zip(counts["Labels per item"], counts["Items"], strict=True))["3+"] == 39
    from app.views.agreement import label_count_chart

    chart = label_count_chart(
        analysis.agreement_tables(analysis.load_frames(store, DEMO)).label_counts
    )
    assert chart.layout.xaxis.type == "category"  # "3+" is a bar, not dropped by a numeric axis
    assert list(chart.data[0].x) == ["0", "1", "2", "3+"] and chart.data[0].y[-1] == 39
    alpha = table(at, "Group", "Level", "Alpha [95% CI]")
    assert alpha["Group"].tolist() == ["all", "all"]
    assert alpha["Alpha [95% CI]"].str.startswith("0.753 [").all()
    assert set(table(at, "Rater", "Alpha without them")["Rater"]) == {
        "annotator1",
        "annotator2",
        "annotator3",
    }
    # all datasets at once: a per-dataset breakdown appears
    at.selectbox(key="agreement_dataset").set_value("(all datasets)").run()
    assert not at.exception, at.exception
    groups = {g for e in at.dataframe if "Group" in e.value.columns for g in e.value["Group"]}
    assert DEMO in groups
    assert "evil" not in groups  # one doubly-labelled item is too few for an alpha


def test_researcher_adjudicates_a_disagreement(store: str) -> None:
    at = open_page(logged_in("res"), "views/disagreements.py")
    at.selectbox(key="disagreements_dataset").set_value(DEMO).run()
    assert metrics(at)["Other splits"] == "39"
    item_id = at.selectbox(key="disagreements_item").value
    queue = analysis.disagreement_queue(store, DEMO)
    row = queue.set_index("item_id").loc[item_id]
    # every rater's label is shown side by side, as text
    for label in row["labels"]:
        assert label["rater"] in markdown(at)
    assert analysis.label_text(row["labels"][0]["value"]) in texts(at)

    # a reason is required
    at.radio(key=f"adjudicate_value_{item_id}").set_value(0)
    at.button(key="adjudicate").click().run()
    assert "Give a reason" in at.error[0].value
    assert analysis.adjudication_history(store, item_id).empty

    at.radio(key=f"adjudicate_value_{item_id}").set_value(0)
    at.text_area(key=f"adjudicate_reason_{item_id}").input("373.15 K is not what was asked")
    at.button(key="adjudicate").click().run()
    assert not at.exception, at.exception
    saved = f"Item {row['external_id']}: final label 0 clearly incorrect saved by res"
    assert saved in at.success[0].value
    history = analysis.adjudication_history(store, item_id)
    assert history[["user", "value", "reason"]].values.tolist() == [
        ["res", 0, "373.15 K is not what was asked"]
    ]
    # the decided item leaves the undecided queue, and shows with its history when asked for
    assert metrics(at)["Other splits"] == "38"
    at.toggle(key="disagreements_pending").set_value(False).run()
    assert metrics(at)["Adjudicated (shown)"] == "1"
    at.selectbox(key="disagreements_item").set_value(item_id).run()
    assert not at.exception, at.exception
    history_table = table(at, "When (UTC)", "By", "Final label", "Reason")
    assert history_table["Reason"].tolist() == ["373.15 K is not what was asked"]


def test_notes_and_item_text_are_plain_text(store: str) -> None:
    at = open_page(logged_in("res"), "views/disagreements.py")
    at.selectbox(key="disagreements_dataset").set_value("evil").run()
    assert not at.exception, at.exception
    assert metrics(at)["Ties (no majority)"] == "1"
    shown = texts(at)
    assert EVIL in shown and f"Q {EVIL}" in shown and f"note {EVIL}" in shown
    assert "4 More details" in shown and "6 Irrelevant information" in shown
    assert "<script>" not in markdown(at)


def test_explorer_shows_confusion_worst_items_and_the_item(store: str) -> None:
    at = open_page(logged_in("res"), "views/explorer.py")
    at.selectbox(key="explorer_dataset").set_value(DEMO).run()
    at.selectbox(key="explorer_metric").set_value("f1").run()
    assert not at.exception, at.exception
    view = analysis.metric_view(analysis.load_frames(store, DEMO), "f1")
    assert metrics(at)["Accuracy"] == f"{view.statistics['accuracy']:.3f}"
    assert len(at.get("plotly_chart")) == 2
    worst = table(at, "Confidence", "Metric details")
    assert len(worst) == len(view.worst.head(100))
    assert worst["Metric details"].str.contains("best_reference").all()
    # open another item: its full text, labels and every metric's score appear
    items = analysis.load_frames(store, DEMO).items  # the table names items as annotators do
    item_id = int(items.loc[items["external_id"] == worst["Item"].iloc[3], "item_id"].iloc[0])
    at.selectbox(key="explorer_item").set_value(item_id).run()
    assert not at.exception, at.exception
    detail = analysis.item_detail(store, item_id)
    assert detail.item["question"] in texts(at)
    scores = table(at, "Metric", "Settings", "Details")
    assert set(scores["Metric"]) == set(DEMO_METRICS)  # the demo arrives scored
    assert len(scores) == len(DEMO_METRICS)  # one row per metric
    assert set(scores["Settings"]) == {"default settings"}
    at.toggle(key="explorer_strict").set_value(True).run()
    assert not at.exception, at.exception


def test_leaderboard_lists_models_with_human_and_metric_accuracy(store: str) -> None:
    at = open_page(logged_in("res"), "views/leaderboard.py")
    at.selectbox(key="leaderboard_dataset").set_value(DEMO).run()
    at.number_input(key="leaderboard_boot").set_value(100).run()
    assert not at.exception, at.exception
    board = table(at, "QA model", "Human accuracy")
    assert {"QA model", "Human accuracy", "em accuracy", "f1 accuracy", "f1 rank"} <= set(
        board.columns
    )
    assert board.loc[board["QA model"] == "NQ_EMDR2", "Human accuracy"].iloc[0] == pytest.approx(
        43 / 55
    )
    ranking = table(at, "Kendall tau-b", "Flipped pairs")
    assert set(ranking["Metric"]) == set(DEMO_METRICS)
    chart = at.multiselect(key="leaderboard_chart_metrics")
    best = ranking.sort_values("Kendall tau-b", ascending=False)["Metric"]
    assert chart.value == list(best)[: len(chart.value)] and len(chart.value) == 5
    chart.set_value(["em"]).run()
    assert not at.exception, at.exception
    stats = table(at, "Metric", "Accuracy", "Recall")
    assert set(stats["Metric"]) == set(DEMO_METRICS)
    assert stats["Accuracy"].str.match(r"0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]").all()
