"""Encoder backends: ONNX Runtime export (cached, checked, fallback), backend choice, and the
GPU path's adaptive batch size (unit-tested with a fake out-of-memory error; no GPU here)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.metrics.base import get_metric
from qaeval_core.models import backends, encoder
from qaeval_core.models.encoder import TorchEncoder, run_adaptive
from qaeval_core.schema import Item

EMBEDDING_METRICS = ["embed_cosine", "bertscore", "smile", "smile_paper", "avert"]

# -- backend choice and hashes (no model) ----------------------------------------------------


def test_auto_is_onnx_on_cpu_torch_on_cuda_and_the_environment_overrides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(backends.ENV_BACKEND, raising=False)
    assert backends.resolve_backend(None, "cpu") == "onnx"
    assert backends.resolve_backend("auto", "cuda:0") == "torch"
    assert backends.resolve_backend("torch", "cpu") == "torch"
    monkeypatch.setenv(backends.ENV_BACKEND, "torch")
    assert backends.resolve_backend("auto", "cpu") == "torch"
    monkeypatch.setenv(backends.ENV_BACKEND, "onnx-int8")  # never picked by the environment
    assert backends.resolve_backend("auto", "cpu") == "onnx"
    with pytest.raises(ConfigError, match="must be one of auto, torch, onnx, onnx-int8"):
        backends.resolve_backend("tensorrt", "cpu")


@pytest.mark.parametrize(
    "metric_id", ["embed_cosine", "bertscore", "smile", "smile_paper", "avert"]
)
def test_only_the_score_changing_backend_enters_the_config_hash(metric_id: str) -> None:
    default = get_metric(metric_id).config_hash()
    assert get_metric(metric_id, backend="torch").config_hash() == default
    assert get_metric(metric_id, backend="onnx").config_hash() == default
    assert "backend" not in get_metric(metric_id).config()["params"]
    assert get_metric(metric_id, backend="onnx-int8").config_hash() != default
    assert backends.store_key("minilm", "onnx") == backends.store_key("minilm", "torch")
    assert backends.store_key("minilm", "onnx-int8") != backends.store_key("minilm", None)


# -- adaptive batch size (fake out-of-memory) ------------------------------------------------


class FakeOOM(RuntimeError):
    def __init__(self) -> None:
        super().__init__("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_memory_halves_the_batch_and_retries_it(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[tuple[int, int]] = []
    cleared: list[bool] = []

    def run(start: int, stop: int) -> list[int]:
        calls.append((start, stop))
        if stop - start > 8:
            raise FakeOOM()
        return list(range(start, stop))

    with caplog.at_level(logging.WARNING):
        parts, size = run_adaptive(50, 32, run, adaptive=True, on_oom=lambda: cleared.append(True))
    assert [x for p in parts for x in p] == list(range(50))
    assert size == 8
    assert calls[:3] == [(0, 32), (0, 16), (0, 8)]
    assert len(cleared) == 2
    assert "retrying with batch size 8" in caplog.text


def test_other_errors_and_the_cpu_path_are_not_caught() -> None:
    def boom(start: int, stop: int) -> None:
        raise ValueError("not memory")

    with pytest.raises(ValueError):
        run_adaptive(10, 4, boom, adaptive=True)

    def oom(start: int, stop: int) -> None:
        raise FakeOOM()

    with pytest.raises(FakeOOM):
        run_adaptive(10, 4, oom, adaptive=False)  # CPU: unchanged, nothing retried
    with pytest.raises(FakeOOM):
        run_adaptive(10, 4, oom, adaptive=True)  # down to one row, then re-raised


class _FakeST:
    """A sentence-transformers stand-in that runs out of memory above 3 texts per batch.

    Its forward output carries a string entry, as sentence-transformers 6.0's did: the encoder
    must read the tensors it needs and nothing else (6.0's ``encode(output_value=None)`` failed
    on that entry with "string index out of range").
    """

    device = "cpu"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def preprocess(self, texts: list[str]) -> dict[str, object]:
        return {"texts": list(texts)}

    def __call__(self, features: dict[str, object]) -> dict[str, object]:
        import torch

        texts = features["texts"]
        assert isinstance(texts, list)
        self.batches.append(len(texts))
        if len(texts) > 3:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory")
        width = max(len(t) for t in texts) + 3
        tok = torch.zeros(len(texts), width, 2)
        mask = torch.zeros(len(texts), width, dtype=torch.long)
        for i, t in enumerate(texts):
            n = len(t) + 2
            tok[i, : n + 1] = len(t)
            mask[i, :n] = 1
        sent = torch.tensor([[3.0, 4.0]] * len(texts))
        return {
            "sentence_embedding": sent,
            "token_embeddings": tok,
            "attention_mask": mask,
            "modality": "text",
        }


def test_torch_encoder_on_cuda_keeps_the_batch_size_that_fitted() -> None:
    pytest.importorskip("torch")
    enc = TorchEncoder.__new__(TorchEncoder)
    enc.model, enc.device, enc.batch_size, enc.st = "fake", "cuda", 16, _FakeST()
    texts = ["a", "bbbb", "cc", "ddd", "e", "ffffff", "gg"]
    out = enc.encode(texts, tokens=True)
    assert enc.batch_size == 2  # 16 -> 8 -> 4 -> 2
    np.testing.assert_allclose(out.sentences, [[0.6, 0.8]] * len(texts))
    assert out.tokens is not None
    assert [len(m) for m in out.tokens] == [
        len(t) for t in texts
    ]  # [CLS]/[SEP] dropped, order kept
    enc.st.batches.clear()
    enc.encode(texts, tokens=False)
    assert max(enc.st.batches) == 2  # the next call starts at the size that fitted


# -- with the packaged MiniLM ----------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sentence_transformers")
    from qaeval_core.models.loading import load_sentence_encoder

    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(path))
        mp.delenv(backends.ENV_BACKEND, raising=False)
        try:
            load_sentence_encoder("minilm", "cpu")
        except ModelLoadError as exc:
            pytest.skip(f"packaged MiniLM not installed: {exc}")
        yield path


ITEMS = [
    Item("What is the capital of France?", ("Paris",), "The capital of France is Paris."),
    Item(
        "Who wrote Hamlet?",
        ("William Shakespeare", "Shakespeare"),
        "Hamlet was written by the English playwright William Shakespeare around 1600.",
    ),
    Item("When did the war end?", ("1945",), "I believe it ended in 1944."),
    Item("What colour is the sky?", ("blue",), "Bananas are yellow, café déjà vu."),
    Item("Largest planet?", ("Jupiter",), "I'm unable to answer that question."),
    Item("Longest?", ("a long one",), "word " * 300),  # truncated at 256 tokens
]


@pytest.mark.slow
def test_onnx_export_is_cached_on_disk_by_fingerprint(store: Path) -> None:
    from qaeval_core.models import onnx_encoder

    enc = onnx_encoder.OnnxEncoder("minilm")
    folder = onnx_encoder.export_dir("minilm")
    assert folder.parent == store / "onnx"
    assert {"model.onnx", "meta.json", "tokenizer.json"} <= {p.name for p in folder.iterdir()}
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    again = onnx_encoder.OnnxEncoder("minilm")  # no second export
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp
    a = enc.encode(["Paris"], tokens=False).sentences
    np.testing.assert_array_equal(a, again.encode(["Paris"], tokens=False).sentences)


def test_fingerprint_follows_the_model_files(tmp_path: Path) -> None:
    from qaeval_core.models.onnx_encoder import model_fingerprint

    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 64)
    (tmp_path / "config.json").write_text("{}")
    first = model_fingerprint(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 63 + b"\x01")
    import os

    os.utime(tmp_path, ns=(1, 1))  # the per-process memo is keyed by the folder's stat
    assert model_fingerprint(tmp_path) != first


def _fresh_store(store: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty embedding store (the backends share stores) that still finds the export."""
    folder = store / name
    folder.mkdir()
    (folder / "onnx").symlink_to(store / "onnx")
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(folder))


