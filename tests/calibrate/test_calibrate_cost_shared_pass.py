"""The cost of an encoder family is timed the way a judge runs it: one shared encoding pass
over the family's distinct strings (``scoring.run_jobs``), not one pass per metric, which
priced the MiniLM family ~1.5x too high. A fake encoder counts the passes; no model loads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.calibrate import cost as cost_module
from qaeval_core.calibrate.cost import input_family
from qaeval_core.metrics.base import get_metric
from qaeval_core.models import embedding_cache
from qaeval_core.models.encoder import Encoded
from qaeval_core.schema import Item

ITEMS = [
    Item("Who wrote Hamlet?", ("William Shakespeare", "Shakespeare"), "Shakespeare wrote it"),
    Item("Capital of France?", ("Paris",), "It is Paris."),
    Item("How many legs has a spider?", ("eight", "8"), "six"),
    Item("Largest planet?", ("Jupiter",), "Saturn, I think"),
]


class CountingEncoder:
    """Vectors from a text's characters; records every call (its texts)."""

    backend = "fake"
    model = "minilm"
    device = "cpu"
    dimension = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    @staticmethod
    def _vec(text: str) -> np.ndarray:
        v = np.array([len(text) + 1, sum(map(ord, text)) % 97, text.count(" "), 1.0], np.float32)
        return v / np.linalg.norm(v)

    def encode(
        self, texts: Sequence[str], *, tokens: bool, batch_size: int | None = None
    ) -> Encoded:
        self.calls.append(list(texts))
        sent = np.stack([self._vec(t) for t in texts])
        mats = [np.stack([self._vec(w) for w in t.split() or [t]]) for t in texts]
        return Encoded(sent, mats if tokens else None)


def _plain(text: str) -> str:
    return text.lower().replace("-", " ")


def _from_warmup(text: str) -> bool:
    """Whether ``text`` holds a warm-up item's candidate or reference (SMILE's and
    extraction's strings are made from them)."""
    seeds = {_plain(t) for it in cost_module._WARMUP for t in (it.candidate, *it.references)}
    return any(seed in _plain(text) for seed in seeds)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CountingEncoder:
    encoder = CountingEncoder()
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(tmp_path))  # fresh caches: nothing reused
    monkeypatch.setattr(embedding_cache, "load_encoder", lambda *a, **k: encoder)
    return encoder


def test_an_encoder_family_is_timed_with_one_encoding_pass(fake: CountingEncoder) -> None:
    specs = [
        ("embed_cosine", get_metric("embed_cosine")),
        ("bertscore", get_metric("bertscore")),
        ("smile", get_metric("smile")),
        ("extract_f1", get_metric("extract", metric="f1")),
    ]
    assert len({input_family(m) for _, m in specs}) == 1
    timings = cost_module._time_family(specs, ITEMS)
    # The warm-up's calls encode only strings made from the synthetic warm-up items.
    timed = [call for call in fake.calls if not all(_from_warmup(t) for t in call)]
    # Every string of the real rows went through the encoder in one call (the shared pass,
    # as a judge runs it), not one call per metric (timed alone: embed_cosine's, then SMILE's).
    assert len(timed) == 1, [c[:3] for c in timed]
    real = {t for it in ITEMS for t in (it.candidate, *it.references)}
    assert real <= set(timed[0])
    assert [t["column"] for t in timings] == [c for c, _ in specs]
    assert all(t["seconds"] >= 0 and t["load_s"] >= 0 for t in timings)


def test_the_int8_encoder_is_a_family_of_its_own() -> None:
    float_family = input_family(get_metric("embed_cosine"))
    assert float_family == "encoder:minilm"
    assert input_family(get_metric("embed_cosine", backend="onnx")) == float_family
    assert input_family(get_metric("smile", backend="torch")) == float_family
    int8 = input_family(get_metric("embed_cosine", backend="onnx-int8"))
    assert int8 == "encoder:minilm|onnx-int8"
    assert input_family(get_metric("bertscore", backend="onnx-int8")) == int8
