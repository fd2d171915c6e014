"""The format seam: one module per file format, found by content or named with ``--format``.

Every format module has ``NAME`` (what ``--format`` takes), ``TITLE`` (for help and docs),
``detect(path) -> bool`` and ``read(path)`` yielding ``(row, record)`` pairs of the import
schema (docs/data-format.md) or a :class:`~qaeval_core.errors.RowError` for a row that cannot
be imported (with its number and why). ``qaeval import`` and ``qaeval score FILE`` read files
with :func:`read_records` (``qaeval_core.io.read_records``; the import's stream asks
:func:`harness_format`): a harness log is read by its module, anything else by the plain
readers of :mod:`qaeval_core.io.files` (JSON lines, JSON, CSV/TSV, Parquet by suffix), which
are formats of this registry too (:mod:`.plain`). The plain readers never import this package,
so the dependency runs one way. A new format is one module added to
:data:`_MODULES`, its fixtures under ``tests/data/formats/`` and its tests; docs/formats.md
has the field mappings.

Detection must be cheap (it runs on every file read) and exclusive: a file of one format never
detects as another (tested over every fixture), so each ``detect`` looks at a few bytes, a
Parquet schema or a zip's member names, never at the whole file.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io import files
from qaeval_core.io.formats._common import Entry, Format

__all__ = [
    "Format",
    "all_formats",
    "detected",
    "get",
    "harness_format",
    "log_files",
    "names",
    "read_records",
]

#: The harness formats, in detection order, then the plain (suffix) ones.
_MODULES = ("lm_eval", "lighteval", "inspect_log", "helm", "opencompass")


def _load(module: ModuleType) -> Format:
    extra = {k: getattr(module, k) for k in ("version", "auxiliary") if hasattr(module, k)}
    return Format(module.NAME, module.TITLE, module.detect, module.read, **extra)


_REGISTRY: dict[str, Format] | None = None


def _registry() -> dict[str, Format]:
    global _REGISTRY
    if _REGISTRY is None:
        from qaeval_core.io.formats import plain

        found = [_load(importlib.import_module(f"{__name__}.{m}")) for m in _MODULES]
        _REGISTRY = {f.name: f for f in [*found, *plain.PLAIN_FORMATS]}
    return _REGISTRY


def all_formats() -> list[Format]:
    """Every format: the harness logs first (detection order), then the plain files."""
    return list(_registry().values())


def names() -> list[str]:
    """The names ``--format`` takes."""
    return list(_registry())


def get(name: str) -> Format:
    """The format called ``name``; a :class:`ConfigError` listing the names otherwise."""
    found = _registry().get(name.lower().lstrip("."))
    if found is None:
        raise ConfigError(f"Unknown format {name!r}: expected one of {', '.join(names())}.")
    return found


def detected(path: str | os.PathLike[str]) -> list[str]:
    """Every harness format that claims the file (at most one for any real file)."""
    target = Path(path)
    return [f.name for f in all_formats() if f.harness and f.detect(target)]


def harness_format(source: object, fmt: str | None) -> Format | None:
    """The harness format to read ``source`` with, or None for the plain readers.

    ``fmt`` names a format (a plain one gives None); without it a path is detected by content.
    Bytes (uploads) are always plain files.
    """
    if not isinstance(source, str | os.PathLike):
        return None
    if fmt is not None:
        chosen = _registry().get(fmt.lower().lstrip("."))
        if chosen is not None and chosen.harness:
            return chosen
        return None  # a plain name, or unknown: the plain readers say which names exist
    target = Path(source)
    for f in all_formats():
        if f.harness and f.detect(target):
            return f
    if target.is_dir():
        raise ConfigError(
            f"{target} is a folder: import it as a folder of logs "
            "(qaeval_core.io.formats.log_files lists the logs in it), or give one file."
        )
    return None


def _named(fmt: str | None) -> Format | None:
    """The format ``fmt`` names (None: detect); a :class:`ConfigError` for an unknown name."""
    return None if fmt is None else get(fmt)


def log_files(path: str | os.PathLike[str], fmt: str | None = None) -> list[Path]:
    """The logs a path stands for: a file itself; a folder a harness reads whole (a HELM run)
    itself; any other folder, every harness log under it (OpenCompass
    ``predictions/<model>/``, an lm-eval ``--output_path``, a lighteval ``details/``), sorted,
    leaving out the files that are no logs (lm-eval's results file) and not descending into a
    folder a harness reads whole. ``fmt`` keeps the logs of that format only.

    A :class:`ConfigError` for a folder with no log in it."""
    target = Path(path)
    if not target.is_dir():  # a file, or a missing path its reader reports
        return [target]
    named = _named(fmt)
    if named is not None and not named.harness:
        raise ConfigError(
            f"{target} is a folder; the format {named.name!r} is read from one file. Give the "
            "file, or a folder of harness logs."
        )
    wanted = [named] if named is not None else [f for f in all_formats() if f.harness]
    if any(f.detect(target) for f in wanted):
        return [target]
    found: list[Path] = []
    for root, dirs, names_ in os.walk(target):
        dirs.sort()
        here = Path(root)
        whole = [d for d in dirs if any(f.detect(here / d) for f in wanted)]
        found += [here / d for d in whole]
        dirs[:] = [d for d in dirs if d not in whole and not d.startswith(".")]
        for name in sorted(names_):
            file = here / name
            if any(f.detect(file) and not f.auxiliary(file) for f in wanted):
                found.append(file)
    if not found:
        kind = f"{named.name} log" if named is not None else "harness log"
        raise ConfigError(
            f"{target} is a folder with no {kind} in it (a folder import reads lm-eval "
            "samples_*.jsonl, lighteval details parquet, Inspect .eval/.json, HELM run folders "
            "and OpenCompass predictions <dataset>.json)."
        )
    return sorted(found)


def _staged_harness(data: bytes, name: str) -> list[Entry] | None:
    """An uploaded harness log (bytes and its file name) read whole from a temporary copy,
    or None when no harness claims it (the plain readers then take the bytes)."""
    import tempfile

    base = Path(name).name
    if not base or base.startswith("."):
        return None
    with tempfile.TemporaryDirectory(prefix="qaeval-upload-") as tmp:
        path = Path(tmp) / base
        path.write_bytes(data)
        harness = harness_format(path, None)
        return None if harness is None else list(harness.read(path))


def read_records(
    source: str | os.PathLike[str] | bytes, *, fmt: str | None = None, name: str | None = None
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    """Raw records with their row numbers and the rows refused: a harness log by its module
    (:func:`harness_format`; a folder's logs one after another, :func:`log_files`; bytes with
    their file ``name`` when a harness claims them), any other source by
    :func:`qaeval_core.io.files.read_plain_records`."""
    if isinstance(source, bytes | bytearray):
        staged = _staged_harness(bytes(source), name) if fmt is None and name else None
        if staged is None:
            return files.read_plain_records(source, fmt=fmt, name=name)
        entries = staged
    else:
        entries = []
        for part in log_files(source, fmt):
            harness = harness_format(part, fmt)
            if harness is None:
                records, errors = files.read_plain_records(part, fmt=fmt, name=name)
                entries += [*errors, *records]
            else:
                entries += list(harness.read(part))
    records = [e for e in entries if not isinstance(e, RowError)]
    return records, [e for e in entries if isinstance(e, RowError)]  # type: ignore[misc]
