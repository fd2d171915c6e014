"""Numbers as written in answers: the one reader of number words, digits, separators,
percentages and scientific notation, and the one canonical spelling of them.

Two readings share everything here, so that a number read by one is read by the other:

* **values** (:func:`number_spans`, :func:`extract_numbers`, :func:`numbers_equal`): every
  number of a text as ``(value, significant digits)``: integers and decimals with thousands
  separators and signs, scientific notation (``1.2e-3``, ``7.97 x 10^3``, ``7.97$10^3$``,
  ``10^{-3}``), percentages (also read as fractions), digits glued to units ("264g"), the
  number words zero-twenty. Two numbers are equal at the precision of the less precise one.
  :mod:`.quantities` compares them (exactly, or graded with units) for the answer-shape
  metrics and the judge's traces; :mod:`.answer_rules` reads "1945 or 1946" with them.
* **spelling** (:func:`canonical_numbers`, :func:`number_word_digits`): the robust profile's
  one spelling of a number for the token-overlap metrics: words to digits ("twenty-five" ->
  "25", "2.5 million" -> "2500000"), no separators, no currency sign, scientific notation
  written out.

The number-word tables (:data:`NUMBER_WORD_VALUES`, :data:`NUMBER_SCALES`) and the
scientific-notation pattern (:data:`SCIENTIFIC`) are defined here and nowhere else
(``tests/test_layout.py``).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

__all__ = [
    "NUMBER_WORD_VALUES",
    "NUMBER_WORDS",
    "NUMBER_SCALES",
    "SCIENTIFIC",
    "SMALL_NUMBER_WORDS",
    "canonical_numbers",
    "extract_numbers",
    "number_spans",
    "number_word_digits",
    "numbers_equal",
]

# -- the number words -------------------------------------------------------------------------
_UNITS = (  # noqa: SIM905 (the words in order, as a sentence)
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()  # noqa: SIM905
#: The value of each number word below a hundred that is written as one word.
NUMBER_WORD_VALUES: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS)},
    **{w: 10 * i for i, w in enumerate(_TENS, start=2)},
}
#: The words that multiply what comes before them ("two hundred", "2.5 million").
NUMBER_SCALES: dict[str, int] = {
    "hundred": 100,
    "thousand": 10**3,
    "million": 10**6,
    "billion": 10**9,
    "trillion": 10**12,
}
#: The words read as a number on their own by :func:`extract_numbers` (zero to twenty: a
#: larger number is rarely spelt in an answer, and "thirty" alone reads as a decade).
SMALL_NUMBER_WORDS: dict[str, int] = {w: v for w, v in NUMBER_WORD_VALUES.items() if v <= 20}
#: Every word that says a number is there (the two tables above).
NUMBER_WORDS: frozenset[str] = frozenset(NUMBER_WORD_VALUES) | frozenset(NUMBER_SCALES)

# -- numbers as values --------------------------------------------------------------------------
_SIGNED = r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[-+−]?\.\d+"
_TIMES = r"(?:\s*(?:x|×|✕|\*|\\times|\\cdot|·|\$)\s*)"
#: Scientific notation: "7.97 x 10^3", "3.6 × 10^(-7)", "7.97$10^3$", "1.2e-3". The mantissa
#: may carry a sign and thousands separators; it does not continue a word or a number.
SCIENTIFIC = re.compile(
    rf"(?<![\w.])(?P<mant>{_SIGNED})(?:{_TIMES}10\s*\^\s*[{{(]?\s*(?P<exp1>[-+−]?\d+)\s*[}})]?"
    rf"|[eE](?P<exp2>[-+−]?\d+)\b)"
)
_POW10 = re.compile(r"(?<![\d.])10\s*\^\s*\{?\s*(?P<exp>[-+−]?\d+)\s*\}?")
_PLAIN = re.compile(rf"(?P<num>{_SIGNED})(?P<pct>\s*(?:%|\\%|percent\b))?")
_WORD = re.compile(r"\b(" + "|".join(SMALL_NUMBER_WORDS) + r")\b", re.IGNORECASE)


def _to_float(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _sig_digits(text: str) -> int:
    """Significant digits written: leading zeros dropped; an integer's digits all count."""
    digits = re.sub(r"[^0-9.]", "", text)
    digits = digits.replace(".", "").lstrip("0") if "." in digits else digits.lstrip("0")
    return max(1, len(digits))


