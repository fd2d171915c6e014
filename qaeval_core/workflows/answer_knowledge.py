"""Answer knowledge of a stored dataset: suggestions with their decisions, and rescoring.

Joins the three parts of issue 24's item 2 for one dataset: the suggestions its human final
labels make (:func:`qaeval_core.knowledge.suggest_knowledge`; only people's labels, never a
judge's), the researchers' decisions the store keeps
(:mod:`qaeval_core.store.answer_knowledge`), and what the accepted ones change
(:func:`qaeval_core.judge.rescoring.rescore_items`: every model's answers to the questions
concerned, scored as stored and with the knowledge laid over them). The calibration input
(:func:`knowledge_inputs`) counts only accepted suggestions, leave-one-out;
:func:`calibration_knowledge` gives a calibration those inputs and the snapshot its judge keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from qaeval_core import store
from qaeval_core.analysis.aggregation import Aggregate
from qaeval_core.errors import InputError
from qaeval_core.judge import Judge, JudgeKnowledge
from qaeval_core.judge.rescoring import rescore_items
from qaeval_core.knowledge import (
    SIMILARITY_COLUMNS,
    SUGGESTION_COLUMNS,
    AnswerKnowledge,
    knowledge_similarity,
    suggest_knowledge,
)
from qaeval_core.metrics.base import Metric
from qaeval_core.schema import Item
from qaeval_core.store.answer_knowledge import (
    KnowledgeDecision,
    decide_suggestion,
    knowledge_decisions,
    knowledge_version,
    suggestion_hash,
)
from qaeval_core.workflows.triage import final_labels

__all__ = [
    "QUESTION_SUGGESTION_COLUMNS",
    "accepted_knowledge",
    "calibration_knowledge",
    "decide",
    "knowledge_counts",
    "knowledge_inputs",
    "question_suggestions",
    "rescore_dataset",
]

#: :data:`~qaeval_core.knowledge.SUGGESTION_COLUMNS` plus the suggestion's store identity, its
#: current decision (``None``: undecided), its ``version`` (0: undecided; pass it back as
#: ``based_on``), who decided and when.
QUESTION_SUGGESTION_COLUMNS = [
    *SUGGESTION_COLUMNS,
    "suggestion_hash",
    "decision",
    "version",
    "decided_by",
    "decided_at",
]


def _labelled(
    db: store.Store, dataset: str, aggregate: Aggregate
) -> tuple[list[Item], list[int | None]]:
    """The dataset's items and their human final labels (None: no person labelled it)."""
    with store.store_scope(db) as s:
        items = store.load_items(s, dataset)
        final = final_labels(s, dataset, aggregate=aggregate)
    human = final[final["source"].isin(("adjudication", "annotators"))]
    by_id = dict(zip(human["item_id"].astype(int), human["final_label"], strict=True))
    labels = []
    for it in items:
        value = by_id.get(int(it.meta["item_id"]))
        labels.append(None if value is None or pd.isna(value) else int(value))
    return items, labels


def question_suggestions(
    db: store.Store, dataset: str, *, aggregate: Aggregate = "majority"
) -> pd.DataFrame:
    """Every suggestion the dataset's human labels make, with its current decision
    (:data:`QUESTION_SUGGESTION_COLUMNS`). A decided suggestion the labels no longer make (a
    label changed since) is kept, with no supporting rows, so no decision disappears."""
    items, labels = _labelled(db, dataset, aggregate)
    found = suggest_knowledge(items, labels)
    found["suggestion_hash"] = [
        suggestion_hash(q, k, a)
        for q, k, a in found[["question_key", "kind", "answer_key"]].itertuples(index=False)
    ]
    decided = knowledge_decisions(db, dataset).set_index("suggestion_hash")
    lost = decided[~decided.index.isin(found["suggestion_hash"])]
    if len(lost):
        orphans = pd.DataFrame(
            {
                "question_key": lost["question_key"],
                "question": lost["question"],
                "kind": lost["kind"],
                "answer": lost["answer"],
                "answer_key": lost["answer_key"],
                "references": [[] for _ in range(len(lost))],
                "row_ids": [[] for _ in range(len(lost))],
                "qa_models": [[] for _ in range(len(lost))],
                "n_labels": 0,
                "suggestion_hash": lost.index,
            }
        )
        found = pd.concat([found, orphans.reset_index(drop=True)], ignore_index=True)
    found["decision"] = found["suggestion_hash"].map(decided["decision"])
    found["decision"] = found["decision"].astype(object).where(found["decision"].notna(), None)
    found["version"] = found["suggestion_hash"].map(decided["version"]).fillna(0).astype(int)
    found["decided_by"] = found["suggestion_hash"].map(decided["decided_by"])
    found["decided_at"] = found["suggestion_hash"].map(decided["created_at"])
    return found[QUESTION_SUGGESTION_COLUMNS].reset_index(drop=True)


