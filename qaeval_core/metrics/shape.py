"""Answer-shape features for calibrated judges: numbers that agree or conflict, length, hedging.

The reference-based metrics miss two things annotators check first (PANDA rule 2, "numerical
information"): whether the candidate's *numbers* equal the reference's once formatting is
ignored ("264g" vs "264", "1.6%" vs "0.016", "7.97 x 10^3" vs "7970", "2,700" vs "2700"), and
whether a candidate that does give a number gives a *different* one (a wrong year is wrong even
when every other word overlaps). Token metrics see "264g" and "264" as different tokens and a
wrong year as a near-perfect overlap.

These are not judges on their own: they are inputs that a calibrated combiner (the stacker)
weighs against the labels. They are registered as metrics so a judge config can name them and
``qaeval score`` can compute them like any other score; all are cheap, pure Python.

* ``number_match``: share of a reference's numbers found among the candidate's numbers (max over
  references); 0 when the reference has no number.
* ``number_agree``: 1 - conflict, where conflict means the reference has numbers, the candidate
  has numbers, and none of them matches any reference number (max over references of
  agreement); 1 when there is nothing to compare.
* ``brevity``: ``1 / (1 + log1p(n_tokens))`` of the candidate; long chatty answers score low
  (they tend to contain the reference by accident or hedge).
* ``no_hedge``: 0 when the candidate refuses or hedges ("I don't know", "cannot be
  determined", "there is no ...", "I'm sorry"), else 1.

Numbers: integers and decimals with thousands separators, signs, scientific notation
(``1.2e-3``, ``7.97 x 10^3``, ``7.97$10^3$``, ``10^{-3}``), percentages (also compared as
fractions), digits glued to units ("264g", "5km"), and the number words zero-twenty. Two numbers
are equal at the precision of the less precise one (half a unit of its last significant digit),
so a rounded answer is accepted but a different year is not; ranges and unit conversions are
not attempted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

import numpy as np

from qaeval_core.metrics._support.profiles import ProfileParam, check_profile, profile_text
from qaeval_core.metrics._support.text import tokens
from qaeval_core.metrics.base import Metric, MetricResult, register
from qaeval_core.schema import Item

__all__ = [
    "extract_numbers",
    "numbers_equal",
    "number_features",
    "is_hedge",
    "NumberMatch",
    "NumberAgree",
    "Brevity",
    "NoHedge",
]

_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_WORDS = {w: i for i, w in enumerate(_NUMBER_WORDS.split())}
_TIMES = r"(?:\s*(?:x|×|\*|\\times|\\cdot|·|\$)\s*)"
_NUM = r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+"
_SCI = re.compile(
    rf"(?P<mant>{_NUM})(?:{_TIMES}10\s*\^\s*\{{?\s*(?P<exp1>[-+−]?\d+)\s*\}}?"
    rf"|[eE](?P<exp2>[-+−]?\d+)\b)"
)
_POW10 = re.compile(r"(?<![\d.])10\s*\^\s*\{?\s*(?P<exp>[-+−]?\d+)\s*\}?")
_PLAIN = re.compile(rf"(?P<num>{_NUM})(?P<pct>\s*(?:%|\\%|percent\b))?")
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)
_HEDGES = re.compile(
    r"\b(i\s*(?:do not|don't|dont)\s+know|i\s*(?:am|'m)\s+(?:not sure|sorry|unable)|"
    r"cannot be (?:determined|answered|known)|can't be (?:determined|answered)|"
    r"(?:is|are) (?:not|no) (?:known|clear|available|specified)|unknown|not enough information|"
    r"no (?:information|way to know|definitive answer|single answer)|"
    r"there (?:is|are|was|were) no\b|"
    r"as an ai\b|i cannot|i can't|unable to (?:answer|determine|provide))",
    re.IGNORECASE,
)


def _to_float(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _sig_digits(text: str) -> int:
    """Significant digits written: leading zeros dropped; an integer's digits all count."""
    digits = re.sub(r"[^0-9.]", "", text)
    digits = digits.replace(".", "").lstrip("0") if "." in digits else digits.lstrip("0")
    return max(1, len(digits))


