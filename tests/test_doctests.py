"""The ``>>>`` examples in qaeval_core's docstrings run and print what they show.

The modules are found by scanning the package for ``>>>``, not listed here: an example added
to any module runs from then on. Examples that need a file, a store or a model say
``# doctest: +SKIP``; every other one runs, with ``ELLIPSIS`` and ``NORMALIZE_WHITESPACE``.
A failure names the module, the line and the example, with what it printed instead.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "qaeval_core"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_with_examples() -> list[str]:
    """Every qaeval_core module whose source holds a ``>>>`` prompt, sorted."""
    return sorted(
        module_name(path)
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts and ">>>" in path.read_text("utf-8")
    )


def docstring_tests(name: str) -> list[doctest.DocTest]:
    """The docstrings of ``name`` (module, classes, functions, methods) that hold examples."""
    module = importlib.import_module(name)
    return [t for t in doctest.DocTestFinder().find(module, name) if t.examples]


def counts(tests: list[doctest.DocTest]) -> tuple[int, int]:
    """(examples that run, examples marked SKIP)."""
    skipped = sum(bool(e.options.get(doctest.SKIP)) for t in tests for e in t.examples)
    return sum(len(t.examples) for t in tests) - skipped, skipped


def test_the_scan_finds_the_modules_with_examples() -> None:
    found = modules_with_examples()
    assert {"qaeval_core", "qaeval_core.metrics.base", "qaeval_core.scoring"} <= set(found)
    assert all(name == "qaeval_core" or name.startswith("qaeval_core.") for name in found)


@pytest.mark.parametrize("name", modules_with_examples())
def test_the_examples_of_the_module_run(name: str) -> None:
    tests = docstring_tests(name)
    assert tests, f"{name} has '>>>' in its source but no docstring example doctest finds"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, out=report.append, clear_globs=True)
    failures = "".join(report)
    assert runner.failures == 0, f"{runner.failures} example(s) of {name} failed:\n{failures}"


def test_the_public_entry_points_have_examples_that_run() -> None:
    """The package's own example (score with em / contains / f1), get_metric and the frame
    reader run rather than being skipped."""
    for name in ("qaeval_core", "qaeval_core.metrics.base", "qaeval_core.io.item_frames"):
        ran, _ = counts(docstring_tests(name))
        assert ran >= 2, f"{name}: {ran} example(s) run"
