"""Where qaeval keeps its caches: one folder, ``QAEVAL_CACHE_DIR`` or ``~/.cache/qaeval``.

Every cache of the package (:mod:`qaeval_core.caches`) lives under this folder, so one
environment variable moves them all (the cost measurement points it at a cold copy to time a
first run) and deleting the folder only costs recomputation.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """Where qaeval keeps caches (embeddings, converted models): ``QAEVAL_CACHE_DIR`` or
    ``~/.cache/qaeval``."""
    path = Path(os.environ.get("QAEVAL_CACHE_DIR") or Path.home() / ".cache" / "qaeval")
    path.mkdir(parents=True, exist_ok=True)
    return path
