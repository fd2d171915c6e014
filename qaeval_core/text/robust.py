"""The string-level steps of the ``robust`` normalisation profile, one function per step.

Model outputs carry formatting that a person reading them ignores but token overlap does not:
markdown and HTML, citation markers, mojibake, LaTeX, and numbers or dates written another
way. Each step below removes one such difference and leaves every other string unchanged (the
tests hold hand-written cases that must *not* change, such as "1.5" vs "15"). They are pure and
context-free (no reference needed), so :mod:`.profiles` memoises their composition per string;
the step that needs the references (repairing glued tokens) and lemma matching live there.

Three compositions:

* :func:`strip_formatting` - markdown, HTML, citations, mojibake, LaTeX: what a reader would
  not see. Its output is still natural text, so neural metrics can read it
  (:func:`.profiles.clean_answer`).
* :func:`strip_markup` - the same without the LaTeX step, for readers that parse math
  themselves (the answer-shape number inputs: ``\\frac{\\pi - 2}{\\pi}`` is a number to them,
  its plain-text flattening "π - 2/ π" is not).
* :func:`canonical_text` - the above plus dates and numbers in one canonical spelling, for the
  token-overlap metrics only ("2.5 million" -> "2500000" reads oddly but matches).

Dates are parsed by ``dateparser`` (no hand-written calendar rules); a cheap regular expression
only finds the spans that look like dates, so it is never run on ordinary text. Mojibake is
repaired only where provable, by the import's rule (:mod:`qaeval_core.io.repair`), only on
non-ASCII text (ASCII text cannot hold mojibake).

Why it is one module: the steps run in a fixed order over the same string (LaTeX before numbers,
so "10^{-7}" is read as an exponent; markdown before citations, so "[1](url)" is a link) and
their two compositions are memoised together; split apart, the order would live nowhere.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from typing import Any

from qaeval_core.text.numbers import canonical_numbers, number_word_digits

__all__ = [
    "fix_mojibake",
    "strip_html",
    "strip_markdown",
    "strip_citations",
    "latex_to_text",
    "canonical_dates",
    "canonical_numbers",
    "number_word_digits",
    "strip_formatting",
    "strip_markup",
    "canonical_text",
]

_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200b\u202f\u205f\u3000]+")

# ---------------------------------------------------------------------------------------------
# Mojibake and HTML
# ---------------------------------------------------------------------------------------------

#: "Â" left in front of a space once a UTF-8 no-break space was read as Latin-1 and the
#: no-break space itself became a plain one (ftfy cannot see it then): "2.45Â billion".
_STRAY_A_CIRCUMFLEX = re.compile(r"(?<=\w)\u00c2(?=[ \u00a0])")


def fix_mojibake(text: str) -> str:
    """Text decoded with the wrong codec, repaired where the repair is provable ("cafÃ©" ->
    "café"): the import's rule (:func:`qaeval_core.io.repair.repair_text`), one mojibake
    policy for storing and reading (``docs/architecture.md``). ftfy's guesses ("10 Å²" ->
    "10 Ų") are not taken; its typographic folding is (quotes, ligatures, widths, NFC).

    >>> fix_mojibake("2.45Â billion")
    '2.45 billion'
    >>> fix_mojibake("10 Å²")
    '10 Å²'
    """
    if text.isascii():
        return text
    import ftfy

    from qaeval_core.io.repair import repair_text

    fixed = ftfy.fix_text(repair_text(text), ftfy.TextFixerConfig(fix_encoding=False))
    return _STRAY_A_CIRCUMFLEX.sub("", fixed)


_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]{0,300})?/?>")
_BLOCK_TAG = re.compile(r"</?(?:br|p|div|li|tr|td|th|h[1-6])\b[^<>]{0,300}>", re.I)


def strip_html(text: str) -> str:
    """Entities decoded and tags removed ("<b>Paris</b> &amp; Lyon" -> "Paris & Lyon").

    A ``<`` that does not open a tag ("3 < 5") stays.
    """
    if "<" in text:
        text = _BLOCK_TAG.sub(" ", text)
        text = _TAG.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    return text


# ---------------------------------------------------------------------------------------------
# Markdown and citation markers
# ---------------------------------------------------------------------------------------------

_MD_IMAGE_LINK = re.compile(r"!?\[([^\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)")
_MD_REF_LINK = re.compile(r"\[([^\]\n]+)\]\[[^\]\n]*\]")
_URL = re.compile(r"<?https?://[^\s<>)\]]+>?")
_MD_STRONG = re.compile(r"(\*\*|__|~~)(?=\S)(.+?)(?<=\S)\1", re.S)
_MD_EM = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_MD_EM_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])")
_MD_CODE = re.compile(r"`{1,3}([^`]*)`{1,3}")
_MD_LINE_START = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+|\d{1,2}[.)][ \t]+)", re.M
)
_MD_RULE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$", re.M)
_MD_TABLE_SEP = re.compile(
    r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.M
)
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?)\]])")


def strip_markdown(text: str) -> str:
    """Markdown markup removed, words kept: emphasis, links (their text, not the URL), headers,
    list bullets, block quotes, code spans, tables and rules.

    Emphasis glued to a word gets a space ("byauthor**Toni**" -> "byauthor Toni"): the glue
    was the markup's.

    >>> strip_markdown("It was **Toni Morrison**, see [her site](https://x.org/tm).")
    'It was Toni Morrison, see her site.'
    """
    if not any(c in text for c in "*_~`#[>|-+") and not re.search(r"^\s*\d", text, re.M):
        return text
    text = _MD_CODE.sub(r"\1", text)
    # Emphasis before links: a link inside emphasis ("**[Toni](u)**") would otherwise become
    # "** Toni **", which no longer reads as emphasis (its markers need a word beside them).
    for _ in range(2):  # nested emphasis (***x***, **_x_**)
        text = _MD_STRONG.sub(r" \2 ", text)
        text = _MD_EM.sub(r" \1 ", text)
        text = _MD_EM_UNDERSCORE.sub(r" \1 ", text)
    text = _MD_IMAGE_LINK.sub(r" \1 ", text)
    text = _MD_REF_LINK.sub(r" \1 ", text)
    text = _MD_TABLE_SEP.sub(" ", text)
    text = _MD_RULE.sub(" ", text)
    text = _MD_LINE_START.sub("", text)
    if "|" in text:
        text = text.replace("|", " ")
    return _tidy(text)


#: ``[1]``, ``[1, 2]``, ``[1-3]``, ``[^1]``, ``【3†source】``, ``[citation needed]``; the
#: whole bracket must be numeric (``[a]`` or ``[Paris]`` stay).
_CITATION = re.compile(
    r"\s?(?:\[\^?\d{1,3}(?:\s*[,;\u2013-]\s*\^?\d{1,3})*\](?!\()"
    r"|\u3010[^\u3011]{0,40}\u3011|\[(?:citation|clarification) needed\])"
)
#: Superscript digits after a word of three or more letters or after punctuation: footnotes
#: ("Paris¹", "1945¹", "1945.²"); after one or two letters or digits they are units or
#: powers ("m²", "km²", "10²") and stay.
_SUPERSCRIPT = re.compile(
    r"(?:(?<=[^\W\d_]{3})|(?<=\d{3})|(?<=[.,;:)\]]))[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]+"
)


#: What may come before a bracket of numbers that is a value, not a citation: nothing (the
#: answer is "[11, 15, 19]"), a line start, "=", ":", an opening bracket, or a verb that
#: introduces a value ("the output is [1, 3]"), then perhaps markdown ("**[2, 4]**"). A
#: citation follows the words it supports.
_VALUE_BEFORE = re.compile(
    r"(?:^|[\n=:(\[{]|\b(?:is|are|was|were|be|equals|returns?|outputs?|prints?|gives?|yields?"
    r"|becomes?))\s*[*_`~]*$",
    re.I,
)


def _citation(m: re.Match[str]) -> str:
    """ "" for a citation marker; the match itself for a bracket of numbers that is a value
    ("[11, 15, 19]", "b = [1, 3]")."""
    marker = m.group(0).lstrip()
    numeric = marker.startswith("[") and not marker.startswith("[c")  # not "[citation needed]"
    is_value = numeric and _VALUE_BEFORE.search(m.string, 0, m.start()) is not None
    return m.group(0) if is_value else ""


def strip_citations(text: str) -> str:
    """Citation markers and footnote superscripts removed ("Paris[1] or Lyon¹²" -> "Paris or
    Lyon"). A footnote digit typed as a normal digit ("Paris1") cannot be told from a name
    ("B52") here; :mod:`.profiles` repairs it against the references. A bracket of numbers
    that opens the answer or a line, or follows "=", ":" or "is", is a value and stays
    ("[11, 15, 19]": people labelled that answer correct, and removing it emptied it)."""
    if "[" in text or "\u3010" in text:
        text = _CITATION.sub(_citation, text)
    if not text.isascii():
        text = _SUPERSCRIPT.sub("", text)
    return text


# ---------------------------------------------------------------------------------------------
# LaTeX
# ---------------------------------------------------------------------------------------------

_LATEX_DELIMS = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$")
#: ``$...$`` math (not currency: the content must hold a LaTeX sign and no digit run after a
#: space, so "$5 and $6" stays).
_DOLLAR_MATH = re.compile(r"\$([^$\n]*[\\^_{}][^$\n]*)\$")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TEXT_CMD = re.compile(
    r"\\(?:text|mathrm|mathbf|mathit|textbf|textit|operatorname|emph|mbox|boxed)\s*\{([^{}]*)\}"
)
_SQRT = re.compile(r"\\sqrt\s*\{([^{}]*)\}")
_BRACED_POWER = re.compile(r"([\^_])\{([^{}]*)\}")
_LATEX_SYMBOLS = {
    r"\times": " × ",
    r"\cdot": " · ",
    r"\div": " ÷ ",
    r"\pm": " ± ",
    r"\approx": " ≈ ",
    r"\leq": " ≤ ",
    r"\geq": " ≥ ",
    r"\le": " ≤ ",
    r"\ge": " ≥ ",
    r"\neq": " ≠ ",
    r"\infty": " ∞ ",
    r"\pi": " π ",
    r"\circ": "°",
    r"\degree": "°",
    r"\%": "%",
    r"\$": "$",
    r"\,": "",
    r"\;": " ",
    r"\!": "",
    r"\ ": " ",
    r"\left": "",
    r"\right": "",
}
_LATEX_SYMBOL = re.compile(
    "|".join(
        re.escape(k) + (r"(?![A-Za-z])" if k[-1].isalpha() else "")
        for k in sorted(_LATEX_SYMBOLS, key=len, reverse=True)
    )
)
_OTHER_CMD = re.compile(r"\\([A-Za-z]+)")


def latex_to_text(text: str) -> str:
    """Simple LaTeX math as plain text: delimiters dropped, ``\\times`` -> "×", ``\\frac{a}{b}``
    -> "a/b", ``\\text{kg}`` -> "kg", ``10^{-7}`` -> "10^-7", ``1\\,000`` -> "1000".

    >>> latex_to_text(r"\\(3.6 \\times 10^{-7}\\) \\text{m}")
    '3.6 × 10^-7 m'
    """
    if "\\" not in text and "$" not in text:
        return text
    text = _DOLLAR_MATH.sub(r"\1", text)
    text = _LATEX_DELIMS.sub(" ", text)
    if "\\" in text:
        for _ in range(2):  # one level of nesting (\frac{\text{a}}{b})
            text = _TEXT_CMD.sub(r"\1", text)
            text = _FRAC.sub(r"\1/\2", text)
            text = _SQRT.sub(r"√\1", text)
        text = _LATEX_SYMBOL.sub(lambda m: _LATEX_SYMBOLS[m.group(0)], text)
        text = _OTHER_CMD.sub(r"\1", text)
    text = _BRACED_POWER.sub(r"\1\2", text)
    return _tidy(text)


# ---------------------------------------------------------------------------------------------
# Dates (dateparser) and numbers
# ---------------------------------------------------------------------------------------------

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1\d{3}|20\d{2})"
#: Spans that look like dates; only these reach dateparser (the expensive part).
_DATE_SPAN = re.compile(
    rf"\b(?:(?P<dmy>{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR})"
    rf"|(?P<mdy>{_MONTH}\s+{_DAY},?\s+{_YEAR})"
    rf"|(?P<iso>{_YEAR}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))"
    rf"|(?P<my>{_MONTH},?\s+{_YEAR})"
    rf"|(?P<dm>{_DAY}\s+(?:of\s+)?{_MONTH})"
    rf"|(?P<md>{_MONTH}\s+{_DAY}))\b(?!\d)"
)
_MONTH_NAMES = (  # noqa: SIM905 (a sentence reads better than twelve quoted words)
    "January February March April May June July August September October November December"
).split()


_DATE_PARTS = {
    "dmy": ("day", "month", "year"),
    "mdy": ("day", "month", "year"),
    "iso": ("day", "month", "year"),
    "my": ("month", "year"),
    "dm": ("day", "month"),
    "md": ("day", "month"),
}


@lru_cache(maxsize=8)
def _date_parser(parts: tuple[str, ...], iso: bool) -> Any:
    """One dateparser parser per setting: building its settings costs ~40 ms, a parse ~1 ms."""
    from dateparser.date import DateDataParser

    settings: dict[str, Any] = {"REQUIRE_PARTS": list(parts), "PREFER_DAY_OF_MONTH": "first"}
    if iso:
        settings["DATE_ORDER"] = "YMD"
    return DateDataParser(languages=["en"], settings=settings)


@lru_cache(maxsize=20_000)
def _parse_date(span: str, kind: str) -> str | None:
    """The span as "2 September 1945" (only the parts it has), or None when dateparser does
    not read it as a date ("Feb 30, 2001")."""
    when = _date_parser(_DATE_PARTS[kind], kind == "iso").get_date_data(span).date_obj
    if when is None:
        return None
    month = _MONTH_NAMES[when.month - 1]
    if kind == "my":
        return f"{month} {when.year}"
    if kind in ("dm", "md"):
        return f"{when.day} {month}"
    return f"{when.day} {month} {when.year}"


def canonical_dates(text: str) -> str:
    """Dates in one spelling, day month year: "Sep 2, 1945", "September 2nd, 1945",
    "1945-09-02" and "2 September 1945" all become "2 September 1945"."""
    if not re.search(r"\d", text):
        return text

    def repl(m: re.Match[str]) -> str:
        kind = m.lastgroup or ""  # months must be capitalised: "may 5" is not a date
        out = _parse_date(m.group(0), kind)
        return m.group(0) if out is None else out

    return _DATE_SPAN.sub(repl, text)


# ---------------------------------------------------------------------------------------------
# Compositions
# ---------------------------------------------------------------------------------------------


def _tidy(text: str) -> str:
    text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    return re.sub(r"\s*\n\s*", "\n", text).strip()


@lru_cache(maxsize=200_000)
def strip_formatting(text: str) -> str:
    """What a reader would not see removed: mojibake, HTML, LaTeX, markdown, citations."""
    text = fix_mojibake(text)
    text = strip_html(text)
    text = latex_to_text(text)
    text = strip_citations(text)  # before markdown: "[2][3]" is not a reference-style link
    text = strip_markdown(text)
    return _tidy(text)


@lru_cache(maxsize=200_000)
def strip_markup(text: str) -> str:
    """:func:`strip_formatting` with LaTeX left as written: mojibake, HTML, citation markers
    and markdown removed. For readers that parse LaTeX better than its flattening reads: the
    number inputs read ``\\frac{\\pi - 2}{\\pi}`` as one number, "π - 2/ π" as two.

    >>> strip_markup(r"**\\(\\frac{1}{2}\\)** [1]")
    '\\\\(\\\\frac{1}{2}\\\\)'
    """
    text = fix_mojibake(text)
    text = strip_html(text)
    text = strip_citations(text)
    text = strip_markdown(text)
    return _tidy(text)


@lru_cache(maxsize=200_000)
def canonical_text(text: str) -> str:
    """:func:`strip_formatting`, then dates and numbers in their canonical spelling."""
    text = strip_formatting(text)
    text = canonical_dates(text)
    return canonical_numbers(text)
