"""Encode once: one forward pass per unique string and model serves every embedding metric,
with the same scores as each metric run alone (packaged MiniLM, marked slow)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.metrics.base import get_metric
from qaeval_core.schema import Item

ITEMS = [
    Item("What is the capital of France?", ("Paris",), "The capital of France is Paris."),
    Item(
        "Who wrote Hamlet?",
        ("William Shakespeare", "Shakespeare"),
        "Hamlet was written by the English playwright William Shakespeare around 1600, and it "
        "remains one of his most performed tragedies.",
    ),
    Item("When did the war end?", ("1945",), "I believe it ended in 1944."),
    Item("What colour is the sky?", ("blue",), "Bananas are yellow."),
    Item("Largest planet?", ("Jupiter",), "I'm unable to answer that question."),
    Item("Capital of Japan?", ("Tokyo",), "tokyo"),
]
METRICS = ("embed_cosine", "bertscore", "smile", "smile_paper", "avert")


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Switch to a new, empty embedding store (caches are per store folder); the ONNX export
    of the first call is linked into every later folder instead of being made again."""
    pytest.importorskip("sentence_transformers")
    from qaeval_core.errors import ModelLoadError
    from qaeval_core.models.loading import load_sentence_encoder

    try:
        load_sentence_encoder("minilm", "cpu")
    except ModelLoadError as exc:
        pytest.skip(f"packaged MiniLM not installed: {exc}")
    base = tmp_path / "base"
    base.mkdir()
    state = {"n": 0}

    def switch() -> None:
        state["n"] += 1
        folder = tmp_path / f"store{state['n']}"
        folder.mkdir()
        if (base / "onnx").is_dir():
            (folder / "onnx").symlink_to(base / "onnx")
        monkeypatch.setenv("QAEVAL_CACHE_DIR", str(folder))

    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(base))
    yield switch


def _cache():
    from qaeval_core.models.embedding_cache import get_cache

    return get_cache("minilm", "cpu")


@pytest.mark.slow
def test_encode_once_gives_each_metric_alone_scores(fresh) -> None:
    alone = {}
    for metric_id in METRICS:
        fresh()
        alone[metric_id] = get_metric(metric_id, device="cpu").score_batch(ITEMS)
    fresh()
    for order in (METRICS, tuple(reversed(METRICS))):
        fresh()
        for metric_id in order:
            together = get_metric(metric_id, device="cpu").score_batch(ITEMS)
            # Batches differ (other strings share them), so float32 rounding may differ.
            np.testing.assert_allclose(together.scores, alone[metric_id].scores, atol=1e-6)
            assert together.decisions.tolist() == alone[metric_id].decisions.tolist()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second"), [("embed_cosine", "bertscore"), ("bertscore", "embed_cosine")]
)
def test_second_metric_on_the_same_items_encodes_nothing(
    fresh, monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> None:
    import onnxruntime
    from sentence_transformers import SentenceTransformer

    fresh()
    get_metric(first, device="cpu").score_batch(ITEMS)

    def no_more(*args: object, **kwargs: object) -> None:
        raise AssertionError("a string went through the model a second time")

    # Whichever backend runs, a second forward pass would go through one of these.
    monkeypatch.setattr(SentenceTransformer, "encode", no_more)
    monkeypatch.setattr(onnxruntime.InferenceSession, "run", no_more)
    res = get_metric(second, device="cpu").score_batch(ITEMS)
    assert len(res) == len(ITEMS)


@pytest.mark.slow
def test_evicted_token_vectors_are_encoded_again_identically(fresh) -> None:
    from qaeval_core.models.embedding_cache import EmbeddingCache

    fresh()
    texts = [it.candidate for it in ITEMS]
    roomy = EmbeddingCache("minilm", device="cpu", path=False)
    want = roomy.token_embeddings(texts)
    tight = EmbeddingCache("minilm", device="cpu", path=False, token_budget=0)
    tight.encode(texts, keep_tokens=True)
    assert tight._token_bytes == sum(m.nbytes for m in tight._tokens.values())
    assert len(tight._tokens) == len(texts)  # the current call's texts are never evicted
    tight.encode(["something else entirely"], keep_tokens=True)
    assert list(tight._tokens) == ["something else entirely"]
    got = tight.token_embeddings(texts)
    for t in texts:
        np.testing.assert_allclose(got[t], want[t], atol=1e-6)


@pytest.mark.slow
def test_smile_skips_ngrams_once_the_reference_is_one_of_them(fresh) -> None:
    from qaeval_core.metrics.smile import _capped_ngrams, preprocess
    from qaeval_core.metrics.smile_answers import synthetic_answers

    fresh()
    item = Item("Who wrote Hamlet?", ("William Shakespeare",), ITEMS[1].candidate)
    res = get_metric("smile", device="cpu", lemmatizer="none").score_batch([item])
    cache = _cache()
    cand = item.candidate.strip()
    p_cand, p_ref = preprocess([cand, item.references[0]], "none")
    bigrams = _capped_ngrams(p_cand.split(), 2, 256)
    assert p_ref in bigrams and len(bigrams) > 10
    # Embedded: the candidate, the synthetic answer and the processed reference; none of the
    # other bigrams, which cannot beat the one equal to the reference.
    (synth,) = synthetic_answers([(item.question, item.references[0])], "template")
    assert cache.encoded_count == len({cand, synth.text, p_ref})
    # The keyword cosine is still the max over every bigram (embedded here, after the metric).
    full = cache.encode(bigrams) @ cache.encode([p_ref])[0]
    assert res.details[0]["best_ngram"] == p_ref
    assert res.details[0]["keyword_cosine"] == pytest.approx(float(full.max()), abs=1e-6)


@pytest.mark.slow
def test_smile_embeds_every_ngram_when_the_reference_is_not_one(fresh) -> None:
    from qaeval_core.metrics.smile import _capped_ngrams, preprocess

    fresh()
    item = ITEMS[2]  # "1945" vs "I believe it ended in 1944."
    res = get_metric("smile", device="cpu", lemmatizer="none").score_batch([item])
    p_cand, p_ref = preprocess([item.candidate.strip(), item.references[0]], "none")
    grams = _capped_ngrams(p_cand.split(), 1, 256)
    cache = _cache()
    full = cache.encode(grams) @ cache.encode([p_ref])[0]
    assert res.details[0]["keyword_cosine"] == pytest.approx(float(full.max()), abs=1e-6)
    assert res.details[0]["best_ngram"] == grams[int(np.argmax(full))]


GLUED = [
    Item("Capital of Japan?", ("Tokyo",), "The capital of Japan isTokyo1, a large city."),
    Item("Capital of Japan?", ("Tokyo",), "The capital of Japan is **Tokyo**[2], a large city."),
    Item("Capital of Japan?", ("Tokyo",), "The capital of Japan is Tokyo, a large city."),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "second"), [("embed_cosine", "bertscore"), ("bertscore", "embed_cosine")]
)
def test_robust_metrics_share_one_pass_per_reader_text(
    fresh, monkeypatch: pytest.MonkeyPatch, first: str, second: str
) -> None:
    """At ``normalize="robust"`` the candidates are encoded as their reader text: the three
    copies above read alike, so one string (plus the reference) goes through the model, and
    the second metric encodes nothing."""
    import onnxruntime
    from sentence_transformers import SentenceTransformer

    fresh()
    get_metric(first, device="cpu", normalize="robust").score_batch(GLUED)
    assert _cache().encoded_count == 2  # "The capital of Japan is Tokyo, a large city.", "Tokyo"

    def no_more(*args: object, **kwargs: object) -> None:
        raise AssertionError("a string went through the model a second time")

    monkeypatch.setattr(SentenceTransformer, "encode", no_more)
    monkeypatch.setattr(onnxruntime.InferenceSession, "run", no_more)
    res = get_metric(second, device="cpu", normalize="robust").score_batch(GLUED)
    assert res.scores.tolist() == [res.scores[2]] * 3