def number_spans(text: str) -> list[tuple[float, int, int, int, bool]]:
    """``(value, significant digits, start, end, plain integer)`` per reading, in the order
    :func:`extract_numbers` gives them (a percentage gives two readings with one span)."""
    out: list[tuple[float, int, int, int, bool]] = []
    if not text:
        return out
    taken = [False] * (len(text) + 1)

    def mark(a: int, b: int) -> bool:
        if any(taken[a:b]):
            return False
        for k in range(a, b):
            taken[k] = True
        return True

    for m in SCIENTIFIC.finditer(text):
        exp = m.group("exp1") or m.group("exp2")
        try:
            value = _to_float(m.group("mant")) * 10.0 ** int(exp.replace("−", "-"))
        except (ValueError, OverflowError):
            continue
        if mark(m.start(), m.end()):
            out.append((value, _sig_digits(m.group("mant")), m.start(), m.end(), False))
    for m in _POW10.finditer(text):
        if mark(m.start(), m.end()):
            out.append(
                (10.0 ** int(m.group("exp").replace("−", "-")), 1, m.start(), m.end(), False)
            )
    for m in _PLAIN.finditer(text):
        if not mark(m.start(), m.end()):
            continue
        try:
            value = _to_float(m.group("num"))
        except ValueError:
            continue
        sig = _sig_digits(m.group("num"))
        integer = "." not in m.group("num") and not m.group("pct")
        out.append((value, sig, m.start(), m.end(), integer))
        if m.group("pct"):
            out.append((value / 100.0, sig, m.start(), m.end(), False))
    for m in _WORD.finditer(text):
        if mark(m.start(), m.end()):
            value = float(SMALL_NUMBER_WORDS[m.group(1).lower()])
            out.append((value, 15, m.start(), m.end(), True))
    return [r for r in out if math.isfinite(r[0])]


@lru_cache(maxsize=100_000)
def extract_numbers(text: str) -> tuple[tuple[float, int], ...]:
    """Every number in the text as ``(value, significant digits)``, in order of appearance.

    A percentage yields two readings, ``x`` and ``x / 100``.

    >>> extract_numbers("7.97 x 10^3 or 12%")
    ((7970.0, 3), (12.0, 2), (0.12, 2))
    """
    return tuple((v, s) for v, s, *_ in number_spans(text))


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


# -- numbers in one spelling (the robust profile) -----------------------------------------------
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]*\d)")
_CURRENCY = re.compile(r"(?:US)?[$€£¥₹](?=\s?\d)\s?")
_PERCENT = re.compile(r"(\d)\s*(?:%|percent\b|per\s+cent\b|pct\b)")
_TRAILING_ZEROS = re.compile(r"(?<![\d.])(\d+)\.(\d*?)0+(?![\d.])")
_NUM_WORD = "|".join(sorted(NUMBER_WORD_VALUES, key=len, reverse=True))
_SCALE_WORD = "|".join(NUMBER_SCALES)
_WORD_NUMBER = re.compile(
    rf"\b(?:{_NUM_WORD}|{_SCALE_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_NUM_WORD}|{_SCALE_WORD}))*\b",
    re.I,
)
#: A number word with digits glued after it ("eight1", "billion2"): no word is spelt so, so
#: the digits are a footnote or a typo and get a space, and the word reads as a number.
_GLUED_NUMBER_WORD = re.compile(rf"\b({_NUM_WORD}|{_SCALE_WORD})(?=\d+(?!\w))", re.I)
_DIGIT_SCALE = re.compile(rf"(?<![\w.])(\d+(?:\.\d+)?)\s+({_SCALE_WORD})\b", re.I)
#: "one" that is a pronoun, not a number.
_PRONOUN_ONE = re.compile(
    r"\b(?:no|any|every|some|the|this|that|which|each)\s+one\b"
    r"|\bone\s+(?:of|another|who|which|that)\b",
    re.I,
)


