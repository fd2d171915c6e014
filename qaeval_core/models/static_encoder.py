"""The static token-embedding encoder: MiniLM distilled into one vector per token (model2vec).

Why: the MiniLM metrics spend their time in the transformer (bench/README.md: 0.5-1.1x the raw
encode of their strings), ~75 s per 1,000 rows for a judge that uses three of them on the
2-core CPU. A static model has no transformer at scoring time: a text's vector is the mean of
its tokens' rows of one matrix, so encoding is a tokenisation and a sum, hundreds of times
cheaper. It keeps much of MiniLM's signal because each row *is* MiniLM's output for that token
(``scripts/distill_static_minilm.py``: model2vec's ``distill``, PCA, SIF weighting).

The packaged model (``qaeval_core/data/static_minilm/``, model2vec's folder format) is
checked on every load: the SHA-256 of each file must equal :data:`PACKAGED_SHA256` (pinned
here, so a changed file or a changed ``meta.json`` is refused with a ModelLoadError). Another
folder of the same format is checked against its own ``meta.json``. Only numpy and the
``tokenizers`` package are needed (the safetensors file is read here, a JSON header and raw
little-endian arrays), so this family loads in well under a second and imports no torch.

Encoding follows model2vec's ``StaticModel.encode`` for a model without a token mapping or
weights: tokens without special tokens, the unknown token dropped, at most ``max_length``
tokens, the mean of their rows, L2-normalised (float32). Vectors depend on the text alone,
never on the batch.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from qaeval_core.errors import ModelLoadError

__all__ = [
    "PACKAGED_SHA256",
    "STATIC_MODEL",
    "StaticEncoder",
    "load_static_encoder",
    "read_safetensors",
]

#: The packaged static model's name (what the static metrics' ``model`` defaults to).
STATIC_MODEL = "static_minilm"
#: SHA-256 of every file of the packaged model (``scripts/distill_static_minilm.py`` made it).
PACKAGED_SHA256: dict[str, str] = {
    "model.safetensors": "5d4988d8ac242998272e7c9df4845861c64e4dfd33e866af4a570662f7f63354",
    "tokenizer.json": "dd33465341c98889c3338356b6200c8b232b89af5f1b7aa8e6ee1d4d7a699631",
    "config.json": "9d4c9edf3db391f83353523037fed0f0d959fa0ccbbc63d932148dbbd8c78aee",
    "meta.json": "a1a982e62c4194829b7069a923bbac16da8396382b29673b1436e7053c533193",
}
_FILES = ("model.safetensors", "tokenizer.json", "config.json", "meta.json")
_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8, "I64": np.int64}


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file's bytes (8-byte header length, JSON header, data)."""
    try:
        n = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + n])
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
            start, stop = info["data_offsets"]
            arr = np.frombuffer(data, dtype, (stop - start) // dtype.itemsize, 8 + n + start)
            out[name] = arr.reshape(info["shape"])
        return out
    except (KeyError, ValueError, TypeError) as exc:
        raise ModelLoadError(f"not a readable safetensors file ({exc})") from exc


def _packaged_folder() -> Path:
    return Path(str(resources.files("qaeval_core.data") / STATIC_MODEL))


class StaticEncoder:
    """Unit sentence vectors from a static token-embedding matrix (module docstring)."""

    def __init__(self, folder: Path, files: dict[str, bytes], name: str) -> None:
        from tokenizers import Tokenizer

        self.folder = folder
        self.name = name
        config = json.loads(files["config.json"])
        tensors = read_safetensors(files["model.safetensors"])
        if set(tensors) != {"embeddings"}:
            raise ModelLoadError(
                f"static model {name!r}: expected one tensor 'embeddings', got {sorted(tensors)} "
                "(token mappings and weights are not supported)."
            )
        self.embeddings = tensors["embeddings"]
        self.dimension = int(self.embeddings.shape[1])
        self.normalize = bool(config.get("normalize", True))
        self.max_length = config.get("max_length", 512)
        self.sha256 = hashlib.sha256(files["model.safetensors"]).hexdigest()
        tok = Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
        tok.no_padding()
        if self.max_length is None:
            tok.no_truncation()
        else:
            tok.enable_truncation(int(self.max_length))
        self.tokenizer = tok
        unk = json.loads(files["tokenizer.json"]).get("model", {}).get("unk_token")
        self.unk_id = tok.token_to_id(unk) if isinstance(unk, str) else None

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids (no special tokens, the unknown token dropped)."""
        encs = self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        if self.unk_id is None:
            return [e.ids for e in encs]
        return [[i for i in e.ids if i != self.unk_id] for e in encs]

    def token_vectors(self, ids: Sequence[int]) -> np.ndarray:
        """The rows of ``ids`` as float32 (int8 models: in their own, uniform scale)."""
        return self.embeddings[np.asarray(ids, dtype=np.int64)].astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(n, d)`` float32 unit rows (zeros for a text with no known token); each unique
        text is tokenised once per call. Nothing is kept between calls: encoding costs less
        than a cache lookup on disk would."""
        unique = list(dict.fromkeys(texts))
        rows = np.zeros((len(unique), self.dimension), np.float32)
        for k, ids in enumerate(self.token_ids(unique)):
            if ids:
                v = self.token_vectors(ids).mean(axis=0)
                rows[k] = v / (np.linalg.norm(v) + 1e-32) if self.normalize else v
        if len(unique) == len(texts):
            return rows
        pos = {t: k for k, t in enumerate(unique)}
        return rows[[pos[t] for t in texts]]


def _read_checked(folder: Path, want: dict[str, str] | None, name: str) -> dict[str, bytes]:
    """Every file of ``folder``, each read once and its SHA-256 compared with ``want`` (the
    pinned hashes), else with the folder's ``meta.json``; a mismatch is a ModelLoadError."""
    files: dict[str, bytes] = {}
    for fname in _FILES:
        try:
            files[fname] = (folder / fname).read_bytes()
        except OSError as exc:
            raise ModelLoadError(f"static model {name!r}: cannot read {fname} ({exc}).") from exc
    if want is None:
        try:
            want = dict(json.loads(files["meta.json"])["files"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ModelLoadError(f"static model {name!r}: meta.json lists no file hashes.") from exc
    for fname, data in files.items():
        expected = want.get(fname)
        if fname == "meta.json" and fname not in want:
            continue  # a folder's own meta.json cannot list its own hash
        if expected != hashlib.sha256(data).hexdigest():
            raise ModelLoadError(
                f"static model {name!r}: {fname} does not match its recorded SHA-256 "
                "(changed or corrupted); reinstall qaeval or re-run the distillation recipe."
            )
    return files


_LOADED: dict[tuple[str, str], StaticEncoder] = {}
_LOADED_LOCK = threading.Lock()


def load_static_encoder(model: str = STATIC_MODEL) -> StaticEncoder:
    """The packaged static model (``"static_minilm"``) or a model2vec folder by path, checked
    (module docstring); one per process and model."""
    if model == STATIC_MODEL:
        folder, want = _packaged_folder(), PACKAGED_SHA256
    else:
        folder, want = Path(model).expanduser(), None
        if not folder.is_dir():
            raise ModelLoadError(
                f"static model {model!r} is neither {STATIC_MODEL!r} nor a model2vec folder."
            )
    key = (model, str(folder.resolve()))
    with _LOADED_LOCK:
        if key not in _LOADED:
            _LOADED[key] = StaticEncoder(folder, _read_checked(folder, want, model), model)
        return _LOADED[key]
