"""Answers people taught the judge: suggestions, the overlay, rescoring, leave-one-out input."""

from __future__ import annotations

import pandas as pd
import pytest

from qaeval_core.errors import InputError
from qaeval_core.judge.rescoring import rescore_items
from qaeval_core.knowledge import (
    ALIAS,
    SIMILARITY_COLUMNS,
    WRONG,
    AnswerKnowledge,
    answer_similarity,
    apply_knowledge,
    knowledge_similarity,
    known_verdicts,
    leave_one_out_items,
    similarity_to,
    suggest_knowledge,
)
from qaeval_core.schema import Item


def _item(candidate: str, model: str, *, qid: str = "1", refs=("Paris",), item_id=None) -> Item:
    meta = {"qid": qid}
    if item_id is not None:
        meta["item_id"] = item_id
    return Item("Capital of France?", refs, candidate, qa_model=model, meta=meta)


ITEMS = [
    _item("It is Paris", "a"),  # correct, contains the reference: no suggestion
    _item("City of Light", "b"),  # correct, no reference: alias
    _item("London", "c"),  # wrong: known wrong answer
    _item("the city of light", "d"),  # unlabelled sibling of the alias
    _item("london!", "e"),  # unlabelled sibling of the wrong answer
    _item("Lyon", "f"),  # unclear: nothing
]
LABELS = [2, 2, 0, None, None, 1]


def test_suggestions_alias_and_wrong():
    found = suggest_knowledge(ITEMS, LABELS)
    assert found[["kind", "answer"]].values.tolist() == [
        [ALIAS, "City of Light"],
        [WRONG, "London"],
    ]
    assert found["question_key"].tolist() == ["qid:1", "qid:1"]
    assert found["row_ids"].tolist() == [[1], [2]]
    assert found["qa_models"].tolist() == [["b"], ["c"]]


def test_same_answer_of_several_models_is_one_suggestion_with_its_support():
    items = [_item("City of Light", "a", item_id=10), _item("city of light.", "b", item_id=11)]
    found = suggest_knowledge(items, [2, 2])
    assert len(found) == 1
    assert found.loc[0, "row_ids"] == [10, 11]
    assert found.loc[0, "n_labels"] == 2


def test_conflicting_labels_and_contradicting_wrong_suggest_nothing():
    items = [_item("City of Light", "a"), _item("city of light", "b"), _item("paris", "c")]
    assert suggest_knowledge(items, [2, 0, 0]).empty


def test_questions_are_grouped_by_id_else_text():
    items = [_item("Lutetia", "a", qid="1"), _item("Lutetia", "b", qid="2")]
    assert suggest_knowledge(items, [2, 2])["question_key"].tolist() == ["qid:1", "qid:2"]
    no_id = [
        Item("Capital of France? ", ("Paris",), "Lutetia"),
        Item("capital of france?", ("Paris",), "lutetia"),
    ]
    assert len(suggest_knowledge(no_id, [2, 2])) == 1


def test_bad_labels_are_refused():
    with pytest.raises(InputError, match="one each"):
        suggest_knowledge(ITEMS, [2])
    with pytest.raises(InputError, match="3-point"):
        suggest_knowledge(ITEMS[:1], [5])


def test_overlay_adds_references_and_wrong_answers_without_touching_items():
    knowledge = AnswerKnowledge.from_frame(suggest_knowledge(ITEMS, LABELS))
    other = _item("Rome", "z", qid="2")
    out = apply_knowledge([*ITEMS, other], knowledge)
    assert out[3].references == ("Paris", "City of Light")
    assert out[3].wrong_answers == ("London",)
    assert ITEMS[3].references == ("Paris",)  # the original stays as it was
    assert out[-1] is other


def test_overlay_does_not_repeat_a_reference():
    knowledge = AnswerKnowledge({"qid:1": ("paris.",)}, {})
    assert apply_knowledge([ITEMS[0]], knowledge)[0].references == ("Paris",)


def test_known_verdicts():
    knowledge = AnswerKnowledge.from_frame(suggest_knowledge(ITEMS, LABELS))
    assert known_verdicts(ITEMS, knowledge).tolist() == [pd.NA, True, False, True, False, pd.NA]


def test_from_frame_checks_its_input():
    with pytest.raises(InputError, match="lacks"):
        AnswerKnowledge.from_frame(pd.DataFrame({"kind": ["alias"]}))
    with pytest.raises(InputError, match="kind"):
        AnswerKnowledge.from_frame(
            pd.DataFrame({"question_key": ["q"], "kind": ["maybe"], "answer": ["x"]})
        )


def test_rescoring_reports_the_verdicts_that_changed():
    knowledge = AnswerKnowledge.from_frame(suggest_knowledge(ITEMS, LABELS))
    out = rescore_items(ITEMS, knowledge, ["contains"])
    assert len(out) == len(ITEMS)  # every item of the question is touched
    changed = out[out["changed"]]
    assert changed["candidate"].tolist() == ["City of Light", "the city of light"]
    assert changed["before"].tolist() == [False, False]
    assert changed["after"].tolist() == [True, True]
    assert set(out.loc[out["candidate"] == "london!", "by"]) == {"known answer"}


def test_rescoring_nothing_touched_is_empty():
    assert rescore_items(ITEMS, AnswerKnowledge(), ["contains"]).empty


def test_similarity_is_leave_one_out():
    sim = knowledge_similarity(ITEMS, LABELS)
    assert list(sim.columns) == SIMILARITY_COLUMNS
    # the alias row's own label must not make it similar to itself; nor the wrong one's
    assert sim.loc[1, "alias_similarity"] < 1.0
    assert sim.loc[2, "wrong_similarity"] < 1.0
    # unlabelled siblings see the knowledge
    assert sim.loc[3, "alias_similarity"] == pytest.approx(1.0)
    assert sim.loc[4, "wrong_similarity"] == pytest.approx(1.0)


def test_similarity_without_its_label_equals_similarity_of_a_fresh_row():
    """Leave-one-out means: a labelled row scores as if its label did not exist."""
    loo = knowledge_similarity(ITEMS, LABELS)
    for i in (1, 2):
        hidden = list(LABELS)
        hidden[i] = None
        assert loo.loc[i].tolist() == pytest.approx(
            knowledge_similarity(ITEMS, hidden).loc[i].tolist()
        )


def test_similarity_counts_only_accepted_suggestions():
    accepted = {("qid:1", WRONG, "london")}
    sim = knowledge_similarity(ITEMS, LABELS, accepted=accepted)
    assert sim.loc[3, "alias_similarity"] == 0.0
    assert sim.loc[4, "wrong_similarity"] == pytest.approx(1.0)


def test_similarity_to_given_knowledge():
    knowledge = AnswerKnowledge({"qid:1": ("City of Light",)}, {})
    sim = similarity_to(ITEMS, knowledge)
    assert sim.loc[3, "alias_similarity"] == pytest.approx(1.0)
    assert sim["wrong_similarity"].eq(0.0).all()
    assert answer_similarity("London", []) == 0.0
    assert 0.0 < answer_similarity("Londres", ["London"]) < 1.0


def test_leave_one_out_items_never_carry_their_own_label():
    out = leave_one_out_items(ITEMS, LABELS)
    assert out[1].references == ("Paris",)  # its own alias is not laid over it
    assert out[2].wrong_answers is None  # nor its own wrong answer
    assert out[3].references == ("Paris", "City of Light")
    assert out[0].references == ("Paris", "City of Light") and out[0].wrong_answers == ("London",)
