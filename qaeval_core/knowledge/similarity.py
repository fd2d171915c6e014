"""A calibration input: how close a candidate is to its question's known right and wrong answers.

Two columns per row (:data:`SIMILARITY_COLUMNS`): ``alias_similarity``, the best match of the
candidate to the question's aliases (correct answers that contain no reference), and
``wrong_similarity``, to its known wrong answers. A match is 1.0 when the normalised answer
occurs in the normalised candidate on token boundaries (the containment rule the metrics use),
else rapidfuzz's normalised Indel similarity (``fuzz.ratio / 100``) of the two normalised
texts; 0.0 when the question has no such answer.

No leakage: :func:`knowledge_similarity` builds each row's knowledge from the labels of the
*other* rows of its question, never from the row's own label (leave-one-out). A row's own
label would otherwise turn into an alias equal to its own candidate and the input would simply
copy the label: perfect on the labelled rows, useless on the rows the judge must decide. Rows
without a label see the knowledge of every labelled row, exactly as the judge will at work.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd
from rapidfuzz import fuzz

from qaeval_core.knowledge.overlay import AnswerKnowledge, apply_knowledge
from qaeval_core.knowledge.suggestions import (
    ALIAS,
    WRONG,
    answer_key,
    label_values,
    suggest_knowledge,
)
from qaeval_core.questions import question_groups
from qaeval_core.schema import Item
from qaeval_core.text.squad import contains_on_token_boundary

__all__ = [
    "SIMILARITY_COLUMNS",
    "answer_similarity",
    "knowledge_similarity",
    "leave_one_out_items",
    "row_knowledge",
    "similarity_to",
]

SIMILARITY_COLUMNS = ["alias_similarity", "wrong_similarity"]

#: (question key, kind, answer key): the suggestions a researcher accepted.
Accepted = Collection[tuple[str, str, str]]


def answer_similarity(candidate: str, answers: Sequence[str]) -> float:
    """The best match of ``candidate`` to any of ``answers`` (module docstring); 0.0 for none."""
    cand = answer_key(candidate)
    best = 0.0
    for answer in answers:
        key = answer_key(answer)
        if not key:
            continue
        if contains_on_token_boundary(cand, key):
            return 1.0
        best = max(best, fuzz.ratio(cand, key) / 100.0)
    return best


def similarity_to(items: Sequence[Item], knowledge: AnswerKnowledge) -> pd.DataFrame:
    """:data:`SIMILARITY_COLUMNS` of each item against ``knowledge`` as given (no row is left
    out: for rows whose labels did not make the knowledge, e.g. the unlabelled ones)."""
    items = list(items)
    keys = question_groups(items) if items else []
    rows = [
        (
            answer_similarity(it.candidate, knowledge.aliases.get(str(k), ())),
            answer_similarity(it.candidate, knowledge.wrong.get(str(k), ())),
        )
        for it, k in zip(items, keys, strict=True)
    ]
    return pd.DataFrame(rows, columns=SIMILARITY_COLUMNS, dtype=float)


def _knowledge(
    items: list[Item], labels: list[Any], accepted: Accepted | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(aliases, wrong answers) suggested by these rows of one question, kept if accepted."""
    if all(v not in (0, 2) for v in labels):
        return (), ()
    found = suggest_knowledge(items, labels)
    if accepted is not None:
        keep = [
            (q, k, a) in accepted
            for q, k, a in found[["question_key", "kind", "answer_key"]].itertuples(index=False)
        ]
        found = found[np.asarray(keep, dtype=bool)]  # a list [] would select no columns
    return (
        tuple(found.loc[found["kind"] == ALIAS, "answer"]),
        tuple(found.loc[found["kind"] == WRONG, "answer"]),
    )


def row_knowledge(
    items: Sequence[Item], labels: Sequence[Any], *, accepted: Accepted | None = None
) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Per item, the (aliases, known wrong answers) its question's *other* labelled rows
    suggest (leave-one-out; module docstring), kept only if ``accepted`` (``None``: all)."""
    items = list(items)
    values = label_values(items, labels)
    out: list[tuple[tuple[str, ...], tuple[str, ...]]] = [((), ())] * len(items)
    if not items:
        return out
    by_question: dict[str, list[int]] = {}
    for i, k in enumerate(question_groups(items)):
        by_question.setdefault(str(k), []).append(i)
    for rows in by_question.values():
        group_items = [items[i] for i in rows]
        group_labels = [values[i] for i in rows]
        shared = _knowledge(group_items, group_labels, accepted)  # for the unlabelled rows
        for pos, i in enumerate(rows):
            if values[i] in (0, 2):  # its own label must not teach it anything
                own_out = [v if j != pos else None for j, v in enumerate(group_labels)]
                out[i] = _knowledge(group_items, own_out, accepted)
            else:
                out[i] = shared
    return out


def leave_one_out_items(
    items: Sequence[Item], labels: Sequence[Any], *, accepted: Accepted | None = None
) -> list[Item]:
    """Every item with the knowledge of :func:`row_knowledge` laid over it: the items a judge's
    metric inputs are computed on when it is fitted with knowledge, without leakage."""
    items = list(items)
    keys = question_groups(items) if items else []
    out = []
    for item, key, (aliases, wrong) in zip(
        items, keys, row_knowledge(items, labels, accepted=accepted), strict=True
    ):
        knowledge = AnswerKnowledge(
            {str(key): aliases} if aliases else {}, {str(key): wrong} if wrong else {}
        )
        out.append(apply_knowledge([item], knowledge)[0])
    return out


def knowledge_similarity(
    items: Sequence[Item], labels: Sequence[Any], *, accepted: Accepted | None = None
) -> pd.DataFrame:
    """:data:`SIMILARITY_COLUMNS` per item, leave-one-out (module docstring).

    ``labels``: final labels on the 3-point scale (None/NaN: unlabelled). ``accepted``: the
    (question key, kind, answer key) suggestions a researcher accepted; only those count
    (``None``: every suggestion counts, as when simulating a researcher who accepts all).
    """
    items = list(items)
    known = row_knowledge(items, labels, accepted=accepted)
    rows = [
        (answer_similarity(it.candidate, aliases), answer_similarity(it.candidate, wrong))
        for it, (aliases, wrong) in zip(items, known, strict=True)
    ]
    return pd.DataFrame(rows, columns=SIMILARITY_COLUMNS, dtype=float)
