"""Explicit outcomes: *why* a judge's verdict is what it is (the ``judge_reason`` column).

A correct / incorrect verdict hides cases an evaluation must count apart, because they change
what an accuracy means: a model that says "I don't know" to a third of the questions is not
wrong the way a model that answers them wrongly is. The judge therefore names a reason per item
(``docs/outcomes.md`` has the full contract):

* ``matched`` / ``not_matched``: the combiner's verdict (correct / incorrect), nothing special;
* ``uncertain``: the triage band routed the item to people (``judge_outcome == "uncertain"``);
* ``not_attempted``: a refusal ("I don't know", "Unknown.", "As an AI ... I cannot ..."), or an
  answer that is empty after normalisation; both are read on the answer as a reader sees it
  (:func:`~qaeval_core.text.profiles.clean_answer`: markdown, HTML, citation
  markers, mojibake removed), so "**I don't know.**", "<p>Unknown</p>" or a lone "[1]" count;
* ``hedged``: several mutually exclusive answers ("1945 or 1946", "(B) or (C)", "it is either
  Paris or Lyon", "Paris, or possibly Lyon", "Michelangelo or Leonardo da Vinci" to a question
  asking for one painter, "Jane Austen, Charlotte Bronte or Emily Bronte" or "A/B/C" to one
  asking for one author); NAQT counts them incorrect;
* ``extraction_failed``: a long answer to a question that needs a number or a date, holding none
  (no candidate answer of the kind asked could be found);
* ``judge_error``: a metric failed on this row (it raised, or gave a non-finite score; the
  scoring loop stored 0.0 with ``details["error"]``), so the judge's inputs are not real.

The answer-level reasons (``not_attempted``, ``hedged``, ``extraction_failed``) are decided by
hand-written, deterministic text rules (:func:`answer_reason`), tuned for *precision*: a rule
fires only on a pattern that leaves little doubt, and a reference that itself reads like the
pattern ("unknown", "pups or puppies") switches it off. Recall is knowingly partial. The
refusal and hedge rules live in :mod:`qaeval_core.text.answer_rules` (their one home: the
answer-shape input ``no_hedge`` reads the same refusal rule); ``extraction_failed`` needs the
question's answer kind (:mod:`qaeval_core.metrics.extract`) and stays here.

Which reasons change the verdict is a judge's ``forced_incorrect`` (default
:data:`FORCED_INCORRECT`: ``not_attempted`` and ``hedged``, the NAQT-derived rules the
annotation guidelines cite). A refusal is never correct (every one of the 27 refusals and empty
answers in the shared labelled data is labelled incorrect). A hedge is not correct by default
either: an answer that names several candidates for one asked entity has not given *the*
answer, and a verdict of "correct" for "Michelangelo or Leonardo da Vinci" is the surprise a
user reports as a defect. The people who labelled the shared data accepted 5 of the 6 number
hedges found there ("eight or nine slices" for "8 slices"), which costs 0.0003 of accuracy
against those labels (``docs/outcomes.md``); a team whose guidelines accept hedges scores with
``Judge.with_forced_incorrect(("not_attempted",))``. A ``judge_error`` row is never correct
and goes to people (``judge_outcome == "uncertain"``). ``extraction_failed`` is reported only.

Why it is one module: it holds the precedence that makes one reason per item and the rules
that apply the reasons to the verdicts; split, the one contract ``docs/outcomes.md``
describes would be scattered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from qaeval_core.errors import InputError
from qaeval_core.metrics.extract import answer_kind, type_match
from qaeval_core.schema import Item
from qaeval_core.text.answer_rules import hedge, refusal
from qaeval_core.text.normalize import normalize

__all__ = [
    "ANSWER_REASONS",
    "FORCED_INCORRECT",
    "LONG_ANSWER_TOKENS",
    "REASONS",
    "AnswerReason",
    "Decided",
    "answer_reason",
    "apply_outcomes",
    "check_forced",
    "answer_reasons",
    "extraction_failure",
    "judge_reasons",
    "row_errors",
]

#: Every value of ``judge_reason``.
REASONS: tuple[str, ...] = (
    "matched",
    "not_matched",
    "uncertain",
    "not_attempted",
    "extraction_failed",
    "hedged",
    "judge_error",
)
#: The reasons read off the answer's text alone, in order of precedence.
ANSWER_REASONS: tuple[str, ...] = ("not_attempted", "hedged", "extraction_failed")
#: Answer-level reasons whose items are never judged correct by default, whatever the
#: combiner says (NAQT: a refusal and a hedge are both incorrect; a judge's
#: ``forced_incorrect`` may drop ``hedged`` where the guidelines accept hedges).
FORCED_INCORRECT: frozenset[str] = frozenset({"not_attempted", "hedged"})
#: An answer of at least this many words is "long": one where a short answer must be found.
LONG_ANSWER_TOKENS = 25


class AnswerReason(NamedTuple):
    """An answer-level reason and the text that shows it (``reason`` is None: none found)."""

    reason: str | None
    evidence: str = ""


# -- extraction failed --------------------------------------------------------------------------
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _asked_kind(question: str) -> str:
    """``number`` / ``date`` when the question's last sentence *opens* with a wh-phrase that
    fixes the kind ("how many ...", "in what year ..."), else ``other``. A long scenario with a
    "when" somewhere in it (legal and science stems) asks for something else."""
    last = [s for s in _SENTENCE_END.split(question.strip()) if s.strip()]
    head = " ".join(normalize(last[-1]).split()[:4]) if last else ""
    kind = answer_kind(head)
    return kind if kind in ("number", "date") else "other"


def extraction_failure(
    question: str, candidate: str, *, long_tokens: int = LONG_ANSWER_TOKENS
) -> str | None:
    """Why no answer can be extracted from a long ``candidate``, else None.

    Only where the question fixes the answer's kind deterministically: a "how many / how
    much / how long / how old" question answered in ``long_tokens`` words or more without a
    number, or a "when / what year" question without a year or a month.
    """
    words = str(candidate or "").split()
    if len(words) < long_tokens:
        return None
    kind = _asked_kind(str(question or ""))
    if kind in ("number", "date") and not type_match(str(candidate), kind):
        return f"no {kind} in a {len(words)}-word answer to a '{kind}' question"
    return None


# -- one reason per item ------------------------------------------------------------------------
def answer_reason(item: Item) -> AnswerReason:
    """The answer-level reason of one item (precedence: not attempted, hedged, extraction
    failed) with its evidence; ``AnswerReason(None)`` when none applies."""
    refs = [str(r) for r in item.references]
    found = refusal(item.candidate, refs)
    if found is not None:
        return AnswerReason("not_attempted", found)
    found = hedge(item.candidate, refs, str(item.question or ""))
    if found is not None:
        return AnswerReason("hedged", found)
    found = extraction_failure(item.question, item.candidate)
    if found is not None:
        return AnswerReason("extraction_failed", found)
    return AnswerReason(None)


def answer_reasons(items: Sequence[Item]) -> list[AnswerReason]:
    """:func:`answer_reason` of every item."""
    return [answer_reason(it) for it in items]


def judge_reasons(
    verdict: Sequence[bool] | np.ndarray,
    routed: Sequence[bool] | np.ndarray,
    answer: Sequence[str | None] | None = None,
    errors: Sequence[bool] | np.ndarray | None = None,
) -> np.ndarray:
    """``judge_reason`` per item: ``judge_error`` where a metric failed, else the answer-level
    reason, else ``uncertain`` where routed, else ``matched`` / ``not_matched``."""
    v = np.asarray(verdict, dtype=bool)
    out = np.where(v, "matched", "not_matched").astype(object)
    out[np.asarray(routed, dtype=bool)] = "uncertain"
    if answer is not None:
        for i, reason in enumerate(answer):
            if reason is not None:
                out[i] = reason
    if errors is not None:
        out[np.asarray(errors, dtype=bool)] = "judge_error"
    return out


class Decided(NamedTuple):
    """The judge's columns after the outcome rules (arrays aligned with the items)."""

    correct: np.ndarray
    probability: np.ndarray
    doubt: np.ndarray
    outcome: np.ndarray
    reason: np.ndarray