@lru_cache(maxsize=100_000)
def extract_numbers(text: str) -> tuple[tuple[float, int], ...]:
    """Every number in the text as ``(value, significant digits)``, in order of appearance.

    A percentage yields two readings, ``x`` and ``x / 100``.
    """
    if not text:
        return ()
    out: list[tuple[float, int]] = []
    taken = [False] * (len(text) + 1)

    def mark(a: int, b: int) -> bool:
        if any(taken[a:b]):
            return False
        for k in range(a, b):
            taken[k] = True
        return True

    for m in _SCI.finditer(text):
        exp = m.group("exp1") or m.group("exp2")
        try:
            value = _to_float(m.group("mant")) * 10.0 ** int(exp.replace("−", "-"))
        except (ValueError, OverflowError):
            continue
        if mark(m.start(), m.end()):
            out.append((value, _sig_digits(m.group("mant"))))
    for m in _POW10.finditer(text):
        if mark(m.start(), m.end()):
            out.append((10.0 ** int(m.group("exp").replace("−", "-")), 1))
    for m in _PLAIN.finditer(text):
        if not mark(m.start(), m.end()):
            continue
        try:
            value = _to_float(m.group("num"))
        except ValueError:
            continue
        sig = _sig_digits(m.group("num"))
        out.append((value, sig))
        if m.group("pct"):
            out.append((value / 100.0, sig))
    for m in _WORD.finditer(text):
        if mark(m.start(), m.end()):
            out.append((float(_WORDS[m.group(1).lower()]), 15))
    return tuple((v, s) for v, s in out if math.isfinite(v))


def numbers_equal(a: tuple[float, int], b: tuple[float, int]) -> bool:
    """Equal at the precision of the less precise of the two.

    ``0.070095`` equals ``7.01%`` (read as 0.0701: three significant digits) and ``7970`` equals
    ``7.97 x 10^3``, but ``1984`` differs from ``1990`` (integers are exact).
    """
    (va, sa), (vb, sb) = a, b
    if va == vb:
        return True
    if va == 0 or vb == 0 or (va > 0) != (vb > 0):
        return False
    # The less precise number decides the unit of its last significant digit.
    v, sig = (va, sa) if sa <= sb else (vb, sb)
    unit = 10.0 ** (math.floor(math.log10(abs(v))) - sig + 1)
    return abs(va - vb) <= unit / 2 * (1 + 1e-9)


def number_features(candidate: str, references: Sequence[str]) -> tuple[float, float]:
    """``(match, agree)`` as described in the module docstring, max over references."""
    cand = extract_numbers(candidate or "")
    best_match, best_agree = 0.0, 0.0
    any_ref = False
    for ref in references:
        nums = extract_numbers(str(ref or ""))
        if not nums:
            best_agree = 1.0
            continue
        any_ref = True
        hits = [any(numbers_equal(r, c) for c in cand) for r in nums]
        # A percentage gives two readings of which at most one can match: count one per value.
        distinct = len({round(v, 12) for v, _ in nums}) - sum(
            1 for v, _ in nums if any(abs(v * 100 - w) < 1e-9 * max(1, abs(w)) for w, _ in nums)
        )
        share = min(1.0, sum(hits) / max(1, distinct))
        best_match = max(best_match, share)
        best_agree = max(best_agree, 1.0 if not cand or any(hits) else 0.0)
    if not any_ref:
        best_agree = 1.0
    return best_match, best_agree


def is_hedge(candidate: str) -> bool:
    """True when the candidate refuses or hedges instead of answering."""
    return bool(_HEDGES.search(candidate or ""))


class _Feature(ProfileParam, Metric):
    """Shared plumbing: a pure per-item function, a fixed threshold of 0.5. With
    ``normalize="robust"`` the candidate and references are read as the robust profile's
    canonical text (no citation marker counted as a number, "twenty-five" read as 25)."""

    kind = "lexical"
    version = "1"

    def __init__(self, *, threshold: float = 0.5, normalize: str = "squad") -> None:
        self.threshold = threshold
        self.normalize = check_profile(normalize)

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def score_batch(self, items: Sequence[Item]) -> MetricResult:
        if self.normalize != "squad":
            prof = self.normalize
            items = [
                replace(
                    it,
                    candidate=profile_text(str(it.candidate or ""), prof),
                    references=tuple(profile_text(str(r), prof) for r in it.references),
                )
                for it in items
            ]
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
    """0 when the candidate refuses or hedges, else 1."""

    id = "no_hedge"
    description = "0 for refusals and hedges ('I don't know', 'cannot be determined')"

    def _one(self, item: Item) -> tuple[float, dict[str, Any]]:
        return (0.0 if is_hedge(item.candidate) else 1.0), {}
