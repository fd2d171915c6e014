"""Normalisation profiles: every robust step on hand-written cases (and cases that must not
change), the glue repair against references, and the SQuAD default left exactly as it was."""

from __future__ import annotations

import hashlib
import json

import pytest

from qaeval_core.errors import InputError
from qaeval_core.metrics._support.profiles import (
    clean_answer,
    is_empty_answer,
    lemma,
    pair_tokens,
    split_glued,
    text_tokens,
)
from qaeval_core.metrics._support.robust_text import (
    canonical_dates,
    canonical_numbers,
    canonical_text,
    fix_mojibake,
    latex_to_text,
    strip_citations,
    strip_html,
    strip_markdown,
)
from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

PROFILED = [
    "em", "contains", "f1", "precision", "recall", "word_match", "rouge1", "rouge2", "rougeL",
    "bleu", "meteor", "vqa_accuracy", "soft_vqa_accuracy", "panda", "number_match",
    "number_agree", "brevity", "no_hedge",
]  # fmt: skip


# -- one step at a time ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("It was **Toni Morrison**.", "It was Toni Morrison."),
        ("written byauthor **Toni Morrison**in 1987", "written byauthor Toni Morrison in 1987"),
        ("[Paris](https://en.wikipedia.org/wiki/Paris) is the capital", "Paris is the capital"),
        ("# Answer\n- *Paris*\n- __Lyon__", "Answer\nParis\nLyon"),
        ("Use `numpy` here", "Use numpy here"),
        ("| city |\n|---|\n| Paris |", "city\nParis"),
    ],
)
def test_markdown_is_stripped(text: str, expected: str) -> None:
    assert strip_markdown(text) == expected


@pytest.mark.parametrize(
    "text",
    ["snake_case_name", "2 * 3 * 4", "1945-1946", "a - b", "C++ and C#", "Paris", "e.g. 3.5"],
)
def test_markdown_leaves_plain_text(text: str) -> None:
    assert strip_markdown(text) == text


def test_html_entities_and_tags() -> None:
    assert strip_html("<b>Paris</b> &amp; Lyon") == "Paris & Lyon"
    assert strip_html("Paris<br>Lyon").split() == ["Paris", "Lyon"]
    assert strip_html("3 < 5 and 7 > 2") == "3 < 5 and 7 > 2"  # not tags


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris[1] is big[2, 3].", "Paris is big."),
        ("Paris\u00b9 or Lyon\u00b2\u00b3", "Paris or Lyon"),
        ("It is Paris\u30103\u2020source\u3011.", "It is Paris."),
    ],
)
def test_citations_are_removed(text: str, expected: str) -> None:
    assert strip_citations(text) == expected


@pytest.mark.parametrize(
    "text", ["an area of 5 km\u00b2", "x[i] and [a]", "see [Paris]", "E = mc\u00b2"]
)
def test_citations_leave_units_and_brackets(text: str) -> None:
    assert strip_citations(text) == text


def test_mojibake_is_repaired() -> None:
    assert fix_mojibake("caf\u00c3\u00a9") == "café"
    assert fix_mojibake("2.45\u00c2\u00a0billion") in ("2.45\u00a0billion", "2.45 billion")
    assert fix_mojibake("2.45\u00c2 billion") == "2.45 billion"
    assert fix_mojibake("São Paulo, Zürich") == "São Paulo, Zürich"  # real accents stay


def test_latex_to_text() -> None:
    assert latex_to_text(r"\(3.6 \times 10^{-7}\)") == "3.6 × 10^-7"
    assert latex_to_text(r"$\frac{1}{2}$ of \text{kg}") == "1/2 of kg"
    assert latex_to_text(r"1\,000 m") == "1000 m"
    assert latex_to_text("costs $5 and $6") == "costs $5 and $6"  # currency, not math


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.5 million", "2500000"),
        ("2,500,000", "2500000"),
        ("$29.00", "29"),
        ("twenty-five", "25"),
        ("three hundred and twelve", "312"),
        ("45 per cent", "45%"),
        ("3.6e-7", "0.00000036"),
        ("3.6 × 10^-7", "0.00000036"),
        ("2.50", "2.5"),
    ],
)
def test_numbers_are_canonical(text: str, expected: str) -> None:
    assert canonical_numbers(text) == expected


