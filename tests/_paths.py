"""Where the tests find the repository, their fixtures and the shared data, from any test folder.

Tests live in folders that mirror the packages (``tests/store/``, ``tests/app/browser/`` ...),
so a path built from a test file's own ``__file__`` would break whenever a test moves; these are
built once, from this file, which stays at the top of ``tests/``.
"""

from __future__ import annotations

from pathlib import Path

#: The checkout's root (where ``pyproject.toml`` is).
REPO_ROOT = Path(__file__).resolve().parents[1]
#: The tests' own fixture files (``tests/data/``).
TEST_DATA = REPO_ROOT / "tests" / "data"
#: The real human-labelled data beside the checkout (``../shared/data``), when it is there.
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
#: The demo dataset the project ships.
DEMO_DATA = REPO_ROOT / "qaeval_core" / "data" / "demo_nq301.jsonl"
