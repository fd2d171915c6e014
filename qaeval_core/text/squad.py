"""Text normalisation, tokenisation and n-grams shared by the lexical metrics.

The SQuAD convention (lowercase, strip punctuation, drop the articles a/an/the, collapse white
space) is the default because every paper's token metrics use it. Functions are pure and
memoised where strings repeat a lot (references are shared by many candidates).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

__all__ = [
    "PUNCTUATION",
    "normalize_answer",
    "tokens",
    "ngrams",
    "candidate_ngrams",
    "contains_on_token_boundary",
]

#: The characters normalisation turns into spaces: ASCII punctuation and common typographic marks.
PUNCTUATION = string.punctuation + "‘’“”–—…«»¿¡"
# A regex character class, not ``str.translate``: translate with a dict walks a Python mapping
# per character (~60 ns), the class is matched in C.
PUNCT_RE = re.compile("[" + re.escape(PUNCTUATION) + "]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=200_000)
def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, punctuation -> space, drop articles, collapse spaces.

    Punctuation becomes a space (not deleted, as in the original SQuAD script) so
    "1945-1946" keeps two tokens; NFKC folds look-alike Unicode forms first.
    """
    text = PUNCT_RE.sub(" ", unicodedata.normalize("NFKC", text).lower())
    text = _ARTICLES.sub(" ", text)
    return _SPACES.sub(" ", text).strip()


def tokens(text: str) -> list[str]:
    """Normalised tokens."""
    norm = normalize_answer(text)
    return norm.split() if norm else []


def ngrams(toks: Sequence[str], n: int) -> list[str]:
    """Contiguous n-grams joined by spaces (the whole sequence if it is shorter than n)."""
    if n <= 0 or not toks:
        return []
    if len(toks) <= n:
        return [" ".join(toks)]
    return [" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1)]


def candidate_ngrams(candidate: str, reference: str, *, max_ngrams: int = 256) -> list[str]:
    """The candidate's n-grams with n = the reference's token count (SMILE's lexical part).

    Long candidates are capped at ``max_ngrams`` evenly spaced n-grams to bound the cost of
    embedding them.
    """
    ref_len = max(1, len(tokens(reference)))
    grams = ngrams(tokens(candidate), ref_len)
    if len(grams) > max_ngrams:
        step = len(grams) / max_ngrams
        grams = [grams[int(i * step)] for i in range(max_ngrams)]
    return grams


def contains_on_token_boundary(haystack_norm: str, needle_norm: str) -> bool:
    """Whether normalised ``needle`` occurs in normalised ``haystack`` on token boundaries."""
    if not needle_norm:
        return False
    return f" {needle_norm} " in f" {haystack_norm} "
