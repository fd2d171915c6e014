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
  asking for one author: :mod:`.alternatives`); NAQT counts them incorrect;
* ``extraction_failed``: a long answer to a question that needs a number or a date, holding none
  (no candidate answer of the kind asked could be found);
* ``judge_error``: a metric failed on this row (it raised, or gave a non-finite score; the
  scoring loop stored 0.0 with ``details["error"]``), so the judge's inputs are not real.

The answer-level reasons (``not_attempted``, ``hedged``, ``extraction_failed``) are decided by
hand-written, deterministic text rules (:func:`answer_reason`), tuned for *precision*: a rule
fires only on a pattern that leaves little doubt, and a reference that itself reads like the
pattern ("unknown", "pups or puppies") switches it off. Recall is knowingly partial.

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

Why it is one module: the three answer-level rules share the clause splitting, the reference
guard and the precedence that makes one reason per item; splitting them would scatter the one
contract ``docs/outcomes.md`` describes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from qaeval_core.errors import InputError
from qaeval_core.judge.alternatives import both_in_one_reference, list_hedge, names_hedge
from qaeval_core.metrics.extract import answer_kind, type_match
from qaeval_core.schema import Item
from qaeval_core.text.normalize import normalize
from qaeval_core.text.profiles import clean_answer, is_empty_answer
from qaeval_core.text.quantities import extract_numbers, numbers_equal

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
    "hedge",
    "judge_reasons",
    "refusal",
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


# -- shared helpers -----------------------------------------------------------------------------
_CLAUSE_BREAK = re.compile(
    r"(?<=[.!?;])\s+|\n+|\s*[,;:]\s*|\s+[-\u2013\u2014]\s+"
    r"|\s*\b(?:but|however|though|although|yet|nevertheless|nonetheless|instead)\b\s*",
    re.IGNORECASE,
)


def _clauses(text: str) -> list[str]:
    """The answer cut at sentence ends, commas and contrastive words ("I don't know why, but
    the answer is Paris" -> "I don't know why", "the answer is Paris")."""
    return [c.strip() for c in _CLAUSE_BREAK.split(text) if c and normalize(c)]


def _in_reference(norm_text: str, references: Sequence[str]) -> bool:
    """Whether a normalised reference occurs in ``norm_text`` on word boundaries."""
    padded = f" {norm_text} "
    for ref in references:
        nref = normalize(str(ref or ""))
        if nref and f" {nref} " in padded:
            return True
    return False


