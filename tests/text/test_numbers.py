"""The one number reader (``qaeval_core/text/numbers.py``, issue 34): reading and respelling
share one scientific-notation pattern and one number-word table."""

from __future__ import annotations

from qaeval_core.metrics.extract import type_match
from qaeval_core.text.numbers import (
    NUMBER_WORDS,
    SMALL_NUMBER_WORDS,
    canonical_numbers,
    extract_numbers,
)
from qaeval_core.text.robust import fix_mojibake


def test_the_reader_reads_what_the_respelling_reads() -> None:
    # "10^(-7)" and "✕" were respelled by the robust profile but not read as one number.
    assert extract_numbers("3.6 × 10^(-7)") == ((3.6e-7, 2),)
    assert extract_numbers("7.97 ✕ 10^3") == ((7970.0, 3),)
    assert canonical_numbers("3.6 × 10^(-7)") == "0.00000036"


def test_the_respelling_keeps_a_written_sign() -> None:
    assert canonical_numbers("+3e2 and −3e5 and -3.6e-7") == "+300 and −300000 and -0.00000036"
    assert canonical_numbers("twenty-five, 2.5 million") == "25, 2500000"


def test_one_number_word_table() -> None:
    assert len(SMALL_NUMBER_WORDS) == 21 and SMALL_NUMBER_WORDS["twenty"] == 20
    assert {"ninety", "trillion"} <= NUMBER_WORDS
    assert type_match("about a dozen", "number") and type_match("ninety", "number")


def test_the_robust_reading_takes_no_mojibake_guess() -> None:
    """One policy with the import (io/repair.py): provable repairs only."""
    assert fix_mojibake("10 Å²") == "10 Å²"  # ftfy alone made it "10 Ų"
    assert fix_mojibake("30â€“31 May") == "30–31 May"
    assert fix_mojibake("don’t") == "don't"  # typographic folding stays
