"""ONNX Runtime encoder for a sentence-transformers model, exported locally at first use.

Why: on the 2-core development CPU, ONNX Runtime runs the packaged MiniLM 2-2.5x faster than
torch with the same float32 arithmetic (sentence vectors agree to ~3e-7), so it is the default
CPU backend of :mod:`.encoder`. No converter package is needed (``optimum`` would downgrade
transformers): the model is exported here with ``torch.onnx.export`` from the local weights,
with no network.

* **Export** (TorchScript exporter; the dynamo exporter needs ``onnxscript``, not installed):
  the transformer alone, ``input_ids, attention_mask[, token_type_ids] -> last_hidden_state``
  with dynamic batch and sequence axes, opset 17. Pooling (mean or CLS, read from the model's
  sentence-transformers modules) and normalisation run in numpy. Models made of anything else
  than Transformer + Pooling (mean / CLS) [+ Normalize] are refused (the caller falls back to
  torch). The fast tokenizer is saved next to the export, so later processes need neither
  torch nor sentence-transformers to encode.
* **Check**: right after the export, the ONNX sentence and token vectors of probe strings
  (short, long, truncated, accented, padded in one batch) must equal torch's within 1e-4,
  else the export is refused.
* **Cache**: ``<cache_dir>/onnx/<folder>-<fingerprint>/`` (next to the embedding store), the
  fingerprint being a hash of the model folder's file names, sizes and contents, so a changed
  model never reuses a stale export. Files are written under temporary names and renamed,
  so concurrent processes never read half a file.
* **Verified on every load, never trusted blindly.** A replaced ``model.onnx`` or an edited
  ``meta.json`` (the pooling) was once loaded without a word and flipped 66 of 200 verdicts.
  ``meta.json`` now records the SHA-256 of ``model.onnx`` and ``tokenizer.json``, the source
  model's fingerprint, and a ``seal`` (SHA-256 of the rest of the meta). A load checks the
  seal, the fingerprint, the settings against the source model's own sentence-transformers
  files (pooling, maximum length, lower-casing, dimension) and the hash of the very bytes it
  hands to ONNX Runtime. Any difference is logged, the export is rebuilt (and checked against
  torch again), and the vectors it made are dropped from the shared embedding store
  (:func:`~qaeval_core.caches.vector_store.drop_vectors`): every stored vector is tagged with
  the export (its seal) or ``torch``. Like the judge file's checksum, the hashes catch
  accidents and stale caches, not an attacker who can rewrite the cache folder; the settings are
  checked against the model itself, which such an edit cannot fake short of editing the model.
* **int8** (only on request, see :mod:`.backends`): ``onnxruntime.quantization.quantize_dynamic``
  (:data:`INT8_RECIPE`: per-channel int8 weights) of the verified float export, made once,
  cached beside it and loaded by path; ``model.int8.json`` records the recipe and its version,
  the runtime's version, the SHA-256 of both files and a seal (:func:`int8_record`), and a
  load rebuilds the int8 model when any of them differs. Its vectors are tagged with its hash.

Why it is one module: the export, its record (hashes, fingerprint, seal), the verification
and the encoder that loads it are one contract, "what runs is what was checked against torch";
apart, a loader could read a file its verifier never saw.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qaeval_core.caches.location import cache_dir
from qaeval_core.errors import ModelLoadError
from qaeval_core.models.encoder import Encoded, length_order
from qaeval_core.models.loading import (
    default_batch_size,
    load_sentence_encoder,
    resolve_model_path,
)

__all__ = [
    "INT8_MAX_COSINE_GAP",
    "INT8_RECIPE",
    "OnnxEncoder",
    "PARITY_TOLERANCE",
    "int8_record",
    "export_dir",
    "export_model",
    "meta_seal",
    "model_fingerprint",
    "vector_source",
    "verify_export",
]

log = logging.getLogger(__name__)

#: Largest difference from torch's vectors an export may show on the probe strings.
PARITY_TOLERANCE = 1e-4
#: Bumped when the export format or the meta file changes, so old exports are not reused
#: (2: hashes, source fingerprint and seal; version-1 exports were never verified).
EXPORT_VERSION = "2"
#: How the int8 model is made (``onnxruntime.quantization.quantize_dynamic``): int8 weights
#: per output channel (per-tensor moved cosines 4x more, issue 35's measurements in
#: experiments/results/int8_encoder.md); activations quantised at run time.
INT8_RECIPE: dict[str, object] = {"weight_type": "QInt8", "per_channel": True}
#: Bumped when the int8 record or recipe changes (2: recipe, runtime and seal recorded).
INT8_VERSION = "2"
#: Largest 1 - cosine between the int8 and the float sentence vector of a text that the tests
#: accept (measured on 600 NQ301 and 600 MMLU-Pro strings: max 0.036 / 0.044, mean 0.009 / 0.010).
INT8_MAX_COSINE_GAP = 0.05
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_PROBES = (
    "Paris",
    "The capital of France is Paris, a city on the Seine.",
    "  café  déjà vu  ",
    "1945",
    "a " * 400,  # longer than max_seq_length: truncated
    "What?",
)
_FINGERPRINTS: dict[tuple[str, int, int], str] = {}
_EXPORT_LOCK = threading.Lock()


def model_fingerprint(folder: str | Path) -> str:
    """16 hex digits hashing every file of a model folder (relative name, size, content)."""
    root = Path(folder)
    stat = root.stat()
    memo_key = (str(root.resolve()), stat.st_mtime_ns, stat.st_size)
    if memo_key in _FINGERPRINTS:
        return _FINGERPRINTS[memo_key]
    digest = hashlib.blake2b(digest_size=8)
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(str(path.stat().st_size).encode() + b"\0")
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    _FINGERPRINTS[memo_key] = fp = digest.hexdigest()
    return fp


def export_dir(model: str) -> Path:
    """Where the export of ``model`` (a packaged alias or a local folder) is cached."""
    path = resolve_model_path(model)
    if not os.path.isdir(path):
        raise ModelLoadError(
            f"The ONNX backend needs a local model folder; {model!r} is not one (hub models run "
            "on torch)."
        )
    name = Path(path).name if Path(path).name != "model" else Path(path).parent.name
    return cache_dir() / "onnx" / f"{name}-{model_fingerprint(path)}-v{EXPORT_VERSION}"


def _pooling_mode(st: Any) -> str:
    """'mean' or 'cls' from the model's modules; ModelLoadError for other architectures."""
    kinds = [type(m).__name__ for m in st]
    if not kinds or kinds[0] != "Transformer" or len(kinds) < 2 or kinds[1] != "Pooling":
        raise ModelLoadError(f"modules {kinds} are not Transformer + Pooling [+ Normalize]")
    if any(k != "Normalize" for k in kinds[2:]):
        raise ModelLoadError(f"modules {kinds}: only Normalize may follow Pooling")
    pool = st[1]
    mode = getattr(pool, "pooling_mode", None)
    if mode is None:  # older sentence-transformers: one flag per mode
        flags = {k: getattr(pool, f"pooling_mode_{k}_tokens", False) for k in ("mean", "cls")}
        flags["cls"] = getattr(pool, "pooling_mode_cls_token", False)
        on = [k for k, v in flags.items() if v]
        mode = on[0] if len(on) == 1 else str(on)
    mode = str(mode).lower()
    if mode.startswith("mean"):
        return "mean"
    if mode.startswith("cls"):
        return "cls"
    raise ModelLoadError(f"pooling mode {mode!r} is not mean or cls")


