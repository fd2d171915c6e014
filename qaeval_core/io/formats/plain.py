"""The plain table files (JSON lines, JSON, CSV/TSV, Parquet) as formats of the registry.

They are read by :mod:`qaeval_core.io.files` (by suffix, or named with ``--format``); these
entries make ``--format`` list every name in one place and let a test check that no harness
detector claims a plain file. They detect by suffix only and never win over a harness log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from qaeval_core.io.files import FORMATS as SUFFIXES
from qaeval_core.io.files import read_plain_records
from qaeval_core.io.formats._common import Entry, Format

__all__ = ["PLAIN_FORMATS"]

_TITLES = {
    "jsonl": "JSON lines (one item per line)",
    "json": "JSON array of items",
    "csv": "CSV with a header row",
    "tsv": "TSV with a header row",
    "parquet": "Parquet table of items",
}


def _format(name: str) -> Format:
    def detect(path: Path) -> bool:
        return SUFFIXES.get(path.suffix.lower()) == name

    def read(path: Path, model: str | None = None) -> Iterator[Entry]:
        # ``model``: set on every record by qaeval_core.io.stream, as for any source
        records, errors = read_plain_records(path, fmt=name)
        yield from errors
        yield from records

    return Format(name, _TITLES[name], detect, read, harness=False)


PLAIN_FORMATS = [_format(name) for name in _TITLES]