SHARED = (
    ("embed_cosine", {}),
    ("bertscore", {}),
    ("smile", {}),
    ("smile_paper", {}),
    ("avert", {}),
    ("extract", {"metric": "f1"}),
)


@pytest.mark.slow
def test_a_run_of_six_encoder_metrics_encodes_each_distinct_string_once(
    fresh, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scoring loop's shared pass (qaeval_core.scoring, "Encode once per run"): across
    six MiniLM metrics every distinct string goes through the model once, in two encoder
    calls (every metric's texts together; then the templated targets of the distractors
    A-VERT chose by those vectors), and each metric's scores are those it gives alone."""
    from qaeval_core.metrics.avert import enhance_open
    from qaeval_core.metrics.avert_distractors import load_distractor_pool
    from qaeval_core.models.embedding_cache import EmbeddingCache
    from qaeval_core.scoring import ScoringJob, run_jobs

    alone = {}
    for metric_id, params in SHARED:
        fresh()
        alone[metric_id] = get_metric(metric_id, device="cpu", **params).score_batch(ITEMS)
    fresh()
    calls: list[list[str]] = []
    forward = EmbeddingCache._forward

    def spy(self, texts, tokens, batch_size=None):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return forward(self, texts, tokens, batch_size)

    monkeypatch.setattr(EmbeddingCache, "_forward", spy)
    jobs = [
        ScoringJob(mid, get_metric(mid, device="cpu", **params), ITEMS) for mid, params in SHARED
    ]
    together = run_jobs(jobs)
    encoded = [t for call in calls for t in call]
    assert len(encoded) == len(set(encoded)), "a string went through the model twice"
    assert len(calls) == 2
    assert {it.candidate for it in ITEMS} | {r for it in ITEMS for r in it.references} <= set(
        calls[0]
    )
    assert set(calls[1]) <= set(enhance_open(load_distractor_pool().answers))
    for metric_id, _ in SHARED:
        np.testing.assert_allclose(together[metric_id].scores, alone[metric_id].scores, atol=1e-6)
        assert together[metric_id].decisions.tolist() == alone[metric_id].decisions.tolist()
