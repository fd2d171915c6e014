"""Fingerprints of normalised strings: a cheap proof that two strings cannot normalise alike.

Exact match compares SQuAD-normalised strings (:func:`qaeval_core.text.squad.normalize_answer`), yet
almost every candidate differs from its references, and showing that costs less than
normalising both sides. (This is EM's numpy path, used where the C kernel ``_squad.c`` was not
built and for cells that are not text.)

The fingerprint of a string ``s`` looks at ``u = NFKC(s).lower()``, the text normalisation
starts from, and keeps the characters normalisation never removes: all but
punctuation, white space and the letters a, e, n, t, h (the only letters the article rule
drops). The fingerprint is the sum of the code points of those kept characters (their count as
a second figure ruled out only 3 more of ~800 look-alike pairs in the benchmark rows, for twice
the time).

Why it is sound: normalisation only turns punctuation and articles into spaces and collapses
or strips white space, so deleting white space and a/e/n/t/h from ``normalize(s)`` gives the
kept characters of ``u``. Equal normalisations therefore have equal kept characters and equal
fingerprints. The converse fails ("dog" and "god"), so a caller normalises the pairs whose
fingerprints agree and compares those for real. ``tests/text/test_fingerprint.py`` checks the
fingerprint against its definition on hostile strings.

Speed: the ASCII strings are fingerprinted together, with one byte map over their concatenation
and one segment sum in numpy (no Python object per string). The few strings with a non-ASCII
character get NFKC and lowercasing one by one and are summed as UTF-32 code points in numpy.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence
from itertools import compress

import numpy as np

from qaeval_core.text.squad import PUNCTUATION

__all__ = ["fingerprints", "NON_ASCII_SPACES"]

#: Separates strings in a concatenation (it is kept, so it adds 1 to every fingerprint alike);
#: a string that holds it, or \x00 (the byte map's "removed" mark), is not fingerprinted.
_SEP = "\x01"
_ASCII_REMOVED = string.punctuation + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f" + "aenthAENTH"
#: Every non-ASCII character ``str.isspace`` accepts (the tests re-derive it from the running
#: Python's Unicode tables).
NON_ASCII_SPACES = (
    "\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
_NON_ASCII_REMOVED = np.array(
    sorted({ord(ch) for ch in PUNCTUATION + NON_ASCII_SPACES if not ch.isascii()}),
    dtype=np.uint32,
)


def _byte_map() -> bytes:
    """Upper case to lower case, removed characters to 0, everything else kept."""
    table = bytearray(range(256))
    for ch in string.ascii_uppercase:
        table[ord(ch)] = ord(ch.lower())
    for ch in _ASCII_REMOVED:
        table[ord(ch)] = 0
    return bytes(table)


_BYTE_MAP = _byte_map()
_ASCII_KEPT = np.frombuffer(_BYTE_MAP[:128], dtype=np.uint8) != 0


def fingerprints(texts: Sequence[str]) -> np.ndarray | None:
    """One int64 fingerprint per string: strings that normalise alike get equal fingerprints.

    Returns None when a string contains \\x00 or \\x01 (the byte map's "removed" mark and the
    separator); the caller then compares normalised strings directly.
    """
    flags = list(map(str.isascii, texts))
    if all(flags):
        return _ascii_sums(texts)
    is_ascii = np.array(flags, dtype=bool)
    plain = _ascii_sums(list(compress(texts, flags)))
    other = np.flatnonzero(~is_ascii)
    folded = _non_ascii_sums([texts[i] for i in other.tolist()])
    if plain is None or folded is None:
        return None
    sums = np.empty(len(texts), dtype=np.int64)
    sums[is_ascii] = plain
    sums[other] = folded
    return sums


def _ascii_sums(texts: Sequence[str]) -> np.ndarray | None:
    """Fingerprints of ASCII strings: one byte map over their concatenation, one segment sum."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    encoded = (_SEP + _SEP.join(texts)).encode("ascii")
    if b"\x00" in encoded:
        return None
    codes = np.frombuffer(encoded.translate(_BYTE_MAP), dtype=np.uint8)
    starts = np.flatnonzero(codes == 1)
    if len(starts) != len(texts):
        return None
    return np.add.reduceat(codes, starts, dtype=np.int64)


def _non_ascii_sums(texts: Sequence[str]) -> np.ndarray | None:
    """Fingerprints of strings with a non-ASCII character: NFKC (which can turn one character
    into several, or a space into nothing) and Unicode lowercasing one by one, then kept code
    points summed over their UTF-32 concatenation."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    folded = [unicodedata.normalize("NFKC", t).lower() for t in texts]
    joined = _SEP + _SEP.join(folded)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    starts = np.flatnonzero(points == 1)
    if len(starts) != len(texts) or not points.all():
        return None
    is_ascii = points < 0x80
    kept = np.where(
        is_ascii,
        _ASCII_KEPT[np.where(is_ascii, points, 0)],
        ~np.isin(points, _NON_ASCII_REMOVED),
    )
    return np.add.reduceat(np.where(kept, points, 0), starts, dtype=np.int64)
