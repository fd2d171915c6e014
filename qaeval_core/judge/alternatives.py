"""Several candidates for one asked entity: "Michelangelo or Leonardo da Vinci", "Jane Austen,
Charlotte Bronte or Emily Bronte", "Paris/Lyon/Marseille" (the ``hedged`` reason of
:mod:`.outcomes` for names; numbers, choice letters and "either ... or" phrases stay there).

Two rules, one set of guards (precision first: each fires only where little doubt is left):

* :func:`names_hedge`: two proper names joined by a plain "or" (issue 21);
* :func:`list_hedge`: three or more names in a list that ends in "or" ("A, B or C", "A, B, or
  C", "either A, B, or C") or joined by slashes ("A/B/C") (issue 33: "Jane Austen, Charlotte
  Bronte or Emily Bronte" for "who wrote pride and prejudice" was judged correct).

Shared guards: the question asks for one entity (:func:`asks_for_one`); no reference is
itself a list or offers alternatives ("red, white and blue", "rock or paper"); at least one
alternative matches a reference and another names something else (not an alias of it:
:func:`_same_thing`; no word of the question; never listed with it in one reference).
Lower-case alternatives are not read: they are too often synonyms or two modifiers of one noun.

Why a module of its own: the rules share the name reading, the reference and question guards
and the alias test; :mod:`.outcomes` keeps the one-reason-per-item contract and calls them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from qaeval_core.text.normalize import normalize

__all__ = ["asks_for_one", "both_in_one_reference", "list_hedge", "names_hedge"]


def both_in_one_reference(a: str, b: str, references: Sequence[str]) -> bool:
    """Whether one reference names both alternatives (then listing them is the answer)."""
    na, nb = normalize(a), normalize(b)
    for ref in references:
        padded = f" {normalize(str(ref or ''))} "
        if na and nb and f" {na} " in padded and f" {nb} " in padded:
            return True
    return False


#: Lower-case words that may sit inside a name ("Leonardo da Vinci", "Charlotte of Mecklenburg")
_NAME_PARTICLES = frozenset(
    re.findall(r"\w+", "da de del della der di du van von den la le of the al bin ibn y and")
)
#: Words after "or" that make it an idiom, not an alternative ("or so", "or more", "or not").
_OR_IDIOMS = frozenset(
    re.findall(
        r"\w+",
        """so more less not other others similar something somewhere someone anything everything
        whatever both either neither even rather else""",
    )
)
#: Where an alternative ends: clause punctuation, brackets and quotes.
_SIDE_BREAK = re.compile(r"[,.;:!?()\[\]{}\"\n\u201c\u201d]")
#: The plain connective between two alternatives (", or" is an apposition: "Bulla Aurea, or
#: Golden Bull" names one thing twice; the hedged forms of it are in _HEDGE_PHRASES).
_PLAIN_OR = re.compile(r"(?<![,(])\s+or\s+", re.IGNORECASE)
#: A question that asks for one thing: a wh-word (or "name the") somewhere in it.
_ONE_THING = re.compile(r"\b(?:who|whom|whose|which|what|where|name\s+the)\b", re.IGNORECASE)
#: ... unless it asks for several, or for a manner or a reason, or offers the alternatives.
_SEVERAL_THINGS = re.compile(
    r"\b(?:(?:who|what|which|where)\s+(?:are|were)|(?:two|three|four|five|several|some|all|both"
    r"|many|examples?|ways|types|kinds|list|or)\b|how\b(?!\s+(?:many|much))|why\b)",
    re.IGNORECASE,
)


def asks_for_one(question: str) -> bool:
    """Whether ``question`` asks for one entity ("who painted the Mona Lisa", "which city ...")
    rather than several ("who were the Beatles", "name two ..."), a manner or reason ("how",
    "why"), or a choice it spells out ("is it tea or coffee?"). Precision first: a question
    without a wh-word is not known to ask for one thing."""
    q = str(question or "")
    return bool(_ONE_THING.search(q)) and not _SEVERAL_THINGS.search(q)


def _is_name_word(word: str) -> bool:
    return word[:1].isupper()


def _name_run(words: list[str]) -> list[str]:
    """The proper name nearest the "or" among ``words`` (ordered from the "or" outwards): a
    run of capitalised words with name particles or numbers between them ("Leonardo da Vinci"
    out of "it was painted by Leonardo da Vinci"); empty when the nearest word is not
    capitalised. Lower-case alternatives are not read: they are too often synonyms or two
    modifiers of one noun ("game or prey", "biological or physical anthropology")."""
    run: list[str] = []
    pending: list[str] = []
    for w in words:
        if _is_name_word(w):
            run += pending + [w]
            pending = []
        elif run and (w.lower() in _NAME_PARTICLES or w.isdigit()):
            pending.append(w)
        else:
            break
    return run


def _matches_reference(norm_side: str, norm_refs: Sequence[str]) -> bool:
    """Whether an alternative is (part of) a reference or contains one, on word boundaries."""
    padded = f" {norm_side} "
    return any(r and (f" {r} " in padded or padded in f" {r} ") for r in norm_refs)


def _initials(norm_text: str) -> str:
    return "".join(w[0] for w in norm_text.split())


def _content_words(norm_text: str) -> list[str]:
    return [w for w in norm_text.split() if len(w) > 1 and w not in _NAME_PARTICLES]


def _same_thing(other: str, named: str) -> bool:
    """Whether two normalised alternatives plausibly name one thing: a shared, near-equal or
    prefix content word ("2008 Sichuan earthquake" / "Great Sichuan earthquake", "Hasidic
    Judaism" / "Chasidic Judaism", "RD" / "RDN") or initials ("USA" / "United States of
    America")."""
    for a in _content_words(other):
        for b in _content_words(named):
            if a.startswith(b) or b.startswith(a) or fuzz.ratio(a, b) >= 80:
                return True
    o, n = other.replace(" ", ""), named.replace(" ", "")
    return o == _initials(named) or n == _initials(other)


def names_hedge(text: str, question: str, references: Sequence[str]) -> str | None:
    """A hedge between names: one alternative is a reference, the other names something else
    ("Michelangelo or Leonardo da Vinci" to "Who painted the Mona Lisa?", reference "Leonardo
    da Vinci").

    Fires only when every one of these holds (precision first, as the other rules):
    the question asks for one entity (:func:`asks_for_one`); a plain "or" joins two proper
    names (:func:`_name_run`; not ", or", "(or ...)", "or so", "or more"); no reference itself
    offers alternatives ("rock or paper"); exactly one alternative matches a reference (both:
    aliases of the answer; neither: the answer is wrong anyway and the combiner says so); the
    other does not name the same thing (:func:`_same_thing`), shares no word with the question,
    and does not sit in one reference with it ("Trinidad or Tobago" against "Trinidad and Tobago").
    """
    if not asks_for_one(question):
        return None
    norm_refs = [r for r in (normalize(str(x or "")) for x in references) if r]
    if not norm_refs or any(" or " in f" {r} " for r in norm_refs):
        return None  # a reference that itself offers alternatives ("rock or paper")
    question_words = set(_content_words(normalize(question)))
    for m in _PLAIN_OR.finditer(text):
        left_text = _SIDE_BREAK.split(text[: m.start()])[-1]
        right_text = _SIDE_BREAK.split(text[m.end() :])[0]
        right_words = right_text.split()
        if not right_words or right_words[0].lower() in _OR_IDIOMS:
            continue
        left, right = _name_run(left_text.split()[::-1])[::-1], _name_run(right_words)
        a, b = normalize(" ".join(left)), normalize(" ".join(right))
        if len(a) < 2 or len(b) < 2 or a == b:
            continue  # a single letter is a choice letter or an initial, not a name
        a_ref, b_ref = _matches_reference(a, norm_refs), _matches_reference(b, norm_refs)
        if a_ref == b_ref:
            continue  # both aliases of the answer, or neither is the answer: not decided here
        named, other = (a, b) if a_ref else (b, a)
        if _same_thing(other, named) or set(_content_words(other)) & question_words:
            continue  # an alias, or words the question itself uses
        if both_in_one_reference(a, b, references):
            continue
        return f"{' '.join(left)} or {' '.join(right)}"
    return None


#: Where a list of alternatives ends on the left: sentence punctuation, brackets, quotes.
_LIST_START = re.compile(r"[.;:!?()\[\]{}\"\n\u201c\u201d]")
#: The "or" that closes a list: "A, B or C" and "A, B, or C".
_LIST_OR = re.compile(r"\s*,?\s+or\s+", re.IGNORECASE)
#: A run of slash-joined alternatives inside one clause: "Paris/Lyon/Marseille".
_SLASHED = re.compile(r"[^,.;:!?()\[\]{}\"\n/]+(?:/[^,.;:!?()\[\]{}\"\n/]+){2,}")


def _list_names(parts: Sequence[str]) -> list[str] | None:
    """The names of a list's segments, or None when it is not a list of names. The first
    segment may hold words before its name ("It was Jane Austen"), the last words after it
    ("Emily Bronte, I think" is cut before here); every middle segment must be a name."""
    if len(parts) < 3:
        return None
    first = _name_run(parts[0].split()[::-1])[::-1]
    last = _name_run(parts[-1].split())
    names = [first]
    for part in parts[1:-1]:
        words = part.split()
        if not words or _name_run(words) != words:
            return None
        names.append(words)
    names.append(last)
    if any(not n for n in names):
        return None
    return [" ".join(n) for n in names]


def _lists(text: str) -> list[tuple[list[str], str]]:
    """Every list of three or more names in ``text``, with the text that shows it."""
    found: list[tuple[list[str], str]] = []
    for m in _LIST_OR.finditer(text):
        left = _LIST_START.split(text[: m.start()])[-1]
        right = _SIDE_BREAK.split(text[m.end() :])[0]
        right_words = right.split()
        if not right_words or right_words[0].lower() in _OR_IDIOMS:
            continue
        names = _list_names([*left.split(","), right])
        if names is not None:
            found.append((names, f"{', '.join(names[:-1])} or {names[-1]}"))
    for m in _SLASHED.finditer(text):
        names = _list_names(m.group(0).split("/"))
        if names is not None:
            found.append((names, "/".join(names)))
    return found


def _is_list(reference: str) -> bool:
    """Whether a reference itself lists or offers several things ("red, white and blue",
    "rock or paper", "AC/DC"): then a list in the answer may be the answer."""
    text = str(reference or "")
    return "," in text or "/" in text or " or " in f" {normalize(text)} "


def list_hedge(text: str, question: str, references: Sequence[str]) -> str | None:
    """A hedge among three or more names ("Jane Austen, Charlotte Bronte or Emily Bronte",
    "either Paris, Lyon, or Marseille", "Paris/Lyon/Marseille") where ``question`` asks for
    one entity: some name matches a reference and another names something else. The guards
    of :func:`names_hedge` hold, and a reference that is itself a list switches the rule off.
    Returns the list as evidence, else None."""
    if ("," not in text and "/" not in text) or not asks_for_one(question):
        return None
    norm_refs = [r for r in (normalize(str(x or "")) for x in references) if r]
    if not norm_refs or any(_is_list(str(x or "")) for x in references):
        return None
    question_words = set(_content_words(normalize(question)))
    for names, evidence in _lists(text):
        norm = [normalize(n) for n in names]
        if any(len(n) < 2 for n in norm) or len(set(norm)) < len(norm):
            continue
        named = [n for n in norm if _matches_reference(n, norm_refs)]
        if not named:
            continue  # none is the answer: wrong, and the combiner says so
        others = [
            n for n in norm
            if n not in named
            and not any(_same_thing(n, a) for a in named)
            and not set(_content_words(n)) & question_words
            and not any(both_in_one_reference(n, a, references) for a in named)
        ]  # fmt: skip
        if others:
            return evidence
    return None
