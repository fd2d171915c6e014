"""Answer-shape features for calibrated judges: numbers that agree or conflict, length, hedging.

The reference-based metrics miss two things annotators check first (PANDA rule 2, "numerical
information"): whether the candidate's *numbers* equal the reference's once formatting is
ignored ("264g" vs "264", "1.6%" vs "0.016", "7.97 x 10^3" vs "7970", "2,700" vs "2700"), and
whether a candidate that does give a number gives a *different* one (a wrong year is wrong even
when every other word overlaps). Token metrics see "264g" and "264" as different tokens and a
wrong year as a near-perfect overlap.

These are not judges on their own: they are inputs that a calibrated combiner (the stacker)
weighs against the labels. They are registered as metrics so a judge config can name them and
``qaeval score`` can compute them like any other score; all are cheap, pure Python. How numbers
are read and compared (formats, precision, LaTeX, units) is
:mod:`qaeval_core.text.numbers` and :mod:`qaeval_core.text.quantities`; what a refusal is,
:mod:`qaeval_core.text.answer_rules`.

* ``number_match``: share of a reference's numbers found among the candidate's numbers (max over
  references); 0 when the reference has no number.
* ``number_agree``: 1 - conflict, where conflict means the reference has numbers, the candidate
  has numbers, and none of them matches any reference number (max over references of
  agreement); 1 when there is nothing to compare.
* ``brevity``: ``1 / (1 + log1p(n_tokens))`` of the candidate; long chatty answers score low
  (they tend to contain the reference by accident or hedge).
* ``no_hedge``: 0 when the candidate is a refusal (:func:`~qaeval_core.text.answer_rules.refusal`,
  the rule of the judge's ``not_attempted``: "I don't know", "cannot be determined", an empty
  answer), else 1. The name is kept for the judge files that use it; until version 2 it read a
  looser pattern of its own that also fired on "the unknown" or "there was no publication".
* ``number_closeness``: graded agreement of the numbers: per reference number, the best
  closeness to a candidate number (relative error 0.1% -> 1, 1% -> 0.5, 10% -> 0; converted
  between known units of one dimension, "60.68 J" for "45 ft-lb"), averaged over the
  reference's numbers, max over references; simple LaTeX (``\\frac``, ``\\sqrt``, ``\\pi``) and
  Unicode superscripts are read, and two different small integers (years, counts) never agree.
* ``number_closeness_scaled``: the same, also accepting a factor 10^(3k) (a unit or SI prefix
  left unsaid: "24.5" for "0.0245 kPa"); a weaker input next to the strict one.

number_match and number_agree compare exactly at the written precision (a rounded answer is
accepted, a different year is not) and attempt no ranges and no unit conversions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item
from qaeval_core.text.answer_rules import refusal
from qaeval_core.text.numbers import extract_numbers
from qaeval_core.text.profiles import (
    READER_VERSION,
    ProfileParam,
    check_profile,
    clean_answer,
    profile_text,
    reader_text,
)
from qaeval_core.text.quantities import number_closeness, number_features
from qaeval_core.text.squad import tokens

__all__ = [
    "ROBUST_TEXTS",
    "NumberMatch",
    "NumberAgree",
    "Brevity",
    "NoHedge",
    "NumberCloseness",
    "NumberClosenessScaled",
]

#: How an answer-shape input reads answers at ``normalize="robust"``: ``"canonical"`` (the
#: robust canonical text: numbers and dates respelled) or ``"reader"`` (the reader text:
#: formatting removed, glue repaired, footnote digits dropped, numbers as written).
ROBUST_TEXTS = ("canonical", "reader")


class _Feature(ProfileParam, Metric):
    """Shared plumbing: a pure per-item function, a fixed threshold of 0.5. With
    ``normalize="robust"`` the candidate and references are read as the robust profile's
    canonical text (no citation marker counted as a number, "twenty-five" read as 25), or with
    ``robust_text="reader"`` as the :func:`~qaeval_core.text.profiles.reader_text` (formatting
    removed, numbers as written): what calibration reads by default, because the respelled
    numbers cost the judge accuracy on MMLU-Pro (issue 33). ``robust_text`` is left out of the
    config at its default, so stored scores and judge files keep their hash and meaning."""

    kind = "lexical"
    version = "1"

    def __init__(
        self, *, threshold: float = 0.5, normalize: str = "spaced", robust_text: str = "canonical"
    ) -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)
        if robust_text not in ROBUST_TEXTS:
            raise ConfigError(
                f"robust_text must be one of {', '.join(ROBUST_TEXTS)}, got {robust_text!r}.",
                param="robust_text",
            )
        self.robust_text = robust_text

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        params = cfg.get("params", {})
        if params.get("robust_text") == "canonical":
            params.pop("robust_text")
        elif params.get("normalize") == "robust":
            cfg["reader"] = READER_VERSION  # the reader text's glue repair may change
        return cfg

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _read(self, item: Item) -> Item:
        if self.robust_text == "reader":
            return replace(
                item,
                candidate=reader_text(str(item.candidate or ""), item.references),
                references=tuple(clean_answer(str(r)) for r in item.references),
            )
        return replace(
            item,
            candidate=profile_text(str(item.candidate or ""), "robust"),
            references=tuple(profile_text(str(r), "robust") for r in item.references),
        )

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        if self.normalize == "robust":
            items = [self._read(it) for it in items]
        pairs = [self._one(it) for it in items]
        scores = np.array([p[0] for p in pairs], dtype=float)
        return MetricResult(scores, self.decide(scores), [p[1] for p in pairs])


@register
class NumberMatch(_Feature):
    """Share of the reference's numbers found in the candidate (format-insensitive)."""

    id = "number_match"
    description = "share of reference numbers found in the candidate, ignoring number format"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        match, _ = number_features(item.candidate, item.references)
        nums = [v for v, _ in extract_numbers(item.candidate or "")][:20]
        return match, {"candidate_numbers": nums}


