"""Which rows answer the same question: the one grouping rule of calibration and knowledge.

Calibration keeps every question's rows in one cross-validation fold, answer knowledge is kept
per question, and a judge fitted with knowledge finds a new row's question the same way; so
the rule lives here, free of heavy imports (applying a saved judge loads neither the training
code nor the store, and the judge needs this rule too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qaeval_core.schema import Item

__all__ = ["question_groups", "question_text_key"]


def question_text_key(question: str) -> str:
    """The key of a question known only by its text (stripped, lower-cased)."""
    return f"q:{str(question).strip().lower()}"


def question_groups(items: Sequence[Item]) -> np.ndarray:
    """Group key per item: the question id in ``meta`` (``qid``) when present, else the text."""
    keys = []
    for it in items:
        qid = (it.meta or {}).get("qid")
        keys.append(f"qid:{qid}" if qid not in (None, "") else question_text_key(it.question))
    return np.asarray(keys, dtype=object)
