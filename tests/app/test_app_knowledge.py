"""The Taught answers page (AppTest): suggestions per question, accept/reject, the verdicts
that changed, a decision on an outdated view refused with who decided what, text as text."""

from __future__ import annotations

from typing import Any

import pytest
from _apptest import logged_in
from streamlit.testing.v1 import AppTest

from qaeval_core import store as qstore
from qaeval_core.workflows import answer_knowledge as wf

EVIL = "<b>City</b> of Light"


def _row(i: int, candidate: str, model: str, label: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": f"r{i}",
        "question": "Capital of France?",
        "references": ["Paris"],
        "candidate": candidate,
        "model": model,
        "meta": {"qid": "1"},
    }
    if label is not None:
        row["human"] = {"scale": "three", "raters": [{"rater": "ann", "label": label}]}
    return row


ROWS = [
    _row(0, "It is Paris", "m1", 2),
    _row(1, EVIL, "m2", 2),
    _row(2, "London", "m3", 0),
    _row(3, "The <b>city</b> of light!", "m4", None),
]


@pytest.fixture
def store(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    url = sqlite_url
    qstore.import_items(url, "ds", ROWS, source="test")
    qstore.add_user(url, "res", "researcher", "pw-res")
    qstore.add_user(url, "res2", "researcher", "pw-res2")
    monkeypatch.setenv("QAEVAL_DATABASE_URL", url)
    return url


def open_page() -> AppTest:
    at = logged_in("res")
    at.switch_page("views/knowledge.py").run()
    assert not at.exception, at.exception
    return at


def _alias_hash(url: str) -> str:
    found = wf.question_suggestions(url, "ds")
    return str(found.loc[found["kind"] == "alias", "suggestion_hash"].iloc[0])


def test_page_lists_suggestions_in_words(store: str):
    at = open_page()
    table = at.dataframe[0].value
    assert table["Suggestion"].tolist() == [
        "accept as a reference",
        "record as a known wrong answer",
    ]
    assert table["Answer"].tolist() == [EVIL, "London"]  # data, shown as typed
    assert table["Decision"].tolist() == ["undecided", "undecided"]
    assert any("Nothing accepted yet" in str(i.value) for i in at.info)
    assert not any("<b>" in str(m.value) for m in at.markdown)


def test_accepting_shows_the_verdicts_that_changed(store: str):
    at = open_page()
    at.selectbox(key="knowledge_pick").set_value(_alias_hash(store)).run()
    at.button(key="knowledge_accept").click().run()
    assert not at.exception, at.exception
    assert any("Accepted" in str(s.value) for s in at.success)
    changes = at.dataframe[-1].value
    assert sorted(changes["Item"].tolist()) == ["r1", "r3"]
    assert set(changes["Verdict (before -> after)"]) == {"incorrect -> correct"}
    lines = [str(t.value) for t in at.text]
    assert "r3 (m4) 'The <b>city</b> of light!': incorrect -> correct" in lines
    decided = repo_decisions(store)
    assert decided[["decision", "decided_by"]].values.tolist() == [["accepted", "res"]]


def test_a_decision_on_an_outdated_view_is_refused_with_who_decided(store: str):
    at = open_page()
    at.selectbox(key="knowledge_pick").set_value(_alias_hash(store)).run()
    found = wf.question_suggestions(store, "ds")
    wf.decide(store, "ds", "res2", found[found["kind"] == "alias"].iloc[0], "accepted")
    at.button(key="knowledge_reject").click().run()
    errors = [str(e.value) for e in at.error]
    assert errors and "res2 accepted" in errors[0] and "not saved" in errors[0]
    assert repo_decisions(store)["decision"].tolist() == ["accepted"]


@pytest.fixture
def any_store(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The page's store on SQLite and (when available) PostgreSQL."""
    qstore.import_items(db_url, "ds", ROWS, source="test")
    qstore.add_user(db_url, "res", "researcher", "pw-res")
    monkeypatch.setenv("QAEVAL_DATABASE_URL", db_url)
    return db_url


def test_a_nul_in_the_note_is_refused_in_words_on_every_store(any_store: str):
    """Issue 31, item 7: PostgreSQL raised a bare ValueError (a traceback, nothing saved) and
    SQLite kept the NUL; both now refuse it with the store's one message."""
    at = open_page()
    at.selectbox(key="knowledge_pick").set_value(_alias_hash(any_store)).run()
    at.text_input(key="knowledge_note").input("typed\x00by mistake")
    at.button(key="knowledge_accept").click().run()
    assert not at.exception, at.exception
    errors = [str(e.value) for e in at.error]
    assert errors and "note contains a NUL character" in errors[0], errors
    assert repo_decisions(any_store).empty  # nothing was saved
    at.text_input(key="knowledge_note").input("typed with care")
    at.button(key="knowledge_accept").click().run()
    assert any("Accepted" in str(s.value) for s in at.success)
    assert repo_decisions(any_store)["note"].tolist() == ["typed with care"]


def test_annotators_cannot_open_the_page(store: str):
    qstore.add_user(store, "ann2", "annotator", "pw-ann2")
    at = logged_in("ann2")
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page("views/knowledge.py")


def repo_decisions(url: str):
    from qaeval_core.store.answer_knowledge import knowledge_decisions

    return knowledge_decisions(url, "ds")


def test_rescoring_with_a_saved_judge_from_the_page(store: str):
    import numpy as np
    import pandas as pd

    from qaeval_core.judge import Judge
    from qaeval_core.judge.combiners.threshold import ThresholdClassifier
    from qaeval_core.judge.features import FeatureSpec
    from qaeval_core.metrics.base import get_metric

    model = ThresholdClassifier().fit(
        pd.DataFrame({"contains": [0.0, 1.0, 0.0, 1.0]}), np.array([0, 1, 0, 1])
    )
    judge = Judge([FeatureSpec.from_metric(get_metric("contains"))], model, name="tiny")
    qstore.save_calibration(store, "tiny", judge.to_config(), dataset="ds")
    wf.decide(store, "ds", "res", wf.question_suggestions(store, "ds").iloc[0], "accepted")
    at = open_page()
    picker = at.selectbox(key="knowledge_scorer")
    assert "Saved judge: tiny" in picker.options
    picker.set_value("judge:tiny").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("verdict(s) changed" in str(c.value) for c in at.caption)
