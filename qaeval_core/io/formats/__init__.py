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
from qaeval_core.io.formats._common import Format

__all__ = [
    "Format", "all_formats", "detected", "get", "harness_format", "names", "read_records",
]  # fmt: skip

#: The harness formats, in detection order, then the plain (suffix) ones.
_MODULES = ("lm_eval", "lighteval", "inspect_log", "helm", "opencompass")


def _load(module: ModuleType) -> Format:
    return Format(module.NAME, module.TITLE, module.detect, module.read)


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
    return None


def read_records(
    source: str | os.PathLike[str] | bytes, *, fmt: str | None = None, name: str | None = None
) -> tuple[list[tuple[int, dict[str, Any]]], list[RowError]]:
    """Raw records with their row numbers and the rows refused: a harness log by its module
    (:func:`harness_format`), any other source by
    :func:`qaeval_core.io.files.read_plain_records`."""
    harness = harness_format(source, fmt)
    if harness is None:
        return files.read_plain_records(source, fmt=fmt, name=name)
    entries = list(harness.read(Path(os.fspath(source))))  # type: ignore[arg-type]
    records = [e for e in entries if not isinstance(e, RowError)]
    return records, [e for e in entries if isinstance(e, RowError)]
