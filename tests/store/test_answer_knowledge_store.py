"""The answer-knowledge list in the store (SQLite and PostgreSQL): decisions, history, two
researchers at once, and the dataset workflow (suggestions, rescoring, leave-one-out inputs)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from _paths import DEMO_DATA

from qaeval_core import store as qstore
from qaeval_core.calibrate.options import CrossValidation
from qaeval_core.errors import InputError, PermissionDenied
from qaeval_core.store import answer_knowledge as store
from qaeval_core.workflows import answer_knowledge as wf

REFS = ["Paris"]


def _row(i: int, candidate: str, model: str, label: int | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": f"r{i}",
        "question": "Capital of France?",
        "references": REFS,
        "candidate": candidate,
        "model": model,
        "meta": {"qid": "1"},
    }
    if label is not None:
        row["human"] = {"scale": "three", "raters": [{"rater": "ann", "label": label}]}
    return row


ROWS = [
    _row(0, "It is Paris", "m1", 2),
    _row(1, "City of Light", "m2", 2),  # alias
    _row(2, "London", "m3", 0),  # known wrong answer
    _row(3, "the city of light", "m4", None),  # unlabelled sibling
    _row(4, "london.", "m5", None),
]


@pytest.fixture
def url(db_url: str) -> str:
    qstore.import_items(db_url, "ds", ROWS, source="test")
    qstore.add_user(db_url, "res", "researcher", "pw-res-long")
    qstore.add_user(db_url, "res2", "researcher", "pw-res2-long")
    qstore.add_user(db_url, "ann2", "annotator", "pw-ann2-long")
    return db_url


def _suggestion(url: str, kind: str) -> Any:
    found = wf.question_suggestions(url, "ds")
    return found[found["kind"] == kind].iloc[0]


def test_suggestions_come_from_the_labels_undecided(url: str):
    found = wf.question_suggestions(url, "ds")
    assert found[["kind", "answer"]].values.tolist() == [
        ["alias", "City of Light"],
        ["wrong", "London"],
    ]
    assert found["decision"].tolist() == [None, None]
    assert found["version"].tolist() == [0, 0]


def test_decisions_are_kept_with_who_and_a_history(url: str):
    alias = _suggestion(url, "alias")
    first = wf.decide(url, "ds", "res", alias, "accepted")
    assert (first.version, first.decision, first.decided_by) == (1, "accepted", "res")
    again = wf.decide(url, "ds", "res2", _suggestion(url, "alias"), "rejected", note="too vague")
    assert again.version == 2
    current = store.knowledge_decisions(url, "ds")
    assert current[["decision", "decided_by", "note"]].values.tolist() == [
        ["rejected", "res2", "too vague"]
    ]
    history = store.knowledge_decisions(url, "ds", current=False)
    assert history["decision"].tolist() == ["accepted", "rejected"]
    assert store.knowledge_version(url, "ds") == 2
    shown = _suggestion(url, "alias")
    assert (shown["decision"], shown["version"], shown["decided_by"]) == ("rejected", 2, "res2")


def test_a_decision_on_an_old_version_is_refused_and_nothing_is_lost(url: str):
    seen = _suggestion(url, "alias")  # both researchers look at version 0
    wf.decide(url, "ds", "res", seen, "accepted")
    with pytest.raises(InputError, match="res accepted 'City of Light'.*not saved"):
        wf.decide(url, "ds", "res2", seen, "rejected")
    current = store.knowledge_decisions(url, "ds")
    assert current[["decision", "decided_by"]].values.tolist() == [["accepted", "res"]]


def test_only_researchers_decide_and_bad_input_is_refused(url: str):
    alias = _suggestion(url, "alias")
    with pytest.raises(PermissionDenied, match="researcher or admin"):
        wf.decide(url, "ds", "ann2", alias, "accepted")
    with pytest.raises(InputError, match="decision must be one of"):
        wf.decide(url, "ds", "res", alias, "maybe")
    assert store.knowledge_version(url, "ds") == 0


def test_simultaneous_decisions_on_one_suggestion(url: str, monkeypatch: pytest.MonkeyPatch):
    """Two researchers decide the same undecided suggestion at the same moment: one decision
    lands, the other is told who decided what; no duplicate-key error, nothing half-written.
    On PostgreSQL both wait inside their transaction until both got there (as the guidelines'
    concurrency test does), so a read without the lock would always collide."""
    seen = _suggestion(url, "wrong")
    people = ("res", "res2")
    start = threading.Barrier(len(people))
    if url.startswith("postgresql"):
        inside = threading.Barrier(len(people), timeout=120)
        real = store.find_dataset

        def find_then_wait(session: Any, name: str) -> Any:
            found = real(session, name)
            inside.wait()
            return found

        monkeypatch.setattr(store, "find_dataset", find_then_wait)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def go(user: str) -> None:
        start.wait()
        try:
            result: Any = wf.decide(
                url, "ds", user, seen, "accepted" if user == "res" else "rejected"
            )
        except BaseException as exc:  # inspected below
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=go, args=(p,)) for p in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    monkeypatch.undo()
    saved = [o for o in outcomes if isinstance(o, store.KnowledgeDecision)]
    refused = [o for o in outcomes if isinstance(o, InputError)]
    assert len(saved) == 1 and len(refused) == 1, outcomes
    assert f"{saved[0].decided_by} {saved[0].decision} 'London'" in str(refused[0])
    history = store.knowledge_decisions(url, "ds", current=False)
    assert history[["decided_by", "version"]].values.tolist() == [[saved[0].decided_by, 1]]


def test_accepted_knowledge_rescores_every_models_answer(url: str):
    assert wf.rescore_dataset(url, "ds").empty  # nothing accepted yet
    wf.decide(url, "ds", "res", _suggestion(url, "alias"), "accepted")
    wf.decide(url, "ds", "res", _suggestion(url, "wrong"), "rejected")
    out = wf.rescore_dataset(url, "ds", ["contains"])
    changed = out[out["changed"]]
    assert changed["external_id"].tolist() == ["r1", "r3"]
    assert changed[["before", "after"]].values.tolist() == [[False, True], [False, True]]
    # the stored items are unchanged
    assert {tuple(it.references) for it in qstore.load_items(url, "ds")} == {("Paris",)}


def test_knowledge_inputs_count_accepted_only_and_leave_one_out(url: str):
    before = wf.knowledge_inputs(url, "ds")
    assert before[["alias_similarity", "wrong_similarity"]].to_numpy().max() == 0.0
    wf.decide(url, "ds", "res", _suggestion(url, "alias"), "accepted")
    out = wf.knowledge_inputs(url, "ds").set_index("item_id")
    ids = {it.id: int(it.meta["item_id"]) for it in qstore.load_items(url, "ds")}
    assert out.loc[ids["r3"], "alias_similarity"] == pytest.approx(1.0)
    assert out.loc[ids["r1"], "alias_similarity"] < 1.0  # its own label does not count
    assert out["wrong_similarity"].eq(0.0).all()  # the wrong answer was not accepted


def test_a_decision_outlives_the_label_that_made_the_suggestion(url: str):
    wf.decide(url, "ds", "res", _suggestion(url, "alias"), "accepted")
    item_id = next(int(it.meta["item_id"]) for it in qstore.load_items(url, "ds") if it.id == "r1")
    qstore.add_adjudication(url, item_id, "res", 1, "vague", roles=("researcher",))
    found = wf.question_suggestions(url, "ds")
    kept = found[found["kind"] == "alias"].iloc[0]
    assert (kept["answer"], kept["decision"], kept["n_labels"]) == ("City of Light", "accepted", 0)


def test_deleting_the_dataset_deletes_its_decisions(url: str):
    wf.decide(url, "ds", "res", _suggestion(url, "alias"), "accepted")
    qstore.delete_dataset(url, "ds")
    qstore.import_items(url, "ds", ROWS, source="test")
    assert store.knowledge_version(url, "ds") == 0


def test_a_dataset_without_labels_suggests_nothing(url: str):
    rows = [{k: v for k, v in r.items() if k != "human"} | {"id": f"n{r['id']}"} for r in ROWS]
    qstore.import_items(url, "bare", rows, source="test")
    assert wf.question_suggestions(url, "bare").empty
    assert wf.rescore_dataset(url, "bare").empty


def test_rescoring_with_a_saved_judge(sqlite_url: str):
    """A saved calibration rescores too: the answer people accepted is correct after, whatever
    the judge said before; every other touched answer gets the judge's verdict."""
    import json

    from qaeval_core import workflows

    data = DEMO_DATA
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    qstore.import_items(sqlite_url, "demo", rows, source="test")
    qstore.add_user(sqlite_url, "res", "researcher", "pw-res-long")
    fit = workflows.calibrate_dataset(
        sqlite_url,
        "demo",
        metrics=["em", "f1", "contains"],
        candidates=["threshold"],
        cv=CrossValidation(n_splits=3, n_boot=100),
        name="lexical",
    )
    qstore.save_calibration(sqlite_url, "lexical", fit.judge.to_config(), dataset="demo")
    found = wf.question_suggestions(sqlite_url, "demo")
    alias = found[found["kind"] == "alias"].iloc[0]
    wf.decide(sqlite_url, "demo", "res", alias, "accepted")
    out = wf.rescore_dataset(sqlite_url, "demo", calibration="lexical")
    assert set(out["scorer"]) == {"judge"}
    assert set(out["question_key"]) == {alias["question_key"]}
    known = out[out["by"] == "known answer"]
    assert len(known) >= 1 and known["after"].all()
