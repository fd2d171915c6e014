"""Accepted answer knowledge as an overlay on items: extra references and wrong answers.

Stored items never change (their content hash is their identity, and every score and label
refers to them), so an accepted alias is not written into an item: it is laid over the item
when scoring. :func:`apply_knowledge` returns copies of the items whose question has accepted
knowledge, with the accepted aliases appended to ``references`` and the accepted known wrong
answers to ``wrong_answers``; every metric then reads them as it reads the originals (the
containment and token metrics find the alias, A-VERT puts the wrong answers in its wrong
group). An item the knowledge does not touch is returned as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from qaeval_core.errors import InputError
from qaeval_core.knowledge.suggestions import ALIAS, KINDS, answer_key
from qaeval_core.questions import question_groups
from qaeval_core.schema import Item

__all__ = ["AnswerKnowledge", "apply_knowledge", "known_verdicts", "touched"]


@dataclass(frozen=True)
class AnswerKnowledge:
    """Accepted aliases and known wrong answers per question key (see
    :mod:`qaeval_core.knowledge.suggestions` for the key)."""

    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    wrong: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> AnswerKnowledge:
        """From rows with ``question_key``, ``kind`` (``alias``/``wrong``) and ``answer``
        (e.g. the accepted rows of a store's knowledge list, or accepted suggestions)."""
        missing = {"question_key", "kind", "answer"} - set(frame.columns)
        if missing:
            raise InputError(f"knowledge frame lacks column(s) {sorted(missing)}.")
        bad = set(frame["kind"]) - set(KINDS)
        if bad:
            raise InputError(f"knowledge kind must be one of {KINDS}; got {sorted(bad)}.")
        aliases: dict[str, list[str]] = {}
        wrong: dict[str, list[str]] = {}
        for qkey, kind, answer in frame[["question_key", "kind", "answer"]].itertuples(index=False):
            target = aliases if kind == ALIAS else wrong
            target.setdefault(str(qkey), []).append(str(answer))
        return cls(
            {k: tuple(dict.fromkeys(v)) for k, v in aliases.items()},
            {k: tuple(dict.fromkeys(v)) for k, v in wrong.items()},
        )

    def __bool__(self) -> bool:
        return bool(self.aliases) or bool(self.wrong)

    def questions(self) -> set[str]:
        """The question keys the knowledge says something about."""
        return set(self.aliases) | set(self.wrong)


def _extend(base: Iterable[str] | None, extra: Sequence[str]) -> tuple[str, ...]:
    have = list(base or ())
    seen = {answer_key(x) for x in have}
    for text in extra:
        k = answer_key(text)
        if k and k not in seen:
            have.append(text)
            seen.add(k)
    return tuple(have)


def apply_knowledge(items: Sequence[Item], knowledge: AnswerKnowledge) -> list[Item]:
    """The items with the accepted knowledge of their question laid over them (module
    docstring); untouched items are the same objects."""
    items = list(items)
    if not knowledge or not items:
        return items
    keys = question_groups(items)
    out = []
    for item, qkey in zip(items, keys, strict=True):
        aliases = knowledge.aliases.get(str(qkey), ())
        wrong = knowledge.wrong.get(str(qkey), ())
        if not aliases and not wrong:
            out.append(item)
            continue
        out.append(
            dataclasses.replace(
                item,
                references=_extend(item.references, aliases),
                wrong_answers=_extend(item.wrong_answers, wrong) if wrong else item.wrong_answers,
            )
        )
    return out


def touched(items: Sequence[Item], knowledge: AnswerKnowledge) -> np.ndarray:
    """Per item: whether the knowledge says something about its question."""
    if not items:
        return np.zeros(0, dtype=bool)
    wanted = knowledge.questions()
    return np.array([str(k) in wanted for k in question_groups(items)], dtype=bool)


def known_verdicts(items: Sequence[Item], knowledge: AnswerKnowledge) -> pd.Series:
    """Per item, what people already decided about this very answer to this question:
    ``True`` when its normalised text equals an accepted alias, ``False`` when it equals an
    accepted known wrong answer, ``<NA>`` otherwise (boolean dtype).

    Rescoring lets this decide such rows whatever a metric's threshold says: a person judged
    the same text for the same question, so a token-overlap score below its threshold (or a
    wrong answer that happens to contain a reference) does not overrule them.
    """
    out = pd.Series(pd.array([pd.NA] * len(items), dtype="boolean"))
    if not knowledge or not items:
        return out
    keys = question_groups(items)
    for pos, (item, qkey) in enumerate(zip(items, keys, strict=True)):
        akey = answer_key(item.candidate)
        if not akey:
            continue
        if akey in {answer_key(a) for a in knowledge.aliases.get(str(qkey), ())}:
            out.iloc[pos] = True
        elif akey in {answer_key(a) for a in knowledge.wrong.get(str(qkey), ())}:
            out.iloc[pos] = False
    return out
