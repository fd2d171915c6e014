"""Fingerprints must never tell apart two strings that normalise alike (EM relies on it)."""

from __future__ import annotations

import re
import shutil
import string
import sys

import numpy as np
import pytest

from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.lexical import exact_match_batch
from qaeval_core.schema import Item
from qaeval_core.text.fingerprint import NON_ASCII_SPACES, fingerprints
from qaeval_core.text.squad import normalize_answer

#: Pieces that stress every step: case, punctuation, articles, white space of every kind,
#: NFKC expansions ("ﬁ" -> "fi", full-width letters, superscripts, the Kelvin sign), Unicode
#: lowercasing that changes length ("İ"), final sigma, lone surrogates, astral characters.
PIECES = [
    *string.ascii_letters,
    *string.digits,
    *string.punctuation,
    *" \t\n\r\x0b\x0c\x1c\x1f\x7f\x02",
    "a ",
    "an ",
    "the ",
    "The ",
    " A ",
    "-an-",
    "th",
    "é",
    "É",
    "—",
    "’",
    "“",
    "«",
    "¿",
    "ß",
    "Σ",
    "ς",
    "ﬁ",
    "Ｐ",
    "²",
    "\u212a",
    "İ",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\x85",
    "\u1680",
    "\ud800",
    "😀",
    "ｔｈｅ ",
    "Å",
]


def _definition(text: str) -> int:
    """1 (the separator) + the code points normalisation keeps, white space and a/e/n/t/h cut."""
    return 1 + sum(map(ord, re.sub(r"[\saenth]", "", normalize_answer(text))))


def _random_texts(pieces: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(pieces, size=rng.integers(0, 25))) for _ in range(n)]


@pytest.mark.parametrize("ascii_only", [True, False])
def test_fingerprint_is_the_sum_of_kept_code_points(ascii_only: bool) -> None:
    pieces = [p for p in PIECES if p.isascii()] if ascii_only else PIECES
    texts = _random_texts(pieces, 3000, seed=1) + ["", " ", "a", "The", "the the a", "Ｔｈｅ"]
    prints = fingerprints(texts)
    assert prints is not None
    assert prints.tolist() == [_definition(t) for t in texts]


def test_equal_normalisations_have_equal_fingerprints() -> None:
    pairs = [
        ("The Eiffel-Tower!", "eiffel tower"),
        ("ﬁsh", "FISH"),
        ("Ｐａｒｉｓ", "paris"),
        ("“Paris”", "paris"),
        ("an\u00a0apple", "Apple"),
        ("x\u2028y", "X Y"),
        ("Kelvin \u212a", "kelvin k"),
    ]
    for left, right in pairs:
        assert normalize_answer(left) == normalize_answer(right)
        prints = fingerprints([left, right])
        assert prints is not None and prints[0] == prints[1], (left, right)


def test_strings_holding_the_separator_or_nul_are_not_fingerprinted() -> None:
    assert fingerprints(["ok", "a\x01b"]) is None
    assert fingerprints(["ok", "a\x00b"]) is None
    assert fingerprints(["ok", "é\x00"]) is None
    assert fingerprints([]).shape == (0,)


def test_non_ascii_spaces_are_every_space_python_knows() -> None:
    found = [chr(c) for c in range(0x80, sys.maxunicode + 1) if chr(c).isspace()]
    assert sorted(NON_ASCII_SPACES) == found


@pytest.mark.parametrize("seed", [2, 3])
def test_exact_match_equals_normalised_equality(seed: int) -> None:
    # Small alphabets make many true matches and many look-alikes (same fingerprint, other
    # string), so both the filter and the verification are exercised.
    rng = np.random.default_rng(seed)
    small = ["a", "b", "ab", "ba", "the ", " ", ".", "B", "é", "É", "ﬁ", "fi", "\x01"]
    texts = _random_texts(small, 1500, seed)
    cands = texts[:500]
    refs = [tuple(rng.choice(texts[500:], size=rng.integers(0, 4))) for _ in range(500)]
    scores, best = exact_match_batch(cands, refs)
    for cand, rs, score, j in zip(cands, refs, scores, best, strict=True):
        hits = [k for k, r in enumerate(rs) if normalize_answer(r) == normalize_answer(cand)]
        assert score == (1.0 if hits else 0.0)
        assert j == (hits[0] if hits else -1)
    assert 0 < scores.sum() < len(cands)


def test_exact_match_converts_cells_that_are_not_text() -> None:
    items = [
        Item("q", (1945, "x"), 1945.0),  # no match: "1945 0"
        Item("q", ("x", 7), 7),
        Item("q", (None, "y"), "Y"),
        Item("q", (), "anything"),
    ]
    res = get_metric("em").score_batch(items)
    assert res.scores.tolist() == [0.0, 1.0, 1.0, 0.0]
    assert [d["best_reference"] for d in res.details] == [None, "7", "y", None]


# -- the C kernel of exact match (qaeval_core/metrics/_squad.c) ------------------------------


