"""OpenCompass predictions: ``<work_dir>/<time>/predictions/<model>/<dataset>.json``.

``GenInferencerOutputHandler.write_to_json`` dumps ``{"0": {...}, "1": {...}}``: per example
``origin_prompt`` (the prompt text, or for chat models a list of ``{role, prompt}`` turns),
``prediction`` and, when the dataset has one, ``gold`` (left out when empty). With
``--dump-eval-details`` the evaluator writes ``results/<model>/<dataset>.json`` whose
``details`` hold per example whether it was ``correct``; that is the harness's own score here.

Mapping (docs/formats.md): key "0".."n" / ``origin_prompt`` (the last human turn of a chat
prompt) / ``gold`` / ``prediction`` / the folder (model) / the file name (dataset, the task).
A row without ``gold`` is refused with its number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qaeval_core.errors import ConfigError, RowError
from qaeval_core.io.formats._common import Entry, head, load_json, no_references, record, texts

__all__ = ["NAME", "TITLE", "detect", "read"]

NAME = "opencompass"
TITLE = "OpenCompass predictions/<model>/<dataset>.json"

_START = re.compile(rb'^\s*\{\s*"0"\s*:\s*\{')
_HUMAN = {"HUMAN", "user", "USER", "human"}


def detect(path: Path) -> bool:
    """A JSON object keyed "0".. whose first entry has ``prediction`` and ``origin_prompt``."""
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    start = head(path)
    return bool(_START.match(start)) and b'"prediction"' in start and b'"origin_prompt"' in start


def _prompt(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # chat: [{"role": "HUMAN", "prompt": "..."}, ...]
        turns = [t for t in value if isinstance(t, dict)]
        human = [t for t in turns if t.get("role") in _HUMAN] or turns
        if human and isinstance(human[-1].get("prompt"), str):
            return human[-1]["prompt"]
    return None


def _answer(value: Any) -> str | None:
    if isinstance(value, dict):  # structured predictions keep the answer in "content"
        value = value.get("content")
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        value = value[-1]  # multi-round: the last round's answer
    return value if isinstance(value, str) else None


def _correct(path: Path) -> dict[str, float]:
    """``results/<model>/<dataset>.json``'s per-example ``correct``, when it was dumped."""
    results = path.parent.parent.parent / "results" / path.parent.name / path.name
    if not results.is_file():
        return {}
    try:
        data = load_json(results)
    except ConfigError:
        return {}
    details = data.get("details") if isinstance(data, dict) else None
    out: dict[str, float] = {}
    if isinstance(details, dict):
        for key, entry in details.items():
            value = entry.get("correct") if isinstance(entry, dict) else None
            if isinstance(value, list) and value:
                value = sum(bool(v) for v in value) / len(value)
            if isinstance(value, bool | int | float):
                out[str(key)] = float(value)
    return out


def read(path: Path, model: str | None = None) -> Iterator[Entry]:
    """The examples of one predictions file, in key order (row = position, 1-based);
    ``model`` names the model instead of the folder ``predictions/<model>/``."""
    if path.is_dir():
        raise ConfigError(
            f"{path} is a folder: import it as a folder (every <dataset>.json in it is read) "
            "or give one predictions file."
        )
    data = load_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: OpenCompass predictions are a JSON object keyed 0..n.")
    model, task = model or path.parent.name or "unknown", path.stem
    correct = _correct(path)
    for row, (key, entry) in enumerate(data.items(), start=1):
        if not isinstance(entry, dict):
            yield RowError(row, f"example {key}: not an object")
            continue
        question = _prompt(entry.get("origin_prompt"))
        if not question:
            yield RowError(row, f"example {key}: no origin_prompt text")
            continue
        references = texts(entry.get("gold"))
        if not references:
            yield no_references(row, f'example {key} has no "gold" in the predictions file')
            continue
        candidate = _answer(entry.get("prediction"))
        if candidate is None:
            yield RowError(row, f"example {key}: no text prediction (a PPL/likelihood run?)")
            continue
        scores = {"correct": correct[key]} if key in correct else None
        yield (
            row,
            record(
                harness=NAME,
                model=model,
                task=task,
                key=key,
                question=question,
                references=references,
                candidate=candidate,
                scores=scores,
            ),
        )
