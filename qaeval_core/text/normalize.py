"""The ``spaced`` normalisation for the lexical metrics: memoised per string, or in bulk.

Every lexical metric at its default ``normalize="spaced"`` compares normalised strings
(lowercase, punctuation to spaces, articles dropped, spaces collapsed:
:func:`qaeval_core.text.squad.normalize_answer`; the official SQuAD v1.1 rules, which delete
punctuation, are ``normalize="squad"``: :func:`qaeval_core.text.squad.squad_v1_normalize`).
That step is most of their cost, so it has two fast forms that give identical results (the
tests check them against ``normalize_answer`` on hostile strings):

* :func:`normalize` / :func:`normalize_many` memoise each string, because references are shared
  by many candidates and several metrics of one run reuse a normalisation;
* :func:`normalize_column` keeps no memo: it normalises a whole column of ASCII strings with a
  handful of C-level passes over their concatenation (translate, split, join, replace), for
  metrics that touch every string once (exact match).

ASCII text, the common case, needs no NFKC (it cannot change it) and lowercases by a byte map,
so one ``bytes.translate`` replaces three regex passes; other text goes the regex way.
"""

from __future__ import annotations

import operator
import string
from collections import Counter
from collections.abc import Sequence
from itertools import compress
from typing import Any

import numpy as np

from qaeval_core.text.squad import normalize_answer

__all__ = [
    "normalize",
    "normalize_many",
    "normalize_column",
    "norm_tokens",
    "token_bag",
    "clear_caches",
]


def _ascii_table() -> bytes:
    """Byte map of the ASCII path: punctuation and white space to a space, upper to lower case,
    other control characters to 0 (they force the slow path: ``str.split`` treats \x1c-\x1f
    as spaces, bytes do not), and \x01, the separator of concatenated strings, kept."""
    table = bytearray(range(256))
    for ch in string.punctuation + " \t\n\r\x0b\x0c":
        table[ord(ch)] = _SPACE
    for ch in string.ascii_uppercase:
        table[ord(ch)] = ord(ch.lower())
    for code in [*range(0, 32), 127]:
        if chr(code) not in " \t\n\r\x0b\x0c\x01":
            table[code] = 0
    return bytes(table)


_SPACE = 0x20
_ASCII_TABLE = _ascii_table()
#: What separates strings in a concatenation: a token of its own (spaces around it), made of a
#: control character that no accepted string contains.
_SEP = " \x01 "
_A, _N, _T, _H, _E = (ord(c) for c in "anthe")
#: Memo size (entries per memo); a memo that grows past it is emptied, which bounds memory
#: without per-call LRU bookkeeping.
_MEMO_MAX = 500_000
_NORM: dict[str, str] = {}
_BAGS: dict[str, tuple[dict[str, int], int]] = {}


def _normalize_one(text: str) -> str:
    if text.isascii():
        raw = text.encode("ascii").translate(_ASCII_TABLE)
        if b"\x00" not in raw and b"\x01" not in raw:
            toks = raw.split()
            if b"a" in toks or b"an" in toks or b"the" in toks:
                toks = [t for t in toks if t not in (b"a", b"an", b"the")]
            return b" ".join(toks).decode("ascii")
    return normalize_answer.__wrapped__(text)


def _normalize_ascii_batch(texts: Sequence[str]) -> list[str] | None:
    """Normalise many ASCII strings with array operations over their concatenation.

    The strings are joined with a separator token, mapped through one byte table, and viewed
    as a numpy byte array: token starts and ends come from where "is a space" flips, the
    articles are the tokens spelled a / an / the, and the output keeps every other token's
    bytes plus one space between two kept tokens of the same string. No Python loop runs
    per string or per token, which makes this several times faster than splitting and
    joining. Returns None when a string holds a control character or the separator (the
    caller then goes one by one).
    """
    if not texts:
        return []
    raw = "".join((" ", _SEP.join(texts), "  ")).encode("ascii").translate(_ASCII_TABLE)
    if b"\x00" in raw or raw.count(b"\x01") != len(texts) - 1:
        return None
    byte = np.frombuffer(raw, dtype=np.uint8)
    keep = byte != _SPACE  # padded with spaces at both ends, so starts and ends pair up
    flips = np.diff(keep.view(np.int8))
    starts = np.flatnonzero(flips == 1) + 1
    ends = np.flatnonzero(flips == -1) + 1
    lengths = ends - starts
    first = byte[starts]
    article = np.zeros(len(starts), dtype=bool)
    short = np.flatnonzero((lengths <= 3) & ((first == _A) | (first == _T)))
    at, size, head = starts[short], lengths[short], first[short]
    second = byte[at + 1]  # two padding spaces at the end keep at + 2 inside the array
    third = byte[at + 2]
    article[short] = (
        ((size == 1) & (head == _A))
        | ((size == 2) & (head == _A) & (second == _N))
        | ((size == 3) & (head == _T) & (second == _H) & (third == _E))
    )
    dropped = np.flatnonzero(article)
    for offset in range(3):
        hit = dropped[lengths[dropped] > offset]
        keep[starts[hit] + offset] = False
    kept = np.flatnonzero(~article)
    separator = ((lengths == 1) & (first == 1))[kept]
    joined = ~separator[:-1] & ~separator[1:]
    keep[ends[kept[:-1][joined]]] = True  # the space right after a kept token
    return byte[keep].tobytes().decode("ascii").split("\x01")


