"""One folder of converted models for every test on this machine.

A test that must not see another's caches (embeddings, synthetic answers, verdicts) gets a
fresh ``QAEVAL_CACHE_DIR``; but the GGUF -> safetensors conversion of SmolLM2 under its
``models/`` (~20-40 s of CPU on the CI machine) holds nothing one test could leak into another
(it is keyed by the GGUF file and written atomically), so ``models/`` links to one shared
folder in the system temp folder and the conversion happens once per machine, not once per test
module.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

#: The shared ``models/`` folder.
SHARED_MODELS = Path(tempfile.gettempdir()) / "qaeval-test-models"


def link_shared_models(cache: Path) -> Path:
    """Make ``cache/models`` the shared models folder; returns ``cache``."""
    SHARED_MODELS.mkdir(exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "models").exists():
        (cache / "models").symlink_to(SHARED_MODELS, target_is_directory=True)
    return cache
