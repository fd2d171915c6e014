"""The app as a new team meets it (issue 14): Assign, Disagreements, Explorer, Leaderboard,
Agreement and Data through AppTest.

The store: ``qaeval demo`` (the demo dataset, scored with the fast metrics), a researcher
``res``, annotators ``ann`` and ``ann2``, and ``second``: 60 other demo rows with their raters'
labels, so two datasets have disagreements.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _apptest import DEMO, build_demo_store, copy_store, finish_store, logged_in
from _paths import DEMO_DATA
from streamlit.testing.v1 import AppTest

from qaeval_core import analysis, workflows
from qaeval_core import store as qstore
from qaeval_core.analysis.aggregation import annotator_quality
from qaeval_core.cli.demo import DEMO_METRICS

DATA = DEMO_DATA
SECOND = "second"


@pytest.fixture(scope="module")
def team_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path, url = build_demo_store(tmp_path_factory.mktemp("team"))
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()][100:160]
    for row in rows:
        row["id"] = f"second-{row['id']}"
    qstore.import_items(url, SECOND, rows, source="team test")
    workflows.score_dataset(url, SECOND, ["em", "f1"])
    qstore.add_user(url, "ann2", "annotator", "pw-ann2")
    finish_store(url)
    return path


@pytest.fixture
def store(team_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return copy_store(team_file, tmp_path, monkeypatch)


def open_page(page: str, user: str = "res") -> AppTest:
    at = logged_in(user, timeout=180)
    at.switch_page(f"views/{page}").run()
    return ok(at)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def texts(at: AppTest, kind: str) -> list[str]:
    return [str(e.value) for e in getattr(at, kind)]


def said(at: AppTest, start: str, kind: str = "success") -> bool:
    return any(t.startswith(start) for t in texts(at, kind))


# -- problem 4: the item picker follows the dataset -------------------------------------------
def browser_shows(before: object, after: object, shown: str) -> str:
    """What a browser's select box shows after a rerun: the value the server sets, the
    default of a new widget, or else what it showed before (the browser keeps its own)."""
    if after.proto.set_value:
        return after.proto.raw_value
    if after.proto.id != before.proto.id:
        return after.proto.options[after.proto.default]
    return shown


def shown_item(at: AppTest) -> str:
    """The item whose detail the page renders, by the id annotators see (its first line:
    "Item <id> · dataset ...")."""
    line = next(t for t in texts(at, "text") if t.startswith("Item "))
    return line.split()[1]


def store_ids(url: str) -> dict[str, int]:
    """Every item's store id by the id annotators see (the pickers show the latter)."""
    items = analysis.load_frames(url, None).items
    return dict(zip(items["external_id"].astype(str), items["item_id"].astype(int), strict=True))


@pytest.mark.parametrize(
    ("page", "dataset_key", "item_key"),
    [
        ("disagreements.py", "disagreements_dataset", "disagreements_item"),
        ("explorer.py", "explorer_dataset", "explorer_item"),
    ],
)
def test_item_picker_follows_the_dataset(
    store: str, page: str, dataset_key: str, item_key: str
) -> None:
    ids = store_ids(store)
    at = open_page(page)
    picker = at.selectbox(key=item_key)
    picker.set_value(ids[picker.options[2].split(" ")[0]]).run()
    ok(at)
    before = at.selectbox(key=item_key)
    shown = next(o for o in before.options if ids[o.split(" ")[0]] == before.value)
    at.selectbox(key=dataset_key).set_value(SECOND).run()
    ok(at)
    after = at.selectbox(key=item_key)
    seen = browser_shows(before, after, shown)
    assert seen in after.options, f"the picker still shows {seen!r}, not an item of {SECOND}"
    assert ids[seen.split(" ")[0]] == after.value
    assert seen.split(" ")[0] == shown_item(at)


# -- problems 2 and 7: the Assign page -------------------------------------------------------
def deal(at: AppTest, people: list[str], **choices: object) -> AppTest:
    at.multiselect(key="deal_annotators").set_value(people)
    if "deal_which" in choices:  # the choice reruns the page and opens the inputs it reads
        at.radio(key="deal_which").set_value(choices.pop("deal_which")).run()
    for key, value in choices.items():
        at.number_input(key=key).set_value(value)
    at.button(key="deal_submit").click().run()
    return ok(at)


def test_default_deal_form_works_for_two_annotators(store: str) -> None:
    at = open_page("assign.py")
    deal(at, ["ann", "ann2"])
    assert any(
        t.startswith("Dealt 358 new assignment(s) over 298 items") for t in texts(at, "success")
    )
    assert "Annotators per overlap item: 2" not in " ".join(texts(at, "info"))


