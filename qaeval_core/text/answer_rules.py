"""The answer rules: refusal, hedge and list of alternatives, each with one meaning, read
on the answer's text alone (the judge's answer-level reasons, ``docs/outcomes.md``; the
``no_hedge`` input of :mod:`qaeval_core.metrics.shape`).

* **refusal** (:func:`refusal`): the answer does not attempt one: empty once cleaned, or every
  clause refuses ("I don't know", "Unknown.", "As an AI ... I cannot ...") or is politeness.
  One clause that asserts something makes it an attempt.
* **hedge** (:func:`hedge`): the answer gives several mutually exclusive answers: different
  numbers ("1945 or 1946"), different choice letters ("(B) or (C)"), an explicit hedge ("it is
  either Paris or Lyon", "Paris, or possibly Lyon"), or a list of alternatives.
* **list of alternatives** (:func:`names_hedge`, :func:`list_hedge`): several candidates for
  one asked entity: two proper names joined by a plain "or" ("Michelangelo or Leonardo da
  Vinci", issue 21), three or more names in a list ending in "or" or joined by slashes ("Jane
  Austen, Charlotte Bronte or Emily Bronte", "Paris/Lyon/Marseille", issue 33), where the
  question asks for one entity (:func:`asks_for_one`), one name matches a reference and
  another names something else (not an alias of it, :func:`_same_thing`; no word of the
  question; never listed with it in one reference). Lower-case alternatives are not read:
  they are too often synonyms or two modifiers of one noun.

Every rule is tuned for *precision*: it fires only on a pattern that leaves little doubt, and a
reference that itself reads like the pattern ("unknown", "pups or puppies", "red, white and
blue") switches it off. Recall is knowingly partial. Numbers are read by :mod:`.numbers`.

These patterns are defined here and nowhere else (``tests/test_layout.py``): "hedge" once meant
"refuses or doubts" in the answer-shape inputs and "several answers" in the judge's outcomes;
``no_hedge`` now reads :func:`refusal`.

Why it is one module: the three rules share the clause splitting, the reference guards, the
name reading and the alias test; split, "a reference that reads like the pattern switches the
rule off" would be written three times.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rapidfuzz import fuzz

from qaeval_core.text.normalize import normalize
from qaeval_core.text.numbers import SMALL_NUMBER_WORDS, extract_numbers, numbers_equal
from qaeval_core.text.profiles import clean_answer, is_empty_answer

__all__ = [
    "asks_for_one",
    "both_in_one_reference",
    "hedge",
    "list_hedge",
    "names_hedge",
    "refusal",
]


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
_NUM_WORDS = "|".join(SMALL_NUMBER_WORDS)
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
    :func:`names_hedge`), or a list of three or more names ending in "or" or
    joined by slashes ("Jane Austen, Charlotte Bronte or Emily Bronte", "A/B/C",
    :func:`list_hedge`). Alternatives one reference lists together do not count."""
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


# -- list of alternatives ----------------------------------------------------------------------
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
            n
            for n in norm
            if n not in named
            and not any(_same_thing(n, a) for a in named)
            and not set(_content_words(n)) & question_words
            and not any(both_in_one_reference(n, a, references) for a in named)
        ]
        if others:
            return evidence
    return None