@pytest.mark.parametrize(
    "text", ["1.5", "15", "1,5", "1.05", "version 1.2.3", "no one knows", "one of them", "million"]
)
def test_numbers_that_must_not_change(text: str) -> None:
    assert canonical_numbers(text) == text


def test_one_point_five_is_not_fifteen() -> None:
    assert text_tokens("1.5", "robust") != text_tokens("15", "robust")
    assert pair_tokens("1.5", "15", "robust")[0] != pair_tokens("1.5", "15", "robust")[1]


@pytest.mark.parametrize(
    "text",
    ["Sep 2, 1945", "September 2nd, 1945", "2 September 1945", "1945-09-02", "2nd of Sept. 1945"],
)
def test_dates_are_canonical(text: str) -> None:
    assert canonical_dates(text) == "2 September 1945"


def test_dates_that_must_not_change() -> None:
    assert canonical_dates("you may 5 times") == "you may 5 times"  # modal verb, lower case
    assert canonical_dates("Feb 30, 2001") == "Feb 30, 2001"  # not a date: dateparser says so
    assert canonical_dates("in 1945") == "in 1945"
    assert canonical_dates("Sep 1945") == "September 1945"


def test_lemmas() -> None:
    assert lemma("vertebrae") == "vertebra"
    assert lemma("cities") == "city"
    assert lemma("news") == "news"  # a known word is kept
    assert lemma("jones") == "jones"  # no rule result is a known word: kept
    assert lemma("1945") == "1945"


# -- glued tokens ------------------------------------------------------------------------------


def test_glued_tokens_split_against_references() -> None:
    vocab = frozenset({"toni", "morrison"})
    assert split_glued("Morrisonin", vocab) == ["morrison", "in"]
    assert split_glued("byToni", vocab) == ["by", "toni"]
    assert split_glued("Paris1", frozenset({"paris"})) == ["paris", "1"]


@pytest.mark.parametrize(
    ("token", "vocab"),
    [
        ("Parisian", {"paris"}),  # a real word that looks glued
        ("together", {"get", "her"}),
        ("McDonald", {"donald"}),  # a name with an inner capital
        ("iPhone", {"phone"}),
        ("B52", {"b"}),
        ("COVID19", {"flu"}),  # no piece is a reference token
        ("15", {"1", "5"}),  # digits never split
    ],
)
def test_glued_tokens_that_must_not_split(token: str, vocab: set[str]) -> None:
    assert split_glued(token, frozenset(vocab)) == [token.lower()]


def test_name_case_does_not_matter_and_is_not_lemmatised_away() -> None:
    assert text_tokens("Apple", "robust") == text_tokens("apple", "robust") == ("apple",)
    assert text_tokens("Apple Inc.", "robust") == ("apple", "inc")


def test_spaces_removed_around_the_mention() -> None:
    cand, ref = pair_tokens("It was written byToni Morrisonin 1987", "Toni Morrison", "robust")
    assert ref == ("toni", "morrison")
    assert "toni morrison" in " ".join(cand)


# -- the public helpers and the metrics ----------------------------------------------------------


def test_adjacent_citations_are_not_a_markdown_link() -> None:
    assert clean_answer("the ecology [1] [2][3]") == "the ecology"
    assert clean_answer("In 1945\u00b9.") == "In 1945."
    assert clean_answer("[Paris](https://x.org/p)[2]") == "Paris"


def test_clean_answer_and_empty_answers() -> None:
    assert clean_answer("**Paris**[1]") == "Paris"
    assert clean_answer("  **Paris**  ", "squad") == "**Paris**"
    assert is_empty_answer("** **[1]")
    assert not is_empty_answer("**Paris**")
    assert is_empty_answer(None)
    with pytest.raises(InputError, match="normalize='robust'"):
        clean_answer("x", "fancy")