def decide(
    db: store.Store,
    dataset: str,
    user: str,
    suggestion: pd.Series | dict,
    decision: str,
    *,
    note: str | None = None,
) -> KnowledgeDecision:
    """Record a decision on one row of :func:`question_suggestions` (its ``version`` is the
    one the researcher saw: a newer decision meanwhile refuses this one)."""
    row = dict(suggestion)
    return decide_suggestion(
        db,
        dataset,
        user,
        question_key=str(row["question_key"]),
        question=str(row["question"]),
        kind=str(row["kind"]),
        answer=str(row["answer"]),
        answer_key=str(row["answer_key"]),
        decision=decision,
        based_on=int(row.get("version") or 0),
        note=note,
    )


def accepted_knowledge(db: store.Store, dataset: str) -> AnswerKnowledge:
    """The dataset's accepted aliases and known wrong answers (current decisions only)."""
    decided = knowledge_decisions(db, dataset)
    return AnswerKnowledge.from_frame(decided[decided["decision"] == "accepted"])


def rescore_dataset(
    db: store.Store,
    dataset: str,
    scorer: Judge | Iterable[str | Metric] | str = ("contains",),
    *,
    calibration: str | None = None,
) -> pd.DataFrame:
    """Before -> after verdicts of every item of the dataset whose question has accepted
    knowledge (:func:`qaeval_core.judge.rescoring.rescore_items`), with the items'
    ``external_id``. ``calibration``: rescore with that saved judge instead of ``scorer``.
    Nothing is stored: the items and their stored scores stay as they were."""
    if calibration is not None:
        scorer = Judge.from_config(store.get_calibration(db, calibration).config)
    items = store.load_items(db, dataset)
    out = rescore_items(items, accepted_knowledge(db, dataset), scorer)
    out.insert(2, "external_id", [items[int(r)].id for r in out["row"]])
    return out


def knowledge_inputs(
    db: store.Store, dataset: str, *, aggregate: Aggregate = "majority"
) -> pd.DataFrame:
    """Per item: ``item_id`` and the leave-one-out similarity inputs
    (:data:`~qaeval_core.knowledge.SIMILARITY_COLUMNS`) from the accepted suggestions."""
    items, labels = _labelled(db, dataset, aggregate)
    decided = knowledge_decisions(db, dataset)
    accepted = decided[decided["decision"] == "accepted"]
    keys = set(accepted[["question_key", "kind", "answer_key"]].itertuples(index=False, name=None))
    out = knowledge_similarity(items, labels, accepted=keys)
    out.insert(0, "item_id", [int(it.meta["item_id"]) for it in items])
    return out


def _accepted_keys(db: store.Store, dataset: str) -> set[tuple[str, str, str]]:
    decided = knowledge_decisions(db, dataset)
    accepted = decided[decided["decision"] == "accepted"]
    return set(accepted[["question_key", "kind", "answer_key"]].itertuples(index=False, name=None))


def knowledge_counts(db: store.Store, dataset: str) -> tuple[int, int]:
    """(accepted answers, questions they concern): what a calibration with knowledge can use
    (only those the labels it fits on still suggest count; :func:`calibration_knowledge`)."""
    keys = _accepted_keys(db, dataset)
    return len(keys), len({q for q, _, _ in keys})


def calibration_knowledge(
    db: store.Store, dataset: str, items: Sequence[Item], labels: Sequence[int | None]
) -> tuple[JudgeKnowledge, pd.DataFrame]:
    """The taught-answer inputs of a calibration on ``items`` (with their final 3-point
    ``labels``) and the snapshot its judge keeps.

    Only the accepted suggestions these labels make count: held-back labels (``--max-labels``)
    teach nothing, so they stay truly unseen. The inputs are leave-one-out (a row's own label
    never makes the knowledge it is compared to); the snapshot holds all of it, as the judge
    will use it on new rows. InputError when no accepted answer is supported by these labels.
    """
    items = list(items)
    keys = _accepted_keys(db, dataset)
    found = suggest_knowledge(items, labels)
    mask = [
        (q, k, a) in keys
        for q, k, a in found[["question_key", "kind", "answer_key"]].itertuples(index=False)
    ]
    found = found[np.asarray(mask, dtype=bool)]  # a list [] would select no columns
    if found.empty:
        raise InputError(
            f"Dataset {dataset!r} has no accepted taught answers that the labels used suggest "
            "(accept suggestions on the Taught answers page first, or calibrate without "
            "knowledge)."
        )
    snapshot = JudgeKnowledge(
        AnswerKnowledge.from_frame(found),
        dict(zip(found["question_key"], found["question"], strict=True)),
        tuple(SIMILARITY_COLUMNS),
        dataset=dataset,
        knowledge_version=knowledge_version(db, dataset),
        n_labels=sum(v is not None for v in labels),
    )
    return snapshot, knowledge_similarity(items, labels, accepted=keys)