@register
class NumberAgree(_Feature):
    """0 when the candidate gives numbers and none equals a reference number, else 1."""

    id = "number_agree"
    description = "1 unless the candidate's numbers all differ from the reference's"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        _, agree = number_features(item.candidate, item.references)
        return agree, {}


@register
class Brevity(_Feature):
    """1 / (1 + log1p(candidate tokens)): short answers near 1, paragraphs near 0.2."""

    id = "brevity"
    description = "shortness of the candidate (a calibration input, not a judge)"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        n = len(tokens(item.candidate or ""))
        return 1.0 / (1.0 + math.log1p(n)), {"tokens": n}


@register
class NoHedge(_Feature):
    """0 when the candidate is a refusal (the judge's ``not_attempted`` rule), else 1."""

    id = "no_hedge"
    version = "2"  # 2: the refusal rule of text/answer_rules.py instead of a pattern of its own
    description = "0 for refusals ('I don't know', 'cannot be determined', an empty answer)"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        found = refusal(item.candidate, [str(r) for r in item.references])
        return (0.0 if found is not None else 1.0), {}


@register
class NumberCloseness(_Feature):
    """Graded agreement of the candidate's numbers with the reference's (relative error, units
    converted); see :func:`~qaeval_core.text.quantities.number_closeness`."""

    id = "number_closeness"
    description = "how close the candidate's numbers are to the reference's (1% error = 0.5)"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        return number_closeness(item.candidate, item.references), {}


@register
class NumberClosenessScaled(_Feature):
    """:class:`NumberCloseness` that also accepts a value off by a factor 10^(3k) (a unit or SI
    prefix left unsaid): a weaker input next to the strict one."""

    id = "number_closeness_scaled"
    description = "number_closeness that also accepts values off by 10^3, 10^6 or 10^9"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        return number_closeness(item.candidate, item.references, scaled=True), {}
