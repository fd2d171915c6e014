"""What the LLM judge is asked, and how its answer is read as a probability.

Two prompts, each a versioned pair of chat messages. The instruction (system message) is the
same for every item, and the user message puts what the items of one question share first
(question, references) and the candidate after it, so a backend that keeps its key/value cache
evaluates the instruction once and the question once per question
(:func:`question_prefix`); only the candidate's tokens are new per item.

* ``naqt`` (default): the NAQT-derived rules the annotators use (:data:`qaeval_core.schema
  .RULES`, condensed), then "Is the candidate answer correct? Answer yes or no." P(correct) is
  P(yes) / (P(yes) + P(no)) over the first answer token, summing the case and spacing variants
  of each word among the top log-probabilities.
* ``lave``: LAVE's task description and rating scale (papers/lave.txt, section 4), answered
  with one digit; the score is the expected LAVE score (P(2) / 2 + P(3)) / (P(1) + P(2) + P(3)),
  LAVE's ``(rating - 1) / 2`` averaged over the model's belief instead of its greedy pick.

Bump a prompt's version whenever its text or its reading changes: the version is part of the
verdict cache key and of a judge file, so an old probability is never reused for a new prompt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qaeval_core.schema import Item

__all__ = [
    "PROMPTS",
    "VerdictPrompt",
    "get_prompt",
    "probability_from_logprobs",
    "probability_from_text",
    "question_prefix",
]

Message = dict[str, str]

#: Longest candidate (characters) sent to the LLM; a longer answer keeps its first third and
#: last two thirds around " ... " and is flagged. It bounds the cost of one item (2,000
#: characters are ~500 tokens, seconds on a CPU), and a long answer usually states its final
#: answer at the start or the end.
MAX_CANDIDATE_CHARS = 2000
MAX_REFERENCE_CHARS = 1000
#: The line that introduces the candidate: everything before its colon is the question's part.
_CANDIDATE_LINE = "\nCandidate answer:"

_NAQT_SYSTEM = """You grade answers to questions. Decide whether the candidate answer is \
correct, using the reference answers and what you know.
Rules:
1. Widely recognised aliases or alternative names of the answer are correct.
2. Exact dates, years and numbers are required unless the question asks for an approximation.
3. Fewer details are fine if the essential information the question asks for is there.
4. Extra details are fine if they do not contradict the question or the reference.
5. High word overlap alone is not enough: the meaning must be the same.
6. An irrelevant answer, or one that names several different candidates for the asked \
answer, is incorrect.
7. An answer not in the reference list can still be correct if it truly answers the question.
Reply with one word: yes or no."""

_LAVE_SYSTEM = """You are given a question, a set of gold-standard reference answers written \
by experts, and a candidate answer. Please rate the accuracy of the candidate answer for the \
question considering the reference answers. Use a scale of 1-3, with 1 indicating an \
incorrect or irrelevant answer, 2 indicating an ambiguous or incomplete answer, and 3 \
indicating a correct answer. Reply with the rating only: 1, 2 or 3."""


def _clip(text: str, limit: int) -> tuple[str, bool]:
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text, False
    head = limit // 3
    return text[:head] + " ... " + text[len(text) - (limit - head) :], True


@dataclass(frozen=True)
class VerdictPrompt:
    """One prompt: its id, version, instruction and the answer words it reads."""

    name: str
    version: str
    system: str
    question_line: str
    #: answer word -> its score (yes/no: 1/0; LAVE ratings: 0, 0.5, 1)
    answers: Mapping[str, float]

    @property
    def key(self) -> str:
        """``name-version``: what a cache entry and a judge file record."""
        return f"{self.name}-{self.version}"

    def messages(self, item: Item) -> tuple[list[Message], bool]:
        """The chat messages for one item, and whether the candidate was cut."""
        candidate, cut = _clip(item.candidate or "", MAX_CANDIDATE_CHARS)
        refs = [_clip(str(r), MAX_REFERENCE_CHARS)[0] for r in item.references if str(r).strip()]
        question, _ = _clip(item.question or "", MAX_REFERENCE_CHARS)
        user = (
            f"Question: {question}\n"
            f"Reference answers: {' | '.join(refs)}\n"
            f"{_CANDIDATE_LINE[1:]} {candidate}\n"
            f"{self.question_line}"
        )
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}], cut


PROMPTS: dict[str, VerdictPrompt] = {
    "naqt": VerdictPrompt(
        "naqt",
        "1",
        _NAQT_SYSTEM,
        "Is the candidate answer correct? Answer yes or no.",
        {"yes": 1.0, "no": 0.0},
    ),
    "lave": VerdictPrompt(
        "lave",
        "1",
        _LAVE_SYSTEM,
        "Rating (1, 2 or 3):",
        {"1": 0.0, "2": 0.5, "3": 1.0},
    ),
}


def question_prefix(content: str) -> str | None:
    """The part of a user message every candidate of its question shares: the text up to and
    including "Candidate answer:" (question and references are on one line each, so the first
    such line is the candidate's). None for a message without it (another layout).

    >>> question_prefix("Question: q\\nReference answers: a\\nCandidate answer: b\\nOk?")
    'Question: q\\nReference answers: a\\nCandidate answer:'
    """
    at = content.find(_CANDIDATE_LINE)
    return None if at < 0 else content[: at + len(_CANDIDATE_LINE)]


def get_prompt(name: str) -> VerdictPrompt:
    """The prompt called ``name``; a clear error lists the valid ones."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise ValueError(
            f"Unknown LLM judge prompt {name!r}; valid: {', '.join(sorted(PROMPTS))}."
        ) from None


def _word(token: str) -> str:
    return token.strip().strip(".:,!\"'*").lower()


def probability_from_logprobs(
    prompt: VerdictPrompt, top: Sequence[tuple[str, float]]
) -> float | None:
    """The expected answer score from the first token's top log-probabilities, or None when no
    answer word is among them (the caller records it as unreadable, never as a guess)."""
    mass: dict[str, float] = {}
    for token, logprob in top:
        word = _word(token)
        if word in prompt.answers and logprob is not None and math.isfinite(logprob):
            mass[word] = mass.get(word, 0.0) + math.exp(logprob)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return sum(prompt.answers[w] * p for w, p in mass.items()) / total


def probability_from_text(prompt: VerdictPrompt, text: str) -> float | None:
    """The answer word's score when an endpoint gives text but no log-probabilities."""
    words = [_word(w) for w in (text or "").split()]
    for word in words:
        if word in prompt.answers:
            return prompt.answers[word]
    return None