# -- not attempted ------------------------------------------------------------------------------
#: A whole answer (or clause) that is a refusal, on the normalised text (lower case, no
#: punctuation, no articles): "I don't know." -> "i don t know".
_WHOLE_REFUSAL = re.compile(
    r"(?:unknown|not known|unclear|no idea|no answer|n a|idk|no comment|pass|"
    r"i (?:do not|don t|dont) know|(?:i m |i am )?(?:not sure|unsure)|"
    r"(?:answer is |it is )?(?:unknown|not known)|cannot answer|can t answer|"
    r"(?:no|insufficient|not enough) (?:information|info|data|context)|unanswerable|"
    r"no (?:correct|right|definitive|clear) answer|cannot be determined|can t be determined)"
)
#: Placeholders that normalise to a letter or to nothing: "N/A", "n.a.", "-", "?".
_BLANK_MARK = re.compile(r"\s*(?:n\s*/\s*a|n\.\s*a\.?|-+|\?+)\s*\.?\s*", re.IGNORECASE)
#: A clause that refuses (searched in the cleaned text, case-insensitive).
_REFUSAL = re.compile(
    r"""\b(?:
      i\s+(?:do\s+not|don'?t|dont)\s+know
    | i\s*(?:am|'m)\s+(?:not\s+sure|unsure|sorry|afraid|unable|not\s+able|not\s+aware)
    | i\s+(?:have|had)\s+no\s+(?:idea|information|knowledge|data|way|access)
    | i\s+(?:do\s+not|don'?t|did\s+not|didn'?t)\s+have\s+(?:any|enough|the|access|information
        |real[-\s]time|specific|up[-\s]to[-\s]date|current|data|knowledge)
    | i\s+(?:cannot|can'?t|could\s+not|couldn'?t|am\s+unable\s+to|was\s+unable\s+to
        |am\s+not\s+able\s+to)\s+(?:answer|provide|determine|find|say|tell|know|confirm
        |verify|access|browse|give|identify|locate)
    | as\s+an\s+ai\b | as\s+a\s+(?:large\s+)?language\s+model | knowledge\s+cut-?off
    | (?:cannot|can'?t|could\s+not|couldn'?t)\s+be\s+(?:determined|answered|known|found
        |identified|verified)
    | (?:it\s+is|it'?s)\s+(?:not\s+possible|impossible|difficult|hard)\s+to\s+(?:determine|know
        |say|answer|tell|identify)
    | there\s+(?:is|are|was|were)\s+(?:no|not\s+enough|insufficient)\s+(?:information|data
        |answer|way\s+to|record|records|evidence|definitive|reliable|publicly|known|specific)
    | (?:not\s+enough|insufficient)\s+(?:information|context|data|details)
    | no\s+(?:information|data|details)\s+(?:is\s+|was\s+)?(?:available|provided|given)
    | (?:is|are|was|were|remains?)\s+(?:unknown|not\s+known|unclear|not\s+clear
        |not\s+(?:publicly\s+)?(?:available|specified|mentioned|provided|documented|recorded
        |disclosed))
    | it\s+depends\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
#: Politeness and advice around a refusal: neither an answer nor a refusal.
_FILLER = re.compile(
    r"^(?:sorry|i\s*(?:am|'m)\s+sorry|i\s+apologi[sz]e|apologies|unfortunately|thank|please"
    r"|you\s+(?:may|might|can|could|should|would)|i\s+(?:would\s+)?(?:recommend|suggest)"
    r"|(?:it\s+is|it'?s)\s+(?:best|recommended|advisable)|consult|check|refer|"
    r"(?:as\s+of|since)\s+my\s+(?:last|latest)|(?:in|with)\s+(?:the|this)\s+context|hmm|well"
    r"|(?:an\s+|the\s+)?(?:ai|assistant)|(?:a\s+)?(?:large\s+)?language\s+model)\b",
    re.IGNORECASE,
)


#: Typographic apostrophes ("I don’t know"), so the rules need only the ASCII one.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


def _readable(candidate: str | None) -> str:
    """The answer as a reader sees it (:func:`clean_answer`, robust profile: no markdown, HTML,
    citation markers or mojibake), with ASCII apostrophes. The rules read this text, not the
    raw one: formatting must not hide a refusal ("**I don't know.**") or an empty answer
    ("[1]", "<p></p>")."""
    return clean_answer(str(candidate or ""), "robust").translate(_APOSTROPHES)


def refusal(candidate: str, references: Sequence[str] = ()) -> str | None:
    """The evidence that ``candidate`` does not attempt an answer, else None.

    Not attempted: empty once cleaned (:func:`is_empty_answer`: no letter or digit left, so
    "[1]" is empty and "A" is not), or every clause is a refusal or politeness and at least
    one refuses. One clause that asserts something makes it an attempt ("I don't know
    why, but the answer is Paris"; "Unknown, probably Paris"), and so does a reference found in
    it (a reference may itself read "unknown"). Read on :func:`_readable` text.
    """
    if is_empty_answer(str(candidate or ""), "robust"):
        return "empty after cleaning"
    text = _readable(candidate)
    norm = normalize(text)
    if _in_reference(norm, references):
        return None
    if _WHOLE_REFUSAL.fullmatch(norm) or _BLANK_MARK.fullmatch(text):
        return text.strip()
    found: list[str] = []
    for clause in _clauses(text):
        m = _REFUSAL.search(clause)
        if m is not None or _WHOLE_REFUSAL.fullmatch(normalize(clause)):
            found.append(m.group(0) if m is not None else clause)
        elif not _FILLER.match(clause):
            return None  # a clause that says something: an attempt
    return "; ".join(dict.fromkeys(found)) or None


# -- hedged -------------------------------------------------------------------------------------
_NUM_WORDS = (
    "zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen"
    "|fifteen|sixteen|seventeen|eighteen|nineteen|twenty"
)
_NUM = rf"(?:\d[\d,]*(?:\.\d+)?|{_NUM_WORDS})"
_QUALIFIER = (
    r"(?:(?:maybe|perhaps|possibly|probably|about|around|approximately|early|late|mid|the)\s+)*"
)
#: "1945 or 1946", "4 or 6 feet", "late 18th or early 19th century"; units after each number.
_NUMBER_ALTERNATIVES = re.compile(
    rf"(?<![\w.])(?P<a>{_NUM})(?P<ua>[a-z°%]*)\s*(?P<uw>[^\W\d_]*)\s*,?\s+or\s+{_QUALIFIER}"
    rf"(?P<b>{_NUM})(?P<ub>[a-z°%]*)(?![\w.])(?:\s+(?P<vw>[^\W\d_]+))?",
    re.IGNORECASE,
)
#: "(B) or (C)", "option B or C", "answer is B or D".
_CHOICE_ALTERNATIVES = re.compile(
    r"\(([A-J])\)\s*,?\s*(?:or|and/or)\s+\(([A-J])\)"
    r"|\b(?:[Oo]ptions?|[Cc]hoices?|[Aa]nswer(?:\s+is)?|[Ll]etters?)\s+\(?([A-J])\)?"
    r"\s*,?\s*(?:or|and/or)\s+\(?([A-J])\)?(?![\w])"
)
#: "it is either Paris or Lyon", "Either Paris or Lyon", "Paris, or possibly Lyon",
#: "Paris, but it could also be Lyon".
_HEDGE_PHRASES = (
    re.compile(
        r"(?:^|\b(?:is|was|are|were|be|it'?s|answer|probably|likely)\s+)either\s+"
        r"(?P<a>[^,.;:]{1,60}?)\s*,?\s+or\s+(?P<b>[^,.;:]{1,60})",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?P<a>[^,.;:]{1,60}?)\s*,?\s+or\s+(?:possibly|perhaps|maybe|alternatively)"
        r"\s+(?P<b>[^,.;:]{1,60})",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?P<a>[^,.;:]{1,60}?)\s*[,;.]\s*(?:but|or|though)?\s*(?:it|the\s+answer)\s+"
        r"(?:could|might|may)\s+also\s+be\s+(?P<b>[^,.;:]{1,60})",
        re.IGNORECASE,
    ),
)
_UNIT_WORDS = frozenset(
    re.findall(
        r"\w+",
        """feet foot ft meters metres meter metre m km miles mile kg g lb lbs pounds years year
        months month weeks week days day hours hour minutes minute seconds percent degrees
        century centuries""",
    )
)


def _number_value(text: str) -> tuple[float, int] | None:
    nums = extract_numbers(text)
    return nums[0] if nums else None


def _number_hedge(text: str, references: Sequence[str]) -> str | None:
    for m in _NUMBER_ALTERNATIVES.finditer(text):
        a, b = _number_value(m.group("a")), _number_value(m.group("b"))
        if a is None or b is None or numbers_equal(a, b):
            continue
        ua, ub = m.group("ua").lower(), m.group("ub").lower()
        word = m.group("uw").lower()
        if word and word not in _UNIT_WORDS:
            continue  # "4 apples or 6" reads as a list, not two readings of one number
        after = (m.group("vw") or "").lower()
        if (ua and ub and ua != ub) or (word and after in _UNIT_WORDS and after != word):
            continue  # "37°c or 98°f", "one year or 365.25 days": one value, two units
        if both_in_one_reference(m.group("a"), m.group("b"), references):
            continue
        return text[m.start() : m.end("ub")]
    return None


def _choice_hedge(text: str) -> str | None:
    for m in _CHOICE_ALTERNATIVES.finditer(text):
        letters = [g for g in m.groups() if g]
        if len(set(letters)) >= 2:
            return m.group(0)
    return None


def _phrase_hedge(text: str, references: Sequence[str]) -> str | None:
    for pattern in _HEDGE_PHRASES:
        for m in pattern.finditer(text):
            a, b = m.group("a").strip(), m.group("b").strip()
            if not normalize(a) or not normalize(b) or normalize(a) == normalize(b):
                continue
            if both_in_one_reference(a, b, references):
                continue
            return m.group(0).strip()
    return None


def hedge(candidate: str, references: Sequence[str] = (), question: str = "") -> str | None:
    """The alternatives ``candidate`` offers when it gives several mutually exclusive answers,
    else None: different numbers ("1945 or 1946"; not one value in two units), different
    choice letters ("(B) or (C)"), an explicit hedge ("either X or Y", "X, or possibly Y",
    "X, but it could also be Y"), or, when ``question`` asks for one entity, a reference and
    another candidate joined by "or" ("Michelangelo or Leonardo da Vinci",
    :func:`.alternatives.names_hedge`), or a list of three or more names ending in "or" or
    joined by slashes ("Jane Austen, Charlotte Bronte or Emily Bronte", "A/B/C",
    :func:`.alternatives.list_hedge`). Alternatives one reference lists together do not count."""
    text = str(candidate or "")
    low = text.lower()
    if " or " not in f" {low} " and "could also be" not in low and text.count("/") < 2:
        return None
    return (
        _number_hedge(text, references)
        or _choice_hedge(text)
        or _phrase_hedge(text, references)
        or list_hedge(text, str(question or ""), references)  # the whole list as evidence
        or names_hedge(text, str(question or ""), references)
    )


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
