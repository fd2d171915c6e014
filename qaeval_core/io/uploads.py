"""Uploaded files as a path on disk, so an upload is read by the same reader as a file.

A harness log is more than its bytes: lm-eval finds the model in the ``results_<date>.json``
beside the samples, a HELM run is a folder of three files, an Inspect ``.eval`` is a zip read by
member. The Data page therefore writes what was uploaded into one temporary folder, under the
files' own names, and imports that path with :func:`qaeval_core.io.stream.scan_items`, exactly as
``qaeval import`` does (issue 32, item 1).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from qaeval_core.errors import ConfigError

__all__ = ["UPLOAD_FOLDER", "staged_uploads"]

#: The folder the files are written into; a log that takes its model from its folder (an
#: OpenCompass ``predictions/<model>/`` file, an lm-eval samples file without its results
#: file) gets this name unless a model is named for the import.
UPLOAD_FOLDER = "upload"


@contextmanager
def staged_uploads(files: Sequence[tuple[str, bytes]]) -> Iterator[Path]:
    """``(file name, bytes)`` pairs written into one temporary folder (removed afterwards);
    yields what to import: the file when there is one, else the folder (its logs, or a HELM
    run's ``scenario_state.json`` with its ``run_spec.json`` and ``per_instance_stats.json``).

    A :class:`ConfigError` for no file, a name that is no plain file name, or a name twice."""
    if not files:
        raise ConfigError("files is empty: upload at least one file.")
    names = [Path(name.replace("\\", "/")).name for name, _ in files]
    bad = [n for n in names if not n or n.startswith(".")]
    if bad:
        raise ConfigError(f"files: {bad[0]!r} is not a file name to import.")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"files: {', '.join(twice)} given twice; upload each file once.")
    with tempfile.TemporaryDirectory(prefix="qaeval-upload-") as tmp:
        folder = Path(tmp) / UPLOAD_FOLDER
        folder.mkdir()
        for name, (_, data) in zip(names, files, strict=True):
            (folder / name).write_bytes(data)
        yield folder / names[0] if len(names) == 1 else folder