@pytest.mark.slow
@pytest.mark.parametrize(
    "metric_id", ["embed_cosine", "bertscore", "smile", "smile_paper", "avert"]
)
def test_onnx_scores_equal_torch_scores(
    store: Path, metric_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from qaeval_core.models import embedding_cache as embed_cache
    from qaeval_core.models import onnx_encoder

    onnx_encoder.OnnxEncoder("minilm")  # the export, in the module's store
    _fresh_store(store, f"{metric_id}-torch", monkeypatch)
    torch_res = get_metric(metric_id, device="cpu", backend="torch").score_batch(ITEMS)
    _fresh_store(store, f"{metric_id}-onnx", monkeypatch)
    onnx_res = get_metric(metric_id, device="cpu", backend="onnx").score_batch(ITEMS)
    cache = embed_cache.get_cache("minilm", "cpu", "onnx")
    assert cache.encoder.backend == "onnx" and cache.encoded_count > 0
    # Same float32 arithmetic in another order: far inside the 0.01 acceptance bar.
    np.testing.assert_allclose(onnx_res.scores, torch_res.scores, atol=1e-6)
    assert onnx_res.decisions.tolist() == torch_res.decisions.tolist()


@pytest.mark.slow
def test_a_failed_export_falls_back_to_torch_and_says_why(
    store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(model: str, **_: object) -> None:
        raise ModelLoadError("export exploded")

    monkeypatch.setattr(backends, "OnnxEncoder", broken)
    monkeypatch.setattr(backends, "_ENCODERS", {})
    with caplog.at_level(logging.WARNING):
        enc = backends.load_encoder("minilm", "cpu", "onnx")
    assert isinstance(enc, encoder.TorchEncoder)
    assert "export exploded" in caplog.text and "falling back to torch" in caplog.text
    with pytest.raises(ModelLoadError, match="int8 ONNX encoder"):
        backends.load_encoder("minilm", "cpu", "onnx-int8")


@pytest.mark.slow
def test_int8_is_opt_in_and_stored_apart(store: Path) -> None:
    from qaeval_core.models.embedding_cache import get_cache

    torch_vecs = get_cache("minilm", "cpu", "torch").encode(["Paris", "the capital of France"])
    cache = get_cache("minilm", "cpu", "onnx-int8")
    assert cache.store_key == "minilm|onnx-int8"
    vecs = cache.encode(["Paris", "the capital of France"])
    assert cache.encoder.backend == "onnx-int8"
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # Close to torch but not float-equal: why it is not the default (module docstring).
    cos = (vecs * torch_vecs).sum(axis=1)
    assert (cos > 0.9).all() and np.abs(vecs - torch_vecs).max() > 1e-4


# -- the int8 path (issue 35): built once, by path, recorded, close to float -----------------


@pytest.mark.slow
def test_int8_is_built_once_from_a_local_path_and_records_its_recipe(
    store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import hashlib

    from qaeval_core.models import onnx_encoder
    from qaeval_core.models.loading import resolve_model_path

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a local folder: nothing to download
    path = resolve_model_path("minilm")
    assert Path(path).is_dir()
    enc = onnx_encoder.OnnxEncoder(path, quantized=True)
    folder = onnx_encoder.export_dir(path)
    target, record_path = folder / "model.int8.onnx", folder / "model.int8.json"
    record = json.loads(record_path.read_text())
    sha = hashlib.sha256(target.read_bytes()).hexdigest()
    assert record["sha256"] == sha and enc.vector_source == f"onnx-int8:{sha[:16]}"
    assert record["source"] == hashlib.sha256((folder / "model.onnx").read_bytes()).hexdigest()
    assert record["recipe"] == onnx_encoder.INT8_RECIPE and record["version"] == "2"
    assert record["seal"] == onnx_encoder.meta_seal(record)
    stamp = target.stat().st_mtime_ns
    again = onnx_encoder.OnnxEncoder(path, quantized=True)  # built once: loaded, not remade
    assert target.stat().st_mtime_ns == stamp and again.backend == "onnx-int8"
    # A record that no longer says how the file was made is not trusted: the model is remade.
    record_path.write_text(json.dumps({**record, "recipe": {"per_channel": False}}))
    with caplog.at_level(logging.WARNING):
        onnx_encoder.OnnxEncoder(path, quantized=True)
    assert "cannot be used" in caplog.text and "seal" in caplog.text
    assert json.loads(record_path.read_text())["recipe"] == onnx_encoder.INT8_RECIPE


@pytest.mark.slow
def test_int8_sentence_vectors_are_within_the_stated_cosine_bound_of_float(store: Path) -> None:
    from qaeval_core.models.onnx_encoder import INT8_MAX_COSINE_GAP, OnnxEncoder

    texts = [
        "Paris",
        "The capital of France is Paris, a city on the Seine.",
        "William Shakespeare",
        "I believe it ended in 1944.",
        "  café  déjà vu  ",
        "The answer is (C) 42 kg/m^2 because the density doubles.",
        "word " * 300,
    ]
    fp = OnnxEncoder("minilm").encode(texts, tokens=True)
    q = OnnxEncoder("minilm", quantized=True).encode(texts, tokens=True)
    gap = 1.0 - (fp.sentences * q.sentences).sum(axis=1)
    assert gap.max() <= INT8_MAX_COSINE_GAP, gap
    assert gap.max() > 1e-5  # int8 really ran: not the float model under another name
    assert fp.tokens is not None and q.tokens is not None
    for a, b in zip(fp.tokens, q.tokens, strict=True):
        assert a.shape == b.shape  # same tokens, so BERTScore aligns the same pieces


def _shared_rows(name: str, n: int) -> list[dict]:
    import os

    from _paths import SHARED_DATA

    base = Path(os.environ.get("QAEVAL_SHARED_DIR", SHARED_DATA.parent)) / "data"
    path = base / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"the shared data ({path}) is not beside this checkout")
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for _, line in zip(range(n), fh, strict=False)]


@pytest.mark.slow
def test_int8_verdicts_agree_with_float_on_a_small_real_sample(store: Path) -> None:
    """40 NQ301 + 40 MMLU-Pro rows: embed_cosine and BERTScore verdicts on int8 agree with
    float on >= 95% of rows (on all 1,490 NQ301 rows: 98.9% and 99.5%,
    experiments/results/int8_encoder.md; a small sample allows a few flips near a threshold)."""
    rows = _shared_rows("kamalloo_nq301", 40) + _shared_rows("answer_matching_mmlu_pro", 40)
    items = [
        Item(r["question"], tuple(str(x) for x in r["references"]), r["candidate"] or "")
        for r in rows
    ]
    for metric_id in ("embed_cosine", "bertscore"):
        fp = get_metric(metric_id, backend="onnx").score_batch(items)
        q = get_metric(metric_id, backend="onnx-int8").score_batch(items)
        agree = float(np.mean(fp.decisions == q.decisions))
        assert agree >= 0.95, (metric_id, agree)
        assert np.abs(fp.scores - q.scores).max() < 0.1