def test_unknown_profile_is_rejected_by_metrics() -> None:
    with pytest.raises(InputError):
        get_metric("f1", normalize="fancy")


def _legacy_hash(metric_id: str) -> str:
    """The config hash a metric had before ``normalize`` existed: its params without it."""
    cfg = get_metric(metric_id).config()
    params = {k: v for k, v in cfg["params"].items() if k != "normalize"}
    blob = json.dumps({**cfg, "params": params}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@pytest.mark.parametrize("metric_id", PROFILED)
def test_squad_default_keeps_the_config_hash(metric_id: str) -> None:
    default = get_metric(metric_id)
    assert "normalize" not in default.config()["params"]
    assert default.config_hash() == _legacy_hash(metric_id)
    assert get_metric(metric_id, normalize="squad").config_hash() == default.config_hash()
    assert get_metric(metric_id, normalize="robust").config_hash() != default.config_hash()


def test_stored_hashes_are_unchanged() -> None:
    """Hashes stored before the parameter existed (experiments/cache, the score tables)."""
    assert get_metric("f1").config_hash() == "abeb6e3693843f96"
    assert get_metric("em").config_hash() == "61b90b6b48664fdc"
    assert get_metric("panda").config_hash() == "0210e4d531dc822d"
    assert get_metric("extract", metric="f1").config_hash() == "eacf6c475d8b98a1"


HOSTILE = [
    Item(question="q", references=("Paris", "the city of Paris"), candidate="It is **Paris**[1]."),
    Item(question="q", references=("1945",), candidate="Sep 2, 1945"),
    Item(question="q", references=("Ünïcode ﬁne",), candidate="ÜNÏCODE  fine — yes"),
    Item(question="q", references=("a",), candidate="the an a"),
    Item(question="q", references=("",), candidate=""),
]


@pytest.mark.parametrize("metric_id", PROFILED)
def test_squad_profile_scores_equal_the_default(metric_id: str) -> None:
    a = get_metric(metric_id).score_batch(HOSTILE)
    b = get_metric(metric_id, normalize="squad").score_batch(HOSTILE)
    assert a.scores.tolist() == b.scores.tolist()


FORMATTED = [
    ("Who wrote Beloved?", "Toni Morrison", "It was written byauthor **Toni Morrison**in 1987[1]."),
    ("How many?", "2,500,000", "About 2.5 million people."),
    ("When?", "2 September 1945", "On Sep 2, 1945.\u00b9"),
    ("Which bone?", "vertebra", "The vertebrae."),
    ("Population?", "2.45 billion", "2.45\u00c2 billion"),
]


@pytest.mark.parametrize("metric_id", ["contains", "recall", "word_match"])
def test_robust_profile_reads_formatted_answers(metric_id: str) -> None:
    items = [Item(question=q, references=(r,), candidate=c) for q, r, c in FORMATTED]
    squad = get_metric(metric_id).score_batch(items).scores
    robust = get_metric(metric_id, normalize="robust").score_batch(items).scores
    assert robust.tolist() == [1.0] * len(items)
    assert squad.min() < 1.0  # SQuAD misses at least one of them


def test_robust_exact_match_and_f1() -> None:
    items = [Item(question="q", references=("vertebra",), candidate="**Vertebrae**[2]")]
    assert get_metric("em").score_batch(items).scores[0] == 0.0
    assert get_metric("em", normalize="robust").score_batch(items).scores[0] == 1.0
    assert get_metric("f1", normalize="robust").score_batch(items).scores[0] == 1.0


def test_robust_number_features_ignore_citation_markers() -> None:
    items = [Item(question="q", references=("Paris",), candidate="Paris[1]")]
    assert get_metric("number_agree").score_batch(items).scores[0] == 1.0
    items = [Item(question="q", references=("1945",), candidate="In 1945[3].")]
    assert get_metric("number_match", normalize="robust").score_batch(items).scores[0] == 1.0
    assert canonical_text("In 1945[3].") == "In 1945."