def _plain(value: Decimal) -> str:
    """A decimal in positional notation without trailing zeros ("2500000", "0.00000036")."""
    text = format(value.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def number_word_digits(token: str) -> str:
    """A lone number word as digits ("eight" -> "8", "Twenty" -> "20"), any other token as it
    is. :func:`canonical_numbers` needs word edges, so a word glued to a footnote digit
    ("eight1") keeps its spelling; the glue repair of :mod:`.profiles` converts the piece."""
    value = NUMBER_WORD_VALUES.get(token.lower())
    return token if value is None else str(value)


def _words_value(words: str) -> int | None:
    total, current, seen = 0, 0, False
    for w in re.split(r"[\s-]+", words.lower()):
        if w == "and" or not w:
            continue
        if w in NUMBER_WORD_VALUES:
            current += NUMBER_WORD_VALUES[w]
            seen = True
        elif w == "hundred":
            current = max(current, 1) * 100
            seen = True
        elif w in NUMBER_SCALES:
            total += max(current, 1) * NUMBER_SCALES[w]
            current = 0
            seen = True
    return total + current if seen else None


def _written_out(m: re.Match[str]) -> str:
    """A :data:`SCIENTIFIC` match in positional notation, its sign kept as written
    ("3.6e-7" -> "0.00000036"); unchanged when the exponent is beyond 15."""
    mant, exp = m.group("mant"), m.group("exp1") or m.group("exp2")
    sign = mant[0] if mant[0] in "+-−" else ""
    try:
        value = Decimal(mant[len(sign) :].replace(",", "")).scaleb(int(exp.replace("−", "-")))
    except (InvalidOperation, ValueError):
        return m.group(0)
    return sign + _plain(value) if abs(value.adjusted()) <= 15 else m.group(0)


def canonical_numbers(text: str) -> str:
    """Numbers in one spelling: words to digits ("twenty-five" -> "25", "2.5 million" ->
    "2500000"), no thousands separators ("2,500,000"), no currency sign ("$29.00" -> "29"),
    percentages as "N%", scientific notation written out ("3.6 × 10^-7", "3.6e-7" ->
    "0.00000036"), and no trailing decimal zeros ("2.50" -> "2.5"). "1.5" and "15" stay
    different. A number word glued to digits is cut off them first ("billion1" -> "billion
    1": a footnote digit)."""
    if any(c.isdigit() for c in text):
        text = _GLUED_NUMBER_WORD.sub(r"\1 ", text)
    if _WORD_NUMBER.search(text):
        protected = {m.start() for m in _PRONOUN_ONE.finditer(text)}

        def words(m: re.Match[str]) -> str:
            span = m.group(0)
            if span.lower() in NUMBER_SCALES or span.lower() == "hundred":
                return span  # a lone "million" is a word, not a number
            if span.lower() == "one" and any(p <= m.start() < p + 20 for p in protected):
                return span
            value = _words_value(span)
            return span if value is None else str(value)

        text = _WORD_NUMBER.sub(words, text)
    if not any(c.isdigit() for c in text):
        return text
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    text = _CURRENCY.sub("", text)

    def scaled(m: re.Match[str]) -> str:
        return _plain(Decimal(m.group(1)) * NUMBER_SCALES[m.group(2).lower()])

    text = _DIGIT_SCALE.sub(scaled, text)
    text = SCIENTIFIC.sub(_written_out, text)
    text = _PERCENT.sub(r"\1%", text)
    text = _TRAILING_ZEROS.sub(
        lambda m: m.group(1) + ("." + m.group(2) if m.group(2) else ""), text
    )
    return text
