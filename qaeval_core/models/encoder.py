"""Text encoders: sentence and token embeddings of a string from one forward pass.

Why this module: ``embed_cosine``, A-VERT and SMILE need the pooled sentence vector of a text
and BERTScore its token vectors. For a sentence-transformers model both come out of the same
transformer forward pass (the sentence vector is the pooled, normalised token states), so an
encoder returns both at once and the embedding cache (:mod:`.embedding_cache`) runs each unique
string through each model once, whichever metrics ask for it. This module holds what every
backend shares (the output type, length-sorted batches, the adaptive batch loop) and the torch
backend; :mod:`.onnx_encoder` is the ONNX Runtime one and :mod:`.backends` chooses.

Batches are length-sorted (longest first, as sentence-transformers does) and results come back
in input order. On CUDA the model runs in half precision (:mod:`.loading`) and the batch size
adapts to memory: an out-of-memory error halves the batch and retries it
(:func:`run_adaptive`); on CPU no error is caught and the batches are the fixed size, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from qaeval_core.models.loading import default_batch_size, load_sentence_encoder

__all__ = ["Encoded", "TextEncoder", "TorchEncoder", "is_oom", "length_order", "run_adaptive"]

log = logging.getLogger(__name__)


@dataclass
class Encoded:
    """Encoder output aligned with its input texts."""

    #: ``(n, d)`` float32, unit-norm rows (a dot product is the cosine).
    sentences: np.ndarray
    #: Per text, ``(tokens, d)`` float32 unit rows without [CLS]/[SEP]; None when not asked.
    tokens: list[np.ndarray] | None


class TextEncoder(Protocol):
    """What the embedding cache needs from a backend."""

    backend: str
    model: str
    device: str
    dimension: int

    def encode(
        self, texts: Sequence[str], *, tokens: bool, batch_size: int | None = None
    ) -> Encoded: ...


# -- adaptive batches ------------------------------------------------------------------------
def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is a CUDA out-of-memory error (the only error a batch is retried on)."""
    try:
        import torch

        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover - torch is in the models extra
        pass
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def run_adaptive(
    n: int,
    batch_size: int,
    run: Callable[[int, int], Any],
    *,
    adaptive: bool,
    oom: Callable[[BaseException], bool] = is_oom,
    on_oom: Callable[[], None] | None = None,
) -> tuple[list[Any], int]:
    """``run(start, stop)`` over ``[0, n)`` in batches; ``(results, final batch size)``.

    With ``adaptive`` (CUDA), an out-of-memory error halves the batch size and retries the
    same start; the smaller size is kept for the rest (and returned, so the caller keeps it for
    its next call). A batch of one that still fails re-raises. Without ``adaptive`` (CPU)
    nothing is caught.
    """
    out: list[Any] = []
    size = max(1, int(batch_size))
    start = 0
    while start < n:
        stop = min(n, start + size)
        if not adaptive:
            out.append(run(start, stop))
            start = stop
            continue
        try:
            out.append(run(start, stop))
        except Exception as exc:  # only OOM is handled, the rest re-raised
            if not oom(exc) or size == 1:
                raise
            if on_oom is not None:
                on_oom()
            size = max(1, size // 2)
            log.warning("Out of memory in an encoder batch; retrying with batch size %d.", size)
            continue
        start = stop
    return out, size


def _empty_cuda_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def length_order(lengths: Sequence[int]) -> np.ndarray:
    """Indices longest first (stable), so each batch pads to similar lengths."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


# -- torch -----------------------------------------------------------------------------------
class TorchEncoder:
    """The sentence-transformers model: one ``encode(output_value=None)`` per batch gives the
    sentence embedding and the token states together."""

    backend = "torch"

    def __init__(self, model: str, device: str, batch_size: int | None = None) -> None:
        self.model = model
        self.device = device
        self.batch_size = batch_size or default_batch_size(device)
        self.st = load_sentence_encoder(model, device)

    @property
    def dimension(self) -> int:
        # sentence-transformers 6 renamed get_sentence_embedding_dimension.
        getter = getattr(self.st, "get_embedding_dimension", None)
        getter = getter or self.st.get_sentence_embedding_dimension
        return int(getter())

    def _batch(self, texts: list[str], tokens: bool) -> tuple[np.ndarray, list[np.ndarray]]:
        import torch
        from torch.nn.functional import normalize

        with torch.inference_mode():
            out = self.st(self._features(texts))
            sent = normalize(out["sentence_embedding"], p=2, dim=1)
            mats: list[np.ndarray] = []
            if tokens:
                for emb, mask in zip(out["token_embeddings"], out["attention_mask"], strict=True):
                    live = torch.nonzero(mask).flatten()
                    n = int(live.max()) + 1 if len(live) else 0
                    mat = emb[:n]
                    mat = mat[1:-1] if n > 2 else mat[:0]
                    mats.append(normalize(mat.float(), dim=-1).cpu().numpy())
        return sent.cpu().numpy().astype(np.float32, copy=False), mats

    def _features(self, texts: list[str]) -> dict[str, Any]:
        """The model's tokenised inputs on its device.

        The forward pass is called directly rather than through ``encode(output_value=None)``:
        sentence-transformers 6.0 indexed every output of that path by row, strings included,
        and failed with ``IndexError: string index out of range`` (fixed in 6.2); ``preprocess``
        (6.x) or ``tokenize`` (3.x-5.x) plus the module call is the same computation in every
        version.
        """
        import torch

        prepare = getattr(self.st, "preprocess", None) or self.st.tokenize
        device = self.st.device
        return {
            k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in prepare(texts).items()
        }

    def encode(
        self, texts: Sequence[str], *, tokens: bool, batch_size: int | None = None
    ) -> Encoded:
        texts = list(texts)
        if not texts:
            return Encoded(np.zeros((0, self.dimension), np.float32), [] if tokens else None)
        order = length_order([len(t) for t in texts])
        ordered = [texts[i] for i in order]
        parts, size = run_adaptive(
            len(ordered),
            batch_size or self.batch_size,
            lambda a, b: self._batch(ordered[a:b], tokens),
            adaptive=self.device.startswith("cuda"),
            on_oom=_empty_cuda_cache,
        )
        if batch_size is None:
            self.batch_size = size  # keep a size that fitted for the next call
        sent = np.empty((len(texts), parts[0][0].shape[1]), dtype=np.float32)
        sent[order] = np.concatenate([p[0] for p in parts])
        mats: list[np.ndarray] | None = None
        if tokens:
            flat = [m for p in parts for m in p[1]]
            mats = [flat[0]] * len(texts)
            for pos, i in enumerate(order.tolist()):
                mats[i] = flat[pos]
        return Encoded(sent, mats)
