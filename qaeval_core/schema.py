"""The shared vocabulary: items, the 3-point label scale and the adjudication rules.

Everything else (store, metrics, app, calibration) speaks in these types, so they stay small and
free of heavy imports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from qaeval_core.errors import ConfigError

__all__ = [
    "Item",
    "LabelValue",
    "parse_label_value",
    "Rule",
    "RULES",
    "MODEL_SEPARATOR",
    "content_hash",
    "split_models",
    "join_models",
]

#: Several QA systems can give the same answer; their names are stored joined by this string.
MODEL_SEPARATOR = " | "


class LabelValue(IntEnum):
    """The 3-point human scale (SMILE, LAVE). Binary correct = CORRECT only."""

    INCORRECT = 0
    UNCLEAR = 1
    CORRECT = 2

    @property
    def title(self) -> str:
        return {0: "clearly incorrect", 1: "unclear", 2: "clearly correct"}[int(self)]


def parse_label_value(value: Any, what: str = "Label value") -> int:
    """``value`` as a 3-point label (0, 1 or 2); anything else is a :class:`ConfigError` that
    names ``what`` (annotators' labels and researchers' final labels share the check).

    >>> parse_label_value("2"), LabelValue(parse_label_value(0.0)).title
    (2, 'clearly incorrect')
    """
    try:
        return int(LabelValue(int(value)))
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"{what} must be 0 (clearly incorrect), 1 (unclear) or 2 (clearly correct); "
            f"got {value!r}."
        ) from exc


@dataclass(frozen=True)
class Rule:
    """One NAQT-derived adjudication rule (PANDA Table 2) with an example verdict."""

    number: int
    name: str
    description: str
    example: str


RULES: tuple[Rule, ...] = (
    Rule(
        1,
        "Entity aliasing",
        "Widely recognised aliases, pseudonyms or alternative names of the answer entity are "
        "acceptable.",
        "Ref 'Kate Mulgrew', answer 'Katherine Maria Mulgrew': correct. Ref 'DMV', answer "
        "'Department of Mobile Vehicles': incorrect.",
    ),
    Rule(
        2,
        "Numerical information",
        "Exact dates, years and numbers are required unless the question asks for an "
        "approximation.",
        "Ref '18 feet', answer '16-20 feet': incorrect. Ref '1945', answer 'Sep 2, 1945': correct.",
    ),
    Rule(
        3,
        "Less details",
        "Fewer details are fine if the essential information the question asks for is there "
        "(specificity 1).",
        "Ref 'The Late Late Show with James Corden', answer 'The Late Show': incorrect.",
    ),
    Rule(
        4,
        "More details",
        "The answer contains the reference or an equivalent, and the extra information does not "
        "contradict the question or reference (specificity 2).",
        "Ref 'Paris', answer 'It is Paris, on the Seine.': correct.",
    ),
    Rule(
        5,
        "Semantic equivalence",
        "High word overlap does not establish equivalence; the answer must be contextually and "
        "semantically accurate.",
        "Ref 'a boulder', answer 'a rock': incorrect.",
    ),
    Rule(
        6,
        "Irrelevant information",
        "An answer irrelevant to the question, or an inaccurate description, is incorrect.",
        "Q 'Who wrote Hamlet?', answer 'Hamlet is a tragedy set in Denmark.': incorrect.",
    ),
    Rule(
        7,
        "Other possible answers",
        "Correct although not in the reference list.",
        "Q 'Who won the NBA title?' ref '2021 Bucks', answer 'the Warriors won in 2022': "
        "correct for a later season.",
    ),
)


def split_models(value: str | None) -> list[str]:
    """The QA-model names stored in one ``qa_model`` string.

    >>> split_models("gpt-4 | llama"), split_models(None)
    (['gpt-4', 'llama'], [])
    """
    if not value:
        return []
    return [m.strip() for m in value.split(MODEL_SEPARATOR.strip()) if m.strip()]


def join_models(value: str | Sequence[str] | None) -> str | None:
    """Store one or several QA-model names as one string (None when there are none).

    >>> join_models(["gpt-4", " llama ", None]), join_models([]) is None
    ('gpt-4 | llama', True)
    """
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    names = [str(v).strip() for v in value if v is not None and str(v).strip()]
    return MODEL_SEPARATOR.join(names) if names else None


def content_hash(
    question: str,
    references: Sequence[str],
    candidate: str,
    context: str | None = None,
    qa_model: str | None = None,
) -> str:
    """A stable SHA-256 of what makes an item the same item (used for idempotent imports)."""
    payload = json.dumps(
        [question, list(references), candidate, context or "", qa_model or ""],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Item:
    """One question, its gold references and a candidate answer to judge.

    ``choices`` are the options of a multiple-choice item; ``wrong_answers`` are known
    incorrect answers (both feed A-VERT's wrong group).

    Slotted: every metric reads a few attributes of every item of a batch, and without a
    per-instance ``__dict__`` each read is one memory access (reading two attributes of 10,000
    items that are not in the CPU cache took 1.6 ms instead of 2.2 ms).

    Lists are kept as tuples, so an item is hashable and cannot change:

    >>> item = Item("Capital of France?", ["Paris", "City of Light"], "It is Paris.")
    >>> item.references
    ('Paris', 'City of Light')
    >>> item == Item("Capital of France?", ("Paris", "City of Light"), "It is Paris.")
    True
    """

    question: str
    references: tuple[str, ...]
    candidate: str
    context: str | None = None
    choices: tuple[str, ...] | None = None
    wrong_answers: tuple[str, ...] | None = None
    id: str | None = None
    dataset: str | None = None
    qa_model: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        # Accept lists for convenience but keep the dataclass hashable and immutable.
        object.__setattr__(self, "references", tuple(self.references))
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if self.wrong_answers is not None:
            object.__setattr__(self, "wrong_answers", tuple(self.wrong_answers))
