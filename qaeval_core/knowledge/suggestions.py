"""Suggestions from human labels: answers people taught the judge (issue 24, item 2).

A label decides one row, but the answer it judges is knowledge about the *question*: other QA
models often give the same answer to the same question. So every final label becomes a
suggestion about its question:

* a **correct** answer (label 2) that contains no reference (the project's own containment
  rule, :func:`qaeval_core.metrics.lexical.contains_batch`: a SQuAD-normalised reference on
  token boundaries) is a suggested **alias** ("accept 'X' for this question?"); a correct
  answer that contains a reference teaches nothing the references do not already say;
* a **wrong** answer (label 0) is a suggested **known wrong answer**, the negatives A-VERT's
  wrong group reads from ``Item.wrong_answers``; one whose normalised text equals a reference
  is left out (the label contradicts the references: a case for adjudication, not knowledge).

"Unclear" labels (1) suggest nothing. Answers are compared SQuAD-normalised
(:func:`qaeval_core.text.squad.normalize_answer`), so "The Eiffel Tower." and
"eiffel tower" are one suggestion; an answer labelled correct on one row and wrong on another
of the same question is a **conflict** and suggests neither (people must settle it first).

Rows of one question across QA models share a question key: the question id in ``meta``
(``qid``) when present, else the stripped, lower-cased text (the rule of
:func:`qaeval_core.questions.question_groups`, used here so that knowledge and
calibration folds group rows the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from qaeval_core.errors import InputError
from qaeval_core.metrics.lexical import contains_batch
from qaeval_core.questions import question_groups
from qaeval_core.schema import Item
from qaeval_core.text.squad import normalize_answer

__all__ = [
    "ALIAS",
    "KINDS",
    "SUGGESTION_COLUMNS",
    "WRONG",
    "answer_key",
    "label_values",
    "suggest_knowledge",
]

#: A correct answer that contains no reference: accept it as another reference?
ALIAS = "alias"
#: A wrong answer: record it as a known wrong answer of the question?
WRONG = "wrong"
KINDS = (ALIAS, WRONG)

#: One row per (question, kind, normalised answer). ``answer`` is the text as first labelled;
#: ``row_ids`` the rows whose labels support it (their ``meta["item_id"]`` when present, else
#: their position); ``qa_models`` the models that gave it.
SUGGESTION_COLUMNS = [
    "question_key",
    "question",
    "kind",
    "answer",
    "answer_key",
    "references",
    "row_ids",
    "qa_models",
    "n_labels",
]


def answer_key(text: str) -> str:
    """The form answers are compared in (SQuAD normalisation; empty for no text)."""
    return normalize_answer(str(text or ""))


def _row_id(item: Item, position: int) -> Any:
    item_id = (item.meta or {}).get("item_id")
    return int(item_id) if item_id is not None else position


def label_values(items: Sequence[Item], labels: Sequence[Any]) -> list[int | None]:
    """``labels`` (one per item) as 0, 1, 2 or None (not labelled); anything else an error."""
    if len(items) != len(labels):
        raise InputError(f"labels has {len(labels)} values for {len(items)} items; give one each.")
    out: list[int | None] = []
    for value in labels:
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            out.append(None)
            continue
        v = int(value)
        if v not in (0, 1, 2):
            raise InputError(f"labels must be 0, 1, 2 or missing (3-point scale); got {value!r}.")
        out.append(v)
    return out


def suggest_knowledge(items: Sequence[Item], labels: Sequence[Any]) -> pd.DataFrame:
    """The suggestions the labelled rows make (columns :data:`SUGGESTION_COLUMNS`).

    ``labels``: one final label per item on the 3-point scale (0 incorrect, 1 unclear, 2
    correct; None/NaN: not labelled). Sorted by question key, kind, then answer key, so the
    same labels always give the same table.
    """
    items = list(items)
    values = label_values(items, labels)
    keys = question_groups(items) if items else np.asarray([], dtype=object)
    labelled = [i for i, v in enumerate(values) if v in (0, 2)]
    contains, _ = contains_batch(
        [items[i].candidate for i in labelled], [items[i].references for i in labelled]
    )
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for pos, i in enumerate(labelled):
        item, value = items[i], values[i]
        akey = answer_key(item.candidate)
        if not akey:
            continue
        entry = groups.setdefault(
            (str(keys[i]), akey),
            {"item": item, "values": set(), "row_ids": [], "models": [], "contains": False},
        )
        entry["values"].add(value)
        entry["row_ids"].append(_row_id(item, i))
        if item.qa_model:
            entry["models"].append(item.qa_model)
        entry["contains"] = entry["contains"] or bool(contains[pos])
    rows = []
    for (qkey, akey), entry in groups.items():
        if len(entry["values"]) > 1:
            continue  # labelled correct and wrong: a conflict, no suggestion
        item: Item = entry["item"]
        if 2 in entry["values"]:
            if entry["contains"]:
                continue
            kind = ALIAS
        else:
            if akey in {answer_key(r) for r in item.references}:
                continue
            kind = WRONG
        rows.append(
            {
                "question_key": qkey,
                "question": item.question,
                "kind": kind,
                "answer": item.candidate.strip(),
                "answer_key": akey,
                "references": list(item.references),
                "row_ids": list(entry["row_ids"]),
                "qa_models": list(dict.fromkeys(entry["models"])),
                "n_labels": len(entry["row_ids"]),
            }
        )
    frame = pd.DataFrame(rows, columns=SUGGESTION_COLUMNS)
    return frame.sort_values(["question_key", "kind", "answer_key"]).reset_index(drop=True)
