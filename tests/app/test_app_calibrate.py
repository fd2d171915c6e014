"""The calibration page through AppTest on the demo store (real multi-annotator labels): fit with
a small fast metric set, see the quality table, save a calibration and find it in the store,
order a queue by metric disagreement; annotators are kept out.

AppTest cannot read plotly figures' pixels or click downloads; the charts are checked to exist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from _apptest import (
    APP,
    DEMO,
    build_demo_store,
    chart_axes,
    copy_store,
    finish_store,
)
from _calibrate_page import PAGE, fit, logged_in, open_page
from _calibration_data import fake_cost_measuring
from streamlit.testing.v1 import AppTest

from qaeval_core import store as qstore
from qaeval_core.judge import Judge
from qaeval_core.judge.guarantee import percent


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store with a researcher and an annotator (scored by `qaeval demo` with its fast
    metrics)."""
    path, url = build_demo_store(tmp_path_factory.mktemp("calibrate-demo"))
    finish_store(url)
    return path


@pytest.fixture
def store(demo_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # The page's fits measure input costs by default: instantly, in a cache of the test's own.
    fake_cost_measuring(monkeypatch, tmp_path / "qaeval-cache")
    return copy_store(demo_file, tmp_path, monkeypatch)


def test_annotator_cannot_open_the_page(store: str) -> None:
    at = logged_in("ann")
    with pytest.raises(Exception):  # noqa: B017  (not in the annotator's navigation at all)
        at.switch_page(PAGE).run()
        assert "cannot open" in at.error[0].value
    # even run directly, the page's own server-side check stops it
    page = AppTest.from_file(str(APP / PAGE), default_timeout=60)
    page.session_state["qaeval_user"] = {
        "id": qstore.get_user(store, "ann").id,
        "name": "ann",
        "role": "annotator",
    }
    page.run()
    assert "cannot open 'Calibrate'" in page.error[0].value
    assert not page.title


def test_fit_shows_quality_and_saves_a_calibration(store: str) -> None:
    at = fit(open_page(logged_in("res")))
    assert [t.value for t in at.title] == ["Calibrate"]
    quality = next(d.value for d in at.dataframe if "balanced acc." in d.value.columns)
    assert {"threshold", "fusion", "em", "f1", "contains"} <= set(quality["judge"])
    assert set(quality["kind"]) == {"calibrated (winner)", "calibrated", "uncalibrated"}
    assert quality["accuracy"].str.match(r"^0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]$").all()
    y_titles = [y for _, y in chart_axes(at)]
    assert len(y_titles) == 4 and "cross-validated quality" in y_titles  # quality bars
    assert "accuracy on the unseen rest" in y_titles  # learning curves
    assert "cross-validated accuracy (%)" in y_titles  # accuracy against input cost
    curves_note = " ".join(str(c.value) for c in at.caption)
    assert "Calibrated judges read the chosen inputs (lexical)" in curves_note
    shown = {m.label: m.value for m in at.metric}
    used = int(shown["Labels used"])
    assert 180 <= used <= 200 and used + int(shown["Held back unseen"]) == 298
    # the label budget starts from the fit's numbers
    inputs = {n.label: n.value for n in at.number_input}
    assert inputs["Labels so far"] == used and 0.5 < inputs["Accuracy estimate"] < 1
    assert int(shown["More labels for this interval width"]) >= 0

    at.text_input(key="calibrate_name").input("nq-lexical")
    at.button(key="calibrate_save_submit").click().run()
    assert not at.exception, at.exception
    assert "Saved calibration 'nq-lexical'" in at.success[0].value
    info = qstore.get_calibration(store, "nq-lexical")
    assert info.dataset == DEMO and info.created_by == "res"
    assert info.config["name"] == "nq-lexical"
    judge = Judge.from_config(info.config)
    assert set(judge.columns) <= {"em", "f1", "contains"}
    saved = next(d.value for d in at.dataframe if "cv accuracy" in d.value.columns)
    assert saved["name"].tolist() == ["nq-lexical"]
    # the same name again is refused with a message, not a traceback
    at.button(key="calibrate_save_submit").click().run()
    assert "already exists" in at.error[0].value
    download = at.get("download_button")
    assert len(download) == 1
    json.dumps(info.config)


def test_a_robust_fit_saves_a_judge_that_reads_answers_as_a_person_does(store: str) -> None:
    """The toggle fits every input that normalises at the robust profile; the saved judge
    records it and scores a glued, footnoted answer like the clean one."""
    at = open_page(logged_in("res"))
    assert at.toggle(key="calibrate_robust").value is True  # the default since issue 33
    at.toggle(key="calibrate_curves").set_value(False)
    at = fit(at)
    assert any("read the answers as a person does" in str(c.value) for c in at.caption)
    at.text_input(key="calibrate_name").input("nq-robust")
    at.button(key="calibrate_save_submit").click().run()
    assert not at.exception, at.exception
    judge = Judge.from_config(qstore.get_calibration(store, "nq-robust").config)
    assert {f.params.get("normalize") for f in judge.features} == {"robust"}
    clean = {
        "question": "Capital of Japan?",
        "references": ["Tokyo"],
        "candidate": "The capital city of Japan is Tokyo, a large city.",
    }
    glued = {**clean, "candidate": "The capital city of Japan is**Tokyo1**, a large city."}
    out = judge.judge(pd.DataFrame([clean, glued]))
    assert out["judge_score"].iloc[0] == pytest.approx(out["judge_score"].iloc[1])


def test_order_queue_by_disagreement(store: str) -> None:
    qstore.deal(store, DEMO, ["ann"])
    at = open_page(logged_in("res"))
    # `qaeval demo` stores scores of its fast metrics, so the queue can be ordered at once
    # (no "score first" hint).
    assert not [c.value for c in at.code if "qaeval score" in c.value]
    at.selectbox(key="calibrate_queue_user").set_value("ann")
    at.button(key="calibrate_reorder").click().run()
    assert not at.exception, at.exception
    assert "Re-ordered 298 unlabelled assignment(s)" in at.success[0].value
    first = qstore.next_item(store, "ann", DEMO)
    assert first is not None
    from qaeval_core.calibrate import active

    ranked = active.disagreement_order(qstore.scores(store, DEMO))
    assert first.id == int(ranked["item_id"].iloc[0])


def _fit_with_guarantee(at: AppTest, target: float, risk: float) -> AppTest:
    at.toggle(key="calibrate_curves").set_value(False)
    at.radio(key="calibrate_band_by").set_value("a guaranteed accuracy").run()  # opens the risk
    at.number_input(key="calibrate_target").set_value(target)
    at.number_input(key="calibrate_risk").set_value(risk)
    return fit(at)


def test_a_guaranteed_band_is_stated_in_words_and_saved(store: str) -> None:
    """Issue 24 item 3: the page states the guarantee as a promise with its labels and the
    share left to people; moving the band drops it (and says so); the saved judge keeps it."""
    at = _fit_with_guarantee(open_page(logged_in("res")), 0.85, 0.2)
    words = " ".join(s.value for s in at.success).replace("\\", "")
    assert "With 80% confidence, the judge is right on at least 85% of the items it decides " in (
        words
    )
    assert "calibration labels" in words and "of items go to people" in words
    slider = next(s for s in at.slider if s.key.startswith("calibrate_band_"))
    fitted = slider.value
    at.text_input(key="calibrate_name").input("nq-guaranteed")
    at.button(key="calibrate_save_submit").click().run()
    judge = Judge.from_config(qstore.get_calibration(store, "nq-guaranteed").config)
    assert judge.guarantee is not None and judge.guarantee.target == 0.85
    assert f"{judge.guarantee.n_decided} of them decided alone" in words
    assert f"{percent(round(judge.guarantee.routed, 3))} of items go to people" in words
    if abs(judge.guarantee.routed - judge.guarantee.share) > 0.01:  # ties at the threshold
        notes = " ".join(c.value for c in at.caption)
        assert f"The band's nominal share is {percent(judge.guarantee.share)}" in notes
    assert round(judge.guarantee.share * 100) == fitted
    saved = next(d.value for d in at.dataframe if "cv accuracy" in d.value.columns)
    assert saved["guarantee"].tolist() == [
        f"85% at 80% confidence ({judge.guarantee.n_labels} labels)"
    ]
    slider.set_value(fitted + 1 if fitted < 50 else fitted - 1).run()
    assert not at.exception, at.exception
    warned = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "The guarantee holds for the fitted band" in warned


def test_a_guarantee_the_labels_cannot_support_says_how_many_more(store: str) -> None:
    """Issue 33: the refusal is one message (not supported, why, how many more labels, what
    changed since the last fit); no progress box is left frozen at its step, and no second
    "More labels needed" number contradicts it."""
    at = _fit_with_guarantee(open_page(logged_in("res")), 0.9, 0.1)
    warned = [w.value.replace("\\", "") for w in at.warning]
    (message,) = [w for w in warned if "Not supported." in w]
    assert "calibration labels cannot support a guarantee" in message
    more = re.search(r"About (\d+) more labels would be needed", message)
    assert more is not None and int(more.group(1)) > 0, message
    assert "stops at the first band that fails: with " in message or (
        "enough labelled items to test" in message
    )
    assert not at.status, [s.label for s in at.status]  # no frozen "Step 6 of 8" box
    assert "More labels needed" not in {m.label for m in at.metric}
    assert any(h.value == "Guarantee: not supported" for h in at.subheader)
    # The same request again, on the same labels: the message says nothing changed.
    at = _fit_with_guarantee(at, 0.9, 0.1)
    warned = [w.value.replace("\\", "") for w in at.warning]
    (message,) = [w for w in warned if "Not supported." in w]
    assert "+0 labels since the previous fit" in message
    assert "still not supported" in message
    # a target no number of labels reaches says so instead
    at = _fit_with_guarantee(at, 0.999, 0.1)
    warned = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "lower the target accuracy" in warned
    assert not any(h.value == "Cross-validated quality" for h in at.subheader)


def test_controls_the_chosen_band_ignores_are_disabled_with_the_reason(store: str) -> None:
    """Issue 33: human share, target accuracy and risk stayed live under choices that ignore
    them; so did the LLM fields with the tier off."""
    at = open_page(logged_in("res"))
    radio = at.radio(key="calibrate_band_by")
    expected = {  # choice -> (share, target, risk) disabled
        "a share of the items": (False, True, True),
        "enough for a target accuracy": (True, False, True),
        "a guaranteed accuracy": (True, False, False),
    }
    for choice, (share_off, target_off, risk_off) in expected.items():
        radio.set_value(choice)
        at.run()
        assert not at.exception, at.exception
        share = at.slider(key="calibrate_share")
        target = at.number_input(key="calibrate_target")
        risk = at.number_input(key="calibrate_risk")
        assert (share.disabled, target.disabled, risk.disabled) == (
            share_off,
            target_off,
            risk_off,
        ), choice
        for widget, off in ((share, share_off), (target, target_off), (risk, risk_off)):
            assert ("Ignored now" in (widget.help or "")) == off, (choice, widget.help)
        radio = at.radio(key="calibrate_band_by")
    assert at.text_input(key="calibrate_llm_model").disabled
    assert at.selectbox(key="calibrate_llm_prompt").disabled
    at.toggle(key="calibrate_llm").set_value(True).run()
    assert not at.text_input(key="calibrate_llm_model").disabled
    assert not at.text_input(key="calibrate_llm_url").disabled


def test_guarantee_change_note_explains_a_flip_after_more_labels() -> None:
    """Issue 33: the demo's guarantee was supported, and after 22 more labels it was not, with
    no hint why."""
    from app.components.guarantee_view import change_note

    before = {
        "n_labels": 200,
        "target": 0.9,
        "risk": 0.1,
        "supported": True,
        "routed": 0.68,
        "p_value": 0.093,
    }
    now = {
        "n_labels": 222,
        "target": 0.9,
        "risk": 0.1,
        "supported": False,
        "routed": None,
        "p_value": None,
    }
    note = change_note(before, now)
    assert "+22 labels since the previous fit (200 labels)" in note
    assert "68% of items to people (p = 0.093, under the risk 0.1)" in note
    assert "a band that passed close to the risk can fail" in note
    assert "now supported" in change_note(now, before)
    assert change_note(None, now) == ""
    assert "previous fit asked for 85%" in change_note({**before, "target": 0.85}, now)


def test_taught_answers_checkbox_counts_them_and_the_saved_judge_keeps_them(store: str) -> None:
    """Disabled with none accepted; once suggestions are accepted it says how many, and a fit
    with it saves a judge whose snapshot holds them."""
    from qaeval_core.workflows import answer_knowledge as wf

    at = open_page(logged_in("res"))
    box = at.checkbox(key="calibrate_knowledge")
    assert box.disabled and "(0 accepted answer(s) on 0 question(s))" in box.label
    found = wf.question_suggestions(store, DEMO)
    for _, row in found.iterrows():
        wf.decide(store, DEMO, "res", row, "accepted")
    n_questions = found["question_key"].nunique()
    at = open_page(logged_in("res"))
    box = at.checkbox(key="calibrate_knowledge")
    assert not box.disabled
    assert f"({len(found)} accepted answer(s) on {n_questions} question(s))" in box.label
    box.check()
    at.toggle(key="calibrate_curves").set_value(False)
    at.multiselect(key="calibrate_metrics").set_value(["em", "f1", "contains"])
    at.multiselect(key="calibrate_candidates").set_value(["stacker"])
    at.number_input(key="calibrate_folds").set_value(3)
    at.number_input(key="calibrate_boot").set_value(200)
    at.button(key="calibrate_fit").click().run()
    assert not at.exception, "\n".join(at.exception[0].stack_trace)
    assert not at.error, [e.value for e in at.error]
    assert any("also reads the taught answers" in str(c.value) for c in at.caption)
    at.text_input(key="calibrate_name").input("nq-taught")
    at.button(key="calibrate_save_submit").click().run()
    assert not at.exception, at.exception
    judge = Judge.from_config(qstore.get_calibration(store, "nq-taught").config)
    assert judge.knowledge is not None and judge.knowledge.dataset == DEMO
    assert judge.knowledge.knowledge_version == len(found)
    assert 0 < sum(judge.knowledge.counts()[:2]) <= len(found)
