"""static_cosine and static_keyword (qaeval_core/metrics/static.py): what they compute, that
they follow MiniLM's cosine on real rows, and that they are their own cheap cost family."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.calibrate.cost import input_family
from qaeval_core.calibrate.inputs import DEFAULT_METRICS
from qaeval_core.metrics.base import get_metric
from qaeval_core.models.static_encoder import load_static_encoder
from qaeval_core.schema import Item

#: Pearson correlation of the static cosine with MiniLM's on the 298 packaged NQ-301 demo rows
#: (candidate vs first reference): 0.930 measured when the model was shipped; 0.895 on 600
#: rows of NQ-301 and MMLU-Pro (bench/bench_encode_once.py's rows).
AGREEMENT_FLOOR = 0.90


def _demo() -> list[dict]:
    path = Path(str(resources.files("qaeval_core.data") / "demo_nq301.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_static_cosine_is_the_best_reference_cosine() -> None:
    item = Item("Capital of France?", ("Lyon", "Paris"), "It is Paris.")
    res = get_metric("static_cosine").score_batch([item])
    enc = load_static_encoder()
    v = enc.encode(["It is Paris.", "Lyon", "Paris"])
    want = max(float(v[1] @ v[0]), float(v[2] @ v[0]))
    assert res.scores[0] == pytest.approx(want, abs=1e-6)
    assert res.details[0]["best_reference"] == "Paris"


def test_static_keyword_finds_the_reference_inside_a_long_answer() -> None:
    long = "Well, after checking several sources I am fairly sure the capital is Paris, France."
    items = [
        Item("Capital of France?", ("Paris",), long),
        Item("Capital of France?", ("Paris",), "Lyon"),
        Item("Capital of France?", ("Paris",), ""),
    ]
    kw = get_metric("static_keyword").score_batch(items)
    cos = get_metric("static_cosine").score_batch(items)
    assert kw.scores[0] == pytest.approx(1.0, abs=1e-5)  # the window "paris" is the reference
    assert cos.scores[0] < 0.9  # the whole-answer cosine is diluted
    assert kw.scores[1] < 0.9 and kw.decisions.tolist() == [True, False, False]
    assert kw.scores[2] == 0.0 and kw.details[2]["best_reference"] is None


def test_static_inputs_are_a_cheap_family_of_the_defaults() -> None:
    cols = {col: (mid, params) for col, mid, params in DEFAULT_METRICS}
    for mid in ("static_cosine", "static_keyword"):
        assert mid in cols
        metric = get_metric(mid)
        assert input_family(metric) == "static"
        assert not metric.needs_models
        assert metric.config()["model_sha256"] == load_static_encoder().sha256


@pytest.mark.slow
def test_static_cosine_follows_minilm_on_real_rows() -> None:
    pytest.importorskip("sentence_transformers")
    from qaeval_core.errors import ModelLoadError
    from qaeval_core.models.embedding_cache import EmbeddingCache

    rows = _demo()
    cands = [r["candidate"] for r in rows]
    refs = [r["references"][0] for r in rows]
    try:
        minilm = EmbeddingCache("minilm", device="cpu", path=False)
        full = (minilm.encode(cands) * minilm.encode(refs)).sum(axis=1)
    except ModelLoadError as exc:
        pytest.skip(f"packaged MiniLM not installed: {exc}")
    enc = load_static_encoder()
    static = (enc.encode(cands) * enc.encode(refs)).sum(axis=1)
    assert np.corrcoef(static, full)[0, 1] >= AGREEMENT_FLOOR
    again = (enc.encode(cands) * enc.encode(refs)).sum(axis=1)
    np.testing.assert_array_equal(static, again)  # deterministic, same process