def test_deal_after_queue_it_for_me_says_why_and_release_frees_the_items(store: str) -> None:
    qstore.deal(store, DEMO, ["res"])  # the Annotate page's "Queue it for me"
    at = open_page("assign.py")
    deal(at, ["ann", "ann2"])
    warning = " ".join(texts(at, "warning"))
    assert "238 item(s) already had as many annotators as asked" in warning
    assert "res (researcher) holds 238" in warning and "Release res's queue" in warning
    assert at.selectbox(key="release_user").value == "res"  # their own queue first
    at.button(key="release_submit").click().run()
    ok(at)
    assert any(
        "Released 298 unlabelled item(s) from res's queue" in t for t in texts(at, "success")
    )
    deal(at, ["ann", "ann2"])
    assert said(at, "Dealt 298 new assignment(s)")


def test_deal_inputs_the_items_choice_ignores_are_disabled_with_the_reason(store: str) -> None:
    """Issue 33: N, FIRST and LAST stayed live under "All items", which ignores them."""
    at = logged_in("res")
    at.switch_page("views/assign.py").run()
    expected = {  # choice -> N, FIRST, LAST disabled
        "All items": (True, True, True),
        "The next N items nobody has yet": (False, True, True),
        "Items FIRST to LAST (import order)": (True, False, False),
    }
    for choice, off in expected.items():
        at.radio(key="deal_which").set_value(choice).run()
        ok(at)
        inputs = [at.number_input(key=k) for k in ("deal_n", "deal_first", "deal_last")]
        assert tuple(w.disabled for w in inputs) == off, choice
        for widget, disabled in zip(inputs, off, strict=True):
            assert ("Ignored now" in (widget.help or "")) == disabled, (choice, widget.help)


def test_deal_the_next_forty_items_with_a_quota(store: str) -> None:
    at = open_page("assign.py")
    deal(at, ["ann", "ann2"], deal_which="The next N items nobody has yet", deal_n=40)
    assert any(
        t.startswith("Dealt 48 new assignment(s) over 40 items") for t in texts(at, "success")
    )
    deal(at, ["ann", "ann2"], deal_which="The next N items nobody has yet", deal_quota=10)
    assert any(
        t.startswith("Dealt 20 new assignment(s) over 40 items") for t in texts(at, "success")
    )
    assert "every annotator reached the quota" in " ".join(texts(at, "warning"))
    progress = qstore.dataset_progress(store, DEMO)
    # 24 each from the first batch (40 items, 8 of them to both), 10 each from the second.
    assert {p.user: p.assigned for p in progress.annotators} == {"ann": 34, "ann2": 34}


# -- problem 8: empty pages offer the action ---------------------------------------------------
@pytest.mark.parametrize(
    ("page", "dataset_key", "button"),
    [
        ("explorer.py", "explorer_dataset", "explorer_score"),
        ("leaderboard.py", "leaderboard_dataset", "leaderboard_score"),
    ],
)
def test_an_unscored_dataset_can_be_scored_from_the_page(
    store: str, page: str, dataset_key: str, button: str
) -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()][:20]
    qstore.import_items(store, "unscored", rows, source="team test")
    at = open_page(page)
    at.selectbox(key=dataset_key).set_value("unscored").run()
    ok(at)
    assert any("has no metric scores yet" in t for t in texts(at, "info"))
    at.button(key=button).click().run()
    ok(at)
    assert set(analysis.load_frames(store, "unscored").metric_ids) == set(DEMO_METRICS)
    assert not any("has no metric scores yet" in t for t in texts(at, "info"))


# -- problem 9: no raw values ------------------------------------------------------------------
def test_tables_and_notes_show_no_raw_values(store: str) -> None:
    at = open_page("disagreements.py")
    queue = next(d.value for d in at.dataframe if "Status" in d.value.columns)
    assert list(queue.columns) == ["Item", "Status", "Question", "Answer", "Labels", "Final label"]
    shown = texts(at, "text")
    assert "nan" not in shown and "None" not in shown
    at = open_page("agreement.py")
    for frame in (d.value for d in at.dataframe):
        assert not any("_" in str(c) for c in frame.columns), list(frame.columns)
        cells = frame.astype(str).to_numpy().ravel().tolist()
        assert "None" not in cells and "— [—, —]" not in cells


def test_fmt_ci_says_undefined_once() -> None:
    from app.components.analysis_widgets import fmt_ci

    nan = float("nan")
    assert fmt_ci(nan, nan, nan) == "—"
    assert fmt_ci(0.5, nan, nan) == "0.500"
    assert fmt_ci(0.5, 0.25, 0.75) == "0.500 [0.250, 0.750]"


