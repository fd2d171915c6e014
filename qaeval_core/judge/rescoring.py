"""Rescore the items accepted knowledge touches, and say which verdicts changed.

Only items whose question has accepted knowledge can change, so only they are scored: once as
stored (before) and once with the knowledge laid over them (after,
:func:`qaeval_core.knowledge.overlay.apply_knowledge`). After, an answer whose normalised text
people already accepted or rejected for this question gets that verdict
(:func:`~qaeval_core.knowledge.overlay.known_verdicts`, ``by == "known answer"``); every other
row gets the scorer's decision on the overlaid item (``by == "scorer"``). The scorer is a list
of metrics (each metric's decision at its threshold is a verdict) or a calibrated
:class:`~qaeval_core.judge.Judge` (its ``judge_correct``).

Why in ``judge/``: it applies a judge (or metrics) to items, which ``knowledge/`` (a floor
below the judge: what a judge reads of the taught answers) may not do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from qaeval_core.judge.judge import Judge
from qaeval_core.knowledge.overlay import AnswerKnowledge, apply_knowledge, known_verdicts, touched
from qaeval_core.metrics.base import Metric
from qaeval_core.questions import question_groups
from qaeval_core.schema import Item
from qaeval_core.scoring import score_items

__all__ = ["RESCORE_COLUMNS", "JUDGE_SCORER", "rescore_items"]

#: One row per (touched item, scorer). ``row`` is the item's position in the input; ``item_id``
#: its ``meta["item_id"]`` (None without one).
RESCORE_COLUMNS = [
    "row",
    "item_id",
    "question_key",
    "question",
    "candidate",
    "qa_model",
    "scorer",
    "before",
    "after",
    "changed",
    "by",
]
#: The ``scorer`` name of a judge's verdicts.
JUDGE_SCORER = "judge"


def _decisions(
    items: list[Item], scorer: Judge | Iterable[str | Metric] | str
) -> dict[str, np.ndarray]:
    if isinstance(scorer, Judge):
        return {JUDGE_SCORER: scorer.predict(items)}
    return {
        label: np.asarray(result.decisions, dtype=bool)
        for label, result in score_items(items, scorer).items()
    }


def rescore_items(
    items: Sequence[Item],
    knowledge: AnswerKnowledge,
    scorer: Judge | Iterable[str | Metric] | str,
) -> pd.DataFrame:
    """Before and after verdicts of every item the knowledge touches (columns
    :data:`RESCORE_COLUMNS`; module docstring). Empty when it touches none."""
    items = list(items)
    rows = np.flatnonzero(touched(items, knowledge)) if items else np.zeros(0, dtype=int)
    if len(rows) == 0:
        return pd.DataFrame(columns=RESCORE_COLUMNS)
    originals = [items[i] for i in rows]
    overlaid = apply_knowledge(originals, knowledge)
    before = _decisions(originals, scorer)
    after = _decisions(overlaid, scorer)
    known = known_verdicts(originals, knowledge)
    is_known = known.notna().to_numpy()
    keys = question_groups(originals)
    frames = []
    for label, was in before.items():
        now = np.where(is_known, known.fillna(False).to_numpy(dtype=bool), after[label])
        frames.append(
            pd.DataFrame(
                {
                    "row": rows,
                    "item_id": [(it.meta or {}).get("item_id") for it in originals],
                    "question_key": keys,
                    "question": [it.question for it in originals],
                    "candidate": [it.candidate for it in originals],
                    "qa_model": [it.qa_model for it in originals],
                    "scorer": label,
                    "before": was,
                    "after": now,
                    "changed": was != now,
                    "by": np.where(is_known, "known answer", "scorer"),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[RESCORE_COLUMNS]
