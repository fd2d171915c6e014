"""A disk cache of LLM verdicts, keyed by model fingerprint + prompt version + item.

An LLM verdict costs about a second on a CPU, and the same items are judged again and again:
calibration, then the cascade on the same rows, a rerun after a crash, the Explorer's trace.
Each entry is keyed by the SHA-256 of (model fingerprint, prompt key, the exact messages sent),
so a changed prompt, a changed item or other weights never hit an old entry. The value is the
probability, the answer text, and the seconds the model took, which feeds the cascade's cost
estimates. Only verdicts are kept: an item without one (an endpoint failed, an unreadable
answer) is refused by :meth:`VerdictCache.put`, so a rerun asks again. Entries with a null
probability, written by versions before that rule, are read back and ignored by the caller.

One small SQLite file under the cache directory (WAL, a busy timeout, one statement per write):
several processes can read and add at once, and a crash loses at most the entry being written.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from qaeval_core.caches.location import cache_dir

__all__ = ["CachedVerdict", "VerdictCache", "verdict_key"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    probability REAL,
    text TEXT NOT NULL,
    seconds REAL NOT NULL
)
"""


def verdict_key(fingerprint: str, prompt_key: str, messages: Sequence[dict[str, str]]) -> str:
    blob = json.dumps([fingerprint, prompt_key, list(messages)], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedVerdict:
    probability: float | None
    text: str
    seconds: float


class VerdictCache:
    """Verdicts on disk (``<cache>/llm_verdicts.sqlite`` unless ``path`` is given)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else cache_dir() / "llm_verdicts.sqlite"
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            self._local.conn = conn
        return conn

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedVerdict]:
        keys = list(dict.fromkeys(keys))
        found: dict[str, CachedVerdict] = {}
        conn = self._conn()
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT key, probability, text, seconds FROM verdicts WHERE key IN ({marks})",
                chunk,
            )
            for key, p, text, seconds in rows:
                found[key] = CachedVerdict(p, text, seconds)
        return found

    def everything(self) -> dict[str, CachedVerdict]:
        """Every cached verdict by key (to merge one cache into another)."""
        rows = self._conn().execute("SELECT key, probability, text, seconds FROM verdicts")
        return {key: CachedVerdict(p, text, seconds) for key, p, text, seconds in rows}

    def put(self, key: str, verdict: CachedVerdict) -> None:
        """Keep one verdict; a missing or non-finite probability is no verdict and refused."""
        p = verdict.probability
        if p is None or not math.isfinite(p):
            raise ValueError(f"not a verdict (probability {p!r}): only verdicts are cached")
        self._conn().execute(
            "INSERT OR REPLACE INTO verdicts (key, probability, text, seconds) VALUES (?,?,?,?)",
            (key, verdict.probability, verdict.text, float(verdict.seconds)),
        )
