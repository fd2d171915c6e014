"""The answer knowledge a judge was fitted with: a snapshot, saved in its file.

A judge calibrated with knowledge (``qaeval calibrate --with-knowledge``) reads two inputs that
are not metric scores: the similarity of a candidate to its question's accepted aliases and to
its known wrong answers (:mod:`qaeval_core.knowledge.similarity`). They depend on researchers'
decisions, which change, so they are never stored as scores (a stored score is keyed by its
metric's configuration and would go stale silently); and a judge applied elsewhere, without the
store, must compute them exactly as when it was fitted. So the judge file records the knowledge
itself, per question, with where it came from (dataset and knowledge version), and the inputs
are computed from that snapshot at scoring time. New rows are nobody's labels, so nothing is
left out for them (calibration leaves each row's own label out: no leakage).

A row finds its question by the calibration's key (:func:`qaeval_core.questions
.question_groups`: the question id when the row carries one, else the text); a row whose id the
snapshot does not know falls back to its question text when exactly one snapshot question has
that text (a file of new answers often lacks the ids the stored dataset had).

Format (the file's ``knowledge`` field; absent for a judge fitted without knowledge)::

    {"columns": ["alias_similarity", "wrong_similarity"],   # the inputs the model reads
     "dataset": "nq301", "knowledge_version": 12,           # the store's decision count
     "n_labels": 300,                                      # the labels the knowledge rests on
     "questions": [{"question_key": "q:who wrote hamlet?", "question": "Who wrote Hamlet?",
                    "aliases": ["the bard"], "wrong": ["marlowe"]}]}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from qaeval_core.errors import ConfigError
from qaeval_core.knowledge.overlay import AnswerKnowledge
from qaeval_core.knowledge.similarity import SIMILARITY_COLUMNS, answer_similarity
from qaeval_core.questions import question_groups, question_text_key
from qaeval_core.schema import Item

__all__ = ["JudgeKnowledge"]


@dataclass(frozen=True)
class JudgeKnowledge:
    """Accepted aliases and known wrong answers per question key, as fitted (module docstring).

    ``questions`` maps each key to its question text (for the text fallback); ``columns`` are
    the similarity inputs the judge's model reads, in :data:`SIMILARITY_COLUMNS` order.
    """

    answers: AnswerKnowledge
    questions: Mapping[str, str]
    columns: tuple[str, ...] = tuple(SIMILARITY_COLUMNS)
    dataset: str | None = None
    knowledge_version: int | None = None
    n_labels: int | None = None
    _by_text: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        cols = tuple(self.columns)
        if (
            not cols
            or len(set(cols)) != len(cols)
            or any(c not in SIMILARITY_COLUMNS for c in cols)
        ):
            raise ConfigError(
                f"knowledge.columns must be some of {SIMILARITY_COLUMNS}, each once; got "
                f"{list(cols)}."
            )
        object.__setattr__(self, "columns", tuple(c for c in SIMILARITY_COLUMNS if c in cols))
        unknown = self.answers.questions() - set(self.questions)
        if unknown:
            raise ConfigError(f"knowledge names no question text for {sorted(unknown)[:3]}.")
        texts = Counter(question_text_key(q) for q in self.questions.values())
        by_text = {
            question_text_key(q): k
            for k, q in self.questions.items()
            if texts[question_text_key(q)] == 1
        }
        object.__setattr__(self, "_by_text", by_text)

    def with_columns(self, columns: Sequence[str]) -> JudgeKnowledge:
        """The same snapshot, read through only ``columns`` (after the fit pruned the rest)."""
        return JudgeKnowledge(
            self.answers,
            self.questions,
            tuple(columns),
            self.dataset,
            self.knowledge_version,
            self.n_labels,
        )

    def counts(self) -> tuple[int, int, int]:
        """(accepted aliases, known wrong answers, questions) in the snapshot."""
        n_alias = sum(len(v) for v in self.answers.aliases.values())
        n_wrong = sum(len(v) for v in self.answers.wrong.values())
        return n_alias, n_wrong, len(self.answers.questions())

    def _key(self, key: str, question: str) -> str:
        if key in self.questions:
            return key
        return self._by_text.get(question_text_key(question), key)

    def similarity(self, items: Sequence[Item]) -> pd.DataFrame:
        """The :attr:`columns` per item, against the whole snapshot (nothing left out)."""
        items = list(items)
        keys = question_groups(items) if items else []
        rows = []
        for item, key in zip(items, keys, strict=True):
            k = self._key(str(key), item.question)
            values = {
                "alias_similarity": answer_similarity(
                    item.candidate, self.answers.aliases.get(k, ())
                ),
                "wrong_similarity": answer_similarity(
                    item.candidate, self.answers.wrong.get(k, ())
                ),
            }
            rows.append([values[c] for c in self.columns])
        return pd.DataFrame(rows, columns=list(self.columns), dtype=float)

    def to_dict(self) -> dict[str, Any]:
        keys = sorted(self.answers.questions())
        return {
            "columns": list(self.columns),
            "dataset": self.dataset,
            "knowledge_version": self.knowledge_version,
            "n_labels": self.n_labels,
            "questions": [
                {
                    "question_key": k,
                    "question": self.questions[k],
                    "aliases": list(self.answers.aliases.get(k, ())),
                    "wrong": list(self.answers.wrong.get(k, ())),
                }
                for k in keys
            ],
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "knowledge") -> JudgeKnowledge:
        """The snapshot, every field checked (a malformed one is refused, naming the field)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where} must be an object or absent.")
        columns = data.get("columns")
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise ConfigError(f"{where}.columns must be a list of input names.")
        if data.get("dataset") is not None and not isinstance(data["dataset"], str):
            raise ConfigError(f"{where}.dataset must be a string or null.")
        for key in ("knowledge_version", "n_labels"):
            value = data.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ConfigError(f"{where}.{key} must be an integer >= 0 or null, got {value!r}.")
        raw = data.get("questions")
        if not isinstance(raw, list) or not raw:
            raise ConfigError(f"{where}.questions must be a non-empty list.")
        aliases: dict[str, tuple[str, ...]] = {}
        wrong: dict[str, tuple[str, ...]] = {}
        texts: dict[str, str] = {}
        for i, entry in enumerate(raw):
            at = f"{where}.questions[{i}]"
            if not isinstance(entry, Mapping):
                raise ConfigError(f"{at} must be an object.")
            key, question = entry.get("question_key"), entry.get("question")
            if not isinstance(key, str) or not key:
                raise ConfigError(f"{at}.question_key must be a non-empty string.")
            if key in texts:
                raise ConfigError(f"{at}.question_key {key!r} appears twice.")
            if not isinstance(question, str):
                raise ConfigError(f"{at}.question must be a string.")
            found = []
            for kind in ("aliases", "wrong"):
                answers = entry.get(kind)
                if not isinstance(answers, list) or not all(
                    isinstance(a, str) and a.strip() for a in answers
                ):
                    raise ConfigError(f"{at}.{kind} must be a list of non-empty strings.")
                found.append(tuple(answers))
            if not any(found):
                raise ConfigError(f"{at} has neither aliases nor wrong answers.")
            texts[key] = question
            if found[0]:
                aliases[key] = found[0]
            if found[1]:
                wrong[key] = found[1]
        return cls(
            AnswerKnowledge(aliases, wrong),
            texts,
            tuple(columns),
            data.get("dataset"),
            data.get("knowledge_version"),
            data.get("n_labels"),
        )