def apply_outcomes(
    verdict: np.ndarray,
    probability: np.ndarray,
    doubt: np.ndarray,
    outcome: np.ndarray,
    *,
    routed: np.ndarray,
    answer: Sequence[AnswerReason] | None = None,
    errors: Sequence[str | None] | None = None,
    forced_incorrect: frozenset[str] = FORCED_INCORRECT,
) -> Decided:
    """The combiner's verdicts with the outcome rules applied.

    A row whose answer-level reason is in ``forced_incorrect`` is incorrect, certainly so
    (probability and doubt 0: the rule, not the combiner, decided it). A row with an error is
    not correct and ``uncertain`` (its inputs are not real, so people decide it); its
    probability and doubt stay what the substituted inputs gave. Without ``answer`` and
    ``errors`` everything is the combiner's, and ``judge_reason`` only spells it out.
    """
    correct = np.asarray(verdict, dtype=bool).copy()
    prob = np.asarray(probability, dtype=float).copy()
    item_doubt = np.asarray(doubt, dtype=float).copy()
    out = np.asarray(outcome, dtype=object).copy()
    reasons = None if answer is None else [a.reason for a in answer]
    failed = None if errors is None else np.array([e is not None for e in errors], dtype=bool)
    if failed is not None and len(failed) != len(correct):
        raise ValueError(f"errors has {len(failed)} rows for {len(correct)} verdicts")
    if reasons is not None:
        forced = np.array([r in forced_incorrect for r in reasons], dtype=bool)
        correct[forced] = False
        prob[forced] = 0.0
        item_doubt[forced] = 0.0
        out[forced] = "incorrect"
    if failed is not None:
        correct[failed] = False
        out[failed] = "uncertain"
    reason = judge_reasons(verdict, routed, reasons, failed)
    return Decided(correct, prob, item_doubt, out, reason)


def check_forced(reasons: Sequence[str] | frozenset[str]) -> frozenset[str]:
    """``reasons`` as a frozenset of answer-level reasons, else an error listing them."""
    if isinstance(reasons, str):
        reasons = [reasons]
    bad = sorted(set(reasons) - set(ANSWER_REASONS))
    if bad:
        raise InputError(
            f"forced_incorrect takes answer-level reasons ({', '.join(ANSWER_REASONS)}); got {bad}."
        )
    return frozenset(reasons)


def row_errors(results: Mapping[str, Any], n: int) -> list[str | None]:
    """Per row, what failed (``"<column>: <details error>"`` for each metric result that
    raised on it or gave a non-finite score, joined by ``; ``), or None where all worked."""
    errors: list[str | None] = [None] * n
    for column, res in results.items():
        for i, det in enumerate(res.details):
            if det.get("error"):
                note = f"{column}: {det['error']}"
                errors[i] = note if errors[i] is None else f"{errors[i]}; {note}"
    return errors