# -- annotator quality -------------------------------------------------------------------------
def test_agreement_page_shows_annotator_quality(store: str) -> None:
    analysis.adjudicate(store, _first_item(store), "res", 2, "rule 4")
    at = open_page("agreement.py")
    at.selectbox(key="agreement_dataset").set_value(DEMO).run()
    ok(at)
    table = next(d.value for d in at.dataframe if "Dawid-Skene accuracy" in d.value.columns)
    frames = analysis.load_frames(store, DEMO)
    expected = annotator_quality(frames.labels, frames.adjudications)
    assert table["Rater"].tolist() == expected["rater"].tolist()
    assert table["Adjudicated items"].tolist() == expected["n_adjudicated"].tolist()
    assert table["Adjudicated items"].sum() >= 2  # the adjudicated item had two raters or more
    assert table["Dawid-Skene accuracy"].tolist() == pytest.approx(expected["ds_accuracy"])


def _first_item(url: str) -> int:
    return int(analysis.load_frames(url, DEMO).items["item_id"].iloc[0])


def test_data_page_final_labels_with_dawid_skene(store: str) -> None:
    at = open_page("data.py")
    at.selectbox(key="export_dataset").set_value(DEMO).run()
    at.selectbox(key="export_what").set_value("Final labels (with their source)").run()
    ok(at)
    at.radio(key="export_aggregate").set_value("dawid_skene").run()
    ok(at)
    preview = next(d.value for d in at.dataframe if "Final label" in d.value.columns)
    final = workflows.final_labels(store, DEMO, aggregate="dawid_skene")
    majority = workflows.final_labels(store, DEMO)
    assert (final["final_label"] != majority["final_label"]).any()
    assert preview["Final label"].tolist() == final["final_label"].map(analysis.label_text).tolist()


# -- loose ends: release my queue, tables in words, the chosen aggregate -----------------------
def test_annotate_offers_to_release_my_unlabelled_queue(store: str) -> None:
    at = open_page("annotate.py")
    assert not [b for b in at.button if b.key == "ann_release"]  # nothing queued: no offer
    at.button(key="ann_self_deal").click().run()
    ok(at)
    first = qstore.next_item(store, "res", DEMO)
    assert first is not None
    qstore.save_label(store, "res", first.id, 2)  # one label of their own
    at.run()
    ok(at)
    at.button(key="ann_release").click().run()
    ok(at)
    assert said(at, "Released 297 unlabelled item(s) from res's queue in demo-nq301; 1 labelled")
    progress = qstore.user_progress(store, "res", DEMO)
    assert (progress.assigned, progress.labelled) == (1, 1)  # the label and its item stay
    assert not [b for b in at.button if b.key == "ann_release"]  # nothing left to release
    # The freed items can be dealt to the team now.
    result = qstore.deal(store, DEMO, ["ann", "ann2"])
    assert result.added == 297  # every freed item; the labelled one already has its annotator


def _object_cells(frame: object) -> list[str]:
    """Every text cell of a shown table (numeric NaN shows as an empty cell, not as text)."""
    text = frame.select_dtypes(include="object")  # type: ignore[attr-defined]
    return text.astype(str).to_numpy().ravel().tolist()


def test_explorer_and_leaderboard_tables_show_words_not_raw_values(store: str) -> None:
    at = open_page("explorer.py")
    worst = next(d.value for d in at.dataframe if "Human verdict" in d.value.columns)
    metric = at.selectbox(key="explorer_metric").value
    assert list(worst.columns) == [
        "Item",
        "Confidence",
        f"{metric} score",
        "Human verdict",
        "Answer",
        "References",
        "Metric details",
        "Question",
        "QA model",
    ]
    shown = [d.value for d in at.dataframe]
    at = open_page("leaderboard.py")
    shown += [d.value for d in at.dataframe]
    models = next(f for f in shown if "Human accuracy" in f.columns)
    assert {
        "QA model",
        "Judged items",
        "Human rank",
        f"{metric} accuracy",
        f"{metric} rank",
    } <= set(models.columns)
    ranking = next(f for f in shown if "Kendall tau-b" in f.columns)
    assert list(ranking.columns)[:2] == ["Dataset", "Metric"]
    for frame in shown:
        assert not any("_" in str(c) for c in frame.columns), list(frame.columns)
        cells = _object_cells(frame)
        assert "None" not in cells and "nan" not in cells and "<NA>" not in cells


def test_explorer_final_labels_use_the_chosen_aggregate(store: str) -> None:
    at = open_page("explorer.py")
    at.selectbox(key="explorer_dataset").set_value(DEMO).run()
    ok(at)

    def preview() -> list[str]:
        frame = next(d.value for d in at.dataframe if "Final label" in d.value.columns)
        return frame["Final label"].tolist()

    majority = workflows.final_labels(store, DEMO)["final_label"].map(analysis.label_text)
    assert preview() == majority.tolist()
    at.radio(key="explorer_final_aggregate").set_value("dawid_skene").run()
    ok(at)
    weighted = workflows.final_labels(store, DEMO, aggregate="dawid_skene")["final_label"]
    assert preview() == weighted.map(analysis.label_text).tolist() != majority.tolist()
