"""Embedding metrics: the pure math without a model, then decisions with the packaged MiniLM
(marked slow: one model load shared by the module)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from qaeval_core.metrics.base import get_metric
from qaeval_core.metrics.embedding import cosine_max, greedy_match
from qaeval_core.schema import Item


def item(candidate: str, *references: str) -> Item:
    return Item(question="q", references=references, candidate=candidate)


# -- pure functions ---------------------------------------------------------------------------


def test_greedy_match_precision_recall_f1() -> None:
    e = np.eye(4)
    assert greedy_match(e[:2], e[:2]) == (1.0, 1.0, 1.0)
    # Candidate has one extra unmatched token: precision halves, recall stays 1.
    assert greedy_match(e[:2], e[:1]) == (0.5, 1.0, pytest.approx(2 / 3))
    assert greedy_match(e[:0], e[:1]) == (0.0, 0.0, 0.0)


def test_cosine_max_picks_the_best_reference_per_item() -> None:
    cands = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    refs = np.array([[0.0, 1.0], [0.6, 0.8], [0.0, 1.0]])
    owner = np.array([0, 0, 1])  # item 2 has no reference
    best, arg = cosine_max(cands, refs, owner, 3)
    np.testing.assert_allclose(best[:2], [0.6, 1.0])
    assert np.isnan(best[2])
    assert arg.tolist() == [1, 0, -1]


def test_runtime_parameters_do_not_change_the_config_hash() -> None:
    a = get_metric("bertscore")
    b = get_metric("bertscore", device="cpu", batch_size=8)
    assert a.config_hash() == b.config_hash()
    assert a.config_hash() != get_metric("bertscore", threshold=0.5).config_hash()
    assert (
        get_metric("embed_cosine").config_hash()
        != get_metric("embed_cosine", scale="shift").config_hash()
    )


def test_bad_parameter_values_raise_clear_errors() -> None:
    from qaeval_core.errors import ConfigError

    with pytest.raises(ConfigError, match="scale must be 'clip' or 'shift'"):
        get_metric("embed_cosine", scale="raw").score_batch([item("a", "b")])
    with pytest.raises(ConfigError, match="score must be one of precision, recall, f1"):
        get_metric("bertscore", score="f2").score_batch([item("a", "b")])


# -- with the packaged MiniLM -----------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Load MiniLM once for the module, with the embedding cache in a temporary folder."""
    pytest.importorskip("sentence_transformers")
    from qaeval_core.errors import ModelLoadError
    from qaeval_core.models.loading import load_sentence_encoder

    old = os.environ.get("QAEVAL_CACHE_DIR")
    os.environ["QAEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    try:
        load_sentence_encoder("minilm", "cpu")
    except ModelLoadError as exc:
        pytest.skip(f"packaged MiniLM not installed: {exc}")
    yield "minilm"
    if old is None:
        os.environ.pop("QAEVAL_CACHE_DIR", None)
    else:
        os.environ["QAEVAL_CACHE_DIR"] = old


CASES = [
    # (candidate, references, expected decision)
    ("The capital of France is Paris.", ("Paris",), True),
    ("Paris", ("Paris", "Paris, France"), True),
    ("Bananas are a yellow fruit rich in potassium.", ("Abraham Lincoln",), False),
    ("The mitochondria is the powerhouse of the cell.", ("1945",), False),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("metric_id", "params"),
    [("embed_cosine", {}), ("bertscore", {"score": "recall"})],
)
def test_decisions_on_clear_cases(minilm: str, metric_id: str, params: dict) -> None:
    metric = get_metric(metric_id, model=minilm, device="cpu", **params)
    res = metric.score_batch([item(c, *r) for c, r, _ in CASES])
    assert res.decisions.tolist() == [d for _, _, d in CASES]
    assert ((res.scores >= 0) & (res.scores <= 1)).all()
    assert res.details[1]["best_reference"] == "Paris"


@pytest.mark.slow
def test_bertscore_f1_penalises_verbose_answers(minilm: str) -> None:
    # The verbose correct answer: recall ~0.9, precision ~0.55, so F1 falls under 0.7 -- the
    # known weakness of F1-style matching on chatty answers (recall is the better choice).
    res = get_metric("bertscore", model=minilm, device="cpu").score_batch(
        [item(c, *r) for c, r, _ in CASES]
    )
    assert res.decisions.tolist() == [False, True, False, False]
    d = res.details[0]
    assert d["recall"] > 0.85 > 0.6 > d["precision"]
    assert res.scores[0] == pytest.approx(d["f1"])


@pytest.mark.slow
def test_identical_text_scores_one(minilm: str) -> None:
    for metric_id in ("embed_cosine", "bertscore"):
        res = get_metric(metric_id, model=minilm, device="cpu").score_batch(
            [item("Barack Obama", "Barack Obama")]
        )
        assert res.scores[0] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_shift_scale_is_one_plus_cosine_over_two(minilm: str) -> None:
    items = [item("It is Paris.", "Paris"), item("a rock", "a boulder")]
    clip = get_metric("embed_cosine", model=minilm, device="cpu").score_batch(items)
    shift = get_metric("embed_cosine", model=minilm, scale="shift", device="cpu").score_batch(items)
    cos = np.array([d["cosine"] for d in clip.details])
    np.testing.assert_allclose(shift.scores, (1 + cos) / 2, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("metric_id", ["embed_cosine", "bertscore"])
def test_batched_equals_one_at_a_time(minilm: str, metric_id: str) -> None:
    items = [item(c, *r) for c, r, _ in CASES] + [item("", "x"), item("y")]
    metric = get_metric(metric_id, model=minilm, device="cpu")
    batch = metric.score_batch(items)
    singles = [metric.score_batch([it]) for it in items]
    np.testing.assert_allclose(batch.scores, [s.scores[0] for s in singles], atol=1e-5)
    assert batch.decisions.tolist() == [bool(s.decisions[0]) for s in singles]
    assert [d.get("best_reference") for d in batch.details] == [
        s.details[0].get("best_reference") for s in singles
    ]


@pytest.mark.slow
def test_each_unique_string_is_embedded_once(minilm: str) -> None:
    from qaeval_core.models.embedding_cache import get_cache

    cache = get_cache(minilm, "cpu")
    before = cache.encoded_count
    items = [item("unique answer seven", "seven")] * 5 + [item("seven", "seven")]
    get_metric("embed_cosine", model=minilm, device="cpu").score_batch(items)
    assert cache.encoded_count - before == 2
    get_metric("embed_cosine", model=minilm, device="cpu").score_batch(items)
    assert cache.encoded_count - before == 2