def _normalize_text_batch(texts: Sequence[str]) -> list[str] | None:
    """The regex path (NFKC, lowercase, punctuation, articles, spaces) over a concatenation.

    Equal to normalising each string alone: the separator is a non-word, non-space, uncased
    control character between spaces, so no NFKC composition, final-sigma lowercasing, word
    boundary or run of spaces reaches across it. Returns None when a string holds \x01.
    """
    if not texts:
        return []
    joined = _SEP.join(texts)
    if joined.count("\x01") != len(texts) - 1:
        return None
    parts = normalize_answer.__wrapped__(joined).split("\x01")
    return [p.strip() for p in parts]


def normalize_column(texts: Sequence[str]) -> list[str]:
    """Normalised ``texts``, computed in bulk without touching the memo.

    For a metric that normalises every string of a batch exactly once, filling the memo costs
    more than the normalisation itself. ASCII strings go through the array path, the others
    through one regex pass over their concatenation.
    """
    texts = list(texts)
    if "".join(texts).isascii():
        done = _normalize_ascii_batch(texts)
        return done if done is not None else [_normalize_one(t) for t in texts]
    flags = list(map(str.isascii, texts))
    plain = _normalize_ascii_batch(list(compress(texts, flags)))
    other = _normalize_text_batch(list(compress(texts, map(operator.not_, flags))))
    if plain is None or other is None:
        return [_normalize_one(t) for t in texts]
    is_ascii = np.array(flags, dtype=bool)
    merged = np.empty(len(texts), dtype=object)
    merged[is_ascii] = plain
    merged[~is_ascii] = other
    return merged.tolist()


def _remember(memo: dict[str, Any], keys: Sequence[str], values: Sequence[Any]) -> None:
    if len(memo) + len(keys) > _MEMO_MAX:
        memo.clear()
    memo.update(zip(keys, values, strict=True))


def normalize(text: str) -> str:
    """``text`` in the ``spaced`` reading, memoised; same result as
    :func:`qaeval_core.text.squad.normalize_answer`.

    >>> normalize("The Eiffel-Tower, Paris!")
    'eiffel tower paris'
    """
    value = _NORM.get(text)
    if value is None:
        value = _normalize_one(text)
        _remember(_NORM, (text,), (value,))
    return value


def normalize_many(texts: Sequence[str]) -> list[str]:
    """:func:`normalize` of many strings; the unseen ones are normalised in bulk
    (:func:`normalize_column`) and memoised."""
    missing = [t for t in dict.fromkeys(texts) if t not in _NORM]
    if missing:
        _remember(_NORM, missing, normalize_column(missing))
    get = _NORM.get
    return [v if (v := get(t)) is not None else normalize(t) for t in texts]


def norm_tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``."""
    return tuple(normalize(text).split())


def bag_of_tokens(toks: list[str]) -> tuple[dict[str, int], int]:
    # A Counter costs ~2 us; most answers repeat no token, and a plain dict is 5x cheaper.
    if len(set(toks)) == len(toks):
        return dict.fromkeys(toks, 1), len(toks)
    return Counter(toks), len(toks)


def token_bag(text: str) -> tuple[dict[str, int], int]:
    """Token counts and token total of ``text`` (the ``spaced`` bag of words), memoised."""
    value = _BAGS.get(text)
    if value is None:
        value = bag_of_tokens(normalize(text).split())
        _remember(_BAGS, (text,), (value,))
    return value


def clear_caches() -> None:
    """Forget memoised normalisations (benchmarks use it to time cold runs)."""
    _NORM.clear()
    _BAGS.clear()
    normalize_answer.cache_clear()