def _atomic_write(target: Path, write: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def meta_seal(meta: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``meta`` without its ``seal``."""
    body = {k: v for k, v in meta.items() if k != "seal"}
    return _sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def vector_source(meta: dict[str, Any], *, quantized_sha: str | None = None) -> str:
    """The tag of the vectors an export makes (``onnx:<seal>``; int8: its file's hash)."""
    if quantized_sha is not None:
        return f"onnx-int8:{quantized_sha[:16]}"
    return f"onnx:{str(meta.get('seal', ''))[:16]}"


def _read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable: verification says so and the export is rebuilt
    return meta if isinstance(meta, dict) else {}


def _source_settings(model: str) -> dict[str, Any]:
    """What the source model's own sentence-transformers files say about the settings an
    export records (pooling, max_seq_length, lower_case, dimension); missing files say nothing.
    Read without torch, so a load can check an export against the model itself."""
    root = Path(resolve_model_path(model))

    def read(name: str) -> dict[str, Any]:
        try:
            value = json.loads((root / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    out: dict[str, Any] = {}
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        modules = []
    for module in modules if isinstance(modules, list) else []:
        if isinstance(module, dict) and str(module.get("type", "")).endswith("Pooling"):
            pool = read(f"{module.get('path', '')}/config.json")
            mode = pool.get("pooling_mode")
            if isinstance(mode, str):
                mode = mode.lower()
                out["pooling"] = next((m for m in ("cls", "mean") if mode.startswith(m)), mode)
            elif pool.get("pooling_mode_cls_token"):
                out["pooling"] = "cls"
            elif pool.get("pooling_mode_mean_tokens"):
                out["pooling"] = "mean"
    bert = read("sentence_bert_config.json")
    if "max_seq_length" in bert:
        out["max_seq_length"] = bert["max_seq_length"]
    if "do_lower_case" in bert:
        out["lower_case"] = bool(bert["do_lower_case"])
    hidden = read("config.json").get("hidden_size")
    if hidden is not None:
        out["dimension"] = hidden
    return out


def verify_export(folder: Path, model: str) -> list[str]:
    """Why the export in ``folder`` cannot be trusted for ``model`` (empty: it can): a missing
    or unsealed meta, a changed seal, another source model, settings the model contradicts, or
    files whose hashes differ from the recorded ones."""
    meta = _read_meta(folder)
    if meta is None:
        return ["meta.json is missing"]
    problems = []
    if meta.get("version") != EXPORT_VERSION or "seal" not in meta:
        return [f"meta.json is not a sealed version-{EXPORT_VERSION} export record"]
    if meta["seal"] != meta_seal(meta):
        problems.append("meta.json was changed after the export (its seal differs)")
    fingerprint = model_fingerprint(resolve_model_path(model))
    if meta.get("source_fingerprint") != fingerprint:
        problems.append(
            f"it was exported from model {meta.get('source_fingerprint')!r}, not {fingerprint!r}"
        )
    for key, value in _source_settings(model).items():
        if meta.get(key) != value:
            problems.append(f"its {key} is {meta.get(key)!r} but the model says {value!r}")
    files = meta.get("files")
    for name in ("model.onnx", "tokenizer.json"):
        path = folder / name
        recorded = files.get(name) if isinstance(files, dict) else None
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif recorded != _file_sha256(path):
            problems.append(f"{name} differs from the file exported (SHA-256)")
    return problems


def _discard(folder: Path, reasons: list[str]) -> None:
    """Drop an export that failed :func:`verify_export`: its vectors (both the seal it
    records and the one its current meta would have) leave the embedding store, its files go."""
    from qaeval_core.caches.vector_store import drop_vectors

    meta = _read_meta(folder) or {}
    sources = {vector_source(meta), f"onnx:{meta_seal(meta)[:16]}"}
    try:
        int8 = json.loads((folder / "model.int8.json").read_text(encoding="utf-8"))
        sources.add(vector_source(meta, quantized_sha=str(int8["sha256"])))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    dropped = drop_vectors(sources)
    log.warning(
        "The ONNX export in %s cannot be trusted (%s); rebuilding it and dropping the %d "
        "stored vector(s) it made.",
        folder,
        "; ".join(reasons),
        dropped,
    )
    for name in ("meta.json", "model.onnx", "tokenizer.json", "model.int8.onnx", "model.int8.json"):
        (folder / name).unlink(missing_ok=True)


def export_model(model: str) -> Path:
    """Export ``model`` to ONNX (if no verified export is cached), check it against torch; its
    folder. A cached export that fails :func:`verify_export` is discarded and rebuilt."""
    import onnxruntime  # noqa: F401 - fail before exporting when the runtime is missing

    folder = export_dir(model)
    with _EXPORT_LOCK:
        if (folder / "meta.json").is_file():
            problems = verify_export(folder, model)
            if not problems:
                return folder
            _discard(folder, problems)
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        st = load_sentence_encoder(model, "cpu")
        pooling = _pooling_mode(st)
        transformer = st[0]
        hf = getattr(transformer, "auto_model", None) or transformer.model
        tokenizer = st.tokenizer
        fast = getattr(tokenizer, "backend_tokenizer", None)
        if fast is None:
            raise ModelLoadError("the model has no fast tokenizer (tokenizer.json)")
        probe = tokenizer(["a b", "a"], padding=True, return_tensors="pt")
        names = [n for n in _INPUTS if n in probe]
        if names[:2] != ["input_ids", "attention_mask"]:
            raise ModelLoadError(f"tokenizer inputs {list(probe)} lack input_ids/attention_mask")

        class _Hidden(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.hf = hf

            def forward(self, *args: Any) -> Any:
                return self.hf(**dict(zip(names, args, strict=True))).last_hidden_state

        meta = {
            "version": EXPORT_VERSION,
            "model": model,
            "inputs": names,
            "pooling": pooling,
            "max_seq_length": int(st.max_seq_length or 512),
            "lower_case": bool(getattr(transformer, "do_lower_case", False)),
            "pad_id": int(tokenizer.pad_token_id or 0),
            "dimension": int(hf.config.hidden_size),
            "torch": torch.__version__,
        }

        axes = [*names, "last_hidden_state"]

        def _export(tmp: str) -> None:
            with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _Hidden().eval(),
                    tuple(probe[n] for n in names),
                    tmp,
                    input_names=names,
                    output_names=["last_hidden_state"],
                    dynamic_axes={n: {0: "batch", 1: "sequence"} for n in axes},
                    opset_version=17,
                    dynamo=False,
                )

        _atomic_write(folder / "model.onnx", _export)
        _atomic_write(folder / "tokenizer.json", lambda tmp: fast.save(tmp))
        meta["source_fingerprint"] = model_fingerprint(resolve_model_path(model))
        meta["files"] = {
            name: _file_sha256(folder / name) for name in ("model.onnx", "tokenizer.json")
        }
        enc = OnnxEncoder.from_folder(folder, meta, model=model)
        meta["parity_max_abs_diff"] = _parity(enc, model)
        meta["seal"] = meta_seal(meta)
        _atomic_write(
            folder / "meta.json",
            lambda tmp: Path(tmp).write_text(json.dumps(meta, indent=1), encoding="utf-8"),
        )
        problems = verify_export(folder, model)
        if problems:  # never load an export the next process would throw away
            raise ModelLoadError(f"the new ONNX export does not verify: {'; '.join(problems)}")
        log.info(
            "Exported %r to ONNX in %s (parity %.1e).", model, folder, meta["parity_max_abs_diff"]
        )
        return folder


def _parity(enc: OnnxEncoder, model: str) -> float:
    """Largest difference of the ONNX sentence and token vectors from torch's on the probes;
    ModelLoadError above :data:`PARITY_TOLERANCE`."""
    from qaeval_core.models.encoder import TorchEncoder

    ref = TorchEncoder(model, "cpu", 4).encode(_PROBES, tokens=True)
    got = enc.encode(_PROBES, tokens=True)
    assert ref.tokens is not None and got.tokens is not None
    worst = float(np.abs(ref.sentences - got.sentences).max())
    for a, b in zip(ref.tokens, got.tokens, strict=True):
        if a.shape != b.shape:
            raise ModelLoadError(f"ONNX token count {b.shape} differs from torch's {a.shape}")
        if len(a):
            worst = max(worst, float(np.abs(a - b).max()))
    if worst > PARITY_TOLERANCE:
        raise ModelLoadError(f"ONNX vectors differ from torch's by {worst:.2e}")
    return worst


def int8_record(source_sha: str, sha: str) -> dict[str, Any]:
    """What ``model.int8.json`` records: the recipe and its version, the runtime that
    quantised, the SHA-256 of the float export it was made from and of itself, sealed."""
    import onnxruntime

    record: dict[str, Any] = {
        "version": INT8_VERSION,
        "recipe": dict(INT8_RECIPE),
        "onnxruntime": onnxruntime.__version__,
        "source": source_sha,
        "sha256": sha,
    }
    record["seal"] = meta_seal(record)
    return record


def _int8_problems(record: Any, source_sha: str, target: Path) -> list[str]:
    """Why a cached int8 model cannot be used (empty: it can)."""
    if not isinstance(record, dict) or record.get("version") != INT8_VERSION:
        return [f"its record is not a version-{INT8_VERSION} int8 record"]
    problems = []
    if record.get("seal") != meta_seal(record):
        problems.append("its record was changed after quantisation (seal)")
    if record.get("recipe") != INT8_RECIPE:
        problems.append(f"it was made with {record.get('recipe')!r}, not {INT8_RECIPE!r}")
    if record.get("source") != source_sha:
        problems.append("it was made from another float export")
    if not target.is_file():
        problems.append("model.int8.onnx is missing")
    elif record.get("sha256") != _file_sha256(target):
        problems.append("model.int8.onnx differs from the file quantised (SHA-256)")
    return problems


def _quantized(folder: Path, source_sha: str) -> tuple[Path, str]:
    """The int8 model made from the export whose ``model.onnx`` has ``source_sha`` and its
    SHA-256, (re)built when ``model.int8.json`` does not record exactly this recipe and both
    files (:func:`int8_record`)."""
    target, record = folder / "model.int8.onnx", folder / "model.int8.json"
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _EXPORT_LOCK:
        try:
            known = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = None
        problems = _int8_problems(known, source_sha, target)
        if not problems:
            return target, str(known["sha256"])
        if target.is_file() or record.is_file():
            log.warning(
                "The int8 ONNX model in %s cannot be used (%s); rebuilding it.",
                folder,
                "; ".join(problems),
            )
        weight = getattr(QuantType, str(INT8_RECIPE["weight_type"]))
        with warnings.catch_warnings(), _quiet_root_warning():
            warnings.simplefilter("ignore")
            _atomic_write(
                target,
                lambda tmp: quantize_dynamic(
                    folder / "model.onnx",
                    tmp,
                    weight_type=weight,
                    per_channel=bool(INT8_RECIPE["per_channel"]),
                ),
            )
        sha = _file_sha256(target)
        _atomic_write(
            record,
            lambda tmp: Path(tmp).write_text(
                json.dumps(int8_record(source_sha, sha), indent=1), encoding="utf-8"
            ),
        )
        log.info("Quantised the ONNX export in %s to int8 (%s).", folder, INT8_RECIPE)
        return target, sha


@contextlib.contextmanager
def _quiet_root_warning() -> Iterator[None]:
    """``quantize_dynamic`` logs a pre-processing hint (advice for image models) on the root
    logger on every call: held back."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


class OnnxEncoder:
    """Sentence and token embeddings from an ONNX export (CPU, ONNX Runtime).

    Built from the cached export of ``model`` (exported and checked on first use).
    """

    backend = "onnx"
    device = "cpu"

    def __init__(
        self, model: str, *, quantized: bool = False, batch_size: int | None = None
    ) -> None:
        folder = export_model(model)
        meta = _read_meta(folder) or {}
        self._setup(
            folder, meta, model=model, quantized=quantized, batch_size=batch_size, verify=True
        )

    @classmethod
    def from_folder(cls, folder: Path, meta: dict[str, Any], *, model: str) -> OnnxEncoder:
        """An encoder on an export folder whose meta is given (used to check a new export)."""
        self = cls.__new__(cls)
        self._setup(folder, meta, model=model, quantized=False, batch_size=None, verify=False)
        return self

    def _setup(
        self,
        folder: Path,
        meta: dict[str, Any],
        *,
        model: str,
        quantized: bool,
        batch_size: int | None,
        verify: bool,
    ) -> None:
        """Load the export. With ``verify``, the bytes handed to ONNX Runtime and the
        tokenizer must hash to what ``meta`` records (read once: no window for a swap between
        the check and the load); otherwise ModelLoadError, and the caller falls back."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model = model
        self.folder = folder
        self.meta = meta
        self.backend = "onnx-int8" if quantized else "onnx"
        self.batch_size = batch_size or default_batch_size("cpu")
        self.dimension = int(meta["dimension"])
        files = meta.get("files") if isinstance(meta.get("files"), dict) else {}
        data = (folder / "model.onnx").read_bytes()
        tokenizer = (folder / "tokenizer.json").read_text(encoding="utf-8")
        if verify and (
            _sha256(data) != files.get("model.onnx")
            or _sha256(tokenizer.encode("utf-8")) != files.get("tokenizer.json")
        ):
            raise ModelLoadError(f"the ONNX export in {folder} changed while it was loaded")
        self.vector_source = vector_source(meta)
        if quantized:
            path, sha = _quantized(folder, _sha256(data))
            data = path.read_bytes()
            if verify and _sha256(data) != sha:
                raise ModelLoadError(f"the int8 ONNX model in {folder} changed while loaded")
            self.vector_source = vector_source(meta, quantized_sha=sha)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        tok = Tokenizer.from_str(tokenizer)
        tok.no_padding()
        tok.enable_truncation(int(meta["max_seq_length"]))
        self.tokenizer = tok

    def encode(
        self, texts: Sequence[str], *, tokens: bool, batch_size: int | None = None
    ) -> Encoded:
        texts = list(texts)
        n = len(texts)
        if n == 0:
            return Encoded(np.zeros((0, self.dimension), np.float32), [] if tokens else None)
        if self.meta.get("lower_case"):
            texts = [t.lower() for t in texts]
        encs = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encs], dtype=np.int64)
        order = length_order(lengths)
        names = self.meta["inputs"]
        pad = int(self.meta["pad_id"])
        sent = np.empty((n, self.dimension), dtype=np.float32)
        mats: list[np.ndarray] = [np.zeros((0, self.dimension), np.float32)] * n if tokens else []
        size = batch_size or self.batch_size
        start = 0
        while start < n:
            width = int(lengths[order[start]])
            # Short texts go in larger batches of about the same padded size (fewer calls).
            rows = max(size, min(1024, (size * 64) // max(width, 1)))
            idx = order[start : start + rows]
            start += len(idx)
            feed = {
                "input_ids": np.full((len(idx), width), pad, dtype=np.int64),
                "attention_mask": np.zeros((len(idx), width), dtype=np.int64),
                "token_type_ids": np.zeros((len(idx), width), dtype=np.int64),
            }
            for row, i in enumerate(idx.tolist()):
                e, k = encs[i], int(lengths[i])
                feed["input_ids"][row, :k] = e.ids
                feed["attention_mask"][row, :k] = e.attention_mask
                feed["token_type_ids"][row, :k] = e.type_ids
            hidden = self.session.run(None, {k: feed[k] for k in names})[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            if self.meta["pooling"] == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            sent[idx] = _unit(pooled)
            if tokens:
                for row, i in enumerate(idx.tolist()):
                    k = int(lengths[i])
                    mats[i] = _unit(hidden[row, 1 : k - 1]) if k > 2 else hidden[row, :0]
        return Encoded(sent, mats if tokens else None)


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (as ``torch.nn.functional.normalize``, eps 1e-12)."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
