"""Which encoder runs a model: torch or ONNX Runtime, chosen per device, with a fallback.

Backends (the ``backend`` parameter of the embedding metrics):

* ``"torch"``: the sentence-transformers model (:class:`.encoder.TorchEncoder`).
* ``"onnx"``: the same weights exported to ONNX at first use and run by ONNX Runtime
  (:mod:`.onnx_encoder`); CPU only. Its vectors equal torch's to ~3e-7 (float32 rounding), and
  it is 2-2.5x faster on the 2-core development CPU (bench/README.md, "Encoder backends").
* ``"auto"`` (default): ``QAEVAL_ENCODER_BACKEND`` when set to ``torch`` or ``onnx``, else
  ONNX on CPU and torch on CUDA. **Decision:** ONNX is the CPU default because its scores are
  torch's up to float rounding (tests/models/test_onnx_encoder.py, 1e-6 on every embedding metric)
  and it is faster; so the choice is a runtime setting, left out of configuration hashes,
  and torch and ONNX vectors share the persistent store. If the export or the session fails,
  the encoder falls back to torch and logs why.
* ``"onnx-int8"``: the ONNX model with int8 dynamic quantisation (per-channel weights, made
  once from the verified float export and recorded, :mod:`.onnx_encoder`), **only on
  request**. Measured against float ONNX (experiments/results/int8_encoder.md, issue 35): the
  encoder alone is 1.6-1.95x faster on the 2-core CPU (same strings, same process), 1 - cosine
  at most 0.044 (mean 0.01), and the fitted judge's CV accuracy moved by +0.13 points on both
  NQ301 and MMLU-Pro; but single metrics' verdicts are not kept on >= 99.5% of rows (A-VERT
  95.0% and embed_cosine 98.9% on NQ301, SMILE 97.1% on MMLU-Pro), the bar for a default. It
  is part of the configuration hash, stored under its own key, priced as its own cost family
  (``encoder:minilm|onnx-int8``), and a failure raises
  instead of falling back.
"""

from __future__ import annotations

import logging
import os
import threading

from qaeval_core.errors import ConfigError, ModelLoadError
from qaeval_core.models.encoder import TextEncoder, TorchEncoder
from qaeval_core.models.loading import choose_device
from qaeval_core.models.onnx_encoder import OnnxEncoder

__all__ = [
    "BACKENDS",
    "SCORE_PRESERVING_BACKENDS",
    "ENV_BACKEND",
    "check_backend",
    "resolve_backend",
    "store_key",
    "load_encoder",
    "hash_params",
]

log = logging.getLogger(__name__)

BACKENDS = ("auto", "torch", "onnx", "onnx-int8")
#: Backends whose vectors equal torch's up to float rounding: a runtime choice, left out of
#: configuration hashes and sharing one persistent store.
SCORE_PRESERVING_BACKENDS = ("auto", "torch", "onnx")
ENV_BACKEND = "QAEVAL_ENCODER_BACKEND"


def check_backend(backend: str | None) -> str:
    """``backend`` if it is a known name (None means "auto"); else a ConfigError."""
    value = "auto" if backend is None else backend
    if value not in BACKENDS:
        raise ConfigError(f"Encoder backend must be one of {', '.join(BACKENDS)}; got {backend!r}.")
    return value


def resolve_backend(backend: str | None, device: str) -> str:
    """The backend to run: ``auto`` resolved by the environment and the device."""
    value = check_backend(backend)
    if value != "auto":
        return value
    env = os.environ.get(ENV_BACKEND, "").strip().lower()
    if env in ("torch", "onnx"):
        return env
    if env:
        log.warning("%s=%r is not 'torch' or 'onnx'; ignored.", ENV_BACKEND, env)
    return "torch" if device.startswith("cuda") else "onnx"


def store_key(model: str, backend: str | None) -> str:
    """The key vectors are persisted under: the model for score-preserving backends (their
    vectors are interchangeable), the model plus backend otherwise."""
    value = check_backend(backend)
    return model if value in SCORE_PRESERVING_BACKENDS else f"{model}|{value}"


def hash_params(params: dict[str, object]) -> dict[str, object]:
    """``params`` without ``backend`` when it does not change scores (a metric's ``config``
    calls this, so adding the parameter kept every existing configuration hash)."""
    if params.get("backend", "auto") in (None, *SCORE_PRESERVING_BACKENDS):
        params.pop("backend", None)
    return params


_ENCODERS: dict[tuple[str, str, str, int | None], TextEncoder] = {}
_ENCODERS_LOCK = threading.Lock()


def load_encoder(
    model: str, device: str | None = None, backend: str | None = None, batch_size: int | None = None
) -> TextEncoder:
    """The encoder for ``model`` (one per model, device, backend and batch size per process).

    ``onnx`` (also when ``auto`` picks it) falls back to torch with a logged warning when the
    model cannot be exported or run; ``onnx-int8`` raises instead, because its scores differ.
    """
    dev = choose_device(device)
    chosen = resolve_backend(backend, dev)
    key = (model, dev, chosen, batch_size)
    with _ENCODERS_LOCK:
        if key in _ENCODERS:
            return _ENCODERS[key]
    encoder: TextEncoder
    if chosen == "torch":
        encoder = TorchEncoder(model, dev, batch_size)
    else:
        try:
            encoder = OnnxEncoder(model, quantized=chosen == "onnx-int8", batch_size=batch_size)
        except Exception as exc:  # any export/load failure has one answer
            if chosen == "onnx-int8":
                raise ModelLoadError(
                    f"The int8 ONNX encoder for {model!r} could not be built ({exc}); use "
                    "backend='onnx' or 'torch'."
                ) from exc
            log.warning("ONNX encoder for %r unavailable (%s); falling back to torch.", model, exc)
            encoder = TorchEncoder(model, dev, batch_size)
    with _ENCODERS_LOCK:
        return _ENCODERS.setdefault(key, encoder)
