"""The ONNX export cache is verified on every load, never trusted blindly (issue 21, item 14).

A replaced ``model.onnx`` or an edited ``meta.json`` (the pooling) was loaded without a word
(66-67 of 200 verdicts flipped), and the torch backend then reused the poisoned vectors from the
shared embedding store. Now the export records its files' hashes, the source model's
fingerprint and a seal; a load that finds a difference rebuilds the export and drops the
vectors it made. One export is built for the module; each tampering test works on a copy.
"""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.errors import ModelLoadError
from qaeval_core.models import backends

pytestmark = pytest.mark.slow
TEXTS = ["Paris", "The capital of France is Paris.", "William Shakespeare"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache directory holding a verified export of the packaged MiniLM."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("sentence_transformers")
    from qaeval_core.models import onnx_encoder
    from qaeval_core.models.loading import load_sentence_encoder

    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QAEVAL_CACHE_DIR", str(path))
        mp.delenv(backends.ENV_BACKEND, raising=False)
        try:
            load_sentence_encoder("minilm", "cpu")
        except ModelLoadError as exc:
            pytest.skip(f"packaged MiniLM not installed: {exc}")
        onnx_encoder.export_model("minilm")
        yield path


@pytest.fixture
def cache(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the built cache for one test (its own store, its own processes' memos)."""
    from qaeval_core.models import embedding_cache as embed_cache

    target = tmp_path / "cache"
    shutil.copytree(built / "onnx", target / "onnx")
    monkeypatch.setenv("QAEVAL_CACHE_DIR", str(target))
    monkeypatch.delenv(backends.ENV_BACKEND, raising=False)
    monkeypatch.setattr(backends, "_ENCODERS", {})
    monkeypatch.setattr(embed_cache, "_CACHES", {})
    return target


def _folder() -> Path:
    from qaeval_core.models import onnx_encoder

    return onnx_encoder.export_dir("minilm")


def _torch_vectors() -> np.ndarray:
    from qaeval_core.models.encoder import TorchEncoder

    return TorchEncoder("minilm", "cpu").encode(TEXTS, tokens=False).sentences


def test_a_fresh_export_is_sealed_and_verifies(cache: Path) -> None:
    from qaeval_core.models import onnx_encoder

    meta = json.loads((_folder() / "meta.json").read_text())
    assert meta["version"] == onnx_encoder.EXPORT_VERSION == "2"
    assert set(meta["files"]) == {"model.onnx", "tokenizer.json"}
    assert meta["seal"] == onnx_encoder.meta_seal(meta)
    assert meta["source_fingerprint"] == onnx_encoder.model_fingerprint(
        onnx_encoder.resolve_model_path("minilm")
    )
    assert onnx_encoder.verify_export(_folder(), "minilm") == []
    enc = onnx_encoder.OnnxEncoder("minilm")
    assert enc.vector_source == f"onnx:{meta['seal'][:16]}"


def test_each_kind_of_tampering_is_named(cache: Path) -> None:
    from qaeval_core.models import onnx_encoder

    folder = _folder()
    meta_path = folder / "meta.json"
    original = meta_path.read_text()
    meta = json.loads(original)
    meta["pooling"] = "cls"  # edited, seal left as it was
    meta_path.write_text(json.dumps(meta))
    problems = onnx_encoder.verify_export(folder, "minilm")
    assert "meta.json was changed after the export (its seal differs)" in problems
    assert "its pooling is 'cls' but the model says 'mean'" in problems
    meta["seal"] = onnx_encoder.meta_seal(meta)  # re-signed: the model still says mean
    meta_path.write_text(json.dumps(meta))
    assert onnx_encoder.verify_export(folder, "minilm") == [
        "its pooling is 'cls' but the model says 'mean'"
    ]
    meta_path.write_text(original)
    tokenizer = folder / "tokenizer.json"
    tokenizer.write_text(tokenizer.read_text().replace('"[UNK]"', '"[UNKNOWN]"'))
    assert onnx_encoder.verify_export(folder, "minilm") == [
        "tokenizer.json differs from the file exported (SHA-256)"
    ]


def _replace_a_weight(path: Path) -> None:
    """A valid ONNX file computing other vectors: one weight matrix scaled (what a swapped or
    corrupted model.onnx looks like to a loader that does not check)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path))
    big = max(graph.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    big.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(big) * 1.5, big.name))
    onnx.save(graph, str(path))


def test_a_replaced_model_onnx_is_rebuilt_and_gives_torchs_vectors(
    cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from qaeval_core.models import onnx_encoder

    folder = _folder()
    _replace_a_weight(folder / "model.onnx")
    tampered = (
        onnx_encoder.OnnxEncoder.from_folder(
            folder, json.loads((folder / "meta.json").read_text()), model="minilm"
        )
        .encode(TEXTS, tokens=False)
        .sentences
    )
    want = _torch_vectors()
    assert np.abs(tampered - want).max() > 1e-2  # what an unchecked load would have used
    with caplog.at_level(logging.WARNING):
        enc = onnx_encoder.OnnxEncoder("minilm")
    assert "cannot be trusted (model.onnx differs from the file exported (SHA-256))" in caplog.text
    assert onnx_encoder.verify_export(folder, "minilm") == []
    np.testing.assert_allclose(enc.encode(TEXTS, tokens=False).sentences, want, atol=1e-4)


def test_vectors_of_a_bad_export_are_dropped_and_never_reused_by_torch(
    cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A meta edited *and* re-sealed (cls pooling) whose export made vectors: the next load
    sees the model contradict it, rebuilds, and the torch backend encodes afresh instead of
    reading those vectors."""
    from qaeval_core.models import embedding_cache as embed_cache
    from qaeval_core.models import onnx_encoder

    folder = _folder()
    meta = json.loads((folder / "meta.json").read_text())
    meta["pooling"] = "cls"
    meta["seal"] = onnx_encoder.meta_seal(meta)
    (folder / "meta.json").write_text(json.dumps(meta))
    # What a process that loaded the bad export stored: its cls-pooled vectors, tagged with it.
    bad = onnx_encoder.OnnxEncoder.from_folder(folder, meta, model="minilm")
    poisoned = bad.encode(TEXTS, tokens=False).sentences
    store = embed_cache.EmbeddingCache("minilm", device="cpu", backend="onnx")
    store._encoder = bad  # the bad export, as that process had it
    bad.vector_source = onnx_encoder.vector_source(meta)
    store.encode(TEXTS)
    store.close()
    with sqlite3.connect(embed_cache.store_path()) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == len(TEXTS)

    with caplog.at_level(logging.WARNING):
        onnx_encoder.OnnxEncoder("minilm")  # the next load
    assert "its pooling is 'cls' but the model says 'mean'" in caplog.text
    assert f"dropping the {len(TEXTS)} stored vector(s)" in caplog.text
    with sqlite3.connect(embed_cache.store_path()) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0
        revoked = {r[0] for r in db.execute("SELECT source FROM revoked")}
    assert onnx_encoder.vector_source(meta) in revoked

    torch_cache = embed_cache.get_cache("minilm", "cpu", "torch")
    got = torch_cache.encode(TEXTS)
    assert torch_cache.encoded_count == len(TEXTS)  # encoded again, nothing read back
    want = _torch_vectors()
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.abs(poisoned - want).max() > 1e-2


def test_vectors_stored_before_vectors_were_tagged_are_not_reused(cache: Path) -> None:
    """The store's first layout (table emb, no source) may hold vectors of a tampered export
    loaded by an older qaeval: they are dropped, not read back."""
    from qaeval_core.models import embedding_cache as embed_cache

    path = embed_cache.store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    poisoned = np.full(384, 1 / np.sqrt(384), dtype=np.float32)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE emb (model TEXT, key BLOB, vec BLOB, PRIMARY KEY (model, key))")
        db.execute(
            "INSERT INTO emb VALUES (?, ?, ?)",
            ("minilm", embed_cache._key("Paris"), poisoned.tobytes()),
        )
    cache_ = embed_cache.get_cache("minilm", "cpu", "torch")
    got = cache_.encode(["Paris"])[0]
    assert cache_.encoded_count == 1
    assert float(got @ poisoned) < 0.9  # the real vector, not the stored one
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "emb" not in tables and {"vectors", "revoked"} <= tables