def _random_items(seed: int, n: int = 1500) -> list[Item]:
    rng = np.random.default_rng(seed)
    ascii_pieces = ["a", "an", "the ", "The", "b", "ab", " ", "  ", ".", ",", "-", "_", "X", "1"]
    ascii_pieces += ["\t", "\x0b", "\x1c", "\x1f"]
    unicode = ["é", "É", "ﬁ", "Ｐ", "²", "Σ", "İ", "’", "—", "«", "\u00a0", "\u2028", "\u3000"]
    declined = ["\x02", "\x7f", "\x00", "\x01", "😀", "°", "\u0301", "\ud800"]
    pieces = ascii_pieces * 6 + unicode + declined
    texts = _random_texts(pieces, 3 * n, seed)
    items = []
    for i in range(n):
        refs = tuple(map(str, rng.choice(texts[n:], size=rng.integers(0, 4))))
        items.append(Item("q", refs, texts[i]))
    return items


@pytest.mark.parametrize("seed", [4, 5])
def test_compiled_exact_match_equals_the_numpy_path(seed: int) -> None:
    squad = pytest.importorskip("qaeval_core.metrics._squad")
    from qaeval_core.metrics.lexical import _exact_match_compiled, _exact_match_numpy

    items = _random_items(seed)
    items += [Item("q", (1945, "x"), 1945.0), Item("q", ("x", 7), 7), Item("q", (), "")]
    items += [Item("q", (normalize_answer(it.candidate),), it.candidate) for it in items[:300]]
    best_c, details_c = _exact_match_compiled(items)
    best_n, details_n = _exact_match_numpy(items)
    assert best_c.tolist() == best_n.tolist()
    assert details_c == details_n
    _, _, declined = squad.exact_match_items(items)
    assert declined == [len(items) - 303, len(items) - 302]  # the two non-text rows
    for item, j in zip(items, best_c.tolist(), strict=True):  # and both equal the definition
        cand = normalize_answer(str(item.candidate))
        hits = [k for k, r in enumerate(item.references) if normalize_answer(str(r)) == cand]
        assert j == (hits[0] if hits else -1)
    assert 0 < (best_c >= 0).sum() < len(items)


def test_compiled_exact_match_on_tricky_pairs_and_what_it_declines() -> None:
    squad = pytest.importorskip("qaeval_core.metrics._squad")
    pairs = [
        ("The  PARIS!", "Paris"),
        ("“Pàris”", "PÀRIS"),  # accented capitals, typographic quotes
        ("ﬁsh", "fish"),  # NFKC turns the ligature into two letters
        ("X\u2028\u00a0Y", "x y"),  # Unicode white space
        ("ΟΔΟΣ", "ΟΔΟΣ".lower()),  # final sigma, lowercased in context
        ("x°a°y", "x° °y"),  # an article between symbols is still a word: dropped
        ("a\x02b", "a\x02b"),  # control characters are kept
        ("the\x02the", "\x02"),
        ("an\u0301", "an\u0301"),  # a combining mark ends the word "an"
        ("Pàris°", "paris"),
    ]
    items = [Item("q", (ref,), cand) for cand, ref in pairs]
    buffer, details, declined = squad.exact_match_items(items)
    expected = [0 if normalize_answer(c) == normalize_answer(r) else -1 for c, r in pairs]
    assert np.frombuffer(buffer, dtype=np.int64).tolist() == expected
    assert declined == [] and expected.count(0) >= 7

    class Text(str):
        pass

    odd = [
        Item("q", ("x",), Text("x")),  # a str subclass
        Item("q", ("x", 7), 7),  # not text
        Item("q", ("nope", "an apple"), "Apple"),  # fine: second reference
        Item("q", (), "anything"),  # fine: no reference
    ]
    buffer, details, declined = squad.exact_match_items(odd)
    assert declined == [0, 1] and details[0] is None and details[1] is None
    assert np.frombuffer(buffer, dtype=np.int64).tolist()[2:] == [1, -1]
    assert details[2] == {"best_reference": "an apple"} and details[3] == {"best_reference": None}


def test_the_kernel_is_built_where_a_c_compiler_is() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: exact match runs on its numpy path")
    from qaeval_core.metrics import lexical

    assert lexical._squad is not None, "setup.py should have built qaeval_core.metrics._squad"


def test_compiled_exact_match_knows_every_punctuation_and_space_character() -> None:
    squad = pytest.importorskip("qaeval_core.metrics._squad")
    from qaeval_core.text.squad import PUNCTUATION

    separators = PUNCTUATION + NON_ASCII_SPACES + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
    items = [Item("q", ("x y",), f"x{ch}y") for ch in separators]
    items += [Item("q", ("x y",), f"x{ch}y") for ch in "°€×\u0301\x02"]  # not separators
    buffer, _, declined = squad.exact_match_items(items)
    expected = [0 if normalize_answer(it.candidate) == "x y" else -1 for it in items]
    assert np.frombuffer(buffer, dtype=np.int64).tolist() == expected and declined == []
    assert expected.count(0) == len(separators)
